"""Instructor workflow with nbgrader: generate student versions, collect, autograde, feedback, report.

Everything runs nbgrader in this process through `nbgrader.apps.NbGraderAPI`, configured from settings.ini
(no nbgrader_config.py needed). The course root is nbgrader's course directory: `[nbgrader] source_dir`
(the module notebooks, with solutions) is its source folder and each `NN_topic` folder is an assignment.

    tito nbgrader generate 01 | --all       source -> release/NN_topic/NN_topic.ipynb (+ gradebook entries)
    tito nbgrader release 01                release/NN_topic -> the nbgrader exchange (students fetch it)
    tito nbgrader collect PATH -a 01        PATH/<student>/*.ipynb or PATH/<student>.ipynb -> submitted/
    tito nbgrader collect 01 --exchange     the latest submission of each student in the exchange -> submitted/
    tito nbgrader autograde 01 [--jobs N]   run every submission in the sandbox (tito.sandbox), print the scores
    tito nbgrader feedback 01               feedback/<student>/NN_topic/NN_topic.html
    tito nbgrader report [01]               the score table again, from the gradebook

Autograding runs each submission's kernel in a bubblewrap sandbox with the limits of settings.ini [limits]
(`tito.sandbox`, `tito.kernel`); `--jobs N` grades N submissions at once in worker processes, each holding a lock
on the gradebook except while its notebook runs. The student side of the exchange is `tito.exchange`.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import nbformat
import typer

from tito import sandbox
from tito.course import Module, TitoError, Workspace, one_line
from tito.locking import file_lock

TIMEOUT_ERROR = "CellTimeoutError"  # the error nbgrader's Execute preprocessor records for a cell that ran too long
KERNEL_DIED, NOT_RUN = "KernelDied", "NotRun"  # what tito.kernel records for a dead kernel and the cells after it
GRADEBOOK_LOCK = ".tito/gradebook.lock"
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
_MARKERS = {"BEGIN SOLUTION": "solution", "END SOLUTION": "solution",
            "BEGIN HIDDEN TESTS": "grade", "END HIDDEN TESTS": "grade"}


# --- nbgrader setup ---------------------------------------------------------------------------------
def python_first_on_path(env: Optional[dict] = None) -> dict:
    """Put this interpreter's bin folder first on PATH (in `env`, default os.environ) and return it.

    nbgrader runs `alembic` from PATH when it creates a gradebook; from a virtual environment that was
    never activated, `alembic` is only found this way."""
    env = os.environ if env is None else env
    bindir = os.path.dirname(sys.executable)
    parts = [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir]
    env["PATH"] = os.pathsep.join([bindir, *parts])
    return env


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
    timeout: Optional[int] = None  # seconds per cell (None: settings.ini [limits] cell_timeout)
    bwrap: str = ""  # the sandbox program; "" runs kernels unprotected (--no-sandbox)
    library: str = ""  # the package copy a kernel may import (tito.sandbox.grading_library)
    scratch: str = ""  # the kernels' private folders go here (autograde removes it, even after Ctrl-C)
    limits: sandbox.Limits = sandbox.Limits()
    verbose: bool = False


def exchange_root(ws: Workspace) -> Optional[Path]:
    "settings.ini [nbgrader] exchange_dir (relative to the workspace root), or None for nbgrader's default."
    value = ws.settings.get("nbgrader", "exchange_dir", fallback="").strip()
    return (ws.root / Path(value).expanduser()).resolve() if value else None


def exchange_folder(ws: Workspace) -> Path:
    "The nbgrader exchange: settings.ini [nbgrader] exchange_dir, else nbgrader's default."
    from nbgrader.exchange.default.exchange import Exchange

    return exchange_root(ws) or Path(Exchange.class_traits()["root"].default())


def hidden_from_sandbox(ws: Workspace) -> list[str]:
    "Folders a sandboxed kernel must never see, even under a system folder it sees (a course in /usr/local/...)."
    folders = {ws.root.resolve(), exchange_folder(ws)}
    folders |= {_dir(ws, step).resolve() for step in ("submitted", "autograded", "feedback")}
    return sorted(str(f) for f in folders)


def nbgrader_config(ws: Workspace, timeout: Optional[int] = None, grading: Optional[Grading] = None):
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
    c.CourseDirectory.db_url = "sqlite:///" + str(ws.root / get("gradebook", "gradebook.db"))
    if (root := exchange_root(ws)) is not None:
        c.Exchange.root = str(root)
    limit = timeout if timeout is not None else ws.cell_timeout
    c.Execute.timeout = limit  # nbgrader's ExecutePreprocessor: seconds per cell
    c.ExecutePreprocessor.timeout = limit
    c.Execute.interrupt_on_timeout = True
    # Quiet the kernel's own start-up warnings (it still reports errors); cells' errors are in the notebook.
    c.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]
    from nbgrader.converters import GenerateFeedback

    from tito.hidden_tests import HideHiddenTests

    # GetGrades first: it reads the scores by cell id, which hiding the tests leaves alone
    feedback_steps = []
    for step in GenerateFeedback.class_traits()["preprocessors"].default():
        feedback_steps += [step, HideHiddenTests] if step.__name__ == "GetGrades" else [step]
    c.GenerateFeedback.preprocessors = feedback_steps
    if grading is not None:
        from nbgrader.converters import Autograde
        from nbgrader.preprocessors import Execute

        from tito.kernel import GradingExecute

        c.Autograde.autograde_preprocessors = [GradingExecute if p is Execute else p
                                               for p in Autograde.class_traits()["autograde_preprocessors"].default()]
        c.GradingExecute.gradebook_lock = str(ws.root / GRADEBOOK_LOCK)
        km = c.GradingKernelManager
        km.bwrap, km.library, km.hide = grading.bwrap, grading.library, hidden_from_sandbox(ws)
        km.run_root = grading.scratch
        for name, value in vars(grading.limits).items():
            km[name] = value
    return c


@contextmanager
def _quiet_sqlalchemy():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="sqlalchemy")
        warnings.filterwarnings("ignore", message=".*not in session.*")
        yield


def new_api(ws: Workspace, timeout: Optional[int] = None, verbose: bool = False, grading: Optional[Grading] = None):
    "An `NbGraderAPI` for the course `ws` (nbgrader_api is the usual way; this one outlives a `with` block)."
    python_first_on_path()
    with _quiet_sqlalchemy():
        from nbgrader.apps import NbGraderAPI

        return NbGraderAPI(config=nbgrader_config(ws, timeout, grading), log=_logger(verbose))


@contextmanager
def nbgrader_api(ws: Workspace, timeout: Optional[int] = None, verbose: bool = False,
                 grading: Optional[Grading] = None):
    "An `NbGraderAPI` for the course `ws`, with PATH fixed and SQLAlchemy's warnings silenced."
    with _quiet_sqlalchemy():
        yield new_api(ws, timeout, verbose, grading)


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


# --- generate -----------------------------------------------------------------------------------------
def lint_markers(notebook: Path, label: str = "") -> None:
    """Refuse nbgrader markers where nbgrader would mangle the cell (nbgrader matches them anywhere in a line,
    markdown included): solution markers only in solution code cells, hidden-test markers only in graded cells."""
    nb = nbformat.read(notebook, as_version=4)
    label = label or str(notebook)
    for i, cell in enumerate(nb.cells, 1):
        meta = cell.metadata.get("nbgrader", {})
        for marker, kind in _MARKERS.items():
            if marker in cell.source and not (cell.cell_type == "code" and meta.get(kind)):
                where = f"cell {i} ({cell.cell_type}{', ' + meta['grade_id'] if meta.get('grade_id') else ''})"
                raise TitoError(f"{label}: {where} contains {marker!r} outside a {kind} cell; nbgrader would "
                                "treat it as a marker (reword it, or fix the cell's nbgrader metadata)")


def generate(ws: Workspace, modules: Iterable[Module], verbose: bool = False) -> list[Path]:
    "nbgrader generate_assignment for each module; returns the release notebooks."
    modules = list(modules)
    for mod in modules:
        lint_markers(mod.notebook, ws.rel(mod.notebook))
    out = []
    with nbgrader_api(ws, verbose=verbose) as api:
        for mod in modules:
            result = api.generate_assignment(mod.name, force=True, create=True)
            if not result["success"]:
                raise TitoError(f"nbgrader could not generate {mod.name}: {_error_line(result)}")
            out.append(ws.released(mod).notebook)
    return out


# --- collect ------------------------------------------------------------------------------------------
@dataclass
class Collected:
    student: str
    source: Optional[Path]
    dest: Optional[Path] = None
    status: str = ""  # new, updated, unchanged, or why it cannot be collected


def valid_student_id(sid: str) -> bool:
    "Letters and digits, then also `.`, `_`, `@` and `-`: safe as a folder name, in nbgrader's records and in a shell."
    return bool(STUDENT_ID.fullmatch(sid))


def _pick_notebook(folder: Path, name: str) -> tuple[Optional[Path], str]:
    "The submitted notebook in a student's folder: the one called `name`, else the only notebook there."
    found = [p for p in sorted(folder.rglob("*.ipynb"))
             if not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    named = [p for p in found if p.name == name]
    if len(named) == 1:
        return named[0], ""
    if len(named) > 1:
        return None, f"{len(named)} notebooks called {name}"
    if len(found) == 1:
        return found[0], ""
    return None, f"no {name}" if not found else f"no {name} and {len(found)} other notebooks"


def examine(path: Path, mod: Module) -> list[Collected]:
    """What `path` holds for `mod`: one entry per student (the notebook to collect), and one per item that
    cannot be collected (`source` None, `status` says why). Nothing is written."""
    path = Path(path)
    if not path.is_dir():
        raise TitoError(f"{path} is not a folder of submissions")
    entries: dict[str, Collected] = {}
    problems = []
    for item in sorted(path.iterdir()):
        shown = repr(item.name)
        if item.name.startswith("."):
            problems.append(Collected(item.name, None, status=f"{shown} is hidden"))
            continue
        if item.is_dir():
            nb, why = _pick_notebook(item, mod.notebook.name)
            entry = Collected(item.name, nb, status=f"{shown}: {why}" if why else "")
        elif item.suffix == ".ipynb":
            entry = Collected(item.stem, item)
        else:
            problems.append(Collected(item.name, None, status=f"{shown} is not a notebook"))
            continue
        if not valid_student_id(entry.student):
            entry = Collected(entry.student, None, status=f"{shown} does not name a usable student id "
                                                          "(letters, digits, then also . _ @ -)")
        elif entry.student in entries:
            entries.pop(entry.student)
            entry = Collected(entry.student, None, status=f"{entry.student!r} handed in twice (a folder and a file)")
        elif entry.source is not None:
            try:
                nbformat.read(entry.source, as_version=4)
            except Exception as exc:  # noqa: BLE001 - any unreadable file is reported
                entry = Collected(entry.student, None, status=f"{shown} is not a readable notebook "
                                                              f"({type(exc).__name__})")
        if entry.source is None:
            problems.append(entry)
        else:
            entries[entry.student] = entry
    return list(entries.values()) + problems


def _problem_line(problems: list[Collected], where: str) -> str:
    shown = [p.status for p in problems[:8]] + ([f"and {len(problems) - 8} more"] if len(problems) > 8 else [])
    return (f"nothing collected: {len(problems)} item(s) in {where} cannot be collected: {'; '.join(shown)} "
            "(fix or remove them, then collect again)")


def collect(ws: Workspace, path: Path, mod: Module) -> list[Collected]:
    """Copy submissions from `path` into submitted/<student>/<assignment>/<notebook>.ipynb; all of them, or
    (when any item cannot be collected) none, with a one-line error naming every such item.

    `path` holds `<student>/…/<anything>.ipynb` folders (the notebook named like the module's is taken, or
    the only notebook there) or `<student>.ipynb` files, and nothing else."""
    entries = examine(path, mod)
    if problems := [e for e in entries if e.source is None]:
        raise TitoError(_problem_line(problems, str(path)))
    if not entries:
        raise TitoError(f"no submissions in {path} (expected <student>/<notebook>.ipynb or <student>.ipynb)")
    submitted = _dir(ws, "submitted")
    for e in entries:
        e.dest = submitted / e.student / mod.name / mod.notebook.name
        data = e.source.read_bytes()
        e.status = "new" if not e.dest.exists() else ("unchanged" if e.dest.read_bytes() == data else "updated")
        e.dest.parent.mkdir(parents=True, exist_ok=True)
        partial = e.dest.with_name(f".{e.dest.name}.tito-partial")
        partial.write_bytes(data)
        os.replace(partial, e.dest)
    return entries


def course_id(ws: Workspace) -> str:
    "settings.ini [course] course_id: nbgrader's course in the exchange."
    return ws.settings.get("course", "course_id", fallback="tinytorch")


# --- the exchange (the student side is tito.exchange) ---------------------------------------------------
def release(ws: Workspace, mod: Module, verbose: bool = False) -> Path:
    "Put the student version of `mod` in the exchange (generating it first when it is missing or stale)."
    student_version = ws.released(mod).notebook
    if not student_version.is_file() or student_version.stat().st_mtime < mod.notebook.stat().st_mtime:
        generate(ws, [mod], verbose=verbose)
    with nbgrader_api(ws, verbose=verbose) as api:
        api.config.ExchangeReleaseAssignment.force = True  # a corrected release replaces the old one
        result = api.release_assignment(mod.name)
    if not result["success"]:
        raise TitoError(f"nbgrader could not release {mod.name}: {_error_line(result)}")
    return exchange_folder(ws) / course_id(ws) / "outbound" / mod.name


def _inbound(ws: Workspace, mod: Module) -> list[tuple[str, Path]]:
    "(student id, folder) of every submission of `mod` in the exchange, as nbgrader's collect reads them."
    inbound = exchange_folder(ws) / course_id(ws) / "inbound"
    if not inbound.is_dir():
        raise TitoError(f"no inbound folder in the exchange ({inbound}): release a module first "
                        f"(tito nbgrader release {mod.number})")
    out = []
    for folder in sorted(inbound.iterdir()):
        parts = folder.name.rsplit("+", 3)
        if len(parts) >= 3 and parts[1] == mod.name:
            out.append((parts[0], folder))
    return out


def _timestamp(folder: Path) -> Optional[str]:
    stamp = folder / "timestamp.txt"
    return stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else None


def collect_from_exchange(ws: Workspace, mod: Module, verbose: bool = False) -> list[Collected]:
    """Copy each student's latest submission of `mod` from the exchange to submitted/ with nbgrader's collect;
    all of them, or none when a submission has a student id that is not usable."""
    found = _inbound(ws, mod)
    if bad := sorted({sid for sid, _ in found if not valid_student_id(sid)}):
        raise TitoError(f"nothing collected: submissions in the exchange have unusable student ids: "
                        f"{', '.join(map(repr, bad))} (letters, digits, then also . _ @ -; remove them from "
                        f"{exchange_folder(ws) / course_id(ws) / 'inbound'})")
    students = sorted({sid for sid, _ in found})
    target = lambda sid: _dir(ws, "submitted") / sid / mod.name
    before = {sid: _timestamp(target(sid)) for sid in students}
    if students:
        with nbgrader_api(ws, verbose=verbose) as api:
            result = api.collect(mod.name, update=True)
        if not result["success"]:
            raise TitoError(f"nbgrader could not collect {mod.name}: {_error_line(result)}")
    out = []
    for sid in students:
        after = _timestamp(target(sid))
        status = "new" if before[sid] is None else "unchanged" if after == before[sid] else "updated"
        if not (target(sid) / mod.notebook.name).is_file():
            status += f" (no {mod.notebook.name} in it: it will score 0)"
        out.append(Collected(sid, None, target(sid) / mod.notebook.name, f"{status}, submitted {after}"))
    return out


# --- autograde and scores -----------------------------------------------------------------------------
LIMIT_ERRORS = (  # (ename, words in its message) of a cell stopped by a sandbox limit, and the limit
    ("MemoryError", "", "the memory limit"),
    ("BlockingIOError", "Resource temporarily unavailable", "the process limit"),
    ("RuntimeError", "can't start new thread", "the process limit"),
    ("OSError", "File too large", "the file-size limit"),
)


@dataclass
class StudentScore:
    student: str
    scores: dict = field(default_factory=dict)  # grade_id -> (score, max_score)
    timed_out: list = field(default_factory=list)  # grade_ids (or "cell N") that hit the time limit
    changed: list = field(default_factory=list)  # locked cells edited or deleted in the submission
    error: str = ""
    missing: bool = False  # no notebook was handed in for the module
    died: str = ""  # "<cell>: <why>" when the kernel died (or was stopped at a limit) during the run
    not_run: int = 0  # cells that did not run because the kernel had died
    limits: list = field(default_factory=list)  # "<limit> in <cell> (<error>)": cells stopped by a sandbox limit
    failures: dict = field(default_factory=dict)  # grade_id -> the error of a graded cell that lost points

    @property
    def total(self) -> float:
        return sum(s for s, _ in self.scores.values())

    @property
    def max_total(self) -> float:
        return sum(m for _, m in self.scores.values())


def _dir(ws: Workspace, step: str) -> Path:
    "nbgrader's folder for `step` (submitted, autograded, feedback), from settings.ini [nbgrader]."
    return ws.setting_path("nbgrader", f"{step}_dir", step)


def _students(ws: Workspace, step: str, mod: Module) -> list[str]:
    "Students with a folder for `mod` in nbgrader's `step` folder."
    base = _dir(ws, step)
    return sorted(d.parent.name for d in base.glob(f"*/{mod.name}") if d.is_dir()) if base.is_dir() else []


def _cell_label(cell, index: int) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id") or f"cell {index}"


def _errors(notebook: Path) -> list[tuple[str, bool, str, str]]:
    "(label, graded, ename, evalue) of every error an autograded notebook recorded, in order."
    if not notebook.is_file():
        return []
    nb = nbformat.read(notebook, as_version=4)
    return [(_cell_label(c, i), bool(c.metadata.get("nbgrader", {}).get("grade")), o.get("ename", ""),
             str(o.get("evalue", ""))) for i, c in enumerate(nb.cells, 1) if c.cell_type == "code"
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def timed_out_cells(notebook: Path) -> list[str]:
    "Cells of an autograded notebook that nbgrader stopped at the time limit."
    return [label for label, _, ename, _ in _errors(notebook) if ename == TIMEOUT_ERROR]


def read_run(row: StudentScore, notebook: Path):
    "Fill in what the autograded notebook says about the run: time-outs, a dead kernel, limits, failures."
    for label, graded, ename, evalue in _errors(notebook):
        if ename == TIMEOUT_ERROR:
            row.timed_out.append(label)
        elif ename == KERNEL_DIED:
            row.died = f"{label}: {evalue}"
        elif ename == NOT_RUN:
            row.not_run += 1
            continue
        else:
            for name, words, limit in LIMIT_ERRORS:
                if ename == name and words in evalue:
                    row.limits.append(f"{limit} in {label} ({one_line(f'{ename}: {evalue}'.rstrip(': '))})")
        if graded and label in row.scores and row.scores[label][0] < row.scores[label][1]:
            row.failures.setdefault(label, one_line(f"{ename}: {evalue}".rstrip(": ")))


def changed_locked_cells(submission: Path, release: Path) -> list[str]:
    """Locked cells of the release that the submission edited ("test-x") or deleted ("test-x (deleted)"),
    by nbgrader's checksums. (Autograding grades with the original cells regardless.)"""
    from nbgrader.utils import is_locked

    if not submission.is_file() or not release.is_file():
        return []
    sub = nbformat.read(submission, as_version=4)
    by_id = {c.metadata["nbgrader"]["grade_id"]: c for c in sub.cells if c.metadata.get("nbgrader", {}).get("grade_id")}
    changed = []
    for cell in nbformat.read(release, as_version=4).cells:
        meta = cell.metadata.get("nbgrader", {})
        if not (is_locked(cell) and "checksum" in meta):
            continue
        theirs = by_id.get(meta["grade_id"])
        if theirs is None:
            changed.append(f"{meta['grade_id']} (deleted)")
        elif theirs.cell_type != cell.cell_type or _checksum(theirs) != meta["checksum"]:
            changed.append(meta["grade_id"])
    return changed


