"""`tito nbgrader collect / autograde / feedback / report` on real submissions, with the real nbgrader.

Module 01 gets a class of five: the solution (full marks), the untouched release (zero), one broken exercise
(loses exactly the points of the graded cell that uses it), an infinite loop (stopped at the cell time limit
and reported), and an edited locked test cell (detected by nbgrader's checksums, graded with the original).
Every other module: the solution scores full marks and the release scores zero.
"""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grading_helpers import cell, copy_course, edited, repo_modules
from tito.grading import autograde, collect, feedback, generate, scores
from tito.workspace import released

TIMEOUT = 6  # seconds per cell for these runs; module 01's cells take milliseconds
MODULES = repo_modules()


def _tito() -> list[str]:
    script = Path(sys.executable).with_name("tito")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tito"]


def _bare_env(**extra) -> dict:
    "An environment whose PATH does not hold this virtual environment (as when it was never activated)."
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PATH", "TITO_ROOT")}
    return {**env, "PATH": "/usr/bin:/bin", "COLUMNS": "200", **extra}


@pytest.fixture(scope="session")
def class01(course, tmp_path_factory):
    "Module 01 submissions collected from a folder and autograded: {student: StudentScore}."
    mod = course.module("01")
    solution, release = mod.notebook, released(course, mod).notebook
    inbox = tmp_path_factory.mktemp("inbox")
    (inbox / "alice").mkdir()
    (inbox / "alice" / "my work.ipynb").write_bytes(solution.read_bytes())  # any name, alone in the folder
    (inbox / "bob.ipynb").write_bytes(release.read_bytes())  # handed in untouched
    edited(solution, inbox / "carol.ipynb", "reductions", "out = np.max(", "out = np.min(")
    edited(solution, inbox / "dave" / "modules" / "01_tensor" / "01_tensor.ipynb",  # a whole workspace folder
           "arithmetic", "out = -a.data", "while True:\n        pass")
    eve = edited(solution, inbox / "eve.ipynb", "matmul", "out = np.matmul(a.data, b.data)",
                 "out = np.matmul(a.data, b.data) + 1")
    nb = nbformat.read(eve, as_version=4)
    cell(nb, "test-matmul").source = "# my matmul is fine\npass"  # a locked cell: nbgrader's checksum changes
    nbformat.write(nb, eve)
    collected = collect(course, inbox, mod)
    assert {(c.student, c.status) for c in collected} == {(s, "new") for s in ("alice", "bob", "carol", "dave", "eve")}
    rows = autograde(course, mod, timeout=TIMEOUT)
    return {r.student: r for r in rows}


def full(row) -> dict:
    return {k: m for k, (_, m) in row.scores.items()}


def test_solution_scores_full_points(class01):
    alice = class01["alice"]
    assert alice.scores and all(s == m for s, m in alice.scores.values())
    assert alice.total == alice.max_total > 0
    assert not (alice.timed_out or alice.changed or alice.error)


def test_untouched_release_scores_zero(class01):
    bob = class01["bob"]
    assert bob.scores.keys() == class01["alice"].scores.keys()
    assert bob.total == 0 and not (bob.timed_out or bob.changed or bob.error)


def test_one_broken_exercise_loses_exactly_its_points(class01):
    carol, expected = class01["carol"], full(class01["alice"])
    expected["test-reductions"] = 0  # the only graded cell that uses reduce_max
    assert {k: s for k, (s, _) in carol.scores.items()} == expected
    assert carol.total == class01["alice"].total - class01["alice"].scores["test-reductions"][1]


def test_infinite_loop_times_out_and_is_reported(class01):
    dave, expected = class01["dave"], full(class01["alice"])
    expected["test-arithmetic"] = 0  # `-_a` never returns
    assert {k: s for k, (s, _) in dave.scores.items()} == expected
    assert dave.timed_out == ["test-arithmetic"]


def test_edited_locked_cell_is_detected_and_graded_with_the_original(class01):
    eve, expected = class01["eve"], full(class01["alice"])
    expected["test-matmul"] = 0  # nbgrader put the original test back, and eve's matmul is wrong
    assert {k: s for k, (s, _) in eve.scores.items()} == expected
    assert eve.changed == ["test-matmul"]


def test_report_reads_the_same_scores_from_the_gradebook(course, class01):
    again = {r.student: r for r in scores(course, course.module("01"))}
    assert {s: r.scores for s, r in again.items()} == {s: r.scores for s, r in class01.items()}
    assert again["dave"].timed_out == ["test-arithmetic"] and again["eve"].changed == ["test-matmul"]


def test_feedback_html(course, class01):
    paths = feedback(course, course.module("01"), ["carol"])
    assert [p.name for p in paths] == ["01_tensor.html"] and paths[0].parent.parent.name == "carol"
    assert "test-reductions" in paths[0].read_text(encoding="utf-8")


