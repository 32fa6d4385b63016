"""The autograding sandbox (tito.grading.sandbox): a hostile submission is contained, and says why it lost points.

The sandbox itself first, on plain commands (what a process in it sees, each limit), then a whole hostile
submission through `autograde`: module 01's complete solution whose exported functions, called by the graded
cells' probes in the answer process, delete a file of the course, read solutions, the gradebook and another
student's work, open a socket, fork without end, allocate more memory than allowed and 50 GB, and kill their own
process. Every attack fails, the instructor's files are byte-identical afterwards, and the score table says why.
Needs bubblewrap (Debian: apt-get install bubblewrap; .ci/run installs it).
"""
import hashlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest

from grading_helpers import REPO, copy_course
from tito.grading.autograde import autograde
from tito.grading.collect import collect
from tito.grading.generate import generate
from tito.grading.sandbox import Limits, Sandbox, Watchdog, find_bwrap, installed_copies

pytestmark = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap (`bwrap`) is not installed: "
                                "apt-get install bubblewrap (.ci/run installs it)")
LIMITS = Limits(wall_time=120, cpu_time=120, memory_mb=1024, processes=40, scratch_mb=64)


@pytest.fixture(scope="module")
def listener():
    "A TCP server on this machine's loopback that counts connections: the sandbox must not reach it."
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


def sandboxed(code: str, limits: Limits = LIMITS, home: Path = None, watch: bool = True, timeout: int = 90):
    "(exit status, stdout, stderr, the watchdog's reason) of `python -c code` in the sandbox."
    sb = Sandbox(find_bwrap(), limits, hide=(str(REPO),))
    with sb.filter_fd() as fd:
        proc = subprocess.Popen(sb.command([sys.executable, "-c", code], home=home, seccomp_fd=fd),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, pass_fds=(fd,))
    dog = Watchdog(proc.pid, limits)
    if watch:
        dog.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        dog.stop()
        proc.kill()
    return proc.returncode, out, err, dog.reason


# --- the sandbox on its own ---------------------------------------------------------------------------------
def test_it_sees_the_system_and_python_but_not_the_course_nor_the_network(listener, tmp_path):
    port, accepted = listener
    (tmp_path / "data.txt").write_text("the submission's own file")
    code = f"""
import os, socket, sys
print("course", os.path.exists({str(REPO / 'modules')!r}), os.path.exists({str(REPO / 'tinytorch')!r}))
print("venv", os.path.exists(sys.prefix), "numpy", __import__("numpy").__name__)
print("own file", open("data.txt").read())
print("uid", os.getuid())
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3)
    print("connected")
except OSError as e:
    print("no connection", type(e).__name__)
for path in ("/usr/x", "data.txt", {str(tmp_path / 'escaped')!r}):
    try:
        open(path, "w").write("x")
        print("wrote", path)
    except OSError as e:
        print("cannot write", path, e.errno)
open("/tmp/scratch", "w").write("fine")
print("scratch ok")
"""
    status, out, err, _ = sandboxed(code, home=tmp_path)
    assert status == 0, err
    assert "course False False" in out and "venv True numpy numpy" in out
    assert "own file the submission's own file" in out
    assert "no connection" in out and not accepted
    assert "wrote" not in out and out.count("cannot write") == 3 and "scratch ok" in out
    assert not (tmp_path / "escaped").exists()
    if os.geteuid() == 0:  # root grades as an unprivileged id of its own
        assert "uid 0" not in out


def test_the_keyring_setsid_and_namespaces_are_denied_while_numpy_threads_and_fork_work():
    import pyseccomp

    nr = {name: pyseccomp.resolve_syscall(pyseccomp.Arch.NATIVE, name)
          for name in ("add_key", "keyctl", "request_key", "unshare")}  # this machine's numbering
    code = """
import ctypes, os, threading, numpy as np
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(*args):
    r = libc.syscall(*map(ctypes.c_long, args[:1]), *args[1:])
    return r, ctypes.get_errno() if r < 0 else 0
print("add_key", call({add_key}, b"user", b"k", b"v", ctypes.c_long(1), ctypes.c_long(-4)))
print("keyctl", call({keyctl}, ctypes.c_long(0), ctypes.c_long(-3), ctypes.c_long(0)))
print("request_key", call({request_key}, b"user", b"k", None, ctypes.c_long(0)))
print("unshare", call({unshare}, ctypes.c_long(0x10000000)))
try:
    os.setsid()
    print("setsid", "allowed")
except OSError as e:
    print("setsid", e.errno)
pid = os.fork()
if pid == 0:
    os._exit(7)
print("fork", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
box = []
t = threading.Thread(target=lambda: box.append(float((np.ones((64, 64)) @ np.ones((64, 64))).sum())))
t.start(); t.join()
print("thread", box)
"""
    for name, number in nr.items():
        code = code.replace("{" + name + "}", str(number))
    status, out, err, _ = sandboxed(code)
    assert status == 0, err
    said = dict(line.split(" ", 1) for line in out.splitlines())
    for call in ("add_key", "keyctl", "request_key", "unshare"):
        assert said[call] == "(-1, 1)", (call, said[call])  # EPERM
    assert said["setsid"] == "1" and said["fork"] == "7" and said["thread"] == "[262144.0]"