def _checksum(cell) -> Optional[str]:
    "nbgrader's checksum of a submitted cell; None when its nbgrader metadata was damaged."
    from nbgrader.utils import compute_checksum

    try:
        return compute_checksum(cell)
    except (KeyError, TypeError, AttributeError):
        return None


def _grade_order(notebook: Path) -> list[str]:
    if not notebook.is_file():
        return []
    nb = nbformat.read(notebook, as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def scores(ws: Workspace, mod: Module, students: Optional[list[str]] = None) -> list[StudentScore]:
    """Per-student, per-graded-cell scores of one module from the gradebook, with why points were lost: time-outs,
    a dead kernel, sandbox limits, edited locked cells, a missing notebook."""
    from nbgrader.api import MissingEntry

    students = students if students is not None else _students(ws, "submitted", mod)
    autograded, submitted = _dir(ws, "autograded"), _dir(ws, "submitted")
    release = ws.released(mod).notebook
    order = _grade_order(mod.notebook)
    rank = lambda gid: (order.index(gid) if gid in order else len(order), gid)
    out = []
    with nbgrader_api(ws) as api, api.gradebook as gb:
        for sid in students:
            row = StudentScore(sid)
            handed_in = submitted / sid / mod.name / mod.notebook.name
            row.missing = not handed_in.is_file()
            try:
                nb = gb.find_submission_notebook(mod.name, mod.name, sid)
                grades = {g.name: (float(g.score or 0.0), float(g.max_score)) for g in nb.grades}
                row.scores = {gid: grades[gid] for gid in sorted(grades, key=rank)}
            except MissingEntry:
                row.error = "" if row.missing else "not autograded"
                if row.missing:  # zero in every graded cell, as nbgrader gives a missing notebook
                    try:
                        cells = gb.find_notebook(mod.name, mod.name).grade_cells
                    except MissingEntry:
                        cells = []
                    row.scores = {c.name: (0.0, float(c.max_score)) for c in sorted(cells, key=lambda c: rank(c.name))}
            if not row.missing:
                read_run(row, autograded / sid / mod.name / mod.notebook.name)
                row.changed = changed_locked_cells(handed_in, release)
            out.append(row)
    return out


def _assignment_in_gradebook(ws: Workspace, mod: Module) -> bool:
    from nbgrader.api import MissingEntry

    with nbgrader_api(ws) as api, api.gradebook as gb:
        try:
            gb.find_notebook(mod.name, mod.name)
            return True
        except MissingEntry:
            return False


_APIS: dict = {}  # in a worker process: (Grading, module) -> its NbGraderAPI, reused for every student it grades


def grade_one(grading: Grading, module: str, student: str, api=None) -> str:
    """nbgrader autograde of one submission (in this process or a worker); '' or nbgrader's error in one line.
    The gradebook lock is held throughout, except while the notebook runs (tito.kernel.GradingExecute)."""
    ws = Workspace.find(grading.root)
    with file_lock(ws.root / GRADEBOOK_LOCK), _quiet_sqlalchemy():
        if api is None:
            api = _APIS.get((grading, module)) or _APIS.setdefault(
                (grading, module), new_api(ws, grading.timeout, grading.verbose, grading))
        result = api.autograde(module, student, force=True, create=True)
    return "" if result["success"] else _error_line(result)


def _grade_all(ws: Workspace, grading: Grading, module: str, students: list[str], jobs: int, done=None) -> dict:
    "Grade `students`, `jobs` at a time; student -> nbgrader's error ('' when fine). `done(student)` after each."
    errors = {}
    if jobs <= 1 or len(students) <= 1:
        api = new_api(ws, grading.timeout, grading.verbose, grading)
        with _noticing_ctrl_c() as interrupted:
            for sid in students:
                errors[sid] = grade_one(grading, module, sid, api)
                if interrupted:  # nbgrader turns Ctrl-C into a failed result: make it stop the class again
                    raise KeyboardInterrupt
                if done:
                    done(sid)
        return errors
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(students)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_ignore_ctrl_c)
    try:
        futures = {pool.submit(grade_one, grading, module, sid): sid for sid in students}
        for future in as_completed(futures):
            errors[futures[future]] = future.result()
            if done:
                done(futures[future])
    except BaseException as e:  # Ctrl-C too: stop the workers now (their sandboxes die with them)
        for worker in multiprocessing.active_children():
            worker.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(e, BrokenProcessPool):
            raise TitoError(f"a grading worker process died ({e}); the submissions it had not finished are not "
                            "graded: run autograde again") from None
        raise
    pool.shutdown(wait=True)
    return errors


