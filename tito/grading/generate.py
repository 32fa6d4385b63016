"""`tito nbgrader generate` and `release`: student versions made by nbgrader, and the exchange's outbound side."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Iterable

import nbformat

from tito.nbdev_procs import BEGIN_HIDDEN, BEGIN_SOLUTION, END_HIDDEN, END_SOLUTION
from tito.notebooks import grade_id, nbgrader_meta
from tito.workspace import Module, TitoError, Workspace
from tito.grading import judge
from tito.grading.sandbox import Limits
from tito.grading.setup import _error_line, exchange_outbound, nbgrader_api

_MARKERS = {BEGIN_SOLUTION: "solution", END_SOLUTION: "solution", BEGIN_HIDDEN: "grade", END_HIDDEN: "grade"}


def lint_markers(notebook: Path, label: str = "") -> None:
    """Refuse nbgrader markers where nbgrader would mangle the cell (nbgrader matches them anywhere in a line,
    markdown included): solution markers only in solution code cells, hidden-test markers only in graded cells."""
    nb = nbformat.read(notebook, as_version=4)
    label = label or str(notebook)
    for i, cell in enumerate(nb.cells, 1):
        meta = nbgrader_meta(cell)
        for marker, kind in _MARKERS.items():
            if marker in cell.source and not (cell.cell_type == "code" and meta.get(kind)):
                gid = grade_id(cell)
                where = f"cell {i} ({cell.cell_type}{', ' + gid if gid else ''})"
                raise TitoError(f"{label}: {where} contains {marker!r} outside a {kind} cell; nbgrader would "
                                "treat it as a marker (reword it, or fix the cell's nbgrader metadata)")


def generate(ws: Workspace, modules: Iterable[Module], verbose: bool = False) -> list[Path]:
    "nbgrader generate_assignment for each module; returns the release notebooks."
    modules = list(modules)
    for mod in modules:
        lint_markers(mod.notebook, ws.rel(mod.notebook))
        judge.read_probes(ws, mod)  # every graded cell reads as probes, hidden checks included
    out = []
    with nbgrader_api(ws, verbose=verbose) as api:
        for mod in modules:
            result = api.generate_assignment(mod.name, force=True, create=True)
            if not result["success"]:
                raise TitoError(f"nbgrader could not generate {mod.name}: {_error_line(result)}")
            out.append(ws.released(mod).notebook)
    for mod, notebook in zip(modules, out):
        ship_expected(ws, mod, notebook)
    return out


def ship_expected(ws: Workspace, mod: Module, notebook: Path) -> Path:
    """Beside the release notebook: the course's answers to its visible checks (the release has no hidden ones), so
    a student's `tito module complete` and check cells give the judge's verdicts without the course's code."""
    visible = judge.read_probes(ws, mod, notebook)
    graded = {c.grade_id: c for c in judge.read_probes(ws, mod).cells}
    for cell in visible.cells:
        names = [c["name"] for c in graded[cell.grade_id].checks if not c["hidden"]]
        if [c["name"] for c in cell.checks] != names:
            raise TitoError(f"{ws.rel(mod.notebook)}, graded cell `{cell.grade_id}`: the release's checks are not the "
                            "visible checks of the source (keep every check of the hidden region inside it)")
    with tempfile.TemporaryDirectory(prefix="tito-expected-") as tmp:
        expected = judge.course_answers(ws, visible, Path(tmp), Limits.of(ws), ws.cell_timeout)
    path = judge.expected_file(notebook)
    judge.write_expected(path, visible, expected)
    return path


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
    return exchange_outbound(ws) / mod.name