def test_report_command_prints_the_table(course, class01):
    done = subprocess.run([*_tito(), "nbgrader", "report", "01"], cwd=course.root, env=_bare_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for student in class01:
        assert student in done.stdout
    assert "dave: timed out" in done.stdout and "eve: edited locked cells test-matmul" in done.stdout


@pytest.mark.parametrize("name", [m for m in MODULES if not m.startswith("01_")])
def test_solution_full_and_release_zero(course, name, tmp_path):
    mod = course.module(name)
    (tmp_path / "solution.ipynb").write_bytes(mod.notebook.read_bytes())
    (tmp_path / "release.ipynb").write_bytes(released(course, mod).notebook.read_bytes())
    collect(course, tmp_path, mod)
    rows = {r.student: r for r in autograde(course, mod, ["solution", "release"])}
    sol, rel = rows["solution"], rows["release"]
    assert sol.scores and all(s == m for s, m in sol.scores.values()), sol.scores
    assert not (sol.timed_out or sol.changed or sol.error)
    assert rel.scores.keys() == sol.scores.keys() and rel.total == 0, rel.scores


def test_collect_layouts(tmp_path):
    course = copy_course(tmp_path / "course")  # collect needs no gradebook; keep these students out of class01
    mod = course.module("01")
    nb = mod.notebook.read_bytes()
    inbox = tmp_path / "inbox"
    for rel_path in ("ann/01_tensor.ipynb", "ben/scratch.ipynb", "ben/sub/01_tensor.ipynb", "cat.ipynb",
                     "dan/a.ipynb", "dan/b.ipynb", "eli/01_tensor.ipynb", "eli.ipynb",
                     "fay/.ipynb_checkpoints/01_tensor-checkpoint.ipynb", "fay/01_tensor.ipynb"):
        (inbox / rel_path).parent.mkdir(parents=True, exist_ok=True)
        (inbox / rel_path).write_bytes(nb)
    (inbox / "gus.ipynb").write_text("not json")
    (inbox / "notes.txt").write_text("ignored")
    got = {c.student: (c.status, c.source and c.source.relative_to(inbox).as_posix())
           for c in collect(course, inbox, mod)}
    assert got["ann"] == ("new", "ann/01_tensor.ipynb")
    assert got["ben"] == ("new", "ben/sub/01_tensor.ipynb")  # the notebook named like the module wins
    assert got["cat"] == ("new", "cat.ipynb")
    assert got["dan"][1] is None and "2 other notebooks" in got["dan"][0]
    assert got["eli"][1] is None and "twice" in got["eli"][0]
    assert got["fay"] == ("new", "fay/01_tensor.ipynb")  # checkpoints are not submissions
    assert got["gus"][1] is None and "not a readable notebook" in got["gus"][0]
    assert set(got) == {"ann", "ben", "cat", "dan", "eli", "fay", "gus"}
    dest = course.root / "submitted" / "ann" / "01_tensor" / "01_tensor.ipynb"
    assert dest.read_bytes() == nb
    again = {c.student: c.status for c in collect(course, inbox, mod)}
    assert again["ann"] == "unchanged"


def test_hidden_tests_are_removed_from_the_release_and_graded(tmp_path):
    """A graded cell may hide extra asserts (`### BEGIN HIDDEN TESTS`): students do not see them, grading runs
    them, so an answer fitted to the visible asserts does not get the points."""
    ws = copy_course(tmp_path / "course")
    for extra in ws.modules():
        if extra.number != "01":
            for f in extra.folder.iterdir():
                f.unlink()
            extra.folder.rmdir()
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    grade = lambda gid, **kw: {"nbgrader": {"grade_id": gid, "schema_version": 3, **kw}}
    nb.cells = [
        nbformat.v4.new_code_cell("#| default_exp core.demo"),
        nbformat.v4.new_code_cell("#| export\ndef double(x):\n    \"Twice x.\"\n    ### BEGIN SOLUTION\n"
                                  "    return 2 * x\n    ### END SOLUTION",
                                  metadata=grade("double", grade=False, locked=False, solution=True)),
        nbformat.v4.new_code_cell("assert double(2) == 4\n### BEGIN HIDDEN TESTS\nassert double(-3) == -6\n"
                                  "### END HIDDEN TESTS",
                                  metadata=grade("test-double", grade=True, locked=True, points=2, solution=False)),
    ]
    mod = ws.module("01")
    nbformat.write(nb, mod.notebook)
    [release] = generate(ws, [mod])
    rel = nbformat.read(release, as_version=4)
    assert "double(-3)" not in rel.cells[2].source and "double(2) == 4" in rel.cells[2].source
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    for student, answer in (("honest", "return 2 * x"), ("fitted", "return 4")):
        edited(release, inbox / f"{student}.ipynb", "double", "raise NotImplementedError()", answer)
    collect(ws, inbox, mod)
    rows = {r.student: r for r in autograde(ws, mod, timeout=TIMEOUT)}
    assert rows["honest"].scores == {"test-double": (2.0, 2.0)} and not rows["honest"].changed
    assert rows["fitted"].scores == {"test-double": (0.0, 2.0)}


def test_generate_works_without_the_environment_on_path(tmp_path):
    """A plain, never-activated virtual environment: nbgrader runs `alembic` from PATH when it makes the
    gradebook, so tito puts its own interpreter's folder first."""
    ws = copy_course(tmp_path / "course")
    done = subprocess.run([*_tito(), "nbgrader", "generate", "01"], cwd=ws.root, env=_bare_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "generated release/01_tensor/01_tensor.ipynb" in done.stdout
    assert (ws.root / "gradebook.db").is_file()


def test_commands_fail_in_one_line(course, tmp_path):
    for args, message in ((["generate"], "or pass --all"), (["autograde", "99"], "unknown module"),
                          (["collect", str(tmp_path / "nowhere"), "-a", "01"], "not a folder of submissions")):
        done = subprocess.run([*_tito(), "nbgrader", *args], cwd=course.root, env=_bare_env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
            (args, done.stderr)
