"""Helpers for the nbgrader tests (a unique basename: test folders here have no __init__.py)."""
import re
import shutil
from pathlib import Path

import nbformat

from tito.workspace import Workspace

REPO = Path(__file__).resolve().parents[2]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")


def repo_modules() -> list[str]:
    "The module folders the repository has today (`NN_topic/NN_topic.ipynb`); the tests loop over these."
    return sorted(d.name for d in (REPO / "modules").iterdir()
                  if re.match(r"^\d\d_\w+$", d.name) and (d / f"{d.name}.ipynb").is_file())


def graded_as_probes(name: str) -> bool:
    """Whether every graded cell of module `name` is a `with checks(...)` block, as the judge reads them. Modules
    are being converted to probes one by one: the grading tests run on the converted ones and skip the others."""
    nb = nbformat.read(REPO / "modules" / name / f"{name}.ipynb", as_version=4)
    graded = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    return bool(graded) and all("with checks(" in c.source for c in graded)


def require_probes(name: str):
    "Skip the calling test for a module whose graded cells are not probes yet."
    import pytest

    if not graded_as_probes(name):
        pytest.skip(f"{name}: its graded cells are not `with checks(...)` blocks yet (being converted)")


def require_release(ws: Workspace, name: str) -> Path:
    "The release notebook of module `name` in `ws`, generated now if it is not there (skips unconverted modules)."
    require_probes(name)
    from tito.grading.generate import generate

    mod = ws.module(name)
    release = ws.released(mod).notebook
    if not release.is_file():
        generate(ws, [mod])
    return release


def copy_course(dest: Path, *, full: bool = False) -> Workspace:
    """A copy of the course at `dest`: what nbgrader needs (settings, pyproject, modules), or with `full`
    everything a student workspace is made from."""
    dest.mkdir(parents=True, exist_ok=True)
    names = ["settings.ini", "pyproject.toml", "modules"]
    if full:
        names += ["README.md", "docs", "tinytorch", "tito", "tools", "tests", ".gitignore"]
    for name in names:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=SKIP)
        elif src.is_file():
            shutil.copy2(src, dest / name)
    return Workspace.find(dest)


def cell(nb, grade_id: str):
    "The cell with nbgrader `grade_id`."
    found = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    assert len(found) == 1, f"expected one cell {grade_id!r}, found {len(found)}"
    return found[0]


def edited(src: Path, dst: Path, grade_id: str, old: str, new: str) -> Path:
    "Write `src` to `dst` with `old` replaced by `new` in the cell `grade_id` (which must contain `old`)."
    nb = nbformat.read(src, as_version=4)
    c = cell(nb, grade_id)
    assert old in c.source, f"{old!r} is not in cell {grade_id} of {src}; update this test"
    c.source = c.source.replace(old, new)
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)
    return dst


def submission(solution: Path, release: Path, dst: Path, edit: tuple = ()) -> Path:
    """Write to `dst` what a student hands in after solving every exercise: the release notebook with each solution
    cell's source taken from `solution` (after `edit`, a `(grade_id, old, new)` change of one solution cell). Locked
    cells stay exactly as released: hidden tests absent, nbgrader's checksums intact."""
    sol = nbformat.read(solution, as_version=4)
    if edit:
        grade_id, old, new = edit
        c = cell(sol, grade_id)
        assert old in c.source, f"{old!r} is not in cell {grade_id} of {solution}; update this test"
        c.source = c.source.replace(old, new)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in sol.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.read(release, as_version=4)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = answers.pop(gid)
    assert not answers, f"solution cells {sorted(answers)} are not in the release {release}"
    dst.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, dst)
    return dst
