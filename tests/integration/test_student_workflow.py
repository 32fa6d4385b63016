"""The student's side, end to end, on temporary copies: `tito student init` makes a workspace from the nbgrader
release; installed in its own virtual environment it runs `tito module complete 01`, which fails listing the
unfinished exercises by grade_id until the solution is in; `tito module reset` keeps a backup.

The workspace's virtual environment takes its third-party packages from this test run's environment (a .pth
file) instead of downloading them again; tito and tinytorch are installed from the workspace itself, as
`pip install -e ".[dev]"` does.
"""
import datetime
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from tito.workspace import TitoError, Workspace
from tito.student_workspace import init_student_workspace, reset_module

REPO = Path(__file__).resolve().parents[2]
COURSE_FILES = ("settings.ini", "pyproject.toml", "README.md", ".gitignore", "modules", "tinytorch", "tito", "tools",
                "tests", "docs")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", ".pytest_cache")


def bare_env(**extra) -> dict:
    "No virtual environment on PATH and none activated: tools must be called by their full path."
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PATH", "TITO_ROOT", "PYTHONPATH")}
    return {**env, "PATH": "/usr/bin:/bin", "COLUMNS": "160", **extra}


def tito_here() -> list[str]:
    script = Path(sys.executable).with_name("tito")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "tito"]


def run(cmd, cwd, timeout=600) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=bare_env(), capture_output=True, text=True,
                          timeout=timeout)


def copy_course(dest: Path) -> Workspace:
    dest.mkdir(parents=True)
    for name in COURSE_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=SKIP)
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return Workspace.find(dest)


def make_venv(root: Path) -> Path:
    "`python -m venv .venv && pip install -e .` for the workspace at `root`; the venv's bin folder."
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=bare_env())
    python = venv / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip()
    Path(purelib, "_test_run_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    done = run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", "."], root)
    assert done.returncode == 0, done.stderr
    return venv / "bin"


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Workspace:
    return copy_course(tmp_path_factory.mktemp("course") / "tinytorch-course")


@pytest.fixture(scope="module")
def student(course, tmp_path_factory):
    "A workspace made with `tito student init` (which generates the release), installed in its own venv."
    root = tmp_path_factory.mktemp("home") / "my-tinytorch"
    done = run([*tito_here(), "student", "init", root], course.root)
    assert done.returncode == 0, done.stdout + done.stderr
    return Workspace.find(root), make_venv(root)


def test_workspace_holds_the_release_and_an_empty_package(course, student):
    ws, bindir = student
    assert ws.is_student and not course.is_student
    files = sorted(p.relative_to(ws.lib_dir).as_posix() for p in ws.lib_dir.rglob("*") if p.is_file())
    assert files == ["__init__.py", "core/__init__.py"]
    assert (ws.lib_dir / "__init__.py").read_bytes() == (course.lib_dir / "__init__.py").read_bytes()
    assert [m.name for m in ws.modules()] == [m.name for m in course.modules()]
    for mod in course.modules():
        release = course.released(mod).notebook.read_bytes()
        assert ws.module(mod.name).notebook.read_bytes() == release
        assert ws.released(mod).notebook.read_bytes() == release
        assert "### BEGIN SOLUTION" not in release.decode()
    assert (ws.root / "tests" / "01_tensor").is_dir() and not (ws.root / "tests" / "nbgrader").exists()
    for name in ("pyproject.toml", "tito/cli.py", "tools/nbsync.py"):
        assert (ws.root / name).is_file()
    # the workspace's README is the student guide, not the course repository's README
    assert (ws.root / "README.md").read_bytes() == (course.root / "docs" / "STUDENT_README.md").read_bytes()
    assert "release/" not in (ws.root / ".gitignore").read_text().split()  # reset's pristine copy is kept in git
    where = run([bindir / "python", "-c", "import tinytorch, tito; print(tinytorch.__file__, tito.__file__)"], "/")
    assert where.stdout.split() == [str(ws.lib_dir / "__init__.py"), str(ws.root / "tito" / "__init__.py")]


def test_complete_lists_unfinished_exercises_then_passes_with_the_solution(course, student):
    ws, bindir = student
    source = nbformat.read(course.module("01").notebook, as_version=4)
    exercises = [c.metadata["nbgrader"]["grade_id"] for c in source.cells
                 if c.metadata.get("nbgrader", {}).get("solution")]
    assert exercises
    first = run([bindir / "tito", "module", "complete", "01"], ws.root)
    assert first.returncode != 0
    for gid in exercises:
        assert f"exercise `{gid}` not done yet" in first.stdout, gid
    assert "not complete" in first.stdout

    shutil.copy2(course.module("01").notebook, ws.module("01").notebook)
    second = run([bindir / "tito", "module", "complete", "01"], ws.root)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr
    assert "module 01 complete" in second.stdout
    exported = ws.lib_dir / "core" / "tensor.py"
    assert exported.is_file() and "NotImplementedError()" not in exported.read_text()


@pytest.fixture
def fresh_student(course, tmp_path) -> Workspace:
    "Another workspace from the same release (no venv needed for reset)."
    init_student_workspace(course, tmp_path / "ws")
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
