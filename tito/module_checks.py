"""Run a module's checks: the notebook's graded cells as the judge decides them, and its pytest suite.

The judge gives one verdict per exercise; an exercise that fails because one it builds on (its check's `after=`)
fails says "fix Exercise N first". Every test declares the exercise it exercises
(`@pytest.mark.exercise("grade_id")`, read by `tito.pytest_plugin`), and a failing test is shown under it, with the
same "fix Exercise N first" when the verdicts say so: one verdict per exercise, everywhere. A notebook cell is named by
its title and grade_id (`tito.notebooks.cell_title`). A failure's reason is one line that keeps the values a check
compared; the full failure is kept for `--verbose`.

Notebooks run in a fresh kernel with a time limit per cell that holds: a cell over `cell_timeout` is interrupted,
and one that ignores the interrupt has its kernel killed `KILL_GRACE` seconds later. Ctrl-C stops the kernel and
is one line (a TitoError).
"""
from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic

from tito.output import ANSI, last_line, one_line
from tito.workspace import Module, TitoError, Workspace, tool_env
from tito.notebooks import cell_title, grade_id, is_exercise, is_graded, parse_notebook

NOT_DONE = "NotImplementedError"
KERNEL_CELL = re.compile(r"Cell In\[(\d+)\], line \d+")  # IPython's traceback frames
REASON_WIDTH = 400  # characters of a one-line reason: enough for the values a check compared
SLOW_HINT = ("; if the cell is right but the machine is busy or slow, close other programs or raise settings.ini "
             "[limits] cell_timeout")
KILL_GRACE = 5  # seconds a cell has to stop after its time-limit interrupt, before tito kills the kernel
# Run in the kernel before the notebook: pytest's assertion rewriting, so that a failing `assert` in a graded cell
# says which values it compared instead of a bare AssertionError. Pass or fail is unchanged.
KERNEL_SETUP = '''
def _tito_rewrite_asserts():
    import ast
    try:
        from _pytest.assertion.rewrite import rewrite_asserts
    except ImportError:
        return

    class RewriteAsserts(ast.NodeTransformer):
        def visit(self, node):
            try:
                rewrite_asserts(node, b"")
                for child in ast.walk(node):  # the imports it adds have no end position; IPython needs one
                    if getattr(child, "lineno", None) is not None and getattr(child, "end_lineno", None) is None:
                        child.end_lineno, child.end_col_offset = child.lineno, child.col_offset
            except Exception:
                pass
            return node

    get_ipython().ast_transformers.append(RewriteAsserts())
_tito_rewrite_asserts()
del _tito_rewrite_asserts
'''


@dataclass(frozen=True)
class Outcome:
    """One verdict, test or notebook cell: its name, passed/failed/skipped/error, a one-line reason, its exercise
    (its title and grade_id, or ''), the full failure (for --verbose), the pytest node id, the exercise's grade_id."""
    name: str
    status: str
    reason: str = ""
    exercise: str = ""
    detail: str = ""
    nodeid: str = ""
    gid: str = ""


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


@dataclass
class Verdicts(Checks):
    "The judge's verdicts, one per exercise (titled as the student sees it), and what each exercise builds on."
    builds_on: dict = field(default_factory=dict)  # grade_id -> the grade_ids its check builds on (`after=`, deep)
    names: dict = field(default_factory=dict)  # grade_id -> title, for exercises without a verdict

    @property
    def titles(self) -> dict[str, str]:
        return {**self.names, **{o.gid: o.name for o in self.outcomes}}

    def failing(self) -> dict[str, Outcome]:
        return {o.gid: o for o in self.outcomes if o.status != "passed"}

    def fix_first(self, gid: str, after=()) -> str:
        """The failing exercise that `gid` builds on (its check's `after=`, and a test's own `after`) to fix before
        it ('' when there is none)."""
        from tito.grading.judge import fix_first

        below = [*self.builds_on.get(gid, ()), *after]
        below += [b for a in after for b in self.builds_on.get(a, ())]
        graph = {**self.builds_on, gid: [a for a in dict.fromkeys(below) if a != gid]}
        return fix_first(gid, graph, self.failing()) or ""

    def order(self) -> list[str]:
        """The exercises, those to fix first in front (failing and building on no failing one), then the others,
        each after those it builds on, else in exercise order: the order in which the tests run."""
        failing = self.failing()
        first = [g for g in failing if not self.fix_first(g)]
        placed, rest = set(first), []

        def place(gid):
            if gid not in placed:
                placed.add(gid)
                for below in self.builds_on.get(gid, ()):
                    place(below)
                rest.append(gid)

        for o in self.outcomes:
            place(o.gid)
        return first + rest

    @property
    def first(self) -> str:
        "The title of the exercise to fix first, or '' when every exercise passes."
        failing = self.failing()
        return next((failing[g].name for g in self.order() if g in failing), "")


