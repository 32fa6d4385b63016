"""Reading course notebooks: validity, the header, nbdev directives, nbgrader cells, and exported files."""
from __future__ import annotations

import functools
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

from tito.nbdev_procs import BEGIN_SOLUTION, END_SOLUTION, EXPORT_HEADER
from tito.workspace import Module, TitoError, Workspace

DIRECTIVE = re.compile(r"^\s*#\s*\|\s*([\w-]+)(.*)$")  # nbdev: `#| name args`
TITLE = re.compile(r"^#\s+Module\s+\d+\s*:\s*(.+?)\s*$")
FIELD = re.compile(r"^\*\*(Difficulty|Time|Prerequisites|Package):\*\*\s*(.+?)\s*$")
SOURCE_HEADER = re.compile(rf"^{re.escape(EXPORT_HEADER)}(.+?)\.?$")
CELL_MARKER = re.compile(r"^# %% \S+ #(\S+)\s*$")  # nbdev's `# %% ../../modules/x.ipynb #<cell id>`
BARE_RAISE = re.compile(r"^\s*raise NotImplementedError(\(\))?\s*$")
SOLUTION_REGION = re.compile(f"### {BEGIN_SOLUTION}(.*?)### {END_SOLUTION}", re.DOTALL)


@dataclass(frozen=True)
class Header:
    "What the first markdown cell says about the module."
    title: str = ""
    difficulty: str = ""
    time: str = ""
    prerequisites: str = ""
    package: str = ""


