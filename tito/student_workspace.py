"""Course repositories and student workspaces.

A *course repository* holds the notebooks with their solutions (the instructor's checkout). A *student
workspace* is made from it by `tito student init DIR`: the nbgrader release notebooks in `modules/` (and a
pristine copy in `release/`), the module test suites, tito, and a `tinytorch` package that holds only what
the student has exported so far. Its `settings.ini` says `[workspace] kind = student`.

`tito module reset NN` (student workspaces only) saves the student's notebook to a timestamped backup in
`[workspace] backup_dir`, then restores the release notebook.

The workspace's paths (release folder, settings-named folders) are `Workspace`'s own (`tito.workspace`), which
`tito.grading` uses too: grading never imports this module, and this one imports grading only to have nbgrader
generate stale release notebooks for a new student workspace. The commands are `tito.commands.student` and
`tito module reset` (`tito.commands.module`).
"""
from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from tito.workspace import SETTINGS_FILE, Module, TitoError, Workspace

# Test folders that only make sense next to the solutions; a student workspace does not get them.
INSTRUCTOR_ONLY_TESTS = ("nbgrader", "integration", "tito")
# Copied into a student workspace when the course repository has them (README.md: pyproject's `readme`).
OPTIONAL_FILES = ("README.md", "LICENSE", ".gitignore", "docs/GRADING.md")
OPTIONAL_DIRS = ("data",)
STUDENT_GUIDE = "docs/STUDENT_README.md"
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", ".pytest_cache")


# --- student workspace ------------------------------------------------------------------------------
def _copy_tests(src: Path, dst: Path):
    "The module test suites and shared test files, without the instructor-only folders."
    dst.mkdir(parents=True, exist_ok=True)
    for item in sorted(src.iterdir()):
        if item.name in INSTRUCTOR_ONLY_TESTS or _IGNORE(str(src), [item.name]):
            continue
        if item.is_dir():
            shutil.copytree(item, dst / item.name, ignore=_IGNORE)
        else:
            shutil.copy2(item, dst / item.name)


def mark_student_settings(text: str) -> str:
    "settings.ini text with `kind = student` in its [workspace] section (added or replaced), comments kept."
    out, section, done = [], None, False
    line_kind = ("# Made by `tito student init`: a student workspace (instructor commands are refused here).\n"
                 "kind = student\n")
    for line in text.splitlines(keepends=True):
        header = re.match(r"^\s*\[([^\]]+)\]", line)
        if header:
            section = header.group(1).strip()
        elif section == "workspace" and re.match(r"^\s*kind\s*[=:]", line):
            continue  # replaced below
        out.append(line if line.endswith("\n") else line + "\n")
        if header and section == "workspace" and not done:
            out.append(line_kind)
            done = True
    if not done:
        out.append("\n[workspace]\n" + line_kind)
    return "".join(out)


def _copy_package_skeleton(lib: Path, dest_lib: Path):
    """The package as a student starts it: the hand-written `__init__.py` of the package and of `core/`, no
    exported module (nbdev writes those, and `_modidx.py`, when the student exports)."""
    for rel in (Path("__init__.py"), Path("core") / "__init__.py"):
        target = dest_lib / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (lib / rel).is_file():
            shutil.copy2(lib / rel, target)
        else:
            target.write_text("", encoding="utf-8")


