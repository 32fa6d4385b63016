"""nbgrader for the course: its configuration from settings.ini, its API, and the folders it uses."""
from __future__ import annotations

import logging
import os
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from tito.workspace import Module, TitoError, Workspace, python_first
from tito.grading import sandbox
from tito.grading.gradebook import db_url

GRADEBOOK_LOCK = ".tito/gradebook.lock"


def _logger(verbose: bool) -> logging.Logger:
    log = logging.getLogger("tito.nbgrader")
    log.setLevel(logging.INFO)
    log.propagate = False
    if not log.handlers:
        log.addHandler(logging.NullHandler())
    stream = [h for h in log.handlers if getattr(h, "_tito_verbose", False)]
    if verbose and not stream:
        h = logging.StreamHandler(sys.stderr)
        h._tito_verbose = True
        # NbGraderAPI always probes the student exchange (/usr/local/share/nbgrader/exchange), which tito never uses
        h.addFilter(lambda record: f"{os.sep}exchange{os.sep}" not in record.pathname)
        log.addHandler(h)
    elif not verbose:
        for h in stream:
            log.removeHandler(h)
    return log


@dataclass(frozen=True)
class Grading:
    "How submissions are run when autograding (picklable: worker processes get it)."
    root: str  # the course workspace
    timeout: Optional[int] = None  # seconds for a graded cell's checks (None: settings.ini [limits] cell_timeout)
    bwrap: str = ""  # the sandbox program; "" runs the answer process unprotected (--no-sandbox)
    library: str = ""  # the package copy the answer process imports beside the submission (sandbox.grading_library)
    scratch: str = ""  # each answer process's folders go here (autograde removes it, even after Ctrl-C)
    limits: sandbox.Limits = sandbox.Limits()
    verbose: bool = False
    expected: str = ""  # a JSON file of the course's answers to every probe (autograde.autograde writes it)


def exchange_root(ws: Workspace) -> Optional[Path]:
    "settings.ini [nbgrader] exchange_dir (relative to the workspace root), or None for nbgrader's default."
    value = ws.settings.get("nbgrader", "exchange_dir", fallback="").strip()
    return (ws.root / Path(value).expanduser()).resolve() if value else None


def exchange_folder(ws: Workspace) -> Path:
    "The nbgrader exchange: settings.ini [nbgrader] exchange_dir, else nbgrader's default."
    from nbgrader.exchange.default.exchange import Exchange

    return exchange_root(ws) or Path(Exchange.class_traits()["root"].default())


def exchange_outbound(ws: Workspace) -> Path:
    "Where the course's released modules wait in the exchange for students to fetch them."
    return exchange_folder(ws) / course_id(ws) / "outbound"


def exchange_inbound(ws: Workspace) -> Path:
    "Where students' submissions wait in the exchange to be collected."
    return exchange_folder(ws) / course_id(ws) / "inbound"


def hidden_from_sandbox(ws: Workspace) -> list[str]:
    """Folders the sandbox must never show, even under a folder it sees (a course in /usr/local/..., the course's
    package installed in site-packages)."""
    folders = {ws.root.resolve(), exchange_folder(ws), *sandbox.installed_copies(ws.lib_dir.name)}
    folders |= {_dir(ws, step).resolve() for step in ("submitted", "autograded", "feedback")}
    return sorted(str(f) for f in folders)