def not_done(gid: str | None) -> str:
    "How tito reports an exercise that still raises NotImplementedError."
    return f"exercise `{gid}` not done yet" if gid else "an exercise it uses is not done yet (NotImplementedError)"


# --- failure messages on one line ------------------------------------------------------------------------

NOISE = re.compile(r"^\s*(Use -v to get (more|the full) diff|Full diff:|Omitting \d+ identical items.*)\s*$")
ADDRESS = re.compile(r"<(?:built-in )?function ([\w.<>]+)(?: at 0x[0-9a-f]+)?>| at 0x[0-9a-f]+")
NUMPY_VALUE = re.compile(r"^\s*(ACTUAL|DESIRED):\s?(.*)$")
NUMPY_MISMATCH = re.compile(r"^\s*\[([^\]]*)\]: (.+) \(ACTUAL\), (.+) \(DESIRED\)\s*$")
NUMPY_COUNT = re.compile(r"^\s*Mismatched elements: (\d+ / \d+)")


def failure_reason(message: str) -> str:
    """A failure message as one line that keeps the compared values: numpy.testing's ACTUAL/DESIRED become
    'expected ..., received ...'; pytest's rewritten asserts keep their first explanation; object addresses,
    pytest's '-v' hints and a bare 'AssertionError:' go."""
    text = ANSI.sub("", message or "").replace("\r", "")
    text = re.sub(r"^AssertionError:\s*", "", text.strip())
    lines = [line for line in text.splitlines() if not NOISE.match(line)]
    reason = _numpy_reason(lines) or _assert_reason(lines)
    reason = reason.replace("\\n", " ")  # pytest writes a repr's line breaks as `\n`
    reason = re.sub(r"\s+", " ", ADDRESS.sub(lambda m: m.group(1) or "", reason)).strip()
    reason = re.sub(r"([\[(]) ", r"\1", reason)  # numpy's line breaks inside arrays: "[[1., 2.], [3., 4.]]"
    return reason if len(reason) <= REASON_WIDTH else reason[:REASON_WIDTH - 1] + "…"


def _numpy_reason(lines: list[str]) -> str:
    "numpy.testing's report ('Arrays are not equal ... ACTUAL: ... DESIRED: ...') in one line, or ''."
    values, head, current, first, count = {}, [], None, None, None
    for line in lines:
        if m := NUMPY_VALUE.match(line):
            current = "received" if m.group(1) == "ACTUAL" else "expected"
            values[current] = m.group(2)
        elif current and line.strip():
            values[current] += " " + line.strip()  # an array's repr goes on over several lines
        elif m := NUMPY_MISMATCH.match(line):
            first = first or f"at [{m.group(1)}]: expected {m.group(3)}, received {m.group(2)}"
        elif m := NUMPY_COUNT.match(line):
            count = f"{m.group(1)} elements differ"
        elif line.strip() and not re.match(r"^\s*(Max (absolute|relative)|Mismatch at|First \d+ mismatch)", line):
            head.append(line.strip())
    if set(values) != {"expected", "received"}:
        return ""
    where = "; ".join(filter(None, (count, first)))
    return (f"{' '.join(head) or 'arrays differ'}{f' ({where})' if where else ''}: "
            f"expected {values['expected']}, received {values['received']}")


