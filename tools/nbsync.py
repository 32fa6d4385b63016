"""Edit a course notebook as a plain-text script and write it back.

The `.ipynb` stays the single source of truth; this only helps authors edit it with a text editor:

    python tools/nbsync.py to-py modules/01_tensor/01_tensor.ipynb  /tmp/01.py
    python tools/nbsync.py to-nb /tmp/01.py  modules/01_tensor/01_tensor.ipynb

Cells use jupytext's percent format; nbgrader metadata rides on the cell header
(`# %% nbgrader={"grade": false, "grade_id": "...", "solution": true, ...}`).
Written notebooks are clean: no outputs, only `nbgrader` cell metadata, a Python 3 kernelspec.
"""
import hashlib
import sys

import jupytext
import nbformat

KERNELSPEC = {"display_name": "Python 3", "language": "python", "name": "python3"}


def clean(nb):
    seen = set()
    nb.metadata = {"kernelspec": KERNELSPEC, "language_info": {"name": "python"}}
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k == "nbgrader"}
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
        cell.id = _stable_id(cell, seen)
    return nb


def _stable_id(cell, seen):
    """A cell id from the cell's content, so re-writing a notebook does not churn ids."""
    base = cell.metadata.get("nbgrader", {}).get("grade_id") or hashlib.sha1(cell.source.encode()).hexdigest()[:8]
    cid, n = base, 1
    while cid in seen:
        n += 1
        cid = f"{base}-{n}"
    seen.add(cid)
    return cid


def to_nb(src, dst):
    nb = jupytext.read(src, fmt="py:percent")
    nb.nbformat, nb.nbformat_minor = 4, 5
    nb = clean(nb)
    nbformat.validate(nb)
    nbformat.write(nb, dst)


def to_py(src, dst):
    nb = nbformat.read(src, as_version=4)
    jupytext.write(nb, dst, fmt="py:percent")


if __name__ == "__main__":
    cmd, src, dst = sys.argv[1:4]
    {"to-nb": to_nb, "to-py": to_py}[cmd](src, dst)
