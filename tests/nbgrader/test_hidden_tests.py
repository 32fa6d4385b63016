"""Hidden tests: an answer fitted to the visible asserts loses the points, and the feedback a student gets back does
not show the hidden tests (their code, or the values they expected).

The submission is module 01 with a `mean` that divides by the length of the first reduced axis: right for every
visible check (single axes), wrong for the hidden ones (a tuple of axes).
"""
import html
import re

import nbformat
import pytest

from grading_helpers import cell, copy_course, submission
from tito.grading import autograde, collect, feedback, generate

FITTED = ("reductions", "    out = np.mean(a.data, axis=axis, keepdims=keepdims)",
          "    out = np.sum(a.data, axis=axis, keepdims=keepdims) / (a.size if axis is None else a.shape[axis[0]])")
BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def page_text(path) -> str:
    "What a reader of the HTML page sees: the text without tags (code is split into highlighted spans)."
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def hidden_lines(source: str) -> list[str]:
    "The lines between the hidden-test markers, stripped, without blank ones."
    out, inside = [], False
    for line in source.splitlines():
        if BEGIN in line:
            inside = True
        elif END in line:
            inside = False
        elif inside and line.strip():
            out.append(line.strip())
    return out


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    "(workspace, module, score row, autograded notebook, feedback page) of the fitted submission."
    ws = copy_course(tmp_path_factory.mktemp("course"))
    mod = ws.module("01")
    [release] = generate(ws, [mod])
    inbox = tmp_path_factory.mktemp("inbox")
    submission(mod.notebook, release, inbox / "fitted.ipynb", FITTED)
    collect(ws, inbox, mod)
    [row] = autograde(ws, mod, ["fitted"], timeout=60)
    autograded = ws.root / "autograded" / "fitted" / mod.name / mod.notebook.name
    [page] = feedback(ws, mod, ["fitted"])
    return ws, mod, row, nbformat.read(autograded, as_version=4), page


def test_only_the_hidden_tests_catch_the_fitted_answer(fitted):
    ws, mod, row, autograded, _ = fitted
    lost = {gid for gid, (score, top) in row.scores.items() if score < top}
    assert lost == {"test-reductions"}, row.scores
    failed = [o for o in cell(autograded, "test-reductions").outputs if o.get("output_type") == "error"]
    assert failed and "hidden" not in failed[0]["ename"].lower()
    source = cell(nbformat.read(mod.notebook, as_version=4), "test-reductions").source
    frames = re.findall(r"line (\d+)", re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(failed[0]["traceback"])))
    raised_at = source.splitlines()[int(frames[0]) - 1]
    assert raised_at.strip() in hidden_lines(source), "the visible asserts pass: a hidden one must be what failed"


def test_feedback_shows_no_hidden_test_code_or_expected_value(fitted):
    ws, mod, row, autograded, page = fitted
    text = page_text(page)
    source = nbformat.read(mod.notebook, as_version=4)
    shown = "\n".join(re.sub(f"{BEGIN}.*?{END}", "", c.source, flags=re.S) for c in source.cells)
    hidden = [line for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")
              for line in hidden_lines(c.source) if line not in shown]  # not `try:`, nor a line also shown
    assert len(hidden) > 10, "module 01 has hidden tests"
    assert BEGIN not in text and END not in text
    assert not [line for line in hidden if line in text], "hidden test code in the feedback"
    failed = [o for o in cell(autograded, "test-reductions").outputs if o.get("output_type") == "error"]
    assert failed[0]["evalue"] and failed[0]["evalue"] not in text, "the hidden assert's message in the feedback"
    # what the student saw in the release is still there, and so is the failure of the check
    visible = cell(source, "test-reductions").source.split(BEGIN)[0].strip().splitlines()
    assert all(line.strip() in text for line in visible if line.strip())
    assert "test-reductions" in text and "AssertionError" in text