@contextmanager
def _noticing_ctrl_c():
    "A list that gets an item when Ctrl-C (SIGINT) arrives during the block; Ctrl-C still interrupts."
    import signal

    seen: list = []

    def handler(signum, frame):
        seen.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: no handler, nothing noticed
        yield seen
        return
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_ctrl_c():
    "Workers leave Ctrl-C to the main process, which stops them."
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Interrupted(TitoError):
    "Ctrl-C during autograding."


def autograde(ws: Workspace, mod: Module, students: Optional[list[str]] = None, timeout: Optional[int] = None,
              verbose: bool = False, *, jobs: int = 1, sandboxed: bool = True, progress=None) -> list[StudentScore]:
    """nbgrader autograde for each submission of `mod` (all collected students by default), each cell limited
    to `timeout` seconds (settings.ini [limits] cell_timeout by default), `jobs` submissions at a time, each in the
    sandbox (unless not `sandboxed`) within settings.ini [limits] submission_*; returns the scores."""
    everyone = _students(ws, "submitted", mod)
    students = list(students) if students else everyone
    if not students:
        raise TitoError(f"no submissions for {mod.name}: "
                        f"run `tito nbgrader collect PATH --assignment {mod.number}` first")
    unknown = sorted(set(students) - set(everyone))
    if unknown:
        raise TitoError(f"no submission of {mod.name} from {', '.join(unknown)}")
    if bad := [s for s in students if not valid_student_id(s)]:
        raise TitoError(f"not a usable student id: {', '.join(map(repr, bad))} (rename its folder in "
                        f"{ws.rel(_dir(ws, 'submitted'))}/)")
    limits = sandbox.Limits.of(ws)
    bwrap = ""
    if sandboxed:
        bwrap = sandbox.require_bwrap()
        sandbox.Sandbox(bwrap, limits).check()
    if not _assignment_in_gradebook(ws, mod) or not ws.released(mod).notebook.is_file():
        generate(ws, [mod], verbose=verbose)
    graded: list[str] = []

    def done(sid: str):
        graded.append(sid)
        if progress:
            progress(len(graded), len(students), sid)

    with tempfile.TemporaryDirectory(prefix="tito-grading-") as tmp:
        library = sandbox.grading_library(ws, mod, Path(tmp) / "lib")
        os.chmod(tmp, 0o755)  # the sandbox's unprivileged user reads the package copy
        grading = Grading(str(ws.root), timeout, bwrap, str(library or ""), str(tmp), limits, verbose)
        try:
            errors = _grade_all(ws, grading, mod.name, students, jobs, done)
        except KeyboardInterrupt:
            rest = [s for s in students if s not in graded]
            raise Interrupted(f"autograde interrupted: {len(graded)} of {len(students)} submissions graded (their "
                              f"scores are in the gradebook); not graded: {', '.join(rest)}") from None
    rows = scores(ws, mod, students)
    for row in rows:
        if errors.get(row.student) and not row.missing:
            row.error = errors[row.student]
    return rows


