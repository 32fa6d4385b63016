"""`tito nbgrader collect / autograde / feedback / report` on real submissions, with the real nbgrader.

Module 01 gets a class of seven, graded two at a time (each in the sandbox): the solution (full marks), the untouched
release (zero), one broken exercise (loses exactly the points of the graded cell that uses it), an infinite loop
(stopped at the cell time limit and reported), an edited locked test cell (detected by nbgrader's checksums, graded
with the original), a loop that ignores the interrupt (its kernel is stopped at the time limit) and a submission
without its notebook. Grading some of them again one at a time gives the same scores.
Every module's solution, release and catalogue of student bugs: `test_bug_catalogue.py`.
"""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grading_helpers import cell, copy_course, edited, submission
from tito.course import TitoError
from tito.grading import autograde, collect, examine, feedback, generate, scores
from tito.workspace import released

TIMEOUT = 6  # seconds per cell for these runs; module 01's cells take milliseconds


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
    submission(solution, release, inbox / "alice" / "my work.ipynb")  # any name, alone in the folder
    (inbox / "bob.ipynb").write_bytes(release.read_bytes())  # handed in untouched
    submission(solution, release, inbox / "carol.ipynb", ("reductions", "out = np.max(", "out = np.min("))
    submission(solution, release, inbox / "dave" / "modules" / "01_tensor" / "01_tensor.ipynb",  # a workspace folder
               ("arithmetic", "out = -a.data", "while True:\n        pass"))
    eve = submission(solution, release, inbox / "eve.ipynb",
                     ("matmul", "out = np.matmul(a.data, b.data)", "out = np.matmul(a.data, b.data) + 1"))
    nb = nbformat.read(eve, as_version=4)
    cell(nb, "test-matmul").source = "# my matmul is fine\npass"  # a locked cell: nbgrader's checksum changes
    nbformat.write(nb, eve)
    submission(solution, release, inbox / "frank.ipynb",  # ignores the interrupt: its kernel must be stopped
               ("shape-ops", "out = np.swapaxes(a.data, dim0, dim1)", IGNORES_SIGINT))
    collected = collect(course, inbox, mod)
    assert {(c.student, c.status) for c in collected} == {(s, "new") for s in CLASS}
    gina = course.root / "submitted" / "gina" / mod.name  # handed in through the exchange, without the notebook
    gina.mkdir(parents=True)
    (gina / "notes.txt").write_text("I forgot the notebook")
    rows = autograde(course, mod, timeout=TIMEOUT, jobs=2)
    return {r.student: r for r in rows}


CLASS = ("alice", "bob", "carol", "dave", "eve", "frank")
IGNORES_SIGINT = "while True:\n            try:\n                __import__('time').sleep(.1)\n" \
                 "            except BaseException:\n                pass"


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


def test_a_cell_that_ignores_the_interrupt_is_stopped_and_the_rest_not_run(class01):
    frank, expected = class01["frank"], full(class01["alice"])
    expected["test-shape-ops"] = expected["test-indexing"] = 0  # stopped; its kernel with it, so indexing never ran
    assert {k: s for k, (s, _) in frank.scores.items()} == expected
    assert frank.timed_out == ["test-shape-ops"] and frank.not_run >= 1 and not frank.died


def test_a_missing_notebook_scores_zero_and_says_so(class01):
    gina = class01["gina"]
    assert gina.missing and gina.total == 0 and gina.scores.keys() == class01["alice"].scores.keys()
    assert not gina.error  # the reason is `notebook missing`, not an nbgrader error


