"""How a chapter reads on the website: each exercise's stub in a box that names what to write, where it exports and
which checks judge it; outputs of the course's solution labelled; nbdev and grader plumbing hidden; long given code
folded. `page_view` works on the executed student's notebook before Sphinx, `finish_page` on the HTML after it."""
from __future__ import annotations

import ast
import html
import re
from dataclasses import dataclass, field

from bs4 import BeautifulSoup

EXERCISE_HEADING = re.compile(r"^#{2,4} (Exercise [^:\n]+):?\s*(.*)$", re.MULTILINE)
DIRECTIVE = re.compile(r"^#\|.*(?:\n|$)", re.MULTILINE)  # nbdev's `#| default_exp`, `#| export`, ...
EXPORT = re.compile(r"^#\|\s*export\b[ \t]*(\S*)", re.MULTILINE)  # `#| export` or `#| export core.optim`
DEFAULT_EXP = re.compile(r"^#\|\s*default_exp\s+(\S+)", re.MULTILINE)
GRADER_IMPORT = re.compile(r"^from tito\.grading\S* import checks\b.*$", re.MULTILINE)
FOLD_LINES = 30  # given code longer than this starts folded
SOLUTION_LABEL = "Output of the course's solution"


@dataclass
class Exercise:
    "An exercise of a chapter: its heading, its stub cells and the graded cells that judge it."
    title: str
    stubs: list = field(default_factory=list)
    checks: list = field(default_factory=list)


def nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def exercises(nb) -> list[Exercise]:
    "Each exercise heading with the solution cells and graded cells that follow it, up to the next heading."
    found, current = [], None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heading = EXERCISE_HEADING.search(cell.source)
            if heading:
                title = heading.group(1) + (f": {heading.group(2)}" if heading.group(2) else "")
                current = Exercise(title.replace("`", ""))
                found.append(current)
        elif current is not None and nbgrader(cell).get("solution"):
            current.stubs.append(cell)
        elif current is not None and nbgrader(cell).get("grade") and current.stubs:
            for exercise in [e for e in found if e.stubs and not e.checks and e is not current] + [current]:
                exercise.checks.append(cell)  # a check cell after two exercises judges both
    return [e for e in found if e.stubs]


def names_to_write(source: str) -> list[str]:
    "The functions and methods of a stub whose body raises NotImplementedError (where the student writes)."
    try:
        tree = ast.parse(DIRECTIVE.sub("", source))
    except SyntaxError:
        return []
    names = []

    def visit(node, prefix=""):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n) for n in ast.walk(child)):
                    names.append(prefix + child.name)
    visit(tree)
    return names


def box_head(exercise: Exercise, lib: str, default_exp: str | None, module_number: str) -> str:
    "The exercise box's head, as one HTML block (MyST passes it through)."
    names = [n for cell in exercise.stubs for n in names_to_write(cell.source)]
    write = (", ".join(f"<code>{html.escape(n)}</code>" for n in names) or "the stub below") + \
        " (where it says <code># YOUR CODE HERE</code>)"
    targets = [m.group(1) or default_exp for cell in exercise.stubs for m in EXPORT.finditer(cell.source)]
    files = list(dict.fromkeys(f"{lib}/{t.replace('.', '/')}.py" for t in targets if t))
    where = ", ".join(f"<code>{html.escape(f)}</code>" for f in files) or "this notebook only (not exported)"
    checks = ", ".join(f"<code>{html.escape(nbgrader(c).get('grade_id', '?'))}</code> "
                       f"({nbgrader(c).get('points', 0):g} points)" for c in exercise.checks)
    judged = (f"the locked check cell {checks} below, with hidden checks when graded"
              if checks else "the module's tests") + f"; then <code>tito module complete {module_number}</code>"
    return ('<div class="exercise-head">'
            f'<p class="exercise-title">{html.escape(exercise.title)}</p><dl>'
            f'<dt>Write</dt><dd class="exercise-write">{write}</dd>'
            f'<dt>Exports to</dt><dd class="exercise-exports">{where}</dd>'
            f'<dt>Judged by</dt><dd class="exercise-checks">{judged}</dd></dl></div>')


def page_view(nb, lib: str, module_number: str):
    """The executed student's notebook as the page shows it: a box head before each exercise's stubs (tagged
    `exercise-stub`), nbdev directives and the grader's import gone, given code over FOLD_LINES lines folded."""
    import nbformat

    default_exp = next((m.group(1) for c in nb.cells if c.cell_type == "code"
                        for m in [DEFAULT_EXP.search(c.source)] if m), None)
    found = exercises(nb)
    stubs = {id(c) for e in found for c in e.stubs}
    heads = {id(c): box_head(e, lib, default_exp, module_number) for e in found for c in e.stubs}
    cells, previous = [], None
    for cell in nb.cells:
        if id(cell) in heads and id(previous) not in stubs:  # a run of stubs shares one box
            cells.append(nbformat.v4.new_markdown_cell(heads[id(cell)]))
        if cell.cell_type == "code":
            tags = cell.metadata.setdefault("tags", [])
            if id(cell) in stubs:
                tags.append("exercise-stub")
            cell.source = GRADER_IMPORT.sub("", DIRECTIVE.sub("", cell.source)).strip("\n")
            if not cell.source.strip() and not cell.get("outputs"):
                previous = cell
                continue  # only plumbing
            if id(cell) not in stubs and cell.source.count("\n") + 1 > FOLD_LINES:
                tags.append("hide-input")
        cells.append(cell)
        previous = cell
    nb.cells = cells
    return nb


def finish_page(text: str) -> str:
    """A chapter's HTML: each box head and the stub cells after it wrapped in one `div.exercise-box`, and every output
    after the first exercise labelled as the course's solution's (the chapter ran with the course's solutions)."""
    soup = BeautifulSoup(text, "html.parser")
    for head in soup.select("div.exercise-head"):
        box = soup.new_tag("div", attrs={"class": "exercise-box"})
        head.wrap(box)
        sibling = box.find_next_sibling()
        while sibling is not None and "tag_exercise-stub" in (sibling.get("class") or []):
            following = sibling.find_next_sibling()
            box.append(sibling.extract())
            sibling = following
    first = soup.select_one("div.exercise-box")
    if first is not None:
        for output in first.find_all_next("div", class_="cell_output"):
            label = soup.new_tag("p", attrs={"class": "solution-label"})
            label.string = SOLUTION_LABEL
            output.insert_before(label)
    return str(soup)