def _assert_reason(lines: list[str]) -> str:
    "A pytest assertion explanation (or any message) in one line: its own lines up to the first nested `where`."
    kept = []
    for line in lines:
        if re.match(r"^\s*\+\s{3,}(where|and)\b", line):  # a `where` inside a `where`: repeats what is shown
            continue
        kept.append(line.strip())
    reason = " ".join(filter(None, kept))
    # `assert False + where False = f(a, b)` says `assert f(a, b)`
    return re.sub(r"^assert \(?(False|True|None|0)\)? \+\s+where \1 = ", "assert ", reason)


# --- the module's pytest suite -----------------------------------------------------------------------


def run_test_suite(ws: Workspace, module: Module, verdicts: Verdicts, stop_early: bool = False) -> Checks:
    """Run `tests/NN_topic/` with pytest against the workspace's package and read its JUnit report. Each failure is
    shown under the exercise its test declares, with "fix Exercise N first" when the verdicts say an exercise it
    builds on fails; failures under the exercise to fix first come first. With `stop_early`, the tests run in
    that order of exercises and stop after the first exercise with a failing test."""
    tests = ws.tests_for(module)
    if not tests.is_dir():
        return Checks(missing=f"module {module.number} has no test suite ({ws.rel(tests)}/ does not exist)")
    with tempfile.TemporaryDirectory(prefix="tito-test-") as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", str(tests), "-q", "--tb=short", "-p", "no:cacheprovider",
               "-p", "tito.pytest_plugin", f"--junitxml={report}"]
        if stop_early:
            cmd.append(f"--tito-stop-early={','.join(verdicts.order())}")
        env = {**tool_env(ws.root), "TITO_PACKAGE_DIR": str(ws.lib_dir)}
        try:
            done = subprocess.run(cmd, cwd=ws.root, env=env, capture_output=True, text=True, timeout=ws.test_timeout)
        except subprocess.TimeoutExpired:
            raise TitoError(f"the tests in {ws.rel(tests)}/ ran over test_timeout ({ws.test_timeout} s)") from None
        except KeyboardInterrupt:
            raise TitoError(f"interrupted (Ctrl-C) while pytest ran {ws.rel(tests)}/") from None
        if not report.is_file():
            raise TitoError(f"pytest could not run {ws.rel(tests)}/ (exit code {done.returncode}): "
                            f"{last_line(done.stdout + done.stderr)}")
        outcomes = [_junit_outcome(case, verdicts) for case in ET.parse(report).getroot().iter("testcase")]
    if not outcomes:
        return Checks(missing=f"pytest found no tests in {ws.rel(tests)}/")
    first = verdicts.order()
    rank = {gid: i for i, gid in enumerate(first)}
    bad = sorted((o for o in outcomes if o.status in ("failed", "error")), key=lambda o: rank.get(o.gid, len(rank)))
    return Checks([o for o in outcomes if o.status not in ("failed", "error")] + bad)


def fix_first(verdicts: Verdicts, tests: Checks) -> str:
    """The exercise tito names first: the verdicts' (see `Verdicts.first`), else, when every verdict passes (the
    visible checks do not catch everything), the exercise of the first failing test; '' when nothing fails."""
    failing = (o for o in tests.outcomes if o.status in ("failed", "error"))
    return verdicts.first or next((o.exercise for o in failing if o.exercise), "")


