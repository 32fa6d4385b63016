"""The autograding sandbox: each submission's answer process runs under bubblewrap (`bwrap`), within limits.

What the answer process sees (the trust model is in docs/GRADING.md):
- the system (`/usr`, `/etc`, ...) and this Python (its installation and virtual environment), read-only;
- the course package as a student has it when they reach the graded module: only the modules exported by the
  notebooks *before* it, read-only (the graded module's reference code is not importable);
- its notebook (without hidden checks), the answer script and the tapes, read-only, in a home folder; the home
  folder, `/tmp` and `/dev/shm`: private, writable, in memory, `submission_scratch_mb` each; the folder its answers
  go to, read-write, watched by tito;
- nothing of the course tree, the gradebook, other submissions or the nbgrader exchange, nor any other copy of the
  course package on this Python's import path (an empty, read-only folder is mounted over each); no network (a
  loopback of its own); its own process, IPC and host-name namespaces.

Limits (`settings.ini [limits] submission_*`): inside the sandbox, per process, the address space (memory) and CPU
time, and the number of processes and threads (rlimits); outside, tito stops the whole sandbox when the submission
runs past its wall time, or all its processes together pass the CPU-time or memory limit, or it writes too much.

When tito runs as root, each answer process runs as an unprivileged user id of its own, drawn anew for every run
(graded, visible-only, each student), so the process limit holds (Linux ignores RLIMIT_NPROC for root), it owns no
file outside and nothing one run's user id leaves behind is another's. Its answer folder is private (0700) and
written only by that user id; every folder tito keeps of a run is private to tito.

System calls (`tito.grading.seccomp`): the kernel keyring, `setsid` and the calls Docker's default profile denies
fail (EPERM), and each answer process starts with a session keyring of its own. Without `setsid`, all the processes
of a job stay in the session bwrap made, which is one autogroup: the kernel's CPU share per session, so a job of
many processes gets no more of the CPU than a job of one. A graded cell's time limit counts CPU seconds of all its
processes, so a busy neighbour cannot make it time out; a wall-clock backstop (WALL_BACKSTOP) stops a process that
only waits.
"""
from __future__ import annotations

import dataclasses
import errno
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, fields
from pathlib import Path
from contextlib import contextmanager
from typing import Optional

from tito.grading import seccomp
from tito.notebooks import source_notebook
from tito.workspace import BLAS_THREADS, Module, TitoError, Workspace

PACKAGE, TOOL = "bubblewrap", "bwrap"
SANDBOX_UID_BASE = 1_000_000_000  # far above the ids of real users and of subordinate id ranges
SANDBOX_UIDS = 2**31  # how many user ids above the base are drawn from (the last is below 2**32 - 1)
HOME = "/home/student"
LIBRARY = "/grading/lib"
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
PAGE = os.sysconf("SC_PAGE_SIZE")
TICKS = os.sysconf("SC_CLK_TCK")

# Runs inside the sandbox before the answer process: the per-process limits, then (as root) a user id of its own.
# A negative number leaves that limit alone.
LIMITS_SCRIPT = """\
import os, resource, sys
mem, cpu, nproc, fsize, uid = (int(a) for a in sys.argv[1:6])
for res, soft, hard in ((resource.RLIMIT_AS, mem, mem), (resource.RLIMIT_CPU, cpu, cpu + 1),
                        (resource.RLIMIT_NPROC, nproc, nproc), (resource.RLIMIT_FSIZE, fsize, fsize),
                        (resource.RLIMIT_CORE, 0, 0)):
    if soft >= 0:
        resource.setrlimit(res, (soft, hard))
if uid >= 0:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
os.execv(sys.argv[7], sys.argv[7:])
"""


@dataclass(frozen=True)
class Limits:
    "What one submission may use (settings.ini [limits] submission_<name>)."
    wall_time: int = 1800  # seconds for all the answers of one submission
    cpu_time: int = 3600  # CPU seconds: each process, and all of them together
    memory_mb: int = 4096  # each process's address space, and the memory of all of them together
    processes: int = 64  # processes and threads at once
    scratch_mb: int = 512  # each writable folder (home, /tmp, /dev/shm; all three are in memory)

    @classmethod
    def of(cls, ws: Workspace) -> "Limits":
        return cls(**{f.name: ws.limit(f"submission_{f.name}", f.default) for f in fields(cls)})