def feedback(ws: Workspace, mod: Module, students: Optional[list[str]] = None, verbose: bool = False) -> list[Path]:
    "nbgrader generate_feedback for the autograded submissions of `mod`; returns the HTML files."
    done = _students(ws, "autograded", mod)
    students = list(students) if students else done
    missing = sorted(set(students) - set(done))
    if not students or missing:
        raise TitoError(f"nothing autograded for {mod.name}{' from ' + ', '.join(missing) if missing else ''}: "
                        f"run `tito nbgrader autograde {mod.number}` first")
    out = []
    with nbgrader_api(ws, verbose=verbose) as api:
        for sid in students:
            result = api.generate_feedback(mod.name, sid, force=True)
            if not result["success"]:
                raise TitoError(f"nbgrader could not make feedback for {sid}: {_error_line(result)}")
            out += sorted((_dir(ws, "feedback") / sid / mod.name).glob("*.html"))
    return out


# --- output -------------------------------------------------------------------------------------------
def _num(x: float) -> str:
    return f"{x:g}"


def why(row: StudentScore) -> list[str]:
    "A few words for each reason a submission lost points beyond wrong answers (the table's `why` column)."
    out = []
    if row.missing:
        out.append("notebook missing")
    if row.died:
        out.append("kernel died")
    if row.timed_out:
        out.append("timed out")
    if row.limits:
        out.append("hit a limit")
    if row.changed:
        out.append("locked cell edited")
    if row.error and not row.missing:
        out.append("not autograded" if row.error == "not autograded" else "nbgrader error")
    return out


