"""No check in the course fails with a bare `AssertionError`: a failure always shows what was compared.

- A graded cell is a `with checks(...)` block whose `check(...)` calls the judge compares with the course's answers:
  it holds no `assert` statement at all (an assert would run in the student's process and decide nothing, or fail
  with no values).
- Test files (`test_*.py`, `conftest.py`) have their asserts rewritten by pytest, which shows the compared values;
  none may switch that off (the docstring marker that stops rewriting, `--assert=plain`).
- Any other Python file under `tests/` (helpers the tests import) is not rewritten, unless registered with
  `pytest.register_assert_rewrite`: each of its asserts must carry a message.
"""
import ast
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "modules").glob("*/*.ipynb"))
TEST_FILES = sorted(p for p in (REPO / "tests").rglob("*.py") if "__pycache__" not in p.parts)
REWRITTEN = re.compile(r"^(test_.*|conftest)\.py$")


def python_of(source: str) -> str:
    "A cell's source with IPython's magics and shell lines blanked, so that `ast` can read it."
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def graded_cells(path: Path):
    for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("grade"):
            yield index, meta.get("grade_id", "?"), "".join(cell["source"])


def rewriting_off(source: str) -> bool:
    "Whether pytest leaves this module's asserts alone (it reads PYTEST_DONT_REWRITE in the module docstring)."
    return "PYTEST_DONT_REWRITE" in (ast.get_docstring(ast.parse(source)) or "")


def registered_for_rewrite() -> set[str]:
    "Module names the test suite registers with pytest.register_assert_rewrite."
    names = set()
    for path in TEST_FILES:
        for call in re.findall(r"register_assert_rewrite\(([^)]*)\)", path.read_text(encoding="utf-8")):
            names.update(re.findall(r"[\"']([\w.]+)[\"']", call))
    return names


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_graded_cells_hold_no_assert(notebook):
    found = []
    for index, gid, source in graded_cells(notebook):
        tree = ast.parse(python_of(source))
        found += [f"cell {index} (grade_id `{gid}`), line {node.lineno}: {ast.get_source_segment(python_of(source), node)}"
                  for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert not found, f"{notebook.name}: graded cells use `check(...)`, not assert:\n" + "\n".join(found)


def test_every_notebook_has_graded_cells():
    assert NOTEBOOKS and all(any(True for _ in graded_cells(p)) for p in NOTEBOOKS), \
        [p.name for p in NOTEBOOKS if not any(True for _ in graded_cells(p))]


def test_pytest_rewrites_the_asserts_of_every_test_file():
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "--assert=plain" not in pyproject, "pyproject's pytest options switch assertion rewriting off"
    off = [str(p.relative_to(REPO)) for p in TEST_FILES
           if REWRITTEN.match(p.name) and rewriting_off(p.read_text(encoding="utf-8"))]
    assert not off, f"these test files switch pytest's assertion rewriting off: {off}"


def test_helpers_assert_with_a_message():
    registered = registered_for_rewrite()
    bare = []
    for path in TEST_FILES:
        if REWRITTEN.match(path.name) or path.stem in registered:
            continue
        source = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Assert) and node.msg is None:
                bare.append(f"{path.relative_to(REPO)}:{node.lineno}: {ast.get_source_segment(source, node)}")
    assert not bare, "asserts outside pytest's rewriting, without a message (a failure would show no values):\n" + \
        "\n".join(bare)
