"""Fail if a course notebook is not committed clean: valid, no outputs, only nbgrader cell metadata."""
import sys
from pathlib import Path

import nbformat

ALLOWED_CELL_METADATA = {"nbgrader"}


def problems(path: Path):
    "Every reason `path` is not a clean course notebook."
    try:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    except Exception as e:  # any unreadable notebook is a problem to report, whatever the reason
        return [f"{path}: not a valid notebook ({e.__class__.__name__}: {e})"]
    found = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None):
            found.append(f"{path}: cell {i} has outputs or an execution count")
        extra = set(cell.metadata) - ALLOWED_CELL_METADATA
        if extra:
            found.append(f"{path}: cell {i} has metadata {sorted(extra)} (only nbgrader is allowed)")
    return found


if __name__ == "__main__":
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "modules")
    notebooks = sorted(root.glob("*/*.ipynb"))
    found = [p for nb in notebooks for p in problems(nb)]
    print("\n".join(found) or f"{len(notebooks)} notebooks clean")
    sys.exit(1 if found or not notebooks else 0)