# --- bubblewrap ------------------------------------------------------------------------------------------
def find_bwrap() -> Optional[str]:
    return shutil.which(TOOL)


def require_bwrap() -> str:
    "The bwrap program, or a one-line error naming the package to install."
    path = find_bwrap()
    if path is None:
        raise TitoError(f"autograde runs every submission in a sandbox and needs bubblewrap, which is not installed: "
                        f"install the package `{PACKAGE}` (Debian/Ubuntu: sudo apt-get install {PACKAGE}), or pass "
                        "--no-sandbox to run the submissions unprotected, with your rights")
    return path


def _bwrap_help(bwrap: str) -> str:
    done = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
    return done.stdout + done.stderr


def _covered(path: Path, roots) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def python_roots() -> list[Path]:
    "The folders this Python needs: its installation, the virtual environment, site-packages (minimal cover)."
    import site

    candidates = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  os.path.dirname(os.path.realpath(sys.executable)), *site.getsitepackages()]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        candidates.append(site.getusersitepackages())
    found = sorted({Path(p).resolve() for p in candidates if p and os.path.isdir(p)}, key=lambda p: len(p.parts))
    roots: list[Path] = []
    for p in found:
        if not _covered(p, roots):
            roots.append(p)
    return roots


def installed_copies(package: str) -> list[Path]:
    """Every folder named `package` on this Python's import path or in its site-packages: an installed course's
    package, solutions included, which a sandboxed process would read through the Python folders it is shown."""
    import site

    places = [*sys.path, *site.getsitepackages()]
    if site.ENABLE_USER_SITE:
        places.append(site.getusersitepackages())
    return sorted({(Path(p) / package).resolve() for p in places if p and (Path(p) / package).is_dir()})


