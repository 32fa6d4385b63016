"""Concurrent tito runs never undo each other: exports and progress updates hold the workspace lock."""
import json
import os
import subprocess
import sys

from tito_helpers import notebook_path

RECORD = """
import sys
from tito import progress
from tito.workspace import Workspace
from tito.module_checks import Checks, Outcome
ws = Workspace.find(sys.argv[1])
module = ws.module(sys.argv[2])
for _ in range(int(sys.argv[3])):
    progress.record(ws, module, [], Checks([Outcome("t", "passed")]), Checks([Outcome("c", "passed")]))
"""


def _mark(root, name: str, text: str):
    "Append a comment line to the first exported cell of a module's notebook (nbdev copies it to the package)."
    path = notebook_path(root, name)
    nb = json.loads(path.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).startswith("#| export"))
    cell["source"] = "".join(cell["source"]) + f"\n# {text}\n"
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")


def _start(root, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    return subprocess.Popen([sys.executable, "-m", "tito", *args], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_two_concurrent_exports_of_different_modules_both_land(course):
    for trial in range(2):
        _mark(course, "01_tensor", f"concurrency marker 01-{trial}")
        _mark(course, "02_autograd", f"concurrency marker 02-{trial}")
        runs = [_start(course, "module", "export", "01"), _start(course, "module", "export", "02")]
        for run in runs:
            out, err = run.communicate(timeout=300)
            assert run.returncode == 0, out + err
        core = course / "tinytorch" / "core"
        assert f"concurrency marker 01-{trial}" in (core / "tensor.py").read_text(encoding="utf-8")
        assert f"concurrency marker 02-{trial}" in (core / "autograd.py").read_text(encoding="utf-8")


def test_concurrent_progress_updates_keep_every_entry(course):
    runs = [subprocess.Popen([sys.executable, "-c", RECORD, str(course), number, "25"], cwd=course,
                             stderr=subprocess.PIPE, text=True) for number in ("01", "02", "03")]
    for run in runs:
        assert run.wait(timeout=120) == 0, run.stderr.read()
    recorded = json.loads((course / ".tito" / "progress.json").read_text(encoding="utf-8"))["modules"]
    assert sorted(recorded) == ["01", "02", "03"] and all(e["passed"] for e in recorded.values())