def notes(row: StudentScore, details: bool = False) -> list[str]:
    "What went wrong with one submission, beyond its scores (with `details`: every graded cell's error too)."
    out = []
    if row.missing:
        out.append("notebook missing: no notebook for this module was handed in (every graded cell scores 0)")
    if row.died:
        cell, _, reason = row.died.partition(": ")
        after = f"; {row.not_run} later cell(s) did not run" if row.not_run else ""
        out.append(f"kernel died in {cell}: {reason}{after}")
    if row.timed_out:
        out.append(f"timed out (cell time limit) in {', '.join(row.timed_out)}")
    for hit in row.limits:
        out.append(f"hit {hit}")
    if row.changed:
        out.append(f"edited locked cells {', '.join(row.changed)} (graded with the original cells)")
    if row.error and not row.missing:
        out.append(row.error)
    if details:
        out += [f"lost points in {gid}: {error}" for gid, error in row.failures.items()]
    return out


def score_table(mod: Module, rows: list[StudentScore]):
    "A rich table: one row per student, one column per graded cell (points / max), the total and why points were lost."
    from rich.table import Table

    cells = []
    for r in rows:
        cells += [k for k in r.scores if k not in cells]
    maxes = {k: m for r in rows for k, (_, m) in r.scores.items()}
    table = Table(title=f"{mod.name}: autograded scores", title_justify="left")
    table.add_column("student", style="bold", no_wrap=True)
    for k in cells:
        table.add_column(f"{k.removeprefix('test-')}\n/{_num(maxes[k])}", justify="right")
    table.add_column(f"total\n/{_num(sum(maxes.values()))}", justify="right", style="bold")
    table.add_column("why", style="red")
    for r in rows:
        vals = []
        for k in cells:
            if k not in r.scores:
                vals.append("-")
                continue
            s, m = r.scores[k]
            vals.append(f"[{'green' if s >= m else 'red' if s == 0 else 'yellow'}]{_num(s)}[/]")
        table.add_row(r.student, *vals, _num(r.total) if r.scores else "-", ", ".join(why(r)))
    return table


