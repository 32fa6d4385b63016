"""Notebook 05 runs top to bottom without PyTorch too: its comparison section says so in one sentence and skips."""
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.exercise("attention-forward")

NOTEBOOK = Path(__file__).resolve().parents[2] / "modules" / "05_attention" / "05_attention.ipynb"


@pytest.mark.slow
@pytest.mark.skipif(not NOTEBOOK.is_file() or "### BEGIN SOLUTION" not in NOTEBOOK.read_text(encoding="utf-8"),
                    reason="runs the course's own notebook (with its solutions), not a student's copy")
def test_notebook_05_runs_without_pytorch(tmp_path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    # importing torch fails in this kernel, as on a machine without it (and matplotlib draws nowhere)
    nb.cells.insert(0, nbformat.v4.new_code_cell("import sys, matplotlib\nsys.modules['torch'] = None\n"
                                                 "matplotlib.use('Agg')"))
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    said = [o.get("text", "") for c in nb.cells if c.cell_type == "code" and "torch is None" in c.source
            for o in c.outputs if o.get("output_type") == "stream"]
    assert said == ["PyTorch is not installed, so this comparison is skipped (pip install torch==2.13.0 to run it).\n"]
