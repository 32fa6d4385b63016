"""A verdict does not depend on which packages happen to be installed: the course's answers to every module's graded
checks (visible and hidden), as shipped with a release, are the same whether the release was made with the course's
packages (numba, threadpoolctl, PyTorch) or without them, so a student's correct code passes either way. A package
is taken away from the answer process by a folder first on PYTHONPATH whose module of that name raises
ModuleNotFoundError, as a missing package does."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tito.grading import judge
from tito.grading.sandbox import Limits, run_answer
from tito.workspace import Workspace

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
OPTIONAL = ("numba", "threadpoolctl", "torch")  # what a release made from a clone without `.[course]` lacked
WS = Workspace.find(REPO)


@pytest.fixture(scope="module")
def missing(tmp_path_factory) -> Path:
    "A folder that, first on PYTHONPATH, makes the packages in OPTIONAL fail to import."
    folder = tmp_path_factory.mktemp("missing")
    for name in OPTIONAL:
        (folder / f"{name}.py").write_text(f'raise ModuleNotFoundError("No module named {name!r}", name={name!r})\n')
    return folder


def answers(probes, scratch: Path, timeout: int):
    "The course package's answers to every check, visible and hidden, in a process of their own."
    return run_answer([c.tape for c in probes.cells], probes.modules, probes.package, scratch, Limits.of(WS), timeout,
                      path=WS.lib_dir.parent)


@pytest.mark.parametrize("number", [m.number for m in WS.modules()])
def test_the_course_answers_are_the_same_without_the_optional_packages(number, missing, tmp_path, monkeypatch):
    module = WS.module(number)
    probes = judge.read_probes(WS, module)
    everything = judge.expected_answers(probes, answers(probes, tmp_path / "all", WS.cell_timeout))
    monkeypatch.setenv("PYTHONPATH", str(missing))
    bare = answers(probes, tmp_path / "bare", WS.cell_timeout)
    assert bare.status.get("stage") == "done", bare.status
    wrong = [f"{v.title}: {v.message()}" for v in judge.judge(probes, everything, bare) if not v.passed]
    assert not wrong, "answers made with numba, threadpoolctl and PyTorch, compared without them:\n" + "\n".join(wrong)


def test_comparisons_with_a_missing_pytorch_are_one_line_naming_the_install(missing):
    "Test files skipped whole for want of torch are not rows of 'collection skipped': one line says what to install."
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "TITO_ROOT")}
    done = subprocess.run([sys.executable, "-m", "tito", "module", "test", "01"], cwd=REPO, capture_output=True,
                          text=True, env={**env, "PYTHONPATH": str(missing), "COLUMNS": "200"}, timeout=1800)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "collection skipped" not in done.stdout and "test_tensor_oracle" not in done.stdout, done.stdout
    assert re.search(r"^\d+ PyTorch comparisons? not run \(no torch\): \.venv/bin/pip install -e '\.\[course\]'$",
                     done.stdout, re.M), done.stdout
