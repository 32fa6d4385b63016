"""The autograding sandbox (tito.sandbox, tito.kernel): a hostile submission is contained, and says why it lost points.

The sandbox itself first, on plain commands (what a process in it sees, each limit), then a whole hostile
submission through `autograde`: it deletes a file of the course, reads solutions, the gradebook and another
student's work, opens a socket, forks without end, allocates more memory than allowed and 50 GB, and kills its
kernel. Every attack fails, the instructor's files are byte-identical afterwards, and the score table says why.
Needs bubblewrap (Debian: apt-get install bubblewrap; .ci/run installs it).
"""
import hashlib
import os
import re
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
from tito.grading import autograde, collect, generate
from tito.sandbox import Limits, Sandbox, Watchdog, find_bwrap

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
    proc = subprocess.Popen(sb.command([sys.executable, "-c", code], home=home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
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
EXERCISES = {  # name: (the honest answer, the hostile one); each function must return its number
    "delete": ("return 1", """for path in ("../../../canary.txt", CANARY):
        if os.path.exists(path):
            os.remove(path)
            return 1
    raise FileNotFoundError("no canary.txt to delete")"""),
    "read": ("return 2", """solutions = open(SOLUTION).read() + open(REPO_SOLUTION).read()
    others = open(OTHER).read() + str(open(GRADEBOOK, "rb").read(16))
    return 2 if "BEGIN SOLUTION" in solutions and others else 0"""),
    "connect": ("return 3", """socket.create_connection(("127.0.0.1", PORT), timeout=3).close()
    return 3"""),
    "fork": ("return 4", """children = 0
    while children < 3000:
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        children += 1
    return 4"""),
    "allocate": ("return 5", """over_the_limit = bytearray(1536 * 2**20)
    fifty_gigabytes = bytearray(50 * 2**30)
    return 5"""),
    "crash": ("return 6", """os.kill(os.getpid(), signal.SIGKILL)
    return 6"""),
}


def hostile_course(root: Path, port: int):
    "A course whose module 01 is a tiny notebook: one exercise per attack, a graded cell for each, and two more."
    ws = copy_course(root)
    for extra in ws.modules():
        if extra.number != "01":
            for f in extra.folder.iterdir():
                f.unlink()
            extra.folder.rmdir()
    mod = ws.module("01")
    (ws.root / "canary.txt").write_text("the instructor's file")
    grade = lambda gid, **kw: {"nbgrader": {"grade_id": gid, "schema_version": 3, **kw}}
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                           "language": "python"}})
    where = (f"import os, signal, socket, time\nCANARY = {str(ws.root / 'canary.txt')!r}\n"
             f"SOLUTION = {str(mod.notebook)!r}\nREPO_SOLUTION = {str(REPO / 'modules/01_tensor/01_tensor.ipynb')!r}\n"
             f"OTHER = {str(ws.root / 'submitted/honest/01_tensor/01_tensor.ipynb')!r}\n"
             f"GRADEBOOK = {str(ws.root / 'gradebook.db')!r}\nPORT = {port}")
    nb.cells = [nbformat.v4.new_code_cell(where)]
    for i, (name, (answer, _)) in enumerate(EXERCISES.items(), 1):
        nb.cells.append(nbformat.v4.new_code_cell(
            f"def {name}():\n    ### BEGIN SOLUTION\n    {answer}\n    ### END SOLUTION",
            metadata=grade(name, grade=False, locked=False, solution=True)))
        if name == "crash":
            nb.cells.append(nbformat.v4.new_code_cell("assert True", metadata=grade(
                "test-alive", grade=True, locked=True, points=1, solution=False)))
        nb.cells.append(nbformat.v4.new_code_cell(f"assert {name}() == {i}", metadata=grade(
            f"test-{name}", grade=True, locked=True, points=1, solution=False)))
    nb.cells.append(nbformat.v4.new_code_cell("assert True", metadata=grade(
        "test-after", grade=True, locked=True, points=1, solution=False)))
    nbformat.write(nb, mod.notebook)
    [release] = generate(ws, [mod])
    inbox = root.parent / "inbox"
    inbox.mkdir()
    for student, pick in (("honest", 0), ("hostile", 1), ("sleeper", 2)):
        sub = nbformat.read(release, as_version=4)
        for c in sub.cells:
            name = c.metadata.get("nbgrader", {}).get("grade_id")
            if name in EXERCISES:
                answer = "time.sleep(600)" if pick == 2 else EXERCISES[name][pick]
                c.source = c.source.replace("# YOUR CODE HERE\n    raise NotImplementedError()", answer)
        nbformat.write(sub, inbox / f"{student}.ipynb")
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
    assert honest.total == honest.max_total == 8, honest.scores
    assert not (honest.died or honest.limits or honest.timed_out or honest.error or honest.failures)


def test_every_attack_fails_and_the_kernel_survives_all_but_the_last(hostile):
    _, rows, _, accepted = hostile
    got = {gid: s for gid, (s, _) in rows["hostile"].scores.items()}
    assert got == {"test-delete": 0, "test-read": 0, "test-connect": 0, "test-fork": 0, "test-allocate": 0,
                   "test-alive": 1, "test-crash": 0, "test-after": 0}
    assert not accepted, "the submission reached a server on the grading machine"


def test_the_instructors_files_are_byte_identical(hostile):
    ws, _, before, _ = hostile
    assert (ws.root / "canary.txt").read_text() == "the instructor's file"
    assert digest(ws.root) == before


def test_the_score_table_says_why_points_were_lost(hostile):
    _, rows, _, _ = hostile
    row = rows["hostile"]
    assert row.died.startswith("test-crash: the kernel was killed") and row.not_run == 1
    assert any(hit.startswith("the memory limit in test-allocate (MemoryError") for hit in row.limits), row.limits
    assert any(hit.startswith("the process limit in test-fork (BlockingIOError") for hit in row.limits), row.limits
    assert row.failures["test-delete"].startswith("FileNotFoundError")
    assert row.failures["test-read"].startswith("FileNotFoundError")
    assert row.failures["test-connect"].startswith("ConnectionRefusedError")
    done = subprocess.run([sys.executable, "-m", "tito", "nbgrader", "report", "01", "--details"], cwd=hostile[0].root,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert "kernel died, hit a limit" in done.stdout
    for line in ("hostile: kernel died in test-crash: the kernel was killed", "hostile: hit the memory limit in "
                 "test-allocate", "hostile: hit the process limit in test-fork", "hostile: lost points in "
                 "test-connect: ConnectionRefusedError"):
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
    assert "honest" in done.stdout and " 8 " in done.stdout


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ctrl_c_stops_autograde_with_one_line(hostile, jobs):
    "The sleeper's first exercise sleeps for ten minutes: Ctrl-C there ends autograde at once, in one line."
    done = subprocess.Popen([sys.executable, "-m", "tito", "nbgrader", "autograde", "01", "--student", "sleeper",
                             "--student", "honest", "--jobs", jobs], cwd=hostile[0].root, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(8)  # the sleeper's kernel is running by now
    os.killpg(done.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole process group
    out, err = done.communicate(timeout=60)
    lines = err.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and not out.strip(), out + err
    assert lines[0].startswith("error: autograde interrupted") and "not graded: sleeper" in lines[0], lines[0]
