"""Instructor workflow with nbgrader: generate student versions, collect, autograde, feedback, report.

Everything runs nbgrader in this process through `nbgrader.apps.NbGraderAPI`, configured from settings.ini
(no nbgrader_config.py needed). The course root is nbgrader's course directory: `[nbgrader] source_dir`
(the module notebooks, with solutions) is its source folder and each `NN_topic` folder is an assignment.

    tito nbgrader generate 01 | --all       source -> release/NN_topic/NN_topic.ipynb (+ gradebook entries)
    tito nbgrader collect PATH -a 01        PATH/<student>/*.ipynb or PATH/<student>.ipynb -> submitted/
    tito nbgrader autograde 01              run every submission, a time limit per cell, print the scores
    tito nbgrader feedback 01               feedback/<student>/NN_topic/NN_topic.html
    tito nbgrader report [01]               the score table again, from the gradebook
"""
from __future__ import annotations

import logging
import os
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional

import nbformat
import typer

from tito.course import Module, TitoError, Workspace

TIMEOUT_ERROR = "CellTimeoutError"  # the error nbgrader's Execute preprocessor records for a cell that ran too long
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


def nbgrader_config(ws: Workspace, timeout: Optional[int] = None):
    "nbgrader's configuration for the course `ws`, from its settings.ini."
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
    limit = timeout if timeout is not None else ws.cell_timeout
    c.Execute.timeout = limit  # nbgrader's ExecutePreprocessor: seconds per cell
    c.ExecutePreprocessor.timeout = limit
    c.Execute.interrupt_on_timeout = True
    # Quiet the kernel's own start-up warnings (it still reports errors); cells' errors are in the notebook.
    c.Execute.extra_arguments = ["--IPKernelApp.log_level=ERROR"]
    return c


@contextmanager
def nbgrader_api(ws: Workspace, timeout: Optional[int] = None, verbose: bool = False):
    "An `NbGraderAPI` for the course `ws`, with PATH fixed and SQLAlchemy's warnings silenced."
    python_first_on_path()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module="sqlalchemy")
        warnings.filterwarnings("ignore", message=".*not in session.*")
        from nbgrader.apps import NbGraderAPI

        yield NbGraderAPI(config=nbgrader_config(ws, timeout), log=_logger(verbose))


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
    status: str = ""  # new, updated, unchanged, or why it was skipped


def _valid_student_id(sid: str) -> bool:
    return bool(sid) and sid == sid.strip() and not sid.startswith(".") and not any(c in sid for c in "+*/\\")


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


def collect(ws: Workspace, path: Path, mod: Module) -> list[Collected]:
    """Copy submissions from `path` into submitted/<student>/<assignment>/<notebook>.ipynb.

    `path` holds `<student>/…/<anything>.ipynb` folders (the notebook named like the module's is taken, or
    the only notebook there) or `<student>.ipynb` files. A notebook that is not valid JSON is skipped."""
    path = Path(path)
    if not path.is_dir():
        raise TitoError(f"{path} is not a folder of submissions")
    submitted = _dir(ws, "submitted")
    entries: dict[str, Collected] = {}
    for item in sorted(path.iterdir()):
        if item.name.startswith("."):
            continue
        if item.is_dir():
            nb, why = _pick_notebook(item, mod.notebook.name)
            entry = Collected(item.name, nb, status=why)
        elif item.suffix == ".ipynb":
            entry = Collected(item.stem, item)
        else:
            continue
        if entry.student in entries:
            entry = Collected(entry.student, None, status="submitted twice (a folder and a file)")
        entries[entry.student] = entry
    for e in entries.values():
        if e.source is None:
            continue
        if not _valid_student_id(e.student):
            e.source, e.status = None, "not a usable student id"
            continue
        try:
            nbformat.read(e.source, as_version=4)
        except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, not fatal
            e.source, e.status = None, f"not a readable notebook ({type(exc).__name__})"
            continue
        e.dest = submitted / e.student / mod.name / mod.notebook.name
        data = e.source.read_bytes()
        e.status = "new" if not e.dest.exists() else ("unchanged" if e.dest.read_bytes() == data else "updated")
        e.dest.parent.mkdir(parents=True, exist_ok=True)
        e.dest.write_bytes(data)
    return list(entries.values())