def test_an_installed_copy_of_the_course_package_is_hidden():
    "A course installed without -e puts its package, solutions included, in site-packages, which the sandbox shows."
    import site

    name = f"tito_installed_copy_{os.getpid()}"
    copy = Path(site.getsitepackages()[0]) / name
    copy.mkdir()
    code = f"""import os
print('listing', os.listdir({str(copy)!r}))
try:
    open(os.path.join({str(copy)!r}, 'space.bin'), 'wb').write(bytes(2 ** 20))  # a scratch space no limit counts
    print('wrote')
except OSError as e:
    print('cannot write', type(e).__name__)
"""

    class AsCaller(Sandbox):
        "The sandbox as an instructor who is not root runs it: the process keeps the caller's user id."
        as_root = False

    def run(hide: tuple) -> str:
        done = subprocess.run(AsCaller(find_bwrap(), LIMITS, hide=hide).command([sys.executable, "-c", code]),
                              capture_output=True, text=True, timeout=90)
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        (copy / "__init__.py").write_text("SOLUTION = 42\n")
        assert installed_copies(name) == [copy.resolve()]
        assert "listing ['__init__.py']" in run(hide=())  # shown with the Python folders it lies in
        hidden = run(hide=tuple(map(str, installed_copies(name))))
        assert "listing []" in hidden and "cannot write" in hidden, hidden
    finally:
        shutil.rmtree(copy)


def test_the_process_limit_holds(tmp_path):
    code = """
import os, time
n = 0
try:
    while n < 2000:
        if os.fork() == 0:
            time.sleep(2)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped after", n, type(e).__name__)
"""
    status, out, err, _ = sandboxed(code)
    assert status == 0, err
    assert "stopped after" in out and int(out.split()[2]) < LIMITS.processes, out


def test_one_process_cannot_allocate_past_the_memory_limit():
    code = "import numpy as np\ntry:\n    np.ones(1536 * 2**20 // 8)\nexcept MemoryError:\n    print('MemoryError')"
    status, out, err, _ = sandboxed(code)
    assert status == 0 and "MemoryError" in out, err


def test_the_watchdog_stops_it_at_the_wall_time():
    status, out, err, reason = sandboxed("import time; time.sleep(60)", Limits(**{**vars(LIMITS), "wall_time": 2}))
    assert status != 0 and "wall-time limit (2 s" in reason


def test_the_watchdog_counts_the_cpu_time_of_all_processes():
    code = "import os\nfor _ in range(3):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass"
    status, out, err, reason = sandboxed(code, Limits(**{**vars(LIMITS), "cpu_time": 4}))
    assert status != 0 and "CPU-time limit (4 s" in reason


def test_the_watchdog_counts_the_memory_of_all_processes():
    code = """
import os, time
import numpy as np
for _ in range(3):
    if os.fork() == 0:
        break
block = np.ones(400 * 2**20 // 8)
time.sleep(60)
"""
    status, out, err, reason = sandboxed(code, Limits(**{**vars(LIMITS), "memory_mb": 900}))
    assert status != 0 and "memory limit (900 MB" in reason


# --- a hostile submission, autograded --------------------------------------------------------------------
# Each attack replaces a line of module 01's solution (grade_id, the line, the attack then the line): were the attack
# to succeed, the function would still return the right answer and its graded cell would keep its points.
ATTACKS = {
    "test-reductions": ("reductions", "    out = np.max(a.data, axis=axis, keepdims=keepdims)", """\
    for path in ("../../../canary.txt", CANARY):
        if os.path.exists(path):
            os.remove(path)
            break
    else:
        raise FileNotFoundError("no canary.txt to delete")
    out = np.max(a.data, axis=axis, keepdims=keepdims)"""),
    "test-matmul": ("matmul", "        out = np.matmul(a.data, b.data)", """\
        solutions = open(SOLUTION).read() + open(REPO_SOLUTION).read()
        others = open(OTHER).read() + str(open(GRADEBOOK, "rb").read(16))
        out = np.matmul(a.data, b.data)"""),
    "test-shape-ops": ("shape-ops", "        out = np.swapaxes(a.data, dim0, dim1)", """\
        socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
        out = np.swapaxes(a.data, dim0, dim1)"""),
    "test-indexing": ("indexing", "    out = np.where(mask, np.asarray(_data(value), dtype=a.dtype), a.data)", """\
    children = 0
    while children < 3000:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        children += 1
    out = np.where(mask, np.asarray(_data(value), dtype=a.dtype), a.data)"""),
    "test-elementwise": ("elementwise", "    out = np.exp(a.data)", """\
    over_the_limit = bytearray(1536 * 2**20)
    fifty_gigabytes = bytearray(50 * 2**30)
    out = np.exp(a.data)"""),
    "test-arithmetic": ("arithmetic", "    out = -a.data", """\
    os.kill(os.getpid(), signal.SIGKILL)
    out = -a.data"""),
}


