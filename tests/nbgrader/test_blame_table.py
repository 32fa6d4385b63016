"""The blame table: every catalogued bug (`bug_catalogue.py`), put into a student's workspace as a student would have
it, is named by `tito module complete` on the exercise that holds it.

One student workspace is made with `tito student init` (per test process) and filled with the course's solutions;
each entry copies it, writes the module's notebook with every exercise solved and the one bug in, exports it, and
runs what `tito module complete` runs: the judge's verdicts (`run_judged_checks`) and the module's tests
(`run_test_suite`, here in the verdicts' order of exercises and stopping at the first failing test: `-x`, through
PYTEST_ADDOPTS; the tests after it cannot change which one is first). The exercise named first must be the bug's,
and the first failing test, if any, must be under it or say "fix <it> first".

Cost: each entry is an export, an answer process and a pytest process. The workspace is made once for all test
processes (a file lock), with the judged checks of every module run once (so numba's cache of module 08's loops is
there, as in a student's workspace after `tito module complete`), and its suites leave out what costs seconds per
process without naming an exercise differently: the PyTorch comparisons (importing torch takes seconds; the same
exercises' own tests stay) and the tests that run real tools (a notebook in a kernel, the capstone's script). They
still run in the module suites.
"""
import os
import shutil
from pathlib import Path

import pytest
from filelock import FileLock

from bug_catalogue import BUGS
from grading_helpers import copy_course, submission
from tito.workspace import Workspace
from tito.exporting import export_modules
from tito.module_checks import fix_first, run_judged_checks, run_test_suite
from tito.student_workspace import init_student_workspace

ENTRIES = [pytest.param(number, bug, id=f"{number}-{bug.slug}") for number, bugs in sorted(BUGS.items())
           for bug in bugs]
# Each entry's copy keeps the package's __pycache__, where numba caches module 08's compiled loops (a bug in one of
# them changes their file, and numba compiles that file's loops again).
SKIP = shutil.ignore_patterns(".ipynb_checkpoints", ".pytest_cache")
LEFT_OUT = ["*/test_*_oracle.py", "08_compiled/test_compiled_op_tables.py", "05_attention/test_attention_notebook.py",
            "06_transformer/test_transformer_milestone.py"]


def make_solved(base: Path):
    "The course at base/course, and at base/ws a student workspace with every module solved and exported."
    course = copy_course(base / "course", full=True)
    init_student_workspace(course, base / "ws")
    ws = Workspace.find(base / "ws")
    for module in ws.modules():
        submission(course.module(module.number).notebook, ws.released(module).notebook, module.notebook)
    export_modules(ws, ws.modules())
    for module in ws.modules():  # what a student's workspace holds after `tito module complete`: numba's disk cache
        run_judged_checks(ws, module)
    for pattern in LEFT_OUT:
        for path in ws.root.joinpath("tests").glob(pattern):
            path.unlink()


@pytest.fixture(scope="session")
def solved(tmp_path_factory):
    "(the course, a student workspace with every module solved and exported), made once for all test processes."
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        base = tmp_path_factory.mktemp("blame-table")
        make_solved(base)
        return Workspace.find(base / "course"), Workspace.find(base / "ws")
    base = tmp_path_factory.getbasetemp().parent / "blame-table"  # this run's folder, shared by its workers
    with FileLock(str(base) + ".lock"):
        if not (base / "done").is_file():
            shutil.rmtree(base, ignore_errors=True)
            make_solved(base)
            (base / "done").touch()
    return Workspace.find(base / "course"), Workspace.find(base / "ws")


def named_first(course, ws: Workspace, number: str, bug, tmp_path):
    "(the verdicts, the tests) that `tito module complete NN` gives the solved workspace with `bug` in module NN."
    root = tmp_path / "ws"
    shutil.copytree(ws.root, root, ignore=SKIP, symlinks=True)
    student = Workspace.find(root)
    module = student.module(number)
    submission(course.module(number).notebook, student.released(module).notebook, module.notebook,
               (bug.grade_id, bug.old, bug.new))
    export_modules(student, [module])
    verdicts = run_judged_checks(student, module)
    return verdicts, run_test_suite(student, module, verdicts, stop_early=True)


@pytest.mark.slow
@pytest.mark.parametrize("number, bug", ENTRIES)
def test_tito_names_the_exercise_that_holds_the_bug(solved, number, bug, tmp_path, monkeypatch):
    course, ws = solved
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")
    verdicts, tests = named_first(course, ws, number, bug, tmp_path)
    titles = verdicts.titles
    assert bug.grade_id in titles, f"{bug.grade_id} has no graded check of its own"
    named = fix_first(verdicts, tests)
    assert named == titles[bug.grade_id], (
        f"{bug.slug} ({bug.what}) is in {titles[bug.grade_id]}, but tito names {named or 'nothing'} first; "
        "verdicts: " + "; ".join(f"{o.name}: {o.reason}" for o in verdicts.outcomes if o.status != "passed"))
    failing = [o for o in tests.outcomes if o.status in ("failed", "error")]
    if not failing:  # the verdict alone names it: nothing here (PyTorch comparisons left out) contradicts it
        return
    first = failing[0]
    assert first.gid == bug.grade_id or f"fix {titles[bug.grade_id]} first" in first.reason, (
        f"{bug.slug}: the first failing test, {first.name}, is under {first.exercise or 'no exercise'}: "
        f"{first.reason}")