@dataclass
class Sandbox:
    "How to build the bwrap command of one sandboxed process."
    bwrap: str
    limits: Limits
    library: Optional[Path] = None  # a folder holding the package copy the answer process imports
    hide: tuple = ()  # host folders never to show, even when they lie inside a mounted one
    disable_userns: Optional[bool] = None  # bwrap >= 0.8 can forbid new user namespaces inside

    @property
    def as_root(self) -> bool:
        return os.geteuid() == 0

    def new_uid(self) -> int:
        """A user id for one sandboxed run when tito is root, drawn anew each time (-1: keep the caller's, in a user
        namespace)."""
        return SANDBOX_UID_BASE + secrets.randbelow(SANDBOX_UIDS) if self.as_root else -1

    @staticmethod
    @contextmanager
    def filter_fd():
        "A file descriptor holding the system-call filter, for `command(seccomp_fd=...)` and Popen's pass_fds."
        fd = seccomp.program_fd(seccomp.program())
        try:
            yield fd
        finally:
            os.close(fd)

    def command(self, argv: list[str], *, home: Optional[Path] = None, workdir: str = HOME,
                runtime: Optional[Path] = None, env: Optional[dict] = None, seccomp_fd: Optional[int] = None,
                uid: Optional[int] = None) -> list[str]:
        """The bwrap command that runs `argv` in the sandbox: `home`'s entries appear read-only in `workdir`
        (the working folder), `runtime` (where its answers go) is shared read-write at its own path; with the
        system-call filter read from `seccomp_fd`, as user id `uid` (when root; default: a new one)."""
        lim = self.limits
        args = [*seccomp.fresh_keyring_prefix(), self.bwrap, "--die-with-parent", "--new-session", "--unshare-ipc",
                "--unshare-pid",
                "--unshare-net", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
        if self.as_root:  # no user namespace: the process drops to an unprivileged user id of its own
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-user"]
            if self.disable_userns is None:
                self.disable_userns = "--disable-userns" in _bwrap_help(self.bwrap)
            if self.disable_userns:
                args += ["--disable-userns"]
        args += ["--clearenv"]
        for key, value in {**self.environment(), **(env or {})}.items():
            args += ["--setenv", key, value]
        mounted: list[Path] = []
        for d in SYSTEM_DIRS:
            p = Path(d)
            if p.is_symlink():
                args += ["--symlink", os.readlink(p), d]
            elif p.is_dir():
                args += ["--ro-bind", d, d]
                mounted.append(p)
        args += ["--proc", "/proc", "--dev", "/dev"]
        size = str(lim.scratch_mb * 2**20)
        args += ["--perms", "1777", "--size", size, "--tmpfs", "/tmp",
                 "--perms", "1777", "--size", size, "--tmpfs", "/dev/shm",
                 "--perms", "0777", "--size", size, "--tmpfs", HOME]
        made: set = set()
        for root in python_roots():  # after the private /tmp: a virtual environment may live under /tmp
            if not _covered(root, mounted):
                args += self._parents(root, mounted, made) + ["--ro-bind", str(root), str(root)]
                mounted.append(root)
        sealed = []
        for h in self.hide:  # e.g. a course under /usr, an installed copy of its package in site-packages
            h = Path(h).resolve()
            if h.is_dir() and _covered(h, mounted) and h not in mounted:
                args += ["--perms", "0555", "--size", "4096", "--tmpfs", str(h)]
                sealed += ["--remount-ro", str(h)]  # after the mounts below, which may need folders made inside it
        if workdir != HOME:
            args += ["--perms", "0777", "--dir", workdir]
        if home is not None:
            for entry in sorted(Path(home).iterdir()):
                args += ["--ro-bind", str(entry), f"{workdir}/{entry.name}"]
        if self.library is not None:
            args += ["--perms", "0755", "--dir", str(Path(LIBRARY).parent), "--ro-bind", str(self.library), LIBRARY]
        if runtime is not None:
            args += self._parents(runtime, mounted, made) + ["--bind", str(runtime), str(runtime)]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += sealed + ["--chdir", workdir, "--"]
        uid = self.new_uid() if uid is None else uid
        return args + limits_prefix(lim, processes=lim.processes, file_bytes=lim.scratch_mb * 2**20, uid=uid) + argv

    @staticmethod
    def _parents(path: Path, mounted: list, made: set) -> list[str]:
        "bwrap makes missing parent folders private (0700); make them 0755 so a dropped user id can pass."
        out = []
        for parent in reversed(path.parents):
            if str(parent) in ("/", "/tmp") or _covered(parent, mounted) or parent in made:
                continue
            made.add(parent)
            out += ["--perms", "0755", "--dir", str(parent)]
        return out

    def environment(self) -> dict:
        "The sandbox's whole environment (nothing of the caller's is passed on)."
        env = {"PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin", "HOME": HOME, "TMPDIR": "/tmp",
               "LANG": "C.UTF-8", "MPLBACKEND": "Agg", "PYTHONDONTWRITEBYTECODE": "1",
               # few malloc arenas: they count as address space
               "MALLOC_ARENA_MAX": "2"}
        env |= {name: "1" for name in BLAS_THREADS}  # one BLAS thread per process: --jobs runs several
        if self.library is not None:
            env["PYTHONPATH"] = LIBRARY
        return env

    def check(self):
        "Run a trivial command in the sandbox: a one-line error when this machine does not allow it."
        with tempfile.TemporaryDirectory(prefix="tito-sandbox-check-") as tmp, self.filter_fd() as fd:
            cmd = self.command([sys.executable, "-c", "import numpy, nbdev.export"], seccomp_fd=fd)
            try:
                done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp, pass_fds=(fd,))
            except subprocess.TimeoutExpired:
                raise TitoError("the sandbox (bwrap) did not start a Python within 120 s") from None
        if done.returncode != 0:
            said = [x for x in (done.stderr + done.stdout).splitlines() if x.strip()]
            raise TitoError(f"the sandbox does not work on this machine: {said[-1] if said else done.returncode} "
                            "(bwrap needs unprivileged user namespaces, or root; see docs/GRADING.md), or pass "
                            "--no-sandbox")


def limits_prefix(limits: Limits, processes: int = -1, file_bytes: int = -1, uid: int = -1) -> list[str]:
    """The command that runs a process within the per-process limits (LIMITS_SCRIPT): memory and CPU time, and in the
    sandbox also processes, file size and a user id of its own (-1 leaves one alone)."""
    values = (limits.memory_mb * 2**20, limits.cpu_time, processes, file_bytes, uid)
    return [sys.executable, "-c", LIMITS_SCRIPT, *map(str, values), "--"]