def _fill_workspace(ws: Workspace, dest: Path, modules: list[Module]):
    "Copy what a student workspace holds from the course repository `ws` into the empty folder `dest`."
    shutil.copy2(ws.root / "pyproject.toml", dest / "pyproject.toml")
    settings = (ws.root / SETTINGS_FILE).read_text(encoding="utf-8")
    (dest / SETTINGS_FILE).write_text(mark_student_settings(settings), encoding="utf-8")
    for name in OPTIONAL_FILES:
        if (ws.root / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ws.root / name, dest / name)
    if (ws.root / STUDENT_GUIDE).is_file():  # the workspace's README is the student guide, not the course's
        shutil.copy2(ws.root / STUDENT_GUIDE, dest / "README.md")
    if (dest / ".gitignore").is_file():  # here release/ is the pristine copy `tito module reset` needs: keep it
        release = ws.rel(ws.release_dir).strip("/")
        lines = (dest / ".gitignore").read_text(encoding="utf-8").splitlines(keepends=True)
        (dest / ".gitignore").write_text("".join(x for x in lines if x.strip().strip("/") != release), encoding="utf-8")
    for name in ("tito", "tools", *OPTIONAL_DIRS):
        if (ws.root / name).is_dir():
            shutil.copytree(ws.root / name, dest / name, ignore=_IGNORE)
    if ws.tests_dir.is_dir():
        _copy_tests(ws.tests_dir, dest / ws.rel(ws.tests_dir))
    _copy_package_skeleton(ws.lib_dir, dest / ws.rel(ws.lib_dir))
    for module in modules:
        for folder in (ws.modules_dir, ws.release_dir):  # the student's copy, and a pristine one for reset
            shutil.copytree(ws.released(module).folder, dest / ws.rel(folder) / module.name, ignore=_IGNORE)


def stale_releases(ws: Workspace) -> list[Module]:
    "Modules whose release notebook is missing or older than the source notebook (nbgrader must generate them)."
    from tito.grading.judge import expected_file

    return [m for m in ws.modules() if not ws.released(m).notebook.is_file()
            or ws.released(m).notebook.stat().st_mtime < m.notebook.stat().st_mtime
            or not expected_file(ws.released(m).notebook).is_file()]


def init_student_workspace(ws: Workspace, dest: Path, *, generate=None, only: Optional[list[Module]] = None,
                           progress=None) -> list[Module]:
    """Make a student workspace at `dest` from the course repository `ws`; the released modules (all of them, or
    `only` these: the rest come later through `tito fetch`).

    Modules whose release notebook is missing or older than the source notebook are generated first, with
    `generate(ws, modules)` (default: `tito.grading.generate`, i.e. nbgrader); `progress(message)` hears of it."""
    dest = Path(dest).expanduser().resolve()
    if ws.is_student:
        raise TitoError(f"{ws.root} is a student workspace; run `tito student init` in the course repository")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise TitoError(f"{dest} already exists and is not empty; choose a new folder")
    modules = ws.modules() if only is None else list(only)
    if not modules:
        raise TitoError(f"no modules in {ws.rel(ws.modules_dir)}/")
    if stale := [m for m in stale_releases(ws) if m in modules]:
        if generate is None:
            from tito.grading.generate import generate  # nbgrader: only when there is a release to make
        if progress:
            progress(f"generating the student version of {', '.join(m.name for m in stale)} with nbgrader")
        generate(ws, stale)

    # Build it beside `dest` and rename at the end, so a failure leaves no half-made workspace.
    dest.parent.mkdir(parents=True, exist_ok=True)
    build = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tito-partial", dir=dest.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        build.chmod(0o777 & ~umask)  # mkdtemp makes it private; a workspace is an ordinary folder
        _fill_workspace(ws, build, modules)
        if dest.exists():
            dest.rmdir()  # empty, checked above
        os.replace(build, dest)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    return [ws.released(m) for m in modules]


def this_venv() -> Path:
    "The virtual environment tito runs in; a TitoError when it runs in none."
    if sys.prefix == sys.base_prefix:
        raise TitoError(f"--use-this-venv needs tito to run in a virtual environment (.venv/bin/tito); "
                        f"this Python is {sys.executable}")
    return Path(sys.prefix)


def _has_build_backend() -> bool:
    "Whether this Python has the setuptools that pyproject.toml builds with (so pip needs no package index)."
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("setuptools").split(".")[0]) >= 77
    except (PackageNotFoundError, ValueError):
        return False