def _junit_outcome(case: ET.Element, verdicts: Verdicts) -> Outcome:
    "One test of the JUnit report, under the exercise it declares, with a one-line reason when it did not pass."
    name = f"{case.get('classname', '').rpartition('.')[2]}::{case.get('name')}".lstrip(":")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    gid, nodeid = props.get("tito-exercise", ""), props.get("tito-nodeid", "")
    after = tuple(a for a in props.get("tito-after", "").split(",") if a)
    tag, node = next(((t, n) for t in ("failure", "error", "skipped") if (n := case.find(t)) is not None), ("", None))
    if not tag:
        return Outcome(name, "passed", gid=gid, nodeid=nodeid)
    message, text = node.get("message", ""), node.text or ""
    if tag == "skipped":
        return Outcome(name, "skipped", one_line(message or text), gid=gid, nodeid=nodeid)
    if message.startswith(NOT_DONE) or f"E   {NOT_DONE}" in text:
        reason = not_done(None if verdicts.fix_first(gid, after) else gid or None)
    else:
        reason = failure_reason(message or text)
    if first := verdicts.fix_first(gid, after):
        reason = f"fix {verdicts.titles[first]} first; {reason}"
    return Outcome(name, {"failure": "failed"}.get(tag, tag), reason, exercise=verdicts.titles.get(gid, gid),
                   detail=text.rstrip(), nodeid=nodeid, gid=gid)


# --- the notebook's graded cells ---------------------------------------------------------------------


def run_notebook_checks(ws: Workspace, module: Module) -> Checks:
    "Execute the notebook top to bottom in a python3 kernel and report every graded (nbgrader) test cell."
    import nbformat

    run = nbformat.read(module.notebook, as_version=4)
    if not any(c.cell_type == "code" and is_graded(c) for c in run.cells):
        return Checks(missing=f"{ws.rel(module.notebook)} has no graded test cells")
    with tempfile.TemporaryFile("w+") as kernel_log:  # the kernel's own log lines, shown only if it fails
        try:
            stopped = execute_notebook(run, module.folder, tool_env(ws.root), ws.cell_timeout, kernel_log)
        except NotebookInterrupted as e:
            where = f", in {cell_title(run, e.index)}" if e.index is not None else ""
            raise TitoError(f"interrupted (Ctrl-C) while the notebook checks ran {ws.rel(module.notebook)}{where}; "
                            "its kernel was stopped") from None
        except Exception as e:  # a dead kernel or one that does not start; failing cells are not exceptions here
            kernel_log.seek(0)
            log = "\n".join(line for line in kernel_log.read().splitlines() if "WARNING" not in line)
            raise TitoError(f"{ws.rel(module.notebook)} could not be run: {type(e).__name__}: "
                            f"{one_line(str(e))} {last_line(log)}".rstrip()) from None
    exercises = {c.execution_count: grade_id(c) for c in run.cells if c.cell_type == "code" and is_exercise(c)}
    # The verdicts of the graded cells are the judge's (run_judged_checks); the notebook must also run top to bottom:
    # an error in any other cell (a demo, a plot), or a cell that stopped the run, is a failure too.
    others = [_cell_outcome(run, i, exercises, stopped, ws.cell_timeout) for i, cell in enumerate(run.cells)
              if cell.cell_type == "code" and (not is_graded(cell) or (stopped and i == stopped.index))
              and (stopped is None or i <= stopped.index)]
    return Checks([o for o in others if o.status != "passed"])


def unjudged(module: Module) -> Verdicts:
    "No verdicts (the judge could not run), only the exercises' titles: the tests are still shown under them."
    nb = parse_notebook(module.notebook)
    return Verdicts(names={grade_id(c): cell_title(nb, i) for i, c in enumerate(nb.cells) if is_exercise(c)})


def run_judged_checks(ws: Workspace, module: Module) -> Verdicts:
    """The graded cells' verdicts, one per exercise, as autograding decides them: the package answers every visible
    check in a process of its own, and the judge compares the answers with the course's. In a student workspace the
    course's answers ship beside the release notebook; in the course repository they come from the course's own
    package."""
    from tito.grading import judge
    from tito.grading.sandbox import Limits, run_answer

    limits = Limits.of(ws)
    with tempfile.TemporaryDirectory(prefix="tito-judge-") as tmp:
        if ws.is_student:
            release = ws.released(module).notebook
            probes = judge.read_probes(ws, module, release)
            expected = judge.read_expected(judge.expected_file(release), probes)
        else:
            probes = judge.read_probes(ws, module)
            expected = judge.course_answers(ws, probes, Path(tmp) / "course", limits, ws.cell_timeout)
        answers = run_answer([c.tape for c in probes.cells], probes.modules, probes.package, Path(tmp) / "answers",
                             limits, ws.cell_timeout, path=ws.lib_dir.parent)
    outcomes = [Outcome(v.title, "passed" if v.passed else "failed", v.message(), detail=v.message(), gid=v.exercise)
                for v in judge.judge(probes, expected, answers)]
    notebook = ws.released(module).notebook if ws.is_student else module.notebook
    return Verdicts(in_exercise_order(outcomes, notebook), builds_on=judge.builds_on(probes))