class Node(dict):
    "Notebook JSON with attribute access, like nbformat's NotebookNode (importing nbformat takes seconds)."

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def _node(value):
    if isinstance(value, dict):
        return Node({key: _node(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_node(item) for item in value]
    return value


@functools.lru_cache(maxsize=None)
def _schema_validator(minor: int):
    "nbformat's own JSON schema for notebook format 4.`minor`, compiled with fastjsonschema (as nbformat can)."
    import fastjsonschema

    folder = Path(importlib.util.find_spec("nbformat").submodule_search_locations[0]) / "v4"
    schema = folder / f"nbformat.v4.{minor}.schema.json"
    return fastjsonschema.compile(json.loads((schema if schema.is_file() else folder / "nbformat.v4.schema.json")
                                             .read_text(encoding="utf-8")))


def parse_notebook(path: Path) -> Node:
    "A notebook file as a Node with each cell's source joined into one string; ValueError if it is not one."
    raw = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise ValueError("its JSON has no list of cells")
    if raw.get("nbformat") != 4:
        raise ValueError(f"it is nbformat {raw.get('nbformat')}, tito reads version 4 (save it from JupyterLab)")
    _schema_validator(raw.get("nbformat_minor", 0))(raw)
    for cell in raw["cells"]:
        if isinstance(cell.get("source"), list):
            cell["source"] = "".join(cell["source"])
    return _node(raw)


def read_notebook(ws: Workspace, module: Module) -> Node:
    "The module's notebook; a missing, non-JSON or invalid notebook is a TitoError."
    path, name = module.notebook, ws.rel(module.notebook)
    if not path.is_file():
        raise TitoError(f"module {module.name} has no notebook: {name} does not exist")
    try:
        return parse_notebook(path)
    except UnicodeDecodeError:
        raise TitoError(f"{name} is not a notebook: it is not UTF-8 text") from None
    except json.JSONDecodeError as e:
        raise TitoError(f"{name} is not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except ValueError as e:  # includes fastjsonschema's JsonSchemaValueException
        raise TitoError(f"{name} is not a valid notebook: {e}") from None


def read_header(nb: Node) -> Header:
    "Title, difficulty, time, prerequisites and package from the first markdown cell."
    cell = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    fields = {}
    for line in (cell.source.splitlines() if cell else []):
        if (m := TITLE.match(line)) and "title" not in fields:
            fields["title"] = m.group(1)
        elif m := FIELD.match(line):
            fields.setdefault(m.group(1).lower(), m.group(2))
    return Header(**fields)


def directives(source: str) -> dict[str, str]:
    "nbdev directives of a cell, e.g. {'export': '', 'default_exp': 'core.tensor'}."
    return {m.group(1): m.group(2).strip() for line in source.splitlines() if (m := DIRECTIVE.match(line))}


def default_exp(ws: Workspace, nb: Node, module: Module) -> str:
    "The `#| default_exp` of the first code cell (e.g. 'core.tensor'); a TitoError if there is none."
    index, cell = next(((i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"), (None, None))
    target = directives(cell.source).get("default_exp") if cell else None
    if not target:
        where = f"its first code cell ({cell_label(nb, index)})" if cell else "it has no code cell"
        raise TitoError(f"{ws.rel(module.notebook)} has no `#| default_exp` directive in {where}")
    return target


def nbgrader_meta(cell) -> dict:
    "The cell's nbgrader metadata ({} when it has none)."
    return cell.get("metadata", {}).get("nbgrader", {})


def grade_id(cell) -> str | None:
    return nbgrader_meta(cell).get("grade_id")


def cell_label(nb: Node, index: int) -> str:
    "How messages name a cell: a code cell as `cell_title` does (JupyterLab shows no cell numbers)."
    if nb.cells[index].get("cell_type") == "code":
        return cell_title(nb, index)
    gid = grade_id(nb.cells[index])
    return f"the markdown cell under '{heading_above(nb, index)}'" + (f" (grade_id `{gid}`)" if gid else "")


HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")  # a markdown heading line


def headings(cell) -> list[str]:
    "The heading lines of a markdown cell, without their `#`s (none for a code cell)."
    if cell.get("cell_type") != "markdown":
        return []
    return [m.group(1) for line in cell.get("source", "").splitlines() if (m := HEADING.match(line))]


def heading_above(nb: Node, index: int) -> str:
    "The last markdown heading before cell `index` ('' if there is none)."
    return next((h[-1] for cell in reversed(nb.cells[:index]) if (h := headings(cell))), "")


def _check_title(nb: Node, index: int) -> str:
    """A graded cell's title: that of the exercise it checks (`test-<exercise grade_id>`, else the nearest exercise
    above it since the previous graded cell), or else the heading above it."""
    exercises = {grade_id(c): i for i, c in enumerate(nb.cells) if is_exercise(c) and grade_id(c)}
    if (match := exercises.get(grade_id(nb.cells[index]).removeprefix("test-"))) is not None:
        return heading_above(nb, match)
    for i in range(index - 1, -1, -1):
        if is_graded(nb.cells[i]):
            break
        if is_exercise(nb.cells[i]):
            return heading_above(nb, i)
    return heading_above(nb, index)


def _first_line(source: str) -> str:
    "The first line of code in a cell, past nbdev directives and comments, shortened."
    line = next((s.strip() for s in source.splitlines() if s.strip() and not s.lstrip().startswith("#")), "")
    return line if len(line) <= 60 else line[:59] + "…"


def cell_title(nb: Node, index: int) -> str:
    """A code cell named as the student sees it in JupyterLab (which shows no cell numbers): an exercise or a
    graded check by its title and grade_id, any other cell by the heading above it and its first line."""
    cell, gid = nb.cells[index], grade_id(nb.cells[index])
    if gid and is_graded(cell) and not is_exercise(cell):
        title = _check_title(nb, index)
    elif gid:
        title = heading_above(nb, index)
    else:
        heading, first = heading_above(nb, index), _first_line(cell.get("source", ""))
        where = f"the cell under '{heading}'" if heading else "the cell"
        return f"{where} that starts `{first}`" if first else where
    return f"{title} (grade_id `{gid}`)" if title else f"grade_id `{gid}`"


def cell_index(nb: Node, cell_id: str) -> int | None:
    return next((i for i, c in enumerate(nb.cells) if c.get("id") == cell_id), None)


def is_graded(cell) -> bool:
    return bool(nbgrader_meta(cell).get("grade"))


def is_exercise(cell) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def pending_exercises(nb: Node) -> list[str]:
    """grade_ids of exercise cells that still `raise NotImplementedError` (nbgrader's stub).

    When a cell still has its `### BEGIN SOLUTION` markers only the solution regions count, so an abstract
    method's `raise NotImplementedError` outside them is not mistaken for an unfinished exercise."""
    pending = []
    for cell in nb.cells:
        if cell.cell_type != "code" or not is_exercise(cell):
            continue
        regions = SOLUTION_REGION.findall(cell.source) or [cell.source]
        if any(BARE_RAISE.match(line) for region in regions for line in region.splitlines()):
            pending.append(grade_id(cell) or "?")
    return pending


def source_notebook(py_file: Path) -> Path | None:
    "The notebook an nbdev-exported file says it came from (its `File to edit:` header), resolved."
    try:
        with open(py_file, encoding="utf-8") as f:
            head = [next(f, "") for _ in range(5)]
    except (OSError, UnicodeDecodeError):
        return None
    for line in head:
        if m := SOURCE_HEADER.match(line.rstrip("\n")):
            return (py_file.parent / m.group(1)).resolve()
    return None


def module_file(lib_dir: Path, dotted: str) -> Path:
    "The file nbdev writes module `dotted` (e.g. 'core.tensor') to."
    return lib_dir.joinpath(*dotted.split(".")).with_suffix(".py")


def exported_files(lib_dir: Path, notebook: Path) -> list[Path]:
    "Files of the package that were exported from `notebook`."
    notebook = notebook.resolve()
    return sorted(p for p in lib_dir.rglob("*.py") if "__pycache__" not in p.parts and source_notebook(p) == notebook)


def is_exported(ws: Workspace, module: Module, nb: Node) -> bool:
    "Whether the notebook's `default_exp` file exists and was exported from this notebook."
    target = module_file(ws.lib_dir, default_exp(ws, nb, module))
    return target.is_file() and source_notebook(target) == module.notebook.resolve()


def cell_at(py_file: Path, line: int) -> str | None:
    "The id of the notebook cell that line `line` (1-based) of an exported file came from."
    try:
        lines = Path(py_file).read_text(encoding="utf-8").splitlines()[:line]
    except OSError:
        return None
    return next((m.group(1) for text in reversed(lines) if (m := CELL_MARKER.match(text))), None)
