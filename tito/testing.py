"""Run a module's checks: its pytest suite against the exported package, and the notebook's graded cells."""
from __future__ import annotations

import functools
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from tito.course import ANSI, Module, TitoError, Workspace, last_line, one_line, tool_env
from tito.notebooks import cell_at, cell_index, cell_label, grade_id, is_exercise, is_graded, parse_notebook, source_notebook

NOT_DONE = "NotImplementedError"
TRACEBACK_FRAME = re.compile(r"^(\S+\.py):(\d+): ", re.MULTILINE)  # a frame of a pytest traceback
KERNEL_CELL = re.compile(r"Cell In\[(\d+)\], line \d+")  # IPython's traceback frames


@dataclass(frozen=True)
class Outcome:
    "One test or graded cell: its name, passed/failed/skipped/error, and a one-line reason."
    name: str
    status: str
    reason: str = ""


@dataclass
class Checks:
    "The outcomes of one kind of check; `missing` says why there were none to run."
    outcomes: list[Outcome] = field(default_factory=list)
    missing: str = ""

    def count(self, status: str) -> int:
        return sum(o.status == status for o in self.outcomes)

    @property
    def passed(self) -> bool:
        ok = ("passed", "skipped")
        return not self.missing and bool(self.outcomes) and all(o.status in ok for o in self.outcomes)

    def counts(self) -> dict[str, int]:
        return {status: self.count(status) for status in ("passed", "failed", "error", "skipped")}


def not_done(gid: str | None) -> str:
    "How tito reports an exercise that still raises NotImplementedError."
    return f"exercise `{gid}` not done yet" if gid else "an exercise it uses is not done yet (NotImplementedError)"


# --- the module's pytest suite -----------------------------------------------------------------------


def run_test_suite(ws: Workspace, module: Module) -> Checks:
    "Run `tests/NN_topic/` with pytest against the workspace's package and read its JUnit report."
    tests = ws.tests_for(module)
    if not tests.is_dir():
        return Checks(missing=f"module {module.number} has no test suite ({ws.rel(tests)}/ does not exist)")
    with tempfile.TemporaryDirectory(prefix="tito-test-") as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", str(tests), "-q", "--tb=short", "-p", "no:cacheprovider",
               f"--junitxml={report}"]
        try:
            done = subprocess.run(cmd, cwd=ws.root, env=tool_env(ws.root), capture_output=True, text=True,
                                  timeout=ws.test_timeout)
        except subprocess.TimeoutExpired:
            raise TitoError(f"the tests in {ws.rel(tests)}/ ran over test_timeout ({ws.test_timeout} s)") from None
        if not report.is_file():
            raise TitoError(f"pytest could not run {ws.rel(tests)}/ (exit code {done.returncode}): "
                            f"{last_line(done.stdout + done.stderr)}")
        outcomes = _read_junit(ws, report)
    if not outcomes:
        return Checks(missing=f"pytest found no tests in {ws.rel(tests)}/")
    return Checks(outcomes)


def _read_junit(ws: Workspace, report: Path) -> list[Outcome]:
    exercise_at = functools.lru_cache(maxsize=None)(functools.partial(_exercise_at, ws))
    outcomes = []
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}".lstrip(":")
        status, reason = "passed", ""
        for tag in ("failure", "error", "skipped"):
            if (node := case.find(tag)) is not None:
                status = {"failure": "failed"}.get(tag, tag)
                reason = _junit_reason(node, exercise_at)
                break
        outcomes.append(Outcome(name, status, reason))
    return outcomes


def _junit_reason(node: ET.Element, exercise_at) -> str:
    "A one-line reason; a NotImplementedError names the innermost exercise cell in its traceback."
    message, text = node.get("message", ""), node.text or ""
    if not message.startswith(NOT_DONE) and f"E   {NOT_DONE}" not in text:
        return one_line(message or text)
    frames = TRACEBACK_FRAME.findall(text)
    return not_done(next(filter(None, (exercise_at(path, int(line)) for path, line in reversed(frames))), None))


def _exercise_at(ws: Workspace, path: str, line: int) -> str | None:
    "grade_id of the exercise cell that line `line` of an exported file came from (None if it is not one)."
    file = (ws.root / path).resolve()
    notebook, cid = source_notebook(file), cell_at(file, line)
    if notebook is None or cid is None or not notebook.is_file():
        return None
    try:
        nb = parse_notebook(notebook)
    except ValueError:  # a notebook broken since the export; the traceback still stands on its own
        return None
    index = cell_index(nb, cid)
    return grade_id(nb.cells[index]) if index is not None and is_exercise(nb.cells[index]) else None


# --- the notebook's graded cells ---------------------------------------------------------------------


def run_notebook_checks(ws: Workspace, module: Module) -> Checks:
    "Execute the notebook top to bottom in a python3 kernel and report every graded (nbgrader) test cell."
    import nbformat
    from nbclient import NotebookClient

    run = nbformat.read(module.notebook, as_version=4)
    if not any(c.cell_type == "code" and is_graded(c) for c in run.cells):
        return Checks(missing=f"{ws.rel(module.notebook)} has no graded test cells")
    client = NotebookClient(run, kernel_name="python3", timeout=ws.cell_timeout, allow_errors=True,
                            interrupt_on_timeout=True, resources={"metadata": {"path": str(module.folder)}})
    with tempfile.TemporaryFile("w+") as kernel_log:  # the kernel's own log lines, shown only if it fails
        try:
            client.execute(env=tool_env(ws.root), stderr=kernel_log)
        except Exception as e:  # a dead kernel or one that does not start; failing cells are not exceptions here
            kernel_log.seek(0)
            raise TitoError(f"{ws.rel(module.notebook)} could not be run: {type(e).__name__}: "
                            f"{one_line(str(e))} {last_line(kernel_log.read())}".rstrip()) from None
    exercises = {c.execution_count: grade_id(c) for c in run.cells if c.cell_type == "code" and is_exercise(c)}
    graded = [_cell_outcome(cell, exercises, ws.cell_timeout) for cell in run.cells
              if cell.cell_type == "code" and is_graded(cell)]
    # The notebook must also run top to bottom: an error in any other cell (a demo, a plot) is a failure too.
    others = [_cell_outcome(cell, exercises, ws.cell_timeout, name=cell_label(run, i))
              for i, cell in enumerate(run.cells) if cell.cell_type == "code" and not is_graded(cell)]
    return Checks(graded + [o for o in others if o.status != "passed"])


def _cell_outcome(cell, exercises: dict, timeout: int, name: str | None = None) -> Outcome:
    name = name or grade_id(cell) or f"cell {cell.get('id')}"
    if cell.execution_count is None and not cell.source.strip():
        return Outcome(name, "passed")
    if cell.execution_count is None:
        return Outcome(name, "error", "did not run")
    error = next((o for o in cell.outputs if o.output_type == "error"), None)
    if error is None:
        return Outcome(name, "passed")
    if error.ename == NOT_DONE:
        counts = [int(n) for n in KERNEL_CELL.findall(ANSI.sub("", "\n".join(error.traceback)))]
        return Outcome(name, "failed", not_done(next((exercises[n] for n in reversed(counts) if n in exercises), None)))
    if error.ename == "KeyboardInterrupt":
        return Outcome(name, "failed", f"interrupted after cell_timeout ({timeout} s)")
    return Outcome(name, "failed", one_line(f"{error.ename}: {error.evalue}"))