def in_exercise_order(outcomes: list[Outcome], notebook: Path) -> list[Outcome]:
    """The verdicts in the order of the notebook's exercises (its solution cells: Exercise 1, 2, ...), not of its
    graded cells (one may check a later exercise's code before an earlier one's)."""
    nb = parse_notebook(notebook)
    rank = {gid: i for i, gid in enumerate(grade_id(c) for c in nb.cells if is_exercise(c))}
    return sorted(outcomes, key=lambda o: rank.get(o.gid, len(rank)))


def _cell_outcome(nb, index: int, exercises: dict, stopped: Stopped | None, timeout: int) -> Outcome:
    cell, name = nb.cells[index], cell_title(nb, index)
    if stopped is not None and index == stopped.index:
        return Outcome(name, "failed", stopped.why)
    if cell.execution_count is None and not cell.source.strip():
        return Outcome(name, "passed")
    if cell.execution_count is None:
        return Outcome(name, "error", "did not run" + (" (the kernel had stopped at an earlier cell)" if stopped else ""))
    error = next((o for o in cell.outputs if o.output_type == "error"), None)
    if error is None:
        return Outcome(name, "passed")
    detail = ANSI.sub("", "\n".join(error.traceback))
    if error.ename == NOT_DONE:
        counts = [int(n) for n in KERNEL_CELL.findall(detail)]
        gid = next((exercises[n] for n in reversed(counts) if n in exercises), None)
        return Outcome(name, "failed", not_done(gid), detail=detail)
    if error.ename == "KeyboardInterrupt":
        return Outcome(name, "failed", f"interrupted after cell_timeout ({timeout} s){SLOW_HINT}", detail=detail)
    reason = failure_reason(error.evalue) if error.ename == "AssertionError" else \
        failure_reason(f"{error.ename}: {error.evalue}")
    return Outcome(name, "failed", reason or error.ename, detail=detail)


# --- running a notebook with time limits that hold ------------------------------------------------------


@dataclass(frozen=True)
class Stopped:
    "Where a notebook run ended early: the index of the cell whose kernel was killed or died, and why."
    index: int
    why: str


class NotebookInterrupted(Exception):
    "Ctrl-C while a notebook ran; `index` is the cell that was running (or None)."

    def __init__(self, index: int | None):
        super().__init__(index)
        self.index = index


def execute_notebook(nb, cwd: Path, env: dict, cell_timeout: int, kernel_log) -> Stopped | None:
    """Run the code cells of `nb` (an nbformat notebook, outputs written in place) in a fresh python3 kernel started
    in `cwd`, cell errors recorded as outputs. A cell running over `cell_timeout` seconds is interrupted; if it is
    still running `KILL_GRACE` seconds later, the kernel is killed and the run stops there. The run also stops
    where the kernel dies. Either way the cell and the reason are returned (else None). Ctrl-C kills the kernel
    and raises NotebookInterrupted."""
    runner = _Runner(nb, cwd, env, cell_timeout, kernel_log)
    # nbclient runs in a thread of its own, so that Ctrl-C reaches this one as KeyboardInterrupt (nbclient's own
    # SIGINT handler would shut the kernel down under the running cell and fail with an unrelated error).
    # Waiting is on an Event: a Thread.join interrupted by Ctrl-C can report a running thread as finished.
    threading.Thread(target=runner.run, name="tito-notebook", daemon=True).start()
    try:
        while not runner.done.wait(0.2):
            pass
    except KeyboardInterrupt:
        index = runner.current
        runner.abort()
        _wait_quietly(runner.done, 10)  # the kernel is dead: nbclient's cleanup takes a moment
        raise NotebookInterrupted(index) from None
    if runner.error is not None:
        raise runner.error
    return runner.stopped