def test_one_job_gives_the_same_scores_as_two(course, class01):
    again = {r.student: r for r in autograde(course, course.module("01"), ["alice", "carol", "eve"],
                                             timeout=TIMEOUT, jobs=1)}
    for student, row in again.items():
        assert (row.scores, row.changed, row.timed_out) == \
            (class01[student].scores, class01[student].changed, class01[student].timed_out), student


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
    assert "frank: timed out (cell time limit) in test-shape-ops" in done.stdout
    assert "gina: notebook missing" in done.stdout
    why = {line.split("│")[1].strip(): line.split("│")[-2].strip() for line in done.stdout.splitlines()
           if line.count("│") > 3}
    assert why["dave"] == "timed out" and why["eve"] == "locked cell edited" and why["gina"] == "notebook missing"
    assert why["alice"] == why["bob"] == why["carol"] == ""


def test_collect_layouts(tmp_path):
    course = copy_course(tmp_path / "course")  # collect needs no gradebook; keep these students out of class01
    mod = course.module("01")
    nb = mod.notebook.read_bytes()
    inbox = tmp_path / "inbox"
    for rel_path in ("ann/01_tensor.ipynb", "ben/scratch.ipynb", "ben/sub/01_tensor.ipynb", "cat.ipynb",
                     "fay/.ipynb_checkpoints/01_tensor-checkpoint.ipynb", "fay/01_tensor.ipynb"):
        (inbox / rel_path).parent.mkdir(parents=True, exist_ok=True)
        (inbox / rel_path).write_bytes(nb)
    got = {c.student: (c.status, c.source and c.source.relative_to(inbox).as_posix()) for c in examine(inbox, mod)}
    assert got == {"ann": ("", "ann/01_tensor.ipynb"),
                   "ben": ("", "ben/sub/01_tensor.ipynb"),  # the notebook named like the module wins
                   "cat": ("", "cat.ipynb"),
                   "fay": ("", "fay/01_tensor.ipynb")}  # checkpoints are not submissions
    assert {c.student: c.status for c in collect(course, inbox, mod)} == dict.fromkeys(got, "new")
    dest = course.root / "submitted" / "ann" / "01_tensor" / "01_tensor.ipynb"
    assert dest.read_bytes() == nb
    assert {c.student: c.status for c in collect(course, inbox, mod)}["ann"] == "unchanged"


def test_collect_takes_all_or_nothing_and_names_every_problem(tmp_path):
    course = copy_course(tmp_path / "course")
    mod = course.module("01")
    nb = mod.notebook.read_bytes()
    inbox = tmp_path / "inbox"
    for rel_path in ("ann.ipynb", "dan/a.ipynb", "dan/b.ipynb", "eli/01_tensor.ipynb", "eli.ipynb", "bob\n.ipynb",
                     ".hidden.ipynb"):
        (inbox / rel_path).parent.mkdir(parents=True, exist_ok=True)
        (inbox / rel_path).write_bytes(nb)
    (inbox / "gus.ipynb").write_text("not json")
    (inbox / "notes.txt").write_text("not a submission")
    with pytest.raises(TitoError) as caught:
        collect(course, inbox, mod)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("nothing collected: 6 item(s)")
    for problem in ("'.hidden.ipynb' is hidden", "'bob\\n.ipynb' does not name a usable student id",
                    "'dan': no 01_tensor.ipynb and 2 other notebooks", "'eli' handed in twice",
                    "'gus.ipynb' is not a readable notebook", "'notes.txt' is not a notebook"):
        assert problem in message, (problem, message)
    assert not (course.root / "submitted").exists()  # not even ann's good notebook


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
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "ann\n.ipynb").write_bytes(course.module("01").notebook.read_bytes())
    for args, message in ((["generate"], "or pass --all"), (["autograde", "99"], "unknown module"),
                          (["collect", str(tmp_path / "nowhere"), "-a", "01"], "not a folder of submissions"),
                          (["collect", str(inbox), "-a", "01"], "does not name a usable student id"),
                          (["collect", "--exchange"], "name the module"),
                          (["autograde", "01", "--jobs", "2", "--student", "nobody"], "no submission of 01_tensor")):
        done = subprocess.run([*_tito(), "nbgrader", *args], cwd=course.root, env=_bare_env(),
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and message in done.stderr and len(done.stderr.strip().splitlines()) == 1, \
            (args, done.stderr)