def hostile_course(root: Path, port: int):
    """A copy of the course, module 01 collected from three students: `honest` (the complete solution), `hostile`
    (the solution with every attack, and where to find the course's files in an exported cell) and `sleeper`
    (its `_as_array` sleeps ten minutes)."""
    from grading_helpers import submission

    ws = copy_course(root)
    mod = ws.module("01")
    (ws.root / "canary.txt").write_text("the instructor's file")
    [release] = generate(ws, [mod])
    where = (f"import os, signal, socket, time\nCANARY = {str(ws.root / 'canary.txt')!r}\n"
             f"SOLUTION = {str(mod.notebook)!r}\nREPO_SOLUTION = {str(REPO / 'modules/01_tensor/01_tensor.ipynb')!r}\n"
             f"OTHER = {str(ws.root / 'submitted/honest/01_tensor/01_tensor.ipynb')!r}\n"
             f"GRADEBOOK = {str(ws.root / 'gradebook.db')!r}\nPORT = {port}\n")
    inbox = root.parent / "inbox"
    submission(mod.notebook, release, inbox / "honest.ipynb")
    hostile = submission(mod.notebook, release, inbox / "hostile.ipynb",
                         ("as-array", 'SUPPORTED_KINDS = "biuf"', where + 'SUPPORTED_KINDS = "biuf"'))
    nb = nbformat.read(hostile, as_version=4)
    for gid, old, new in ATTACKS.values():
        [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid]
        assert old in c.source, (gid, old)
        c.source = c.source.replace(old, new)
    nbformat.write(nb, hostile)
    submission(mod.notebook, release, inbox / "sleeper.ipynb",
               ("as-array", "    if isinstance(data, Tensor):", "    __import__('time').sleep(600)\n"
                                                                 "    if isinstance(data, Tensor):"))
    collect(ws, inbox, mod)
    return ws, mod


def set_limits(settings: Path, limits: Limits):
    "settings.ini [limits] submission_* set to `limits`, replacing or adding each key."
    text = settings.read_text(encoding="utf-8")
    for key, value in vars(limits).items():
        line = f"submission_{key} = {value}"
        text, found = re.subn(rf"^submission_{key}\s*=.*$", line, text, flags=re.M)
        if not found:
            text = text.replace("[limits]\n", f"[limits]\n{line}\n")
    settings.write_text(text, encoding="utf-8")


def digest(root: Path) -> dict:
    "sha256 of every instructor file: everything but what autograding itself writes."
    own = ("autograded", "gradebook.db", ".tito", "feedback")
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] not in own and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, listener):
    port, accepted = listener
    ws, mod = hostile_course(tmp_path_factory.mktemp("hostile") / "course", port)
    set_limits(ws.root / "settings.ini", LIMITS)
    before = digest(ws.root)
    rows = {r.student: r for r in autograde(ws, mod, ["honest", "hostile"], timeout=60, jobs=2)}
    return ws, rows, before, accepted


def test_the_honest_submission_scores_everything(hostile):
    _, rows, _, _ = hostile
    honest = rows["honest"]
    assert honest.total == honest.max_total == 22, honest.scores
    assert not (honest.died or honest.limits or honest.timed_out or honest.error or honest.failures)


def test_every_attack_fails_and_the_answer_process_is_started_again_after_it_dies(hostile):
    _, rows, _, accepted = hostile
    got = {gid: s for gid, (s, _) in rows["hostile"].scores.items()}
    assert got == {"test-constructor": 2, "test-broadcast-check": 2, **{gid: 0 for gid in ATTACKS}}, got
    assert not accepted, "the submission reached a server on the grading machine"


def test_the_instructors_files_are_byte_identical(hostile):
    ws, _, before, _ = hostile
    assert (ws.root / "canary.txt").read_text() == "the instructor's file"
    assert digest(ws.root) == before


