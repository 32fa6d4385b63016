"""Helpers of the student-side integration tests: a copy of the course as a clone has it, its virtual environment,
and commands run as a person types them (no virtual environment activated, tools called by their full path).

A virtual environment made here takes its third-party packages from this test run's environment (a .pth file)
instead of downloading them again; tito and tinytorch are installed from the folder itself, as
`pip install -e ".[course]"` does.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from tito.workspace import Workspace

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
    "The course's files as a fresh clone has them, at `dest`."
    dest.mkdir(parents=True)
    for name in COURSE_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=SKIP)
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return Workspace.find(dest)


def make_venv(root: Path) -> Path:
    "`python3 -m venv .venv && .venv/bin/pip install -e \".[course]\"` in the folder `root`; the venv's bin folder."
    venv = root / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=bare_env())
    python = venv / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], root).stdout.strip()
    Path(purelib, "_test_run_packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    here = Path(sysconfig.get_paths()["scripts"])
    for script in here.iterdir():  # the packages' commands too (nbgrader runs `alembic`), as pip installs them
        if not (venv / "bin" / script.name).exists() and not script.name.startswith(("python", "activate", "pip", "tito")):
            (venv / "bin" / script.name).symlink_to(script)
    done = run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "-e", "."], root)
    assert done.returncode == 0, done.stderr
    return venv / "bin"
