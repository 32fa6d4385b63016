"""Right blame, first cause first: verdicts in exercise order, a check showing the first error it meets, a failing
test saying which exercise to fix first, arrays printed in their shape."""
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from tito.grading.judge import compare, show
from tito.grading.probes import Block, encode_data, replay
from tito.module_checks import Outcome, Verdicts, _junit_outcome, in_exercise_order

REPO = Path(__file__).resolve().parents[2]


def test_verdicts_are_listed_in_exercise_order():
    "Module 04 checks AdamW (Exercise 5) after clip_grad_norm_ (6) and lr_at (7): the verdicts still read 1..7."
    graded_order = ["cross-entropy", "mse-loss", "binary-cross-entropy", "sgd", "adam", "clip-grad-norm",
                    "lr-schedule", "adamw"]
    outcomes = [Outcome(gid, "passed", gid=gid) for gid in graded_order]
    listed = [o.gid for o in in_exercise_order(outcomes, REPO / "modules/04_training/04_training.ipynb")]
    assert listed == ["cross-entropy", "mse-loss", "binary-cross-entropy", "sgd", "adam", "adamw", "clip-grad-norm",
                      "lr-schedule"]
    verdicts = Verdicts(in_exercise_order(outcomes, REPO / "modules/04_training/04_training.ipynb"),
                        builds_on={"adamw": ["cross-entropy", "adam", "clip-grad-norm", "lr-schedule"]})
    assert verdicts.order() == graded_order, "the tests of an exercise run after those of the ones it builds on"


class Grad:
    "A tensor whose backward fails the way a vector @ vector bug does, leaving .grad None."
    grad = None

    def backward(self):
        np.swapaxes(np.ones(3), -1, -2)


def test_a_check_shows_the_first_error_it_meets_not_what_it_broke_later():
    block = Block("x")
    with block as (tt, check):
        x = tt.Grad()
        x.backward()                           # raises AxisError; nothing uses its result
        check("x.grad after backward", x.grad.data)
        check("x.grad again", x.grad)
    results = replay(block.tape.as_json(), sys.modules[__name__])
    assert results[0]["$raised"][0] == "AxisError", results[0]
    assert "backward" in results[0]["step"]
    assert results[1] is None                  # the next check meets no new error: its own value (None)


def test_an_error_whose_result_a_check_uses_still_reaches_it():
    block = Block("x")
    with block as (tt, check):
        check("np.swapaxes of a vector", tt.np.swapaxes(tt.np.ones(3), -1, -2))
    assert replay(block.tape.as_json(), sys.modules[__name__])[0]["$raised"][0] == "AxisError"


def test_a_2d_mask_is_shown_in_its_shape():
    mask = np.tril(np.ones((3, 3), bool))
    said = compare(encode_data(mask), encode_data(~mask), {})
    assert "[[True, False, False], [True, True, False], [True, True, True]]" in said, said
    assert show(encode_data(np.arange(40.0).reshape(5, 8))).startswith("float64 (5, 8) [[0., 1., ..., 6., 7.], ")
    assert show(encode_data(np.arange(3.0))) == "float64 [0., 1., 2.]"


def test_a_failing_test_says_fix_first_for_an_exercise_its_mark_builds_on(tmp_path):
    "A test under Exercise 3 that also runs Exercise 2's code (its mark's after=) names Exercise 2 when it fails."
    (tmp_path / "test_x.py").write_text(textwrap.dedent('''
        import pytest

        @pytest.mark.exercise("masks", after=("attention-backward",))
        def test_masked_gradient():
            assert 1 == 2

        @pytest.mark.exercise("masks")
        def test_mask_alone():
            assert 1 == 2
    '''))
    report = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                    "-p", "tito.pytest_plugin", f"--junitxml={report}"], cwd=tmp_path, capture_output=True)
    verdicts = Verdicts([Outcome("Exercise 1", "passed", gid="attention-forward"),
                         Outcome("Exercise 2", "failed", "wrong", gid="attention-backward"),
                         Outcome("Exercise 3", "passed", gid="masks")],
                        builds_on={"masks": ["attention-forward"], "attention-backward": ["attention-forward"]})
    outcomes = {o.name.rpartition("::")[2]: o for o in (_junit_outcome(case, verdicts)
                                                        for case in ET.parse(report).getroot().iter("testcase"))}
    assert outcomes["test_masked_gradient"].reason.startswith("fix Exercise 2 first; "), outcomes
    assert outcomes["test_masked_gradient"].exercise == "Exercise 3"
    assert not outcomes["test_mask_alone"].reason.startswith("fix"), outcomes