def print_scores(mod: Module, rows: list[StudentScore], details: bool = False):
    "The score table, then one line per problem of each student."
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)  # a file or a pipe: do not squeeze the table into 80 columns
    console.print(score_table(mod, rows))
    for r in rows:
        for note in notes(r, details):
            console.print(Text(f"{r.student}: {note}"), soft_wrap=True)


# --- commands -----------------------------------------------------------------------------------------
nbgrader_app = typer.Typer(help="Instructors: generate student notebooks, release, collect, autograde and give "
                                "feedback with nbgrader.", no_args_is_help=True)
VERBOSE = typer.Option(False, "--verbose", "-v", help="Show nbgrader's log.")
MODULE = typer.Argument(..., help="Module number or name, e.g. 01.")
STUDENTS = typer.Option(None, "--student", "-s", help="Only this student (repeat for more).")
DETAILS = typer.Option(False, "--details", "-d", help="Also list the error of every graded cell that lost points.")


def _say(message: str):
    from rich.console import Console
    from rich.text import Text

    Console(highlight=False).print(Text(message), soft_wrap=True)


def _warn(message: str):
    from rich.console import Console
    from rich.text import Text

    Console(stderr=True, highlight=False).print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)


@nbgrader_app.command("generate")
def generate_cmd(modules: Optional[list[str]] = typer.Argument(None, help="Module numbers or names, e.g. 01 02."),
                 all_modules: bool = typer.Option(False, "--all", help="Every module in the modules folder."),
                 verbose: bool = VERBOSE):
    "Make the student versions (release/NN_topic/) of module notebooks with nbgrader."
    ws = instructor_workspace()
    if all_modules == bool(modules):
        raise TitoError("name the modules to generate (e.g. `tito nbgrader generate 01`) or pass --all")
    chosen = ws.modules() if all_modules else [ws.module(m) for m in modules]
    if not chosen:
        raise TitoError(f"no modules in {ws.rel(ws.modules_dir)}/")
    for path in generate(ws, chosen, verbose=verbose):
        _say(f"generated {ws.rel(path)}")