# --- autograde and scores -----------------------------------------------------------------------------
@dataclass
class StudentScore:
    student: str
    scores: dict = field(default_factory=dict)  # grade_id -> (score, max_score)
    timed_out: list = field(default_factory=list)  # grade_ids (or "cell N") that hit the time limit
    changed: list = field(default_factory=list)  # locked cells edited or deleted in the submission
    error: str = ""

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


def timed_out_cells(notebook: Path) -> list[str]:
    "Cells of an autograded notebook that nbgrader stopped at the time limit."
    if not notebook.is_file():
        return []
    nb = nbformat.read(notebook, as_version=4)
    return [_cell_label(c, i) for i, c in enumerate(nb.cells, 1) if c.cell_type == "code"
            and any(o.get("output_type") == "error" and o.get("ename") == TIMEOUT_ERROR for o in c.get("outputs", []))]


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
    "Per-student, per-graded-cell scores of one module from the gradebook, with time-outs and edited locked cells."
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
            try:
                nb = gb.find_submission_notebook(mod.name, mod.name, sid)
                grades = {g.name: (float(g.score or 0.0), float(g.max_score)) for g in nb.grades}
                row.scores = {gid: grades[gid] for gid in sorted(grades, key=rank)}
            except MissingEntry:
                row.error = "not autograded"
            row.timed_out = timed_out_cells(autograded / sid / mod.name / mod.notebook.name)
            row.changed = changed_locked_cells(submitted / sid / mod.name / mod.notebook.name, release)
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


def autograde(ws: Workspace, mod: Module, students: Optional[list[str]] = None, timeout: Optional[int] = None,
              verbose: bool = False) -> list[StudentScore]:
    """nbgrader autograde for each submission of `mod` (all collected students by default), each cell limited
    to `timeout` seconds (settings.ini [limits] cell_timeout by default); returns the scores."""
    everyone = _students(ws, "submitted", mod)
    students = list(students) if students else everyone
    if not students:
        raise TitoError(f"no submissions for {mod.name}: "
                        f"run `tito nbgrader collect PATH --assignment {mod.number}` first")
    unknown = sorted(set(students) - set(everyone))
    if unknown:
        raise TitoError(f"no submission of {mod.name} from {', '.join(unknown)}")
    if not _assignment_in_gradebook(ws, mod) or not ws.released(mod).notebook.is_file():
        generate(ws, [mod], verbose=verbose)
    errors = {}
    with nbgrader_api(ws, timeout=timeout, verbose=verbose) as api:
        for sid in students:
            result = api.autograde(mod.name, sid, force=True, create=True)
            if not result["success"]:
                errors[sid] = _error_line(result)
    rows = scores(ws, mod, students)
    for row in rows:
        if row.student in errors:
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


def notes(row: StudentScore) -> list[str]:
    "What went wrong with one submission, beyond its scores."
    out = []
    if row.timed_out:
        out.append(f"timed out (cell time limit) in {', '.join(row.timed_out)}")
    if row.changed:
        out.append(f"edited locked cells {', '.join(row.changed)} (graded with the original cells)")
    if row.error:
        out.append(row.error)
    return out


def score_table(mod: Module, rows: list[StudentScore]):
    "A rich table: one row per student, one column per graded cell (points / max), and the total."
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
    table.add_column("!", justify="center")
    for r in rows:
        vals = []
        for k in cells:
            if k not in r.scores:
                vals.append("-")
                continue
            s, m = r.scores[k]
            vals.append(f"[{'green' if s >= m else 'red' if s == 0 else 'yellow'}]{_num(s)}[/]")
        table.add_row(r.student, *vals, _num(r.total) if r.scores else "-", "[red]![/]" if notes(r) else "")
    return table


