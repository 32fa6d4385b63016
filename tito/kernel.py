"""How autograding runs a submission: nbgrader's Execute preprocessor with a kernel that is sandboxed (tito.sandbox)
and held to the submission limits, and cells that always end.

- A cell past the time limit is interrupted (nbgrader's CellTimeoutError); one that ignores the interrupt gets the
  same error and its kernel is stopped.
- A kernel that dies (or that the watchdog stops) ends the run: its cell records why (KERNEL_DIED) and the cells
  after it are marked NOT_RUN, so the graded cells that ran keep their points and the rest score zero.
Both are configured through traitlets (tito.grading.nbgrader_config): `GradingKernelManager.*`, `GradingExecute.*`.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbclient.util import ensure_async, run_sync
from nbformat import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Bool, Int, List, Unicode

from tito import sandbox
from tito.locking import file_lock, released

TIMEOUT_ERROR = "CellTimeoutError"  # the error nbgrader records for a cell that ran too long
KERNEL_DIED, NOT_RUN = "KernelDied", "NotRun"


class GradingKernelManager(AsyncKernelManager):
    "A kernel in the sandbox (when `bwrap` is set) or not, under the watchdog's limits either way."
    bwrap = Unicode("", help="The bwrap program; empty: no sandbox.").tag(config=True)
    library = Unicode("", help="Folder with the package copy the kernel may import.").tag(config=True)
    hide = List(Unicode(), help="Host folders the sandbox never shows.").tag(config=True)
    run_root = Unicode("", help="Where each kernel's private folder is made (removed with it; default: $TMPDIR).").tag(
        config=True)
    wall_time = Int(sandbox.Limits.wall_time).tag(config=True)
    cpu_time = Int(sandbox.Limits.cpu_time).tag(config=True)
    memory_mb = Int(sandbox.Limits.memory_mb).tag(config=True)
    processes = Int(sandbox.Limits.processes).tag(config=True)
    scratch_mb = Int(sandbox.Limits.scratch_mb).tag(config=True)

    _run_dir = None
    _watchdog = None
    _log = None

    @property
    def limits(self) -> sandbox.Limits:
        return sandbox.Limits(self.wall_time, self.cpu_time, self.memory_mb, self.processes, self.scratch_mb)

    def _sandbox(self) -> sandbox.Sandbox:
        return sandbox.Sandbox(self.bwrap, self.limits, Path(self.library) if self.library else None, tuple(self.hide))

    async def _async_pre_start_kernel(self, **kw):
        self._run_dir = Path(tempfile.mkdtemp(prefix="tito-kernel-", dir=self.run_root or None))
        self._home = self._run_dir / "files"
        cwd = Path(kw.get("cwd") or os.getcwd())
        if self.bwrap:
            # the submission's files, without notebooks: the one being graded holds the hidden tests
            shutil.copytree(cwd, self._home, ignore=shutil.ignore_patterns("*.ipynb", ".*", "__pycache__"))
            self._runtime = self._run_dir / "run"
            self._runtime.mkdir()
            self._workdir = f"{sandbox.HOME}/{cwd.name}"
            self.transport = "ipc"  # ZeroMQ over Unix sockets: the sandbox has no network
            self.ip = str(self._runtime / "kernel")
            self.connection_file = str(self._runtime / "kernel.json")
            self.kernel_spec.interrupt_mode = "message"  # a signal to bwrap would not reach the kernel
        return await super()._async_pre_start_kernel(**kw)

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if not self.bwrap:
            return sandbox.limits_prefix(self.limits) + cmd
        return self._sandbox().command(cmd, home=self._home, workdir=self._workdir, runtime=self._runtime)

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        self._log = open(self._run_dir / "kernel.log", "wb")
        kw["stdout"] = kw["stderr"] = self._log
        if self.bwrap:
            kw["cwd"] = str(self._run_dir)
            if os.geteuid() == 0:  # the kernel runs as an unprivileged id and must reach its sockets
                uid = self._sandbox().uid()
                for path in (self._runtime, *self._runtime.iterdir()):
                    os.chown(path, uid, uid)
        elif self.library:
            env = dict(kw.get("env") or os.environ)
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [self.library, env.get("PYTHONPATH")]))
            kw["env"] = env
        await super()._async_launch_kernel(kernel_cmd, **kw)
        self._watchdog = sandbox.Watchdog(self.provisioner.process.pid, self.limits,
                                          self._runtime if self.bwrap else None)
        self._watchdog.start()

    def death_reason(self) -> str:
        "Why the kernel is gone: the watchdog's limit, else its exit status."
        if self._watchdog is not None and self._watchdog.reason:
            return f"the kernel was {self._watchdog.reason}"
        process = getattr(self.provisioner, "process", None)
        returncode = process.poll() if process is not None else None
        reason = sandbox.exit_reason(returncode, bool(self.bwrap), self.limits)
        said = self._log_tail()
        return f"{reason}: {said}" if said and returncode not in (None, 0) else reason

    def _log_tail(self) -> str:
        try:
            lines = (self._run_dir / "kernel.log").read_text(errors="replace").splitlines()
        except (OSError, TypeError):
            return ""
        lines = [x.strip() for x in lines if re.search(r"bwrap:|Error|error:|Killed", x)]
        return lines[-1][:200] if lines else ""

    async def _async_cleanup_resources(self, restart: bool = False):
        try:
            await super()._async_cleanup_resources(restart=restart)
        finally:
            if not restart:
                self.release_run_dir()

    cleanup_resources = _async_cleanup_resources

    def release_run_dir(self):
        if self._watchdog is not None:
            self._watchdog.stop()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._run_dir is not None:
            shutil.rmtree(self._run_dir, ignore_errors=True)
            self._run_dir = None


def _error(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"\x1b[0;31m{ename}\x1b[0m: {evalue}"])


class GradingExecute(Execute):
    "nbgrader's Execute with GradingKernelManager, and a notebook run that ends whatever the cells do."
    gradebook_lock = Unicode("", help="A lock held around autograding, let go while the notebook runs.").tag(
        config=True)
    sandboxed = Bool(True).tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs["kernel_manager_class"] = GradingKernelManager
        super().__init__(*args, **kwargs)
        self._stopped = ""

    def preprocess(self, nb, resources=None, km=None):
        self._stopped = ""
        with released(file_lock(Path(self.gradebook_lock)) if self.gradebook_lock else None):
            return super().preprocess(nb, resources, km)

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if self._stopped:
            if cell.cell_type == "code" and cell.source.strip():
                cell.outputs = [_error(NOT_RUN, f"not run: {self._stopped}")]
                cell.execution_count = None
            return cell
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        except DeadKernelError:
            why = self.km.death_reason() if hasattr(self.km, "death_reason") else "the kernel died"
            cell.outputs.append(_error(KERNEL_DIED, why))
            self._stopped = f"the kernel died in an earlier cell ({why})"
        except CellTimeoutError:  # still busy after the interrupt: the cell ignores SIGINT
            await ensure_async(self.km.shutdown_kernel(now=True))
            cell.outputs.append(_error(TIMEOUT_ERROR, f"ran over the cell time limit ({self.timeout} s) and "
                                                      "ignored the interrupt, so its kernel was stopped"))
            self._stopped = "an earlier cell ran over the time limit and its kernel was stopped"
        return cell

    execute_cell = run_sync(async_execute_cell)  # nbconvert's preprocess_cell calls this one