@nbgrader_app.command("release")
def release_cmd(module: str = MODULE, verbose: bool = VERBOSE):
    "Put a module's student version in the nbgrader exchange, where students fetch it (JupyterHub)."
    ws = instructor_workspace()
    chosen = ws.module(module)
    _say(f"released {chosen.name} to {release(ws, chosen, verbose=verbose)}")


@nbgrader_app.command("collect")
def collect_cmd(source: Optional[str] = typer.Argument(None, help=(
                    "Folder of <student>/<notebook>.ipynb or <student>.ipynb; with --exchange, the module.")),
                assignment: Optional[str] = typer.Option(None, "--assignment", "-a",
                                                         help="Module number or name, e.g. 01."),
                exchange: bool = typer.Option(False, "--exchange", help=(
                    "Collect the latest submission of each student from the nbgrader exchange.")),
                verbose: bool = VERBOSE):
    "Copy submitted notebooks to submitted/<student>/<NN_topic>/, where nbgrader grades them."
    ws = instructor_workspace()
    if exchange:
        if source and assignment:
            raise TitoError("with --exchange, name the module once (e.g. `tito nbgrader collect 01 --exchange`)")
        if not (source or assignment):
            raise TitoError("name the module to collect, e.g. `tito nbgrader collect 01 --exchange`")
        entries = collect_from_exchange(ws, ws.module(source or assignment), verbose=verbose)
        for e in entries:
            _say(f"{e.student}: {e.status}")
        if not entries:
            raise TitoError("no submissions in the exchange yet")
        return
    if source is None or assignment is None:
        raise TitoError("name the folder and the module, e.g. `tito nbgrader collect ~/inbox --assignment 01` "
                        "(or `tito nbgrader collect 01 --exchange`)")
    for e in collect(ws, Path(source), ws.module(assignment)):
        _say(f"{e.student}: {e.status} <- {e.source}")