def print_scores(mod: Module, rows: list[StudentScore]):
    "The score table, then one line per student with a problem."
    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False)
    if not console.is_terminal:
        console = Console(highlight=False, width=200)  # a file or a pipe: do not squeeze the table into 80 columns
    console.print(score_table(mod, rows))
    for r in rows:
        for note in notes(r):
            console.print(Text(f"{r.student}: {note}"), soft_wrap=True)


# --- commands -----------------------------------------------------------------------------------------
nbgrader_app = typer.Typer(help="Instructors: generate student notebooks, collect, autograde and give feedback "
                                "with nbgrader.", no_args_is_help=True)
VERBOSE = typer.Option(False, "--verbose", "-v", help="Show nbgrader's log.")
MODULE = typer.Argument(..., help="Module number or name, e.g. 01.")
STUDENTS = typer.Option(None, "--student", "-s", help="Only this student (repeat for more).")


def _say(message: str):
    from rich.console import Console
    from rich.text import Text

    Console(highlight=False).print(Text(message), soft_wrap=True)


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


@nbgrader_app.command("collect")
def collect_cmd(path: Path = typer.Argument(..., help="Folder of <student>/<notebook>.ipynb or <student>.ipynb."),
                assignment: str = typer.Option(..., "--assignment", "-a", help="Module number or name, e.g. 01.")):
    "Copy submitted notebooks to submitted/<student>/<NN_topic>/, where nbgrader grades them."
    ws = instructor_workspace()
    entries = collect(ws, path, ws.module(assignment))
    for e in entries:
        _say(f"{e.student}: {e.status}" + (f" <- {e.source}" if e.dest else ""))
    if not entries:
        raise TitoError(f"no submissions in {path} (expected <student>/<notebook>.ipynb or <student>.ipynb)")
    if skipped := [e.student for e in entries if e.dest is None]:
        raise TitoError(f"skipped {len(skipped)} submission(s): {', '.join(skipped)}")


@nbgrader_app.command("autograde")
def autograde_cmd(module: str = MODULE, student: Optional[list[str]] = STUDENTS,
                  timeout: Optional[int] = typer.Option(None, "--timeout", min=1, help=(
                      "Seconds a cell may run (default: settings.ini \\[limits] cell_timeout).")),
                  verbose: bool = VERBOSE):
    "Autograde the collected submissions of a module with nbgrader and print the scores."
    ws = instructor_workspace()
    chosen = ws.module(module)
    rows = autograde(ws, chosen, student, timeout=timeout, verbose=verbose)
    print_scores(chosen, rows)
    if failed := [r.student for r in rows if r.error]:
        raise TitoError(f"nbgrader could not autograde {', '.join(failed)} (see notes; --verbose shows its log)")


@nbgrader_app.command("feedback")
def feedback_cmd(module: str = MODULE, student: Optional[list[str]] = STUDENTS, verbose: bool = VERBOSE):
    "Write an HTML feedback page for each autograded submission (feedback/<student>/<NN_topic>/)."
    ws = instructor_workspace()
    for path in feedback(ws, ws.module(module), student, verbose=verbose):
        _say(f"wrote {ws.rel(path)}")


@nbgrader_app.command("report")
def report_cmd(module: Optional[str] = typer.Argument(None, help="Module number or name (default: every module).")):
    "Print the score tables of the autograded submissions, from the gradebook."
    ws = instructor_workspace()
    chosen = [ws.module(module)] if module else ws.modules()
    tables = [(m, rows) for m in chosen if (rows := scores(ws, m))]
    if not tables:
        raise TitoError("no submissions yet: `tito nbgrader collect PATH --assignment NN`, "
                        "then `tito nbgrader autograde NN`")
    for m, rows in tables:
        print_scores(m, rows)
