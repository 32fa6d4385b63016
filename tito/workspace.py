"""The course workspace: where it is, its settings, its paths and modules, and the environment tito runs tools in.

It imports no other tito module, so any of them can import it (tito.grading finds the workspace's paths here)."""
from __future__ import annotations

import configparser
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

SETTINGS_FILE = "settings.ini"
STUDENT = "student"  # settings.ini [workspace] kind of a workspace made by `tito student init`
MODULE_FOLDER = re.compile(r"^(\d{2})_(\w+)$")  # modules/NN_topic/
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")  # set for the kernels and tests tito runs


class TitoError(Exception):
    "A problem tito reports as one line (no traceback) before exiting non-zero."


@dataclass(frozen=True)
class Module:
    "One course module: the folder `modules/NN_topic/` and the notebook `NN_topic.ipynb` inside it."
    number: str  # "01"
    name: str  # "01_tensor"
    folder: Path

    @property
    def topic(self) -> str:
        return self.name[3:]

    @property
    def notebook(self) -> Path:
        return self.folder / f"{self.name}.ipynb"


class Workspace:
    "A course folder: `settings.ini` (with a [course] section) next to the modules folder it names."

    def __init__(self, root: Path, settings: configparser.ConfigParser):
        self.root, self.settings = root, settings

    @classmethod
    def find(cls, root: str | Path | None = None) -> Workspace:
        "The workspace at `root`, else at $TITO_ROOT, else the nearest one from the current folder upwards."
        root = root or os.environ.get("TITO_ROOT")
        if root:
            folder = Path(root).expanduser().resolve()
            workspace = cls._load(folder)
            if workspace is None:
                raise TitoError(f"{folder} is not a TinyTorch workspace (it needs {SETTINGS_FILE} "
                                "with a [course] section and a modules/ folder)")
            return workspace
        start = Path.cwd().resolve()
        if (workspace := cls.containing(start)) is not None:
            return workspace
        raise TitoError(f"no TinyTorch workspace in {start} or above (a folder with {SETTINGS_FILE} and modules/); "
                        "run tito inside the course folder or pass --root")

    @classmethod
    def containing(cls, path: str | Path) -> Workspace | None:
        "The nearest workspace at or above `path` (a file or folder), or None."
        path = Path(path).resolve()
        for folder in (path, *path.parents):
            if (workspace := cls._load(folder)) is not None:
                return workspace
        return None

    @classmethod
    def _load(cls, folder: Path) -> Workspace | None:
        "The workspace in `folder`, or None if `folder` is not one."
        settings_file = folder / SETTINGS_FILE
        if not settings_file.is_file():
            return None
        settings = configparser.ConfigParser()
        try:
            settings.read(settings_file, encoding="utf-8")
        except configparser.Error as e:
            raise TitoError(f"{settings_file} cannot be read: {str(e).splitlines()[0]}") from None
        if not settings.has_section("course"):
            return None
        workspace = cls(folder, settings)
        return workspace if workspace.modules_dir.is_dir() else None

    def setting_path(self, section: str, key: str, default: str) -> Path:
        "A folder or file named in settings.ini (`[section] key`, else `default`), under the workspace root."
        return self.root / self.settings.get(section, key, fallback=default)

    def limit(self, key: str, default: int) -> int:
        "settings.ini `[limits] key` (else `default`): a positive whole number, or a TitoError that says so."
        try:
            value = self.settings.getint("limits", key, fallback=default)
        except ValueError:
            value = 0
        if value < 1:
            raise TitoError(f"{SETTINGS_FILE} [limits] {key} must be a positive whole number, "
                            f"not {self.settings.get('limits', key)!r}")
        return value

    @property
    def modules_dir(self) -> Path:
        return self.setting_path("course", "modules_dir", "modules")

    @property
    def tests_dir(self) -> Path:
        return self.setting_path("course", "tests_dir", "tests")

    @property
    def lib_dir(self) -> Path:
        "The exported package, e.g. `tinytorch/`."
        return self.setting_path("course", "package", "tinytorch")

    @property
    def progress_file(self) -> Path:
        return self.setting_path("workspace", "progress_file", ".tito/progress.json")

    @property
    def is_student(self) -> bool:
        "True when `tito student init` made it (settings.ini: [workspace] kind = student)."
        return self.settings.get("workspace", "kind", fallback="course").strip() == STUDENT

    @property
    def release_dir(self) -> Path:
        "nbgrader's release folder: the student versions of the notebooks."
        return self.setting_path("nbgrader", "release_dir", "release")

    def released(self, module: Module) -> Module:
        "The release (student) version of `module`: `release/NN_topic/NN_topic.ipynb`."
        return Module(module.number, module.name, self.release_dir / module.name)

    @property
    def cell_timeout(self) -> int:
        return self.limit("cell_timeout", 300)

    @property
    def test_timeout(self) -> int:
        return self.limit("test_timeout", 900)

    def rel(self, path: Path) -> str:
        "`path` relative to the workspace root when it is inside it (for messages)."
        try:
            return str(Path(path).resolve().relative_to(self.root))
        except ValueError:
            return str(path)

    def modules(self) -> list[Module]:
        "Every `modules/NN_topic/` folder, in course order."
        found = [Module(m.group(1), folder.name, folder) for folder in self.modules_dir.iterdir()
                 if folder.is_dir() and (m := MODULE_FOLDER.match(folder.name))]
        return sorted(found, key=lambda module: module.name)

    def module(self, ident: str) -> Module:
        "The module named by `ident`: a number (`1`, `01`), a folder name (`01_tensor`) or a topic (`tensor`)."
        modules = self.modules()
        ident = ident.strip()
        if ident.isdigit():
            matches = [m for m in modules if int(m.number) == int(ident)]
        else:
            matches = [m for m in modules if ident in (m.name, m.topic)]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise TitoError(f"module {ident!r} is ambiguous: {', '.join(m.name for m in matches)}")
        known = ", ".join(m.name for m in modules) or "none"
        raise TitoError(f"unknown module {ident!r} (modules in {self.rel(self.modules_dir)}/: {known})")

    def tests_for(self, module: Module) -> Path:
        "The module's pytest suite, e.g. `tests/01_tensor/`."
        return self.tests_dir / module.name


def tool_env(pythonpath: Path | None = None) -> dict[str, str]:
    "os.environ for a subprocess: this Python's bin folder first on PATH, and `pythonpath` first on PYTHONPATH."
    env = dict(os.environ)
    env["PATH"] = python_first(env.get("PATH", ""))
    for name in BLAS_THREADS:  # BLAS's spinning threads oversubscribe a small, busy machine; the user's choice wins
        env.setdefault(name, "1")
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(pythonpath), env.get("PYTHONPATH")]))
    return env


def python_first(path: str) -> str:
    """A PATH with this Python's bin folder first, so the tools of a virtual environment that was never activated
    (jupyter, alembic) are found."""
    bindir = str(Path(sys.executable).parent)
    return os.pathsep.join([bindir, *(p for p in path.split(os.pathsep) if p and p != bindir)])