def nbgrader_config(ws: Workspace, grading: Optional[Grading] = None):
    "nbgrader's configuration for the course `ws`, from its settings.ini (and how to run submissions, `grading`)."
    from traitlets.config import Config

    s = ws.settings
    get = lambda key, default: s.get("nbgrader", key, fallback=default)
    c = Config()
    c.CourseDirectory.root = str(ws.root)
    c.CourseDirectory.course_id = s.get("course", "course_id", fallback="tinytorch")
    source = get("source_dir", ws.rel(ws.modules_dir))
    if (ws.root / source).resolve() != ws.modules_dir.resolve():
        raise TitoError(f"settings.ini: [nbgrader] source_dir ({source}) must be the modules folder "
                        f"([course] modules_dir, {ws.rel(ws.modules_dir)})")
    c.CourseDirectory.source_directory = source
    c.CourseDirectory.release_directory = get("release_dir", "release")
    c.CourseDirectory.submitted_directory = get("submitted_dir", "submitted")
    c.CourseDirectory.autograded_directory = get("autograded_dir", "autograded")
    c.CourseDirectory.feedback_directory = get("feedback_dir", "feedback")
    c.CourseDirectory.db_url = db_url(ws)  # settings.ini [nbgrader] db_url, else the SQLite gradebook file
    if (root := exchange_root(ws)) is not None:
        c.Exchange.root = str(root)
    from nbgrader.converters import GenerateFeedback

    from tito.grading.feedback import HideHiddenTests

    # GetGrades first: it reads the scores by cell id, which hiding the tests leaves alone
    feedback_steps = []
    for step in GenerateFeedback.class_traits()["preprocessors"].default():
        feedback_steps += [step, HideHiddenTests] if step.__name__ == "GetGrades" else [step]
    c.GenerateFeedback.preprocessors = feedback_steps
    if grading is not None:
        from nbgrader.converters import Autograde
        from nbgrader.preprocessors import Execute

        from tito.grading.autograde import JudgeCells

        c.Autograde.autograde_preprocessors = [JudgeCells if p is Execute else p
                                               for p in Autograde.class_traits()["autograde_preprocessors"].default()]
        c.JudgeCells.grading = grading
    return c


@contextmanager
def _quiet_sqlalchemy():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="sqlalchemy")
        warnings.filterwarnings("ignore", message=".*not in session.*")
        yield


def new_api(ws: Workspace, verbose: bool = False, grading: Optional[Grading] = None):
    "An `NbGraderAPI` for the course `ws` (nbgrader_api is the usual way; this one outlives a `with` block)."
    os.environ["PATH"] = python_first(os.environ.get("PATH", ""))  # nbgrader runs `alembic` to make a gradebook
    with _quiet_sqlalchemy():
        from nbgrader.apps import NbGraderAPI

        return NbGraderAPI(config=nbgrader_config(ws, grading), log=_logger(verbose))


@contextmanager
def nbgrader_api(ws: Workspace, verbose: bool = False, grading: Optional[Grading] = None):
    "An `NbGraderAPI` for the course `ws`, with PATH fixed and SQLAlchemy's warnings silenced."
    with _quiet_sqlalchemy():
        yield new_api(ws, verbose, grading)


def _error_line(result: dict) -> str:
    "The most telling line of a failed nbgrader call."
    boring = ("There was an error processing", "Please see the", "Traceback")
    for line in (result.get("log") or "").splitlines():
        if line.startswith("[ERROR]") and not any(b in line for b in boring):
            return line[len("[ERROR]"):].strip()
    lines = [x for x in (result.get("error") or "").strip().splitlines() if x.strip()]
    return lines[-1].strip() if lines else "unknown nbgrader error"


def instructor_workspace() -> Workspace:
    "The course repository tito runs in; nbgrader needs the notebooks with solutions, not a student workspace."
    ws = Workspace.find()
    if ws.is_student:
        raise TitoError("this is a student workspace; the nbgrader commands run in the course repository")
    return ws


def course_id(ws: Workspace) -> str:
    "settings.ini [course] course_id: nbgrader's course in the exchange."
    return ws.settings.get("course", "course_id", fallback="tinytorch")


def _dir(ws: Workspace, step: str) -> Path:
    "nbgrader's folder for `step` (submitted, autograded, feedback), from settings.ini [nbgrader]."
    return ws.setting_path("nbgrader", f"{step}_dir", step)


def _students(ws: Workspace, step: str, mod: Module) -> list[str]:
    "Students with a folder for `mod` in nbgrader's `step` folder."
    base = _dir(ws, step)
    return sorted(d.parent.name for d in base.glob(f"*/{mod.name}") if d.is_dir()) if base.is_dir() else []


