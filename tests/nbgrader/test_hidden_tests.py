"""Hidden checks: an answer fitted to the visible checks loses the points, and the feedback a student gets back does
not show the hidden checks (their code, their names, their inputs or the values they expected): the judge's verdict
says only that hidden check N failed.

The submission is module 01 with a `mean` that divides by the length of the first reduced axis: right for every
visible check (single axes), wrong for the hidden ones (a tuple of axes).
"""
import html
import re

import nbformat
import pytest

from grading_helpers import REPO, cell, copy_course, repo_modules, submission
from tito.grading.autograde import autograde
from tito.grading.collect import collect
from tito.grading.feedback import feedback
from tito.grading.generate import generate

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


def test_only_the_hidden_checks_catch_the_fitted_answer(fitted):
    ws, mod, row, autograded, _ = fitted
    lost = {gid for gid, (score, top) in row.scores.items() if score < top}
    assert lost == {"test-reductions"}, row.scores
    failed = [o for o in cell(autograded, "test-reductions").outputs if o.get("output_type") == "error"]
    assert len(failed) == 1 and failed[0]["ename"] == "WrongAnswer", failed
    said = failed[0]["evalue"]
    assert "hidden check" in said and "check '" not in said, "the visible checks pass: hidden ones must be what failed"


def _hidden_checks(ws, mod) -> list:
    "The hidden checks of the module's graded cells (names and options), as the judge reads them."
    from tito.grading.judge import read_probes

    return [check for c in read_probes(ws, mod).cells for check in c.checks if check["hidden"]]


def test_feedback_shows_no_hidden_check_code_name_or_input(fitted):
    ws, mod, row, autograded, page = fitted
    text = page_text(page)
    source = nbformat.read(mod.notebook, as_version=4)
    shown = "\n".join(re.sub(f"{BEGIN}.*?{END}", "", c.source, flags=re.S) for c in source.cells)
    hidden = [line for c in source.cells if c.metadata.get("nbgrader", {}).get("grade")
              for line in hidden_lines(c.source) if line not in shown]  # not a line also shown
    assert len(hidden) > 10, "module 01 has hidden checks"
    assert BEGIN not in text and END not in text
    assert not [line for line in hidden if line in text], "hidden check code in the feedback"
    names = [c["name"] for c in _hidden_checks(ws, mod)]
    assert len(names) > 10 and not [n for n in names if n not in shown and n in text], "hidden check names shown"
    # the judge's verdict is shown, and names the hidden check by number only (no inputs, no expected values)
    said = [o for o in cell(autograded, "test-reductions").outputs if o.get("output_type") == "error"][0]["evalue"]
    assert said in text and "test-reductions" in text and "WrongAnswer" in text
    assert all(part.startswith(("hidden check", "and ")) for part in said.split("; ")), said
    assert not re.search(r"\d\.\d", said), "a value in the verdict of a hidden check"
    # what the student saw in the release is still there
    visible = cell(source, "test-reductions").source.split(BEGIN)[0].strip().splitlines()
    assert all(line.strip() in text for line in visible if line.strip())


def test_no_feedback_page_holds_hidden_check_text(fitted):
    "Every module 01 feedback page written in this course (also of the other test files' classes, if any)."
    ws, mod, _, _, page = fitted
    source = nbformat.read(mod.notebook, as_version=4)
    shown = "\n".join(re.sub(f"{BEGIN}.*?{END}", "", c.source, flags=re.S) for c in source.cells)
    hidden = [line for c in source.cells for line in hidden_lines(c.source) if line not in shown]
    for html_page in (ws.root / "feedback").rglob("*.html"):
        text = page_text(html_page)
        assert not [line for line in hidden if line in text], html_page


@pytest.mark.parametrize("name", repo_modules())
def test_every_graded_cell_has_hidden_checks(name):
    """The answers to the visible checks ship with the release (a student sees what to expect), so a graded cell judged
    by its visible checks alone could be answered by handing those back (the forger of test_bug_catalogue.py).
    Hidden checks, whose inputs and answers a student never has, can only be answered by working code."""
    nb = nbformat.read(REPO / "modules" / name / f"{name}.ipynb", as_version=4)
    graded = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    bare = [c.metadata["nbgrader"]["grade_id"] for c in graded
            if not any(line.startswith("check") for line in hidden_lines(c.source))]
    assert graded and not bare, f"{name}: graded cells without a hidden check: {bare}"


def _looks_at(steps: list) -> dict:
    """For each check of a tape: the form of the value it looks at, as the student's process sees it (the kind of
    step that made it, and the operator or the attribute called), or "data" for a value the checks cell made."""
    made = {s[1]: s for s in steps if s[0] in ("get", "item", "call", "op")}

    def form(step, depth=0):
        if step[0] != "call":
            return step[0], step[2] if step[0] == "op" else step[3] if step[0] == "get" else ""
        target = made.get(step[2].get("$ref")) if isinstance(step[2], dict) else None
        if target is None:
            return "call", "?"
        if target[0] == "get":  # an attribute, by its name
            return "call", target[3]
        return "call", form(target, depth + 1) if depth < 3 else "..."  # an object, by the step that made it

    return {s[1]: form(made[s[2]["$ref"]]) if isinstance(s[2], dict) and s[2].get("$ref") in made else "data"
            for s in steps if s[0] == "check"}


@pytest.mark.parametrize("name", repo_modules())
def test_a_check_that_a_call_raises_looks_like_a_hidden_value_check(name):
    """The student's process sees every tape, and could claim an error (every class, the operands in the message)
    for the checks that look at a value no value check looks at: a bare call to `backward`, to an optimizer... So for
    every check that a call raises, some hidden value check of its cell looks at the result of the same kind of
    step calling the same thing."""
    from tito.grading.judge import read_probes
    from tito.workspace import Workspace

    ws = Workspace.find(REPO)
    mod = ws.module(name)
    alone = []
    for cell_ in read_probes(ws, mod).cells:
        forms = _looks_at(cell_.tape["steps"])
        hidden_values = {forms[i] for i, c in enumerate(cell_.checks) if c["kind"] == "value" and c["hidden"]}
        alone += [f"{cell_.grade_id}: {c['name']!r} looks at {forms[i]}" for i, c in enumerate(cell_.checks)
                  if c["kind"] == "raises" and forms[i] not in hidden_values]
    assert not alone, f"{name}: checks that a call raises, told apart by what they look at: {alone}"