def serve_from_this_venv(dest: Path) -> Path:
    """Make the virtual environment tito runs in serve the student workspace at `dest` (a self-learner's one
    environment): the workspace's tito and tinytorch installed into it in place (`pip install -e --no-deps`: the
    course's packages are there already), and `dest/.venv` a link to it, so the student guide's
    `.venv/bin/tito` works in `dest`. The virtual environment's folder."""
    venv = this_venv()
    dest = Path(dest).expanduser().resolve()
    link = dest / ".venv"
    if link.exists() or link.is_symlink():
        raise TitoError(f"{link} already exists; remove it, or make the workspace's own venv as its README says")
    offline = ["--no-build-isolation"] if _has_build_backend() else []  # else pip fetches setuptools to build
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", *offline, "-e", str(dest)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise TitoError(f"pip could not install {dest} into {venv}: {last}")
    link.symlink_to(venv, target_is_directory=True)
    return venv


# --- reset ------------------------------------------------------------------------------------------
def backup_path(ws: Workspace, module: Module, now: Optional[_dt.datetime] = None) -> Path:
    "A new, unused backup file: `<[workspace] backup_dir>/<NN_topic>-YYYYmmdd-HHMMSS.ipynb`."
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    folder = ws.setting_path("workspace", "backup_dir", ".tito/backups")
    path, n = folder / f"{module.name}-{stamp}.ipynb", 1
    while path.exists():
        n += 1
        path = folder / f"{module.name}-{stamp}-{n}.ipynb"
    return path


def reset_module(ws: Workspace, module: Module, now: Optional[_dt.datetime] = None) -> Optional[Path]:
    """Put the release notebook of `module` back in a student workspace; the backup made, or None.

    The student's notebook is first copied to a new backup file, and the copy is checked, unless it is missing
    or already identical to the release. Files the release has beside the notebook are restored if missing.
    When a folder cannot be written (a read-only `modules/`), nothing is changed and the error is one line."""
    if not ws.is_student:
        raise TitoError("`tito module reset` is for student workspaces (made by `tito student init DIR`); "
                        "here it would overwrite a notebook that holds the solutions")
    release = ws.released(module)
    if not release.notebook.is_file():
        raise TitoError(f"the release copy {ws.rel(release.notebook)} is missing, so there is nothing to reset to")
    pristine = release.notebook.read_bytes()
    current = module.notebook.read_bytes() if module.notebook.exists() else None
    extras = [(extra, module.folder / extra.relative_to(release.folder)) for extra in sorted(release.folder.rglob("*"))
              if extra.is_file() and extra != release.notebook]
    extras = [(extra, target) for extra, target in extras if not target.exists()]
    if current == pristine and not extras:
        return None
    partial = module.notebook.with_name(f".{module.notebook.name}.tito-partial")
    try:  # first prove the module folder is writable, so a failure below leaves everything as it was
        module.folder.mkdir(parents=True, exist_ok=True)
        if current != pristine:
            partial.write_bytes(pristine)
    except OSError as e:
        raise TitoError(f"cannot reset module {module.number}: {ws.rel(module.folder)} is not writable "
                        f"({e.strerror or e}); nothing was changed") from None
    backup = None
    if current is not None and current != pristine:
        backup = backup_path(ws, module, now)
        try:
            backup.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(module.notebook, backup)
            if backup.read_bytes() != current:
                raise OSError(f"the copy in {ws.rel(backup)} differs from the notebook")
        except OSError as e:
            partial.unlink(missing_ok=True)
            if backup.exists():
                backup.unlink()
            raise TitoError(f"could not back up {ws.rel(module.notebook)} to {ws.rel(backup.parent)}/ "
                            f"({e.strerror or e}); nothing was reset") from None
    if current != pristine:
        os.replace(partial, module.notebook)
    try:
        for extra, target in extras:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(extra, target)
    except OSError as e:
        raise TitoError(f"restored {ws.rel(module.notebook)}, but not the files beside it ({e.strerror or e})") from None
    return backup
