"""`tito nbgrader generate`: the student version of every module notebook, made by nbgrader.

For each module that exists: no solution code is left, each solution region became nbgrader's stub and
nothing else changed, locked cells are intact, nbdev directives survive, and the release notebook is valid
and exports (nbdev) to the same modules and names as the source.
"""
import ast
import os
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from fastcore.xtras import working_directory
from nbdev.doclinks import nbdev_export
from nbgrader.utils import compute_checksum

from grading_helpers import repo_modules, require_release
from tito.workspace import TitoError
from tito.grading.generate import lint_markers

MODULES = repo_modules()
STUB = "# YOUR CODE HERE\nraise NotImplementedError()"  # nbgrader's default code stub for Python
REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n(.*?)^[ \t]*### END SOLUTION[^\n]*(\n|\Z)", re.S | re.M)


def meta(c) -> dict:
    return c.metadata.get("nbgrader", {})


def stubbed(source: str) -> str:
    "What nbgrader's ClearSolutions should make of a solution cell: each region becomes the indented stub."
    return REGION.sub(lambda m: "\n".join(m.group(1) + line for line in STUB.split("\n")) + m.group(3), source)


def without_hidden_tests(source: str) -> str:
    "`source` as nbgrader releases it: the lines from `### BEGIN HIDDEN TESTS` to `### END HIDDEN TESTS` dropped."
    kept, inside = [], False
    for line in source.split("\n"):
        if "BEGIN HIDDEN TESTS" in line:
            inside = True
        elif "END HIDDEN TESTS" in line:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def pair(course, name):
    require_release(course, name)
    mod = course.module(name)
    src = nbformat.read(mod.notebook, as_version=4)
    rel = nbformat.read(course.released(mod).notebook, as_version=4)
    assert len(src.cells) == len(rel.cells), "nbgrader must keep every cell"
    return src, rel


@pytest.fixture(params=MODULES)
def notebooks(request, course):
    return pair(course, request.param)


def test_modules_exist():
    assert MODULES, "no module notebooks found in modules/"


def test_no_solution_code_left(notebooks):
    src, rel = notebooks
    released_text = "\n".join(c.source for c in rel.cells)
    outside = "\n".join(REGION.sub("", c.source) for c in src.cells)
    regions = [m.group(2) for c in src.cells for m in REGION.finditer(c.source)]
    assert regions, "a module notebook without solution regions has no exercises"
    for body in regions:
        assert body.strip() not in released_text
        for line in body.splitlines():
            line = line.strip()
            # a line that only a solution has (not given code elsewhere in the notebook) must be gone
            if len(line) >= 8 and line not in outside:
                assert line not in released_text, f"solution line left in the release: {line!r}"


def test_each_region_becomes_the_stub(notebooks):
    src, rel = notebooks
    solution_cells = [(s, r) for s, r in zip(src.cells, rel.cells) if meta(s).get("solution")]
    assert solution_cells
    for s, r in solution_cells:
        assert meta(r).get("grade_id") == meta(s)["grade_id"]
        assert REGION.search(s.source), f"{meta(s)['grade_id']}: keep the signature outside a solution region"
        # signatures, docstrings and `#| export` lines stay; only the regions change
        assert r.source == stubbed(s.source), meta(s)["grade_id"]
        assert r.source.count(STUB.split("\n")[1]) >= len(REGION.findall(s.source))


def test_locked_cells_present_and_unchanged(notebooks):
    src, rel = notebooks
    locked = [(s, r) for s, r in zip(src.cells, rel.cells) if meta(s).get("locked") or meta(s).get("grade")]
    assert any(meta(s).get("grade") and meta(s).get("points") for s, _ in locked), "no graded test cells"
    for s, r in locked:
        gid = meta(s)["grade_id"]
        assert meta(r)["grade_id"] == gid and r.cell_type == s.cell_type
        assert r.source == without_hidden_tests(s.source), f"{gid} changed in the release"
        assert meta(r).get("points") == meta(s).get("points")
        assert meta(r)["checksum"] == compute_checksum(r), f"{gid}: nbgrader checksum missing or wrong"
        assert r.metadata.get("editable") is False and r.metadata.get("deletable") is False


def test_other_cells_unchanged(notebooks):
    src, rel = notebooks
    for s, r in zip(src.cells, rel.cells):
        if not meta(s):
            assert (r.cell_type, r.source) == (s.cell_type, s.source)


def test_nbdev_directives_kept(notebooks):
    src, rel = notebooks
    first = next(c for c in rel.cells if c.cell_type == "code")
    assert re.match(r"^#\|\s*default_exp\s+\S+", first.source)
    for s, r in zip(src.cells, rel.cells):
        if s.cell_type == "code":
            directives = [line for line in s.source.splitlines() if line.lstrip().startswith("#|")]
            assert directives == [line for line in r.source.splitlines() if line.lstrip().startswith("#|")]


def _export(course, name: str, notebook: Path, scratch: Path) -> dict:
    """Export `notebook` as module `name` the way `nbdev-export` does (the course's pyproject, its export
    procs), in a scratch copy with an empty package; {exported file: sorted top-level names}."""
    for f in ("pyproject.toml", "settings.ini"):
        shutil.copy2(course.root / f, scratch / f)
    target = scratch / "modules" / name / f"{name}.ipynb"
    target.parent.mkdir(parents=True)
    shutil.copy2(notebook, target)
    lib = scratch / "tinytorch"
    (lib / "core").mkdir(parents=True)
    (lib / "__init__.py").write_text('__version__ = "0.0.0"\n')
    (lib / "core" / "__init__.py").write_text("")
    saved = os.environ.pop("IN_TEST", None)  # nbdev does not export while IN_TEST is set
    try:
        with working_directory(scratch):
            nbdev_export(path=str(target))
    finally:
        if saved is not None:
            os.environ["IN_TEST"] = saved
    out = {}
    for path in sorted(lib.rglob("*.py")):
        if path.name in ("__init__.py", "_modidx.py"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                    names |= {f"__all__:{n}" for n in ast.literal_eval(node.value)}
        out[str(path.relative_to(lib))] = sorted(names)
    return out


@pytest.mark.parametrize("name", MODULES)
def test_release_is_valid_and_exports_the_same_names(course, name, tmp_path):
    require_release(course, name)
    mod = course.module(name)
    release = course.released(mod).notebook
    nb = nbformat.read(release, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    (tmp_path / "source").mkdir()
    (tmp_path / "release").mkdir()
    ours = _export(course, name, mod.notebook, tmp_path / "source")
    theirs = _export(course, name, release, tmp_path / "release")
    assert ours and theirs == ours
    text = "".join(p.read_text() for p in (tmp_path / "release" / "tinytorch").rglob("*.py"))
    assert "NotImplementedError" in text and "BEGIN SOLUTION" not in text


def test_markers_in_prose_are_refused(tmp_path):
    "nbgrader strips any line holding a solution marker, markdown included: tito refuses such a notebook."
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("Fill in each `### BEGIN SOLUTION` region."),
                nbformat.v4.new_code_cell("#| default_exp core.demo")]
    path = tmp_path / "demo.ipynb"
    nbformat.write(nb, path)
    with pytest.raises(TitoError, match="cell 1 \\(markdown\\).*BEGIN SOLUTION"):
        lint_markers(path)
