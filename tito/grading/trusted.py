"""Many submissions of the course's own code answered by one process, for the course's tests: never a student's.

`answer_trusted` exports each notebook beside a copy of the package, imports it and has it answer the tapes, one
submission after another in one Python (`answer_many.py`), which pays once for starting Python and importing numpy,
nbdev and numba. Each submission gets a folder of its own, and its package is forgotten before the next one is
imported. There is no sandbox and no limit per tape, only one time limit for the whole run: the code is trusted (a
catalogue of the course's bugs, say). Its answers are the `AnswerRun`s the judge reads, as from `sandbox.run_answer`.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from tito.grading.sandbox import ANSWER_FILES, AnswerRun
from tito.output import last_line
from tito.workspace import BLAS_THREADS, TitoError

DRIVER = "answer_many.py"


def _bundle(folder: Path):
    "The answer scripts and what they import, in `folder`."
    here = Path(__file__).resolve().parent
    folder.mkdir(parents=True, exist_ok=True)
    for name in (*ANSWER_FILES, DRIVER):
        shutil.copyfile(here / name, folder / name)
    shutil.copyfile(here.parent / "nbdev_procs.py", folder / "nbdev_procs.py")


def _read(out: Path) -> AnswerRun:
    "What one submission's turn left in `out`: its answers per tape and its last status."
    results = {}
    for path in out.glob("result-*.json"):
        results[int(path.stem.removeprefix("result-"))] = json.loads(path.read_text(encoding="utf-8"))
    status = out / "status.json"
    said = json.loads(status.read_text(encoding="utf-8")) if status.is_file() else {}
    return AnswerRun(results, said, {})


def answer_trusted(notebooks: dict, tapes: list, modules: list, package: str, scratch: Path, timeout: int, *,
                   library: Optional[Path] = None) -> dict:
    """name -> AnswerRun: each notebook of `notebooks` (name -> path) exported beside the package copy `library`,
    imported as `modules`, answering `tapes`, all in one process that must finish within `timeout` seconds.
    A process that fails or runs over is a TitoError naming the submission it was answering."""
    bundle = scratch / "bundle"
    _bundle(bundle)
    jobs, outs = [], {}
    for i, (name, notebook) in enumerate(notebooks.items()):
        folder = scratch / f"submission-{i}"
        (folder / "out").mkdir(parents=True)
        shutil.copyfile(notebook, folder / "submission.ipynb")
        request = {"package": package, "modules": modules, "tapes": tapes, "path": str(folder / "work"),
                   "library": str(library) if library else None, "notebook": str(folder / "submission.ipynb")}
        (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
        jobs.append([str(folder / "request.json"), str(folder / "out")])
        outs[name] = folder / "out"
    (bundle / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    env = {**os.environ, **{name: "1" for name in BLAS_THREADS}, "PYTHONDONTWRITEBYTECODE": "1"}
    cmd = [sys.executable, str(bundle / DRIVER), str(bundle / "jobs.json")]
    try:
        done = subprocess.run(cmd, cwd=bundle, env=env, capture_output=True, text=True, timeout=timeout)
        failed = f"ended with exit code {done.returncode}: {last_line(done.stdout + done.stderr)}" \
            if done.returncode else ""
    except subprocess.TimeoutExpired:
        failed = f"ran over {timeout} s"
    if failed:
        current = next((name for name, out in outs.items()
                        if _read(out).status.get("stage", "exported") in ("exported", "imported")), "?")
        raise TitoError(f"the trusted answer process {failed} (while answering {current})")
    return {name: _read(out) for name, out in outs.items()}
