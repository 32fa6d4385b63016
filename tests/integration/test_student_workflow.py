"""The student's side, on temporary copies: `tito module reset` keeps a backup, and the commands a student workspace
refuses. The journey itself (init, the one environment, `tito module complete` for every module) is
`test_journey.py`.
"""
import datetime

import nbformat
import pytest

from course_copies import copy_course, run, tito_here
from tito.workspace import TitoError, Workspace
from tito.student_workspace import init_student_workspace, reset_module


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Workspace:
    return copy_course(tmp_path_factory.mktemp("course") / "tinytorch-course")


@pytest.fixture
def fresh_student(course, tmp_path) -> Workspace:
    "A workspace of module 01 alone (its release is all nbgrader makes here; no venv needed for reset)."
    init_student_workspace(course, tmp_path / "ws", only=[course.module("01")])
    return Workspace.find(tmp_path / "ws")


def test_reset_keeps_a_backup_of_the_students_notebook(fresh_student):
    ws = fresh_student
    mod = ws.module("01")
    nb = nbformat.read(mod.notebook, as_version=4)
    nb.cells[0].source += "\n\nMy notes: broadcasting goes right to left."
    nbformat.write(nb, mod.notebook)
    mine = mod.notebook.read_bytes()

    done = run([*tito_here(), "module", "reset", "01"], ws.root)
    assert done.returncode == 0, done.stderr
    backups = sorted((ws.root / ".tito" / "backups").glob("01_tensor-*.ipynb"))
    assert len(backups) == 1 and backups[0].read_bytes() == mine
    assert f"saved your notebook to .tito/backups/{backups[0].name}" in done.stdout
    assert mod.notebook.read_bytes() == ws.released(mod).notebook.read_bytes()

    again = run([*tito_here(), "module", "reset", "01"], ws.root)  # nothing of the student's to lose
    assert again.returncode == 0 and "nothing to back up" in again.stdout
    assert len(list((ws.root / ".tito" / "backups").iterdir())) == 1


def test_reset_never_reuses_a_backup_name(fresh_student):
    ws = fresh_student
    mod = ws.module("01")
    when = datetime.datetime(2030, 1, 2, 3, 4, 5)
    made = []
    for attempt in ("first", "second"):
        mod.notebook.write_text(mod.notebook.read_text() + " " * len(attempt))  # still JSON, different bytes
        mine = mod.notebook.read_bytes()
        made.append(reset_module(ws, mod, now=when))
        assert made[-1].read_bytes() == mine
    assert [p.name for p in made] == ["01_tensor-20300102-030405.ipynb", "01_tensor-20300102-030405-2.ipynb"]


def test_reset_restores_a_deleted_notebook(fresh_student):
    ws = fresh_student
    mod = ws.module("01")
    mod.notebook.unlink()
    assert reset_module(ws, mod) is None
    assert mod.notebook.read_bytes() == ws.released(mod).notebook.read_bytes()


def test_reset_refuses_the_course_repository(course):
    mod = course.module("01")
    before = mod.notebook.read_bytes()
    done = run([*tito_here(), "module", "reset", "01"], course.root)
    assert done.returncode == 1 and "student workspaces" in done.stderr
    assert mod.notebook.read_bytes() == before
    with pytest.raises(TitoError):
        reset_module(course, mod)


def test_init_refuses_a_folder_that_is_not_empty(course, tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "thesis.tex").write_text("mine")
    done = run([*tito_here(), "student", "init", tmp_path / "taken"], course.root)
    assert done.returncode == 1 and "not empty" in done.stderr
    assert [p.name for p in (tmp_path / "taken").iterdir()] == ["thesis.tex"]


def test_instructor_commands_are_refused_in_a_student_workspace(fresh_student, tmp_path):
    for args in (["nbgrader", "generate", "--all"], ["student", "init", tmp_path / "again"]):
        done = run([*tito_here(), *args], fresh_student.root)
        assert done.returncode == 1 and "student workspace" in done.stderr, (args, done.stderr)
