"""Helpers for the attack tests (a unique basename): submissions of module 01 built from its release.

A submission starts from the release notebook (what a student fetches): its solution cells are filled from the
course's notebook (`complete`), or left as the release's stubs (`complete=False`), then a catalogued bug and the
attack's own code are applied. Locked cells are never touched, so nbgrader's checksums stay intact.
"""
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "nbgrader"))

from bug_catalogue import BUGS  # noqa: E402
from grading_helpers import REPO, cell, copy_course  # noqa: E402,F401


def bug(slug: str):
    "The catalogued bug of module 01 called `slug`."
    [found] = [b for b in BUGS["01"] if b.slug == slug]
    return found


def build(ws, dst: Path, *, complete: bool = True, bug_slug: str = "", append: dict = None, prepend: dict = None,
          new_cells: list = ()) -> Path:
    """Write a submission of module 01 to `dst`. `append`/`prepend`: {grade_id: code} added to that solution cell;
    `new_cells`: [(grade_id or None, source)] inserted as unlocked code cells after that cell (None: at the end)."""
    mod = ws.module("01")
    sol = nbformat.read(mod.notebook, as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in sol.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(ws.released(mod).notebook, as_version=4)
    if complete:
        for c in nb.cells:
            if c.metadata.get("nbgrader", {}).get("solution"):
                c.source = answers[c.metadata["nbgrader"]["grade_id"]]
    if bug_slug:
        b = bug(bug_slug)
        c = cell(nb, b.grade_id)
        assert b.old in c.source, b.slug
        c.source = c.source.replace(b.old, b.new)
    for gid, code in (prepend or {}).items():
        c = cell(nb, gid)
        c.source = (c.source.split("\n", 1)[0] + "\n" + code + "\n" + c.source.split("\n", 1)[1]
                    if c.source.startswith("#|") else code + "\n" + c.source)
    for gid, code in (append or {}).items():
        c = cell(nb, gid)
        c.source = c.source + "\n\n" + code
    for gid, source in new_cells:
        index = len(nb.cells) if gid is None else \
            [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == gid][0] + 1
        nb.cells.insert(index, nbformat.v4.new_code_cell(source))
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)
    return dst




def hand_in(inbound: Path, student: str, assignment: str, when: str = "2026-01-05 10:00:00.000000 UTC") -> Path:
    """An empty submission folder in the exchange's inbound, named as nbgrader's submit names it
    (`<student>+<assignment>+<timestamp>+<random>`), with nbgrader's timestamp.txt; fill it in the test."""
    folder = inbound / f"{student}+{assignment}+{when}+{abs(hash((student, when))) % 10 ** 8:08d}"
    folder.mkdir(parents=True)
    (folder / "timestamp.txt").write_text(when)
    return folder


def paste_twice(path: Path, grade_id: str) -> Path:
    "Rewrite the notebook at `path` with the cell `grade_id` pasted again right below itself (metadata and all)."
    nb = nbformat.read(path, as_version=4)
    index = [i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id][0]
    copy = nbformat.from_dict(nb.cells[index])
    copy.id = copy.id + "-copy"
    nb.cells.insert(index + 1, copy)
    nbformat.write(nb, path)
    return path