@nbgrader_app.command("autograde")
def autograde_cmd(module: str = MODULE, student: Optional[list[str]] = STUDENTS,
                  timeout: Optional[int] = typer.Option(None, "--timeout", min=1, help=(
                      "Seconds a cell may run (default: settings.ini \\[limits] cell_timeout).")),
                  jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Submissions graded at once."),
                  no_sandbox: bool = typer.Option(False, "--no-sandbox", help=(
                      "Run the submissions without the sandbox: with your rights, files and network (trusted code "
                      "only).")),
                  details: bool = DETAILS, verbose: bool = VERBOSE):
    "Autograde the collected submissions of a module with nbgrader, each in a sandbox, and print the scores."
    ws = instructor_workspace()
    chosen = ws.module(module)
    if no_sandbox:
        _warn("--no-sandbox: the submissions run with your rights; they can read and change your files, use the "
              "network and the whole machine (only the time and memory limits hold)")
    show = (lambda n, total, sid: print(f"graded {n}/{total}: {sid}", file=sys.stderr, flush=True)) \
        if sys.stderr.isatty() else None
    rows = autograde(ws, chosen, student, timeout=timeout, verbose=verbose, jobs=jobs, sandboxed=not no_sandbox,
                     progress=show)
    print_scores(chosen, rows, details)
    if failed := [r.student for r in rows if r.error and not r.missing]:
        raise TitoError(f"nbgrader could not autograde {', '.join(failed)} (see notes; --verbose shows its log)")


@nbgrader_app.command("feedback")
def feedback_cmd(module: str = MODULE, student: Optional[list[str]] = STUDENTS, verbose: bool = VERBOSE):
    "Write an HTML feedback page for each autograded submission (feedback/<student>/<NN_topic>/)."
    ws = instructor_workspace()
    for path in feedback(ws, ws.module(module), student, verbose=verbose):
        _say(f"wrote {ws.rel(path)}")


@nbgrader_app.command("report")
def report_cmd(module: Optional[str] = typer.Argument(None, help="Module number or name (default: every module)."),
               details: bool = DETAILS):
    "Print the score tables of the autograded submissions, from the gradebook, with why points were lost."
    ws = instructor_workspace()
    chosen = [ws.module(module)] if module else ws.modules()
    tables = [(m, rows) for m in chosen if (rows := scores(ws, m))]
    if not tables:
        raise TitoError("no submissions yet: `tito nbgrader collect PATH --assignment NN`, "
                        "then `tito nbgrader autograde NN`")
    for m, rows in tables:
        print_scores(m, rows, details)