# --- the package a graded module may import --------------------------------------------------------------
def package_source(ws: Workspace) -> Optional[Path]:
    "The course package: the workspace's own, else the one this Python imports (an installed course)."
    if (ws.lib_dir / "__init__.py").is_file():
        return ws.lib_dir
    from importlib.util import find_spec

    try:
        spec = find_spec(ws.lib_dir.name)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin).parent if spec is not None and spec.origin else None


def grading_library(ws: Workspace, module: Module, dest: Path) -> Optional[Path]:
    """Copy into `dest` the package as a student has it when they reach `module`: the files exported by the
    notebooks before it, and the hand-written `__init__.py` files. Returns `dest`, or None without a package."""
    src = package_source(ws)
    if src is None:
        return None
    numbers = {m.name: m.number for m in ws.modules()}
    dest.mkdir(parents=True, exist_ok=True)
    for path in sorted(src.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        origin = source_notebook(path)
        if origin is None and path.name != "__init__.py":
            continue  # e.g. nbdev's _modidx.py, an index of every module's names
        if origin is not None and numbers.get(origin.stem, "99") >= module.number:
            continue
        target = dest / src.name / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    for folder in [dest, *dest.rglob("*")]:
        folder.chmod(0o755 if folder.is_dir() else 0o644)
    return dest


# --- the watchdog ------------------------------------------------------------------------------------------
def _stat(pid: int) -> Optional[list[str]]:
    "/proc/PID/stat fields after the command name (index 0 is field 3, the state), or None when it is gone."
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    "`pid` and every process below it."
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and (st := _stat(int(entry.name))) is not None:
            children.setdefault(int(st[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children.get(p, [])
    return out


def _cpu_seconds(pid: int) -> float:
    st = _stat(pid)
    return sum(int(x) for x in st[11:15]) / TICKS if st else 0.0  # utime, stime, and of reaped children


def _memory_mb(pid: int) -> float:
    "Proportional set size (shared pages split among their users), else the resident size."
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    st = _stat(pid)
    return int(st[21]) * PAGE / 2**20 if st else 0.0


def _entries(folder) -> list:
    "The entries of `folder`; [] when it cannot be read. A path too long to name is the submission's doing."
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            raise
        return []


def _folder_mb(folder: Path, most: int = 10_000) -> float:
    """The megabytes under `folder` (not following links); infinity past `most` entries, or when its folders nest
    deeper than a path can name. No recursion."""
    total, seen, todo = 0, 0, [folder]
    try:
        while todo:
            for entry in _entries(todo.pop()):
                seen += 1
                if seen > most:
                    return float("inf")
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    total += entry.stat(follow_symlinks=False).st_blocks * 512
    except OSError as e:
        if e.errno == errno.ENAMETOOLONG:
            return float("inf")
    return total / 2**20


def remove_tree(top: Path):
    """Remove a folder that a submission's code wrote into, however deep: each folder's subfolders are moved up
    into `top` before it is removed, so nothing recurses and no path grows long."""
    try:
        top_fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return
    moved = 0
    try:
        while names := os.listdir(top_fd):
            for name in names:
                moved = _empty_into(top_fd, name, moved)
    finally:
        os.close(top_fd)
    os.rmdir(top)


def _open_folder(top_fd: int, name: str) -> int:
    "The folder `name` of `top_fd`, opened without following a link, and made the grader's to empty."
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(name, flags, dir_fd=top_fd)
    except PermissionError:  # a folder the submission made unreadable (root opens any folder, so never gets here)
        os.chmod(name, 0o700, dir_fd=top_fd)
        fd = os.open(name, flags, dir_fd=top_fd)
    os.fchmod(fd, 0o700)
    return fd


def _free_name(top_fd: int, moved: int) -> int:
    "The next number n after `moved` for which `top_fd` holds no `.tito-moved-n` (the submission may have made some)."
    while True:
        moved += 1
        try:
            os.stat(f".tito-moved-{moved}", dir_fd=top_fd, follow_symlinks=False)
        except FileNotFoundError:
            return moved


def _empty_into(top_fd: int, name: str, moved: int) -> int:
    "Remove entry `name` of the folder `top_fd`; a folder's subfolders are moved into `top_fd` first."
    try:
        os.unlink(name, dir_fd=top_fd)
        return moved
    except IsADirectoryError:
        pass
    fd = _open_folder(top_fd, name)
    try:
        with os.scandir(fd) as it:
            entries = list(it)
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                moved = _free_name(top_fd, moved)
                os.rename(entry.name, f".tito-moved-{moved}", src_dir_fd=fd, dst_dir_fd=top_fd)
            else:
                os.unlink(entry.name, dir_fd=fd)
    finally:
        os.close(fd)
    os.rmdir(name, dir_fd=top_fd)
    return moved


class Watchdog(threading.Thread):
    "Stops process `pid` (and with it the sandbox) when it runs out of wall time, total CPU time or total memory."

    def __init__(self, pid: int, limits: Limits, watched: Optional[Path] = None, interval: float = 0.5):
        super().__init__(daemon=True, name=f"tito-watchdog-{pid}")
        self.pid, self.limits, self.watched, self.interval = pid, limits, watched, interval
        self.reason = ""
        self.cpu = 0.0  # CPU seconds of all the processes, at the last look
        self._stop_event = threading.Event()

    def stop(self):
        self._stop_event.set()

    def run(self):
        started = time.monotonic()
        while not self._stop_event.wait(self.interval):
            if _stat(self.pid) is None:
                return
            reason = self.over_limit(time.monotonic() - started)
            if reason:
                self.reason = reason
                try:
                    os.kill(self.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return

    def over_limit(self, elapsed: float) -> str:
        stop = self.over(elapsed)
        return stop.why if stop else ""

    def over(self, elapsed: float) -> Optional["Stop"]:
        "A Stop when the process is past a limit of the whole submission, else None."
        lim = self.limits
        if elapsed > lim.wall_time:
            return Stop("limit", f"stopped at the wall-time limit ({lim.wall_time} s for the submission)")
        procs = descendants(self.pid)
        self.cpu = max(self.cpu, sum(_cpu_seconds(p) for p in procs))
        if self.cpu > lim.cpu_time:
            return Stop("limit", f"stopped at the CPU-time limit ({lim.cpu_time} s, all its processes together)")
        if sum(_memory_mb(p) for p in procs) > lim.memory_mb:
            return Stop("limit", f"stopped at the memory limit ({lim.memory_mb} MB, all its processes together)")
        if self.watched is not None and _folder_mb(self.watched) > lim.scratch_mb:
            return Stop("flood", f"flood: wrote more than {lim.scratch_mb} MB of answers")
        return None


def exit_reason(returncode: Optional[int], sandboxed: bool, limits: Limits) -> str:
    """Why a sandboxed process ended, from its exit status (bwrap reports a signal as 128 + its number), in fixed
    words: the status itself is the student's to choose, so it is not repeated."""
    if returncode is None:
        return "the process stopped responding"
    sig = -returncode if returncode < 0 else returncode - 128 if sandboxed and returncode > 128 else 0
    if sig:
        return f"the process was killed by a signal (its own, or a limit: {limits.cpu_time} s of CPU time, memory)"
    return "the process ended with an error"


# --- the answer process ------------------------------------------------------------------------------------------
ANSWER_FILES = ("answer.py", "probes.py")  # tito/grading/..., copied beside the request: the sandbox cannot see tito
RESULT_MB = 8  # the most one tape's results may take on disk; larger is not read (its checks fail)
RESULT_CONTAINERS = 100_000  # the most lists and objects one answer file may hold (an array's rows count each)
OUTPUT_MB = 64  # the most all the files the answer process writes for tito may take (beyond: stopped, `flood`)
STATUS_BYTES = 64 * 1024
FLOOD_PRINTED = 16 * 2**20  # bytes printed that make a stopped answer process a flood rather than a time-out
POLL = 0.2  # seconds between looks at a running answer process


def wall_backstop(cell_seconds: int) -> int:
    "Wall-clock seconds after which a graded cell is stopped even if it used little CPU time (it waits, or sleeps)."
    return 3 * cell_seconds + 60


@dataclass(frozen=True)
class Stop:
    "Why tito stopped answering a tape, as tito observed it: its kind and fixed words (numbers are tito's own)."
    kind: str  # "timed out", "died", "limit", "flood" or "not run"
    why: str


@dataclass
class AnswerRun:
    """What the answer processes left for the judge: the answers per tape (index -> list of data), what the last one
    said of its set-up (`status`: written by the student's process, any JSON), the tapes tito stopped (index ->
    Stop) and the bytes the processes printed (counted, never kept)."""
    results: dict
    status: dict
    stopped: dict
    printed: int = 0


class _Drain(threading.Thread):
    "Read a pipe to its end and count the bytes: what the student's code prints costs tito no memory."

    def __init__(self, pipe):
        super().__init__(daemon=True)
        self.pipe, self.count = pipe, 0
        self.start()

    def run(self):
        while chunk := self.pipe.read(65536):
            self.count += len(chunk)


def _read_json(path: Path, most: int):
    """A JSON file the answer process wrote, or None when it is missing, not a plain file, too large, holds too many
    lists and objects (counted before parsing: what is built costs far more than its text) or is not JSON."""
    try:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > most:
            return None
        with open(path, "rb") as f:
            data = f.read(most + 1)
        if len(data) > most or data.count(b"[") + data.count(b"{") > RESULT_CONTAINERS:
            return None
        return json.loads(data.decode("utf-8"))
    except (OSError, ValueError, RecursionError, UnicodeDecodeError):
        return None


def _answer_bundle(folder: Path, request: dict, notebook: Optional[Path]):
    "The read-only files of an answer run: the script and what it imports, the request, the notebook."
    here = Path(__file__).resolve().parent
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(mode=0o700, parents=True)
    for name in ANSWER_FILES:
        shutil.copyfile(here / name, folder / name)
    shutil.copyfile(here.parent / "nbdev_procs.py", folder / "nbdev_procs.py")
    if notebook is not None:
        shutil.copyfile(notebook, folder / "submission.ipynb")
    (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")
    for p in folder.iterdir():  # each is shown to the sandbox on its own; the folder stays tito's
        p.chmod(0o644)


def run_answer(tapes: list, modules: list, package: str, scratch: Path, limits: Limits, probe_timeout: int, *,
               box: Optional[Sandbox] = None, notebook: Optional[Path] = None, library: Optional[Path] = None,
               path: Optional[Path] = None, strict: bool = False) -> AnswerRun:
    """Have the student's code answer `tapes`: the submitted `notebook` exported beside the package copy
    `library` and imported, in the sandbox `box` (or, for trusted code only, without one); or the package under
    `path` imported as it is (the course's own answers, `strict`; a student's own `tito module complete`).

    Each answer is moved out of the process's reach as soon as it appears, and the next tape's clock starts then:
    a tape that runs over `probe_timeout` seconds, or whose process dies, is stopped, and a new process answers
    the tapes after it. Answers are read as data, with a size cap; what the process prints is counted only."""
    scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
    bundle, taken = scratch / "bundle", scratch / "taken"
    taken.mkdir(mode=0o700, exist_ok=True)
    if box is not None:
        request = {"package": package, "modules": modules, "tapes": tapes, "path": "/tmp/answer",
                   "library": LIBRARY if box.library is not None else None,
                   "notebook": f"{HOME}/submission.ipynb" if notebook is not None else None}
    elif notebook is not None:
        request = {"package": package, "modules": modules, "tapes": tapes, "path": str(scratch / "work"),
                   "library": str(library) if library else None, "notebook": str(bundle / "submission.ipynb")}
    else:
        request = {"package": package, "modules": modules, "tapes": tapes, "path": str(path), "strict": strict}
    run = AnswerRun({}, {}, {})
    deadline = time.monotonic() + limits.wall_time
    for attempt in range(len(tapes) + 1):
        todo = [i for i in range(len(tapes)) if i not in run.results and i not in run.stopped]
        if not todo:
            break
        request["skip"] = [i for i in range(len(tapes)) if i not in todo]
        remove_tree(scratch / "work")
        _answer_bundle(bundle, request, notebook)
        out = scratch / f"out-{attempt}"  # a new folder each time: the last one is the student's to break
        out.mkdir(mode=0o700)
        uid = box.new_uid() if box else -1
        if uid >= 0:
            os.chown(out, uid, uid)  # written only by this run's own user id (and read by tito, root)
        answered = len(run.results)
        try:
            stop = _one_answer_run(run, box, bundle, out, taken, todo, limits, probe_timeout, deadline, uid)
            said = _read_json(out / "status.json", STATUS_BYTES)
        finally:
            remove_tree(out)
        run.status = said if isinstance(said, dict) and isinstance(said.get("stage"), str) else {}
        left = [i for i in todo if i not in run.results]
        if not left:
            break
        if len(run.results) == answered and run.status.get("stage") not in ("imported", "done"):
            for i in left:  # the export or the import failed, or the process died before answering anything
                run.stopped[i] = Stop(stop.kind, f"{stop.why} before it answered a single check") if stop else \
                    Stop("not run", "not answered: the notebook was not exported and imported")
            break
        run.stopped[left[0]] = stop or Stop("died", "the answer process ended while answering these checks")
        if (stop and stop.kind in ("flood", "limit")) or time.monotonic() > deadline:
            for i in left[1:]:
                run.stopped[i] = Stop("not run", f"not answered: {run.stopped[left[0]].why}")
            break
    return run


def _take_answers(run: AnswerRun, out: Path, taken: Path, todo: list) -> bool:
    "Move each new answer out of the answer process's reach and read it; whether any was new."
    new = False
    for i in todo:
        if i in run.results:
            continue
        src, dst = out / f"result-{i}.json", taken / f"result-{i}.json"
        try:
            if not src.is_file() or src.is_symlink():
                continue
            os.replace(src, dst)
        except OSError:
            continue
        data = _read_json(dst, RESULT_MB * 2**20)
        run.results[i] = data if isinstance(data, list) else None
        new = True
    return new


def _one_answer_run(run: AnswerRun, box: Optional[Sandbox], bundle: Path, out: Path, taken: Path, todo: list,
                    limits: Limits, probe_timeout: int, deadline: float, uid: int = -1) -> Optional[Stop]:
    """Run the answer process once; None when it ended by itself, else why tito stopped it, or how it died. A tape
    may use `probe_timeout` CPU seconds (all the processes together), and `wall_backstop` seconds of wall time."""
    argv = [sys.executable, f"{HOME}/answer.py" if box else str(bundle / "answer.py"),
            f"{HOME}/request.json" if box else str(bundle / "request.json"), str(out)]
    with (box.filter_fd() if box else _no_fd()) as fd:
        cmd = box.command(argv, home=bundle, runtime=out, seccomp_fd=fd, uid=uid) if box else \
            limits_prefix(limits) + argv
        env = None if box else {**os.environ, **{name: "1" for name in BLAS_THREADS}, "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                cwd=str(bundle), env=env, start_new_session=True,
                                pass_fds=() if fd is None else (fd,))
    drain = _Drain(proc.stdout)
    started = clock = time.monotonic()
    clock_cpu, backstop = 0.0, wall_backstop(probe_timeout)
    watch = Watchdog(proc.pid, dataclasses.replace(limits, wall_time=max(1, int(deadline - started)),
                                                   scratch_mb=OUTPUT_MB), out)
    stop = None
    try:
        while proc.poll() is None:
            time.sleep(POLL)
            now = time.monotonic()
            stop = watch.over(now - started)
            if _take_answers(run, out, taken, todo):
                clock, clock_cpu = now, watch.cpu
            if stop is None and watch.cpu - clock_cpu > probe_timeout:
                stop = Stop("timed out", f"timed out: a graded cell's checks ran over {probe_timeout} s of CPU time")
            elif stop is None and now - clock > backstop:
                stop = Stop("timed out", f"timed out: a graded cell's checks ran over {backstop} s (wall clock)")
            if stop is not None:
                _kill_group(proc)
                if drain.count > FLOOD_PRINTED and stop.kind != "flood":
                    stop = Stop("flood", f"flood: printed more than {FLOOD_PRINTED // 2**20} MB, then {stop.why}")
                break
        proc.wait()
    finally:
        if proc.poll() is None:
            _kill_group(proc)
            proc.wait()
        drain.join(timeout=5)
        run.printed += drain.count
    _take_answers(run, out, taken, todo)
    if stop is None and proc.returncode:
        stop = Stop("died", exit_reason(proc.returncode, box is not None, limits).replace("the process",
                                                                                           "the answer process"))
    return stop


@contextmanager
def _no_fd():
    yield None


def _kill_group(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
