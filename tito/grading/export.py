"""`tito nbgrader export`: the gradebook as one CSV an LMS imports (Canvas, Moodle, Blackboard, a spreadsheet).

One row per student and, per module, its points (after a late penalty, when settings.ini sets one), the points
possible, how late it came, the penalty and why points were lost: the same rows `tito nbgrader report` prints
(`tito.grading.report.scores`), so the two never disagree.
"""
from __future__ import annotations

import csv
import io
from typing import Optional

from tito.workspace import Module, Workspace
from tito.grading.deadlines import lateness
from tito.grading.report import StudentScore, scores, why


def _num(x: float) -> str:
    return f"{round(x, 4):g}"


def module_columns(mod: Module, cells: list[str], exercises: bool) -> list[str]:
    "The CSV's columns for one module (documented in docs/GRADING.md)."
    per_cell = [f"{mod.name}:{gid.removeprefix('test-')}" for gid in cells] if exercises else []
    return [*per_cell, mod.name, f"{mod.name}_max", f"{mod.name}_late_hours", f"{mod.name}_penalty",
            f"{mod.name}_why"]


def module_values(ws: Workspace, mod: Module, row: StudentScore, cells: list[str], exercises: bool) -> list[str]:
    "One student's values for `module_columns`."
    late = lateness(ws, mod, row.student)
    per_cell = [_num(row.scores[g][0]) if g in row.scores else "" for g in cells] if exercises else []
    if not row.scores:  # not autograded: no points to import
        return [*per_cell, "", "", "", "", ", ".join(why(row))]
    reasons = why(row) + (["late"] if late.late else [])
    penalty = late.penalty(row.max_total)
    return [*per_cell, _num(late.after_penalty(row.total, row.max_total)), _num(row.max_total),
            f"{late.seconds_late / 3600:.2f}" if late.late else "", _num(penalty) if penalty else "",
            ", ".join(reasons)]


def export_table(ws: Workspace, modules: list[Module], exercises: bool = False) -> tuple[list[str], list[list[str]]]:
    """(headers, rows): `student`, then each module's columns (with `exercises`, one per graded cell first), then
    `total` and `total_max` over the modules. A module a student handed nothing in for is left empty."""
    tables = [(m, rows) for m in modules if (rows := scores(ws, m))]
    students = sorted({r.student for _, rows in tables for r in rows})
    headers = ["student"]
    by_module = []
    for mod, rows in tables:
        cells = list(dict.fromkeys(g for r in rows for g in r.scores))
        headers += module_columns(mod, cells, exercises)
        by_module.append((mod, cells, {r.student: r for r in rows}))
    headers += ["total", "total_max"]
    out = []
    for sid in students:
        line, total, most = [sid], 0.0, 0.0
        for mod, cells, rows in by_module:
            row: Optional[StudentScore] = rows.get(sid)
            if row is None:
                line += [""] * len(module_columns(mod, cells, exercises))
                continue
            values = module_values(ws, mod, row, cells, exercises)
            line += values
            if row.scores:
                late = lateness(ws, mod, sid)
                total += late.after_penalty(row.total, row.max_total)
                most += row.max_total
        out.append(line + [_num(total), _num(most)])
    return headers, out


def to_csv(headers: list[str], rows: list[list[str]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return buf.getvalue()
