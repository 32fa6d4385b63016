"""`tito nbgrader collect / autograde / feedback / report` on real submissions, with the real nbgrader.

Module 01 gets a class of ten, graded two at a time (each in the sandbox): the solution (full marks), the untouched
release (zero), one broken exercise (loses exactly the points of the graded cell that uses it), an infinite loop
in an exported function (its graded cell stopped at the time limit and reported), an edited locked test cell
(detected by nbgrader's checksums, graded with the original), a loop that ignores every interrupt (its answer process
is killed at the time limit, started again, and the graded cells after it still score), a notebook that ends its own
process when it is imported, one that allocates 50 GB (a MemoryError in its exercise), one that prints 300 MiB (the score of the same work; tito stays
small) and a submission without its notebook. Grading some of them again one at a time gives the same scores.
Every module's solution, release and catalogue of student bugs: `test_bug_catalogue.py`.
"""
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from grading_helpers import cell, copy_course, submission
from tito.workspace import TitoError
from tito.grading.autograde import autograde
from tito.grading.collect import collect, examine
from tito.grading.feedback import feedback
from tito.grading.report import scores, why

TIMEOUT = 6  # seconds per graded cell for these runs; module 01's cells take milliseconds


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
    solution, release = mod.notebook, course.released(mod).notebook
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
    submission(solution, release, inbox / "frank.ipynb",  # ignores every interrupt: only SIGKILL stops it
               ("shape-ops", "out = np.swapaxes(a.data, dim0, dim1)", IGNORES_SIGINT))
    submission(solution, release, inbox / "henry.ipynb",  # ends the answer process when it is imported
               ("as-array", 'SUPPORTED_KINDS = "biuf"', 'SUPPORTED_KINDS = "biuf"\nimport os\nos._exit(3)'))
    submission(solution, release, inbox / "ivan.ipynb",  # asks for 50 GB in one exercise
               ("elementwise", "out = np.exp(a.data)", "out = np.exp(a.data) + len(bytearray(50 * 2**30))"))
    submission(solution, release, inbox / "judy.ipynb", ("as-array", 'SUPPORTED_KINDS = "biuf"', PRINTS_300_MIB))
    collected = collect(course, inbox, mod)
    assert {(c.student, c.status) for c in collected} == {(s, "new") for s in CLASS}
    gina = course.root / "submitted" / "gina" / mod.name  # handed in through the exchange, without the notebook
    gina.mkdir(parents=True)
    (gina / "notes.txt").write_text("I forgot the notebook")
    rows = autograde(course, mod, timeout=TIMEOUT, jobs=2)
    return {r.student: r for r in rows}


CLASS = ("alice", "bob", "carol", "dave", "eve", "frank", "henry", "ivan", "judy")
IGNORES_SIGINT = "import signal\n        for sig in (signal.SIGINT, signal.SIGTERM):\n" \
                 "            signal.signal(sig, signal.SIG_IGN)\n        while True:\n            try:\n" \
                 "                __import__('time').sleep(.1)\n            except BaseException:\n                pass"
# at import time, in 1 MiB pieces: the answer process never holds more than one, so neither may tito
PRINTS_300_MIB = 'SUPPORTED_KINDS = "biuf"\nimport sys as _sys\nfor _ in range(300):\n    _sys.stdout.write("x" * 2**20)'


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
    expected["test-arithmetic"] = 0  # `neg` never returns
    assert {k: s for k, (s, _) in dave.scores.items()} == expected
    assert dave.timed_out == ["test-arithmetic"] and not dave.died


def test_edited_locked_cell_is_detected_and_graded_with_the_original(class01):
    eve, expected = class01["eve"], full(class01["alice"])
    expected["test-matmul"] = 0  # nbgrader put the original test back, and eve's matmul is wrong
    assert {k: s for k, (s, _) in eve.scores.items()} == expected
    assert eve.changed == ["test-matmul"]


def test_a_check_that_ignores_every_interrupt_is_stopped_and_the_rest_still_run(class01):
    frank, expected = class01["frank"], full(class01["alice"])
    expected["test-shape-ops"] = 0  # killed at the time limit; the answer process starts again for indexing
    assert {k: s for k, (s, _) in frank.scores.items()} == expected
    assert frank.timed_out == ["test-shape-ops"] and not frank.died
    assert frank.failures["test-shape-ops"].startswith("timed out")


