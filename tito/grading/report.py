"""Scores from the gradebook, why points were lost, and the score table."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import nbformat

from tito.notebooks import grade_id, heading_above, is_graded, nbgrader_meta
from tito.output import one_line
from tito.workspace import Module, Workspace
from tito.grading import judge
from tito.grading.setup import _dir, _students, nbgrader_api

@dataclass
class StudentScore:
    student: str
    scores: dict = field(default_factory=dict)  # grade_id -> (score, max_score)
    timed_out: list = field(default_factory=list)  # grade_ids (or "cell N") that hit the time limit
    changed: list = field(default_factory=list)  # locked cells edited or deleted in the submission
    error: str = ""
    missing: bool = False  # no notebook was handed in for the module
    died: str = ""  # "<cell>: <why>" when the answer process died while it answered that cell's checks
    limits: list = field(default_factory=list)  # "<cell> (<why>)": checks stopped by a sandbox limit
    failures: dict = field(default_factory=dict)  # grade_id -> the judge's verdict of a graded cell that lost points
    flood: str = ""  # the answer process wrote more than tito reads
    broken: str = ""  # the notebook could not be exported or imported
    unfit: str = ""  # why nbgrader cannot grade the notebook handed in, in words the student can act on

    @property
    def total(self) -> float:
        return sum(s for s, _ in self.scores.values())

    @property
    def max_total(self) -> float:
        return sum(m for _, m in self.scores.values())


def _read(notebook: Path):
    "The notebook at `notebook`; None when there is none or it cannot be read (a row reports it, the class goes on)."
    if not notebook.is_file():
        return None
    try:
        return nbformat.read(notebook, as_version=4)
    except Exception:  # noqa: BLE001 - whatever was handed in: one submission never stops the report
        return None


def unfit(submission: Path) -> str:
    """Why nbgrader cannot grade the notebook `submission`, in words its student can act on ('' when nothing is
    seen): not a notebook, or a cell with nbgrader's metadata handed in twice (a pasted copy)."""
    if not submission.is_file():
        return ""
    try:
        nb = nbformat.read(submission, as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - whatever was handed in
        return (f"not a readable notebook ({type(exc).__name__}): open it in JupyterLab, save it, and hand it in "
                "again")
    where: dict = {}
    for index, cell in enumerate(nb.cells):
        if gid := grade_id(cell):
            where.setdefault(gid, []).append(index)
    twice = {gid: at for gid, at in where.items() if len(at) > 1}
    return "; ".join(f"cell `{gid}` is in the notebook {len(at)} times (under "
                     f"{', '.join(repr(heading_above(nb, i)) for i in at)}): delete the copy, keep the original, "
                     "and hand it in again" for gid, at in twice.items())


def _verdicts(notebook: Path) -> list[tuple[str, str, str]]:
    "(grade_id, error name, message) of every graded cell of an autograded notebook that the judge failed."
    if (nb := _read(notebook)) is None:
        return []
    return [(grade_id(c) or f"cell {i}", o.get("ename", ""), str(o.get("evalue", ""))) for i, c in enumerate(nb.cells, 1)
            if c.cell_type == "code" and is_graded(c)
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def read_run(row: StudentScore, notebook: Path):
    """What the judge wrote into the autograded notebook beyond wrong answers: checks stopped at the time limit, an
    answer process that died or hit a limit, a flood, a notebook that could not be exported or imported. Every
    output there is the judge's: nbgrader cleared the submission's own before the judge ran."""
    names = judge.VERDICT_ERRORS
    for gid, ename, evalue in _verdicts(notebook):
        if ename == names["timed out"]:
            row.timed_out.append(gid)
        elif ename == names["died"]:
            row.died = row.died or f"{gid}: {evalue}"
        elif ename == names["limit"]:
            row.limits.append(f"{gid} ({one_line(evalue)})")
        elif ename == names["flood"]:
            row.flood = one_line(evalue)
        elif ename in (names["not exported"], names["not imported"]):
            row.broken = one_line(evalue)
        if gid in row.scores and row.scores[gid][0] < row.scores[gid][1]:
            row.failures.setdefault(gid, one_line(evalue))


def changed_locked_cells(submission: Path, release: Path) -> list[str]:
    """Locked cells of the release that the submission edited ("test-x") or deleted ("test-x (deleted)"),
    by nbgrader's checksums. (Autograding grades with the original cells regardless.)"""
    from nbgrader.utils import is_locked

    if (sub := _read(submission)) is None or not release.is_file():
        return []
    by_id = {grade_id(c): c for c in sub.cells if grade_id(c)}
    changed = []
    for cell in nbformat.read(release, as_version=4).cells:
        meta = nbgrader_meta(cell)
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
    return [grade_id(c) for c in nb.cells if is_graded(c)]


def scores(ws: Workspace, mod: Module, students: Optional[list[str]] = None) -> list[StudentScore]:
    """Per-student, per-graded-cell scores of one module from the gradebook, with why points were lost: time-outs,
    a crashed answer process, sandbox limits, a flood, edited locked cells, a missing notebook."""
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
                row.unfit = unfit(handed_in)
                if row.unfit:  # nbgrader may have recorded zeros before it gave up
                    row.error = row.error or "not graded"
            out.append(row)
    return out


def _num(x: float) -> str:
    return f"{x:g}"


WHY = (("missing", "notebook missing"), ("broken", "not importable"), ("died", "crashed"), ("flood", "flood"),
       ("timed_out", "timed out"), ("limits", "hit a limit"), ("changed", "locked cell edited"))  # row field, words


def why(row: StudentScore) -> list[str]:
    "A few words for each reason a submission lost points beyond wrong answers (the table's `why` column)."
    out = [words for name, words in WHY if getattr(row, name)]
    if row.error and not row.missing:
        out.append("not graded")
    return out


def notes(row: StudentScore, details: bool = False) -> list[str]:
    "What went wrong with one submission, beyond its scores (with `details`: every graded cell's error too)."
    out = []
    if row.missing:
        out.append("notebook missing: no notebook for this module was handed in (every graded cell scores 0)")
    if row.broken:
        out.append(row.broken)
    if row.died:
        cell, _, reason = row.died.partition(": ")
        out.append(f"crashed while answering {cell}: {reason}")
    if row.flood:
        out.append(row.flood)
    if row.timed_out:
        out.append(f"timed out (cell_timeout, per graded cell) in {', '.join(row.timed_out)}")
    for hit in row.limits:
        out.append(f"hit {hit}")
    if row.changed:
        out.append(f"edited locked cells {', '.join(row.changed)} (graded with the original cells)")
    if row.error and not row.missing:
        out.append(f"not graded: {row.unfit or row.error}")
    if details:
        out += [f"lost points in {gid}: {error}" for gid, error in row.failures.items()]
    return out


def score_table(rows: list[StudentScore]) -> tuple[list[str], list[list]]:
    """(headers, rows) of the score table: one row per student, one column per graded cell (points, styled by how
    many were lost), the total and why points were lost."""
    cells = []
    for r in rows:
        cells += [k for k in r.scores if k not in cells]
    maxes = {k: m for r in rows for k, (_, m) in r.scores.items()}
    headers = ["student", *(f"{k.removeprefix('test-')}\n/{_num(maxes[k])}" for k in cells),
               f"total\n/{_num(sum(maxes.values()))}", "why"]
    table = []
    for r in rows:
        vals = []
        for k in cells:
            if k not in r.scores:
                vals.append("-")
                continue
            s, m = r.scores[k]
            vals.append((_num(s), "green" if s >= m else "red" if s == 0 else "yellow"))
        table.append([(r.student, "bold"), *vals, (_num(r.total) if r.scores else "-", "bold"), (", ".join(why(r)), "red")])
    return headers, table