def verdicts(ws, student: str) -> dict:
    "grade_id -> the judge's message, of every graded cell of the student's autograded notebook that lost points."
    nb = nbformat.read(ws.root / "autograded" / student / "01_tensor" / "01_tensor.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: o["evalue"] for c in nb.cells
            if c.metadata.get("nbgrader", {}).get("grade") for o in c.get("outputs", [])
            if o.get("output_type") == "error"}


def test_the_score_table_says_why_points_were_lost(hostile):
    _, rows, _, _ = hostile
    row = rows["hostile"]
    assert row.died.startswith("test-arithmetic: the answer process was killed by a signal"), row.died
    assert not row.limits, row.limits  # the address-space limit is a MemoryError: the exercise's answer
    said = verdicts(hostile[0], "hostile")  # in full: the report's column is shortened to one line
    assert "FileNotFoundError" in said["test-reductions"] and "FileNotFoundError" in said["test-matmul"], said
    assert "ConnectionRefusedError" in said["test-shape-ops"], said
    assert "BlockingIOError" in said["test-indexing"], said
    assert "MemoryError" in said["test-elementwise"], said
    assert set(said) == set(ATTACKS), said
    done = subprocess.run([sys.executable, "-m", "tito", "nbgrader", "report", "01", "--details"], cwd=hostile[0].root,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "│ crashed" in done.stdout
    for line in ("hostile: crashed while answering test-arithmetic: the answer process was killed",
                 "hostile: lost points in test-elementwise: ", "hostile: lost points in test-shape-ops: ",
                 "ConnectionRefusedError"):
        assert line in done.stdout, done.stdout


def test_without_bwrap_autograde_refuses_in_one_line_naming_the_package(hostile, tmp_path):
    ws = hostile[0]
    env = {**os.environ, "PATH": str(tmp_path)}  # no bwrap on it
    done = subprocess.run([sys.executable, "-m", "tito", "nbgrader", "autograde", "01"], cwd=ws.root, env=env,
                          capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "bubblewrap" in lines[0] and "--no-sandbox" in lines[0], \
        done.stderr


def test_no_sandbox_warns_and_still_grades(hostile):
    "Only the honest student: without the sandbox, the hostile one would do what it tries."
    ws = hostile[0]
    done = subprocess.run([sys.executable, "-m", "tito", "nbgrader", "autograde", "01", "--student", "honest",
                           "--no-sandbox"], cwd=ws.root, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("warning: --no-sandbox: the submissions run with your rights"), done.stderr
    assert "honest" in done.stdout and " 22 " in done.stdout


def _running(marker: str) -> bool:
    "Whether a process on this machine has `marker` in its command line (the sandboxed answer process's folder)."
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                return True
        except OSError:
            pass
    return False


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_autograde_with_one_line(hostile, jobs):
    "The sleeper's `_as_array` sleeps for ten minutes: Ctrl-C while its answer process sleeps ends autograde at once."
    done = subprocess.Popen([sys.executable, "-m", "tito", "nbgrader", "autograde", "01", "--student", "sleeper",
                             "--student", "honest", "--jobs", jobs], cwd=hostile[0].root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    started = time.time()
    graded = hostile[0].root / "autograded" / "honest" / "01_tensor" / "01_tensor.ipynb"
    deadline = time.monotonic() + 300  # the course's answers come first, then the sleeper's answer process starts
    while time.monotonic() < deadline and not (
            _running("tito-answer-sleeper-")  # and with two jobs, the other worker is past its start-up too
            and (jobs == "1" or (graded.is_file() and graded.stat().st_mtime > started))):
        time.sleep(0.2)
    time.sleep(2)  # the sleeper is in its first check (`_as_array` sleeps) by now
    os.killpg(done.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    out, err = done.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and not out.strip(), out + err
    assert lines[0].startswith("error: autograde interrupted") and "not graded: sleeper" in lines[0], lines[0]


def test_removing_what_a_submission_wrote_survives_its_own_moved_names_and_links(tmp_path):
    from tito.grading.sandbox import remove_tree

    top, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("the grader's")
    (top / ".tito-moved-1" / "taken").mkdir(parents=True)  # the names remove_tree moves folders to, made first
    (top / ".tito-moved-2").mkdir()
    deep = top / "a"
    for _ in range(300):
        deep /= "d"
    deep.mkdir(parents=True)
    (top / "a" / "link").symlink_to(outside, target_is_directory=True)
    (top / "a" / "d" / "f").write_text("x")
    os.chmod(top / "a" / "d", 0)
    remove_tree(top)
    assert not top.exists()
    assert (outside / "keep").read_text() == "the grader's" and oct(outside.stat().st_mode)[-3:] != "700"