def test_a_notebook_that_ends_its_process_when_imported_scores_zero_and_says_so(class01):
    henry = class01["henry"]
    assert henry.scores.keys() == class01["alice"].scores.keys() and henry.total == 0
    assert henry.died and "ended with an error before it answered a single check" in henry.died, henry.died
    assert "3" not in henry.died.partition(": ")[2], "the exit status is the student's to choose: never quoted"
    assert not (henry.timed_out or henry.error)


def test_a_huge_allocation_costs_its_graded_cell_only(class01):
    "The sandbox's address-space limit makes it a MemoryError: an answer (wrong), not a crash; the rest still run."
    ivan, expected = class01["ivan"], full(class01["alice"])
    expected["test-elementwise"] = 0
    assert {k: s for k, (s, _) in ivan.scores.items()} == expected
    assert "MemoryError" in ivan.failures["test-elementwise"], ivan.failures
    assert not (ivan.died or ivan.timed_out or ivan.error)


def test_printing_300_mib_scores_as_the_same_work(class01):
    judy, alice = class01["judy"], class01["alice"]
    assert judy.scores == alice.scores and not (judy.flood or judy.died or judy.error or judy.limits)


def test_tito_stays_small_while_a_submission_prints_300_mib(course, class01):
    "tito, its nbgrader and the answer process together: none of them ever held the 300 MiB (peak RSS < 300 MiB)."
    code = ("import resource, subprocess, sys\n"
            "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.stderr.write(done.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, *_tito(), "nbgrader", "autograde", "01", "--student", "judy",
                           "--timeout", "60"], cwd=course.root, env=_bare_env(), capture_output=True, text=True,
                          timeout=600)
    status, peak_kib = (int(x) for x in done.stdout.split())
    assert status == 0, done.stderr
    assert peak_kib < 300 * 1024, f"a process of tito's held {peak_kib // 1024} MiB"
    assert scores(course, course.module("01"), ["judy"])[0].scores == class01["alice"].scores


def test_a_missing_notebook_scores_zero_and_says_so(class01):
    gina = class01["gina"]
    assert gina.missing and gina.total == 0 and gina.scores.keys() == class01["alice"].scores.keys()
    assert not gina.error  # the reason is `notebook missing`, not an nbgrader error


def test_one_job_gives_the_same_scores_as_two(course, class01):
    again = {r.student: r for r in autograde(course, course.module("01"), ["alice", "carol", "eve", "frank", "henry"],
                                             timeout=TIMEOUT, jobs=1)}
    for student, row in again.items():
        assert (row.scores, row.changed, row.timed_out, row.failures, why(row)) == \
            (class01[student].scores, class01[student].changed, class01[student].timed_out,
             class01[student].failures, why(class01[student])), student


def test_report_reads_the_same_scores_from_the_gradebook(course, class01):
    again = {r.student: r for r in scores(course, course.module("01"))}
    assert {s: r.scores for s, r in again.items()} == {s: r.scores for s, r in class01.items()}
    assert again["dave"].timed_out == ["test-arithmetic"] and again["eve"].changed == ["test-matmul"]


def test_feedback_html(course, class01):
    paths = feedback(course, course.module("01"), ["carol"])
    assert [p.name for p in paths] == ["01_tensor.html"] and paths[0].parent.parent.name == "carol"
    assert "test-reductions" in paths[0].read_text(encoding="utf-8")


def test_report_command_prints_the_table_with_autogrades_why_column(course, class01):
    done = subprocess.run([*_tito(), "nbgrader", "report", "01"], cwd=course.root, env=_bare_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for student in class01:
        assert student in done.stdout
    assert "dave: timed out" in done.stdout and "eve: edited locked cells test-matmul" in done.stdout
    assert "frank: timed out (cell_timeout, per graded cell) in test-shape-ops" in done.stdout
    assert "henry: crashed while answering test-constructor: the answer process ended with an error before it " \
           "answered a single check" in done.stdout
    assert "gina: notebook missing" in done.stdout
    shown = {line.split("│")[1].strip(): line.split("│")[-2].strip() for line in done.stdout.splitlines()
             if line.count("│") > 3}
    assert shown == {s: ", ".join(why(r)) for s, r in class01.items()}  # what autograde returned, row by row
    assert shown["dave"] == "timed out" and shown["eve"] == "locked cell edited" and shown["gina"] == "notebook missing"
    assert shown["henry"] == "crashed"
    assert shown["alice"] == shown["bob"] == shown["carol"] == shown["ivan"] == shown["judy"] == ""


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
