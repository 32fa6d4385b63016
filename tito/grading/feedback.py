"""`tito nbgrader feedback`: an HTML page per student, made by nbgrader from the autograded notebook.

The graded cells' outputs there are the judge's verdicts (hidden checks are named, never shown); nbgrader 0.9.6 also
puts the hidden checks' code back into the graded cells, and `HideHiddenTests` takes it out again."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from nbgrader.preprocessors import NbGraderPreprocessor  # enabled by default, unlike nbconvert's Preprocessor

from tito.nbdev_procs import BEGIN_HIDDEN, END_HIDDEN
from tito.workspace import Module, TitoError, Workspace



def hidden_lines(source: str) -> set:
    "1-based numbers of the lines of `source` inside (and on) the hidden-test markers."
    hidden, inside = set(), False
    for number, line in enumerate(source.split("\n"), 1):
        if BEGIN_HIDDEN in line:
            inside = True
        if inside:
            hidden.add(number)
        if END_HIDDEN in line:
            inside = False
    return hidden


def without_hidden(source: str) -> str:
    "`source` without its hidden-check region (as nbgrader's release shows it)."
    if BEGIN_HIDDEN not in source:
        return source
    hidden = hidden_lines(source)
    return "\n".join(line for n, line in enumerate(source.split("\n"), 1) if n not in hidden)


class HideHiddenTests(NbGraderPreprocessor):
    "Feedback shows a student what the release showed: a graded cell's hidden-check region is removed."

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            cell.source = without_hidden(cell.source)
        return cell, resources


def not_graded_page(path: Path, mod: Module, student: str, reason: str) -> Path:
    "A feedback page for a submission that could not be graded: why, and what to do."
    import html

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{mod.name}: not graded</title>"
                    f"</head>\n<body><h1>{mod.name}: not graded</h1>\n<p>The notebook {html.escape(student)} handed "
                    f"in could not be graded: {html.escape(reason)}.</p>\n</body></html>\n", encoding="utf-8")
    return path


def feedback(ws: Workspace, mod: Module, students: Optional[list[str]] = None, verbose: bool = False) -> list[Path]:
    """nbgrader generate_feedback for the autograded submissions of `mod`; returns the HTML files. A submission that
    could not be graded for a reason its student can fix (see `report.unfit`) gets a page saying so. A student whose
    page cannot be made does not stop the others: every such student is named in one error at the end."""
    from tito.grading.report import unfit
    from tito.grading.setup import _dir, _error_line, _students, nbgrader_api

    done = _students(ws, "autograded", mod)
    handed_in = lambda sid: _dir(ws, "submitted") / sid / mod.name / mod.notebook.name
    reasons = {sid: why for sid in _students(ws, "submitted", mod) if sid not in done and (why := unfit(handed_in(sid)))}
    students = list(students) if students else done + sorted(reasons)
    missing = sorted(set(students) - set(done) - set(reasons))
    if not (done or reasons) or missing:
        raise TitoError(f"nothing autograded for {mod.name}{' from ' + ', '.join(missing) if missing else ''}: "
                        f"run `tito nbgrader autograde {mod.number}` first")
    out, failed = [], []
    with nbgrader_api(ws, verbose=verbose) as api:
        for sid in students:
            page = _dir(ws, "feedback") / sid / mod.name / f"{mod.notebook.stem}.html"
            if sid in reasons:
                out.append(not_graded_page(page, mod, sid, reasons[sid]))
                continue
            result = api.generate_feedback(mod.name, sid, force=True)
            if not result["success"]:
                failed.append(f"{sid} ({_error_line(result)})")
                continue
            out += sorted((_dir(ws, "feedback") / sid / mod.name).glob("*.html"))
    if failed:
        raise TitoError(f"nbgrader could not make feedback for {len(failed)} of {len(students)} students: "
                        f"{'; '.join(failed)} (the other pages were written)")
    return out