def _wait_quietly(done: threading.Event, seconds: float):
    "Wait up to `seconds` for `done`; another Ctrl-C ends the wait early."
    deadline = monotonic() + seconds
    while monotonic() < deadline:
        try:
            if done.wait(0.2):
                return
        except KeyboardInterrupt:
            return


class _Runner:
    "One notebook run in its own event loop, with a watchdog that enforces the time limit."

    def __init__(self, nb, cwd: Path, env: dict, cell_timeout: int, kernel_log):
        self.nb, self.cwd, self.env, self.timeout, self.kernel_log = nb, cwd, env, cell_timeout, kernel_log
        self.current: int | None = None  # the cell being run
        self.started = 0.0
        self.stopped: Stopped | None = None
        self.error: BaseException | None = None
        self.kernel_pid: int | None = None
        self.loop = self.task = None
        self.aborted = False
        self.done = threading.Event()

    def run(self):
        try:
            asyncio.run(self._main())
        except BaseException as e:  # handed to the calling thread
            self.error = e
        finally:
            self.done.set()

    async def _main(self):
        from nbclient import NotebookClient
        from nbclient.exceptions import DeadKernelError

        self.loop, self.task = asyncio.get_running_loop(), asyncio.current_task()
        client = NotebookClient(self.nb, kernel_name="python3", timeout=None, allow_errors=True,
                                resources={"metadata": {"path": str(self.cwd)}})
        async with client.async_setup_kernel(env=self.env, stderr=self.kernel_log):
            self.kernel_pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
            if self.aborted:
                self.kill_kernel()
                return
            await client.async_wait_for_reply(client.kc.execute(KERNEL_SETUP, silent=True, store_history=False))
            watchdog = asyncio.ensure_future(self._watch(client))
            try:
                for index, cell in enumerate(self.nb.cells):
                    self.current, self.started = index, monotonic()
                    await client.async_execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            except DeadKernelError:
                if self.stopped is None:  # not killed by the watchdog: it crashed, or the system killed it
                    self.stopped = Stopped(self.current, "the kernel died while this cell ran (a crash, or out of "
                                                         "memory)")
            finally:
                self.current = None
                watchdog.cancel()

    async def _watch(self, client):
        "Interrupt a cell at its time limit; kill the kernel if the cell is still running KILL_GRACE s later."
        interrupted = None
        while True:
            await asyncio.sleep(0.2)
            index, elapsed = self.current, monotonic() - self.started
            if index is None or elapsed <= self.timeout:
                continue
            if interrupted != index:
                interrupted = index
                await client.km.interrupt_kernel()
            elif elapsed > self.timeout + KILL_GRACE:
                self.stopped = Stopped(index, f"ran over cell_timeout ({self.timeout} s) and ignored the "
                                              f"interrupt, so tito stopped the kernel{SLOW_HINT}")
                self.kill_kernel()
                return  # nbclient sees the dead kernel within a second: DeadKernelError

    def kill_kernel(self):
        "SIGKILL the kernel and its process group (jupyter starts it in a session of its own)."
        pid, kill = self.kernel_pid, getattr(signal, "SIGKILL", signal.SIGTERM)  # Windows has no SIGKILL
        if pid is None:
            return
        try:
            if hasattr(os, "killpg") and os.getpgid(pid) != os.getpgrp():
                os.killpg(os.getpgid(pid), kill)
            else:
                os.kill(pid, kill)
        except (ProcessLookupError, PermissionError):
            pass

    def abort(self):
        "From another thread (Ctrl-C): kill the kernel now and stop the run."
        self.aborted = True
        self.kill_kernel()
        if self.loop is not None and self.task is not None:
            try:
                self.loop.call_soon_threadsafe(self.task.cancel)
            except RuntimeError:  # the loop has already closed
                pass
