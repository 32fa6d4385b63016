"""Helpers for the tito tests: the repository copy, running tito in it, and reading or editing its files."""
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROBE_SUITE = '''\
import numpy as np
import pytest

from tinytorch.core.tensor import Tensor

pytestmark = pytest.mark.exercise("arithmetic")


def test_mul_values():
    assert np.array_equal((Tensor([1.0, 2.0]) * Tensor([3.0, 4.0])).data, [3.0, 8.0])


def test_add_values():
    assert np.array_equal((Tensor([1.0, 2.0]) + Tensor([3.0, 4.0])).data, [4.0, 6.0])


@pytest.mark.skip(reason="probe: a skipped test is reported with its reason")
def test_skipped_probe():
    pass
'''


def committed_tree(dest: Path):
    "The files of HEAD, as `git archive` writes them."
    archive = subprocess.run(["git", "archive", "--format=tar", "HEAD"], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")


def run_tito(root: Path, *args: str, cwd: Path = None, env: dict = None, timeout: int = 300):
    """Run `python -m tito ARGS` in `root` (or `cwd`), as a student would: no TITO_ROOT or PYTHONPATH set,
    and a wide terminal so tables do not wrap test names."""
    clean = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    clean.update(COLUMNS="200", NO_COLOR="1", **(env or {}))
    return subprocess.run([sys.executable, "-m", "tito", *args], cwd=cwd or root, env=clean, capture_output=True,
                          text=True, timeout=timeout)


def tree_digest(folder: Path) -> dict:
    "sha256 of every file under `folder` (bytecode caches aside), to prove a command left it alone."
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def notebook_path(root: Path, name: str = "01_tensor") -> Path:
    return root / "modules" / name / f"{name}.ipynb"


def edit_notebook(root: Path, old: str, new: str, name: str = "01_tensor"):
    "Replace `old` by `new` in the one cell of a module's notebook that contains it."
    path = notebook_path(root, name)
    nb = json.loads(path.read_text(encoding="utf-8"))
    hits = [cell for cell in nb["cells"] if old in "".join(cell["source"])]
    assert len(hits) == 1, f"{old!r} is in {len(hits)} cells of {path.name}; the test needs exactly one"
    hits[0]["source"] = "".join(hits[0]["source"]).replace(old, new)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")


def cells(root: Path, name: str = "01_tensor") -> list[dict]:
    "The cells of a module's notebook, read with json alone (independently of tito)."
    return json.loads(notebook_path(root, name).read_text(encoding="utf-8"))["cells"]


def assert_one_line_error(result: subprocess.CompletedProcess, *needles: str):
    "A failed command that printed exactly one line (on stderr, nothing on stdout) containing every needle."
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode != 0, result.stdout + result.stderr
    assert len(lines) == 1 and not result.stdout.strip(), f"expected one line, got:\n{result.stdout}{result.stderr}"
    assert "Traceback" not in result.stderr, f"a traceback instead of one line:\n{result.stderr}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"


def as_student(root: Path, *names: str):
    """Make a course copy a student workspace (what the judge needs of `tito student init`): settings.ini says
    kind = student, and `release/NN_topic/` holds each named module's notebook (hidden checks removed) with the course's answers to its
    checks shipped beside it (`NN_topic.expected.json`), computed from the course copy's package as it is now.
    Call it before editing a notebook, so that the shipped answers are the course's, not the student's."""
    from tito.workspace import Workspace
    from tito.grading.feedback import without_hidden
    from tito.grading.generate import ship_expected
    from tito.student_workspace import mark_student_settings

    ws = Workspace.find(root)
    for name in names or ("01_tensor",):
        release = root / "release" / name
        release.mkdir(parents=True, exist_ok=True)
        nb = json.loads(notebook_path(root, name).read_text(encoding="utf-8"))
        for cell in nb["cells"]:  # the release has no hidden checks (as nbgrader's student version)
            cell["source"] = without_hidden("".join(cell["source"]))
        (release / f"{name}.ipynb").write_text(json.dumps(nb, indent=1, ensure_ascii=False), encoding="utf-8")
        ship_expected(ws, ws.module(name), release / f"{name}.ipynb")
    settings = root / "settings.ini"
    settings.write_text(mark_student_settings(settings.read_text(encoding="utf-8")), encoding="utf-8")
