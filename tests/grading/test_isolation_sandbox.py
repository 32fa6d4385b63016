"""What surrounds a submission's answer process: the kernel state it shares, the machine it shares, what tito reads
back from it. Each attack is a submission of module 01 built from its release (`attack_helpers.build`) and
compared with the same work without it.
"""
import html
import re
import textwrap

import pytest

from attack_helpers import build
from tito.grading.autograde import autograde
from tito.grading.collect import collect
from tito.grading.feedback import feedback

pytestmark = pytest.mark.slow
TIMEOUT = 60  # seconds per graded cell; module 01's take milliseconds
BIG = 2 ** 40 + 1  # an input value of a hidden check of test-constructor
TOKEN = "instructor-secret-7f3a9c"  # put in the grading process's session keyring by the test

# The kernel keyring through raw system calls (x86_64 numbers: add_key 248, keyctl 250): store a key in the
# session, user and user-session keyrings, and find one by its description in any of them.
KEYS = textwrap.dedent('''
    import ctypes as _ct
    _libc = _ct.CDLL(None, use_errno=True)
    _libc.syscall.restype = _ct.c_long
    _RINGS = (-3, -4, -5)

    def _key_add(desc, data):
        for ring in _RINGS:
            _libc.syscall(_ct.c_long(248), b"user", desc.encode(), data, _ct.c_long(len(data)), _ct.c_long(ring))

    def _key_read(desc):
        for ring in _RINGS:
            kid = _libc.syscall(_ct.c_long(250), _ct.c_long(10), _ct.c_long(ring), b"user", desc.encode(),
                                _ct.c_long(0))
            if kid >= 0:
                buf = _ct.create_string_buffer(65536)
                n = _libc.syscall(_ct.c_long(250), _ct.c_long(11), _ct.c_long(kid), buf, _ct.c_long(65536))
                if n >= 0:
                    return buf.raw[:n]
        return None
''')

# (a) The graded run stores the hidden inputs it was given; the visible-only run, whose words feedback quotes,
# raises them from `add`.
HIDDEN_TO_KEY = KEYS + textwrap.dedent('''
    import re as _re, sys as _sys
    _mine = sorted(set(_re.findall(r"(?<![\\d.])\\d{10,}(?![\\d.])", open(_sys.argv[1]).read())))
    if _mine:
        _key_add("tito-hidden", " ".join(_mine).encode())

    def _said():
        return "key: " + ((_key_read("tito-hidden") or b"").decode() or "none")
''')
# (b) The instructor's own key, read from the session keyring the grading process hands down.
INSTRUCTOR_KEY = KEYS + textwrap.dedent('''
    def _said():
        return "key: " + ((_key_read("tito-instructor") or b"").decode() or "none")
''')
SAY_IN_ADD = ("arithmetic", "    out = a.data + b.data", "    raise ValueError(_said())")

# (c) Submission A stores every answer it writes; submission B, with no code of its own, hands them back.
STORE_ANSWERS = KEYS + textwrap.dedent('''
    import os as _os, zlib as _zlib
    _replace = _os.replace

    def _storing_replace(src, dst, *args, **kwargs):
        name = _os.path.basename(str(dst))
        if name.startswith("result-"):
            _key_add("tito-" + name, _zlib.compress(open(src, "rb").read(), 9))
        return _replace(src, dst, *args, **kwargs)

    _os.replace = _storing_replace
''')
REUSE_ANSWERS = KEYS + textwrap.dedent('''
    import json as _json, os as _os, sys as _sys, zlib as _zlib
    _tapes = _json.load(open(_sys.argv[1]))["tapes"]
    _got = 0
    for _i in range(len(_tapes)):
        _data = _key_read("tito-result-%d.json" % _i)
        if _data:
            open(_os.path.join(_sys.argv[2], "result-%d.json" % _i), "wb").write(_zlib.decompress(_data))
            _got += 1
    if _got:
        open(_os.path.join(_sys.argv[2], "status.json"), "w").write(_json.dumps({"stage": "done"}))
        _os._exit(0)
''')


def _keyctl():
    "libc's syscall(), for the test's own keyring calls."
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc, ctypes


def _plant_instructor_key():
    "A fresh session keyring for this (grading) process, holding the instructor's token."
    libc, ct = _keyctl()
    assert libc.syscall(ct.c_long(250), ct.c_long(1), b"tito-test-session") >= 0  # KEYCTL_JOIN_SESSION_KEYRING
    assert libc.syscall(ct.c_long(248), b"user", b"tito-instructor", TOKEN.encode(), ct.c_long(len(TOKEN)),
                        ct.c_long(-3)) >= 0


def _with_edit(path, gid, old, new):
    import nbformat

    nb = nbformat.read(path, as_version=4)
    [c] = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == gid]
    assert old in c.source, (gid, old)
    c.source = c.source.replace(old, new)
    nbformat.write(nb, path)


def _page_text(path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def keyring_class(course01, tmp_path_factory):
    "Keyring attacks graded one at a time (one grading process, as `--jobs 1`): (rows, feedback texts)."
    ws, mod = course01, course01.module("01")
    inbox = tmp_path_factory.mktemp("keyring-inbox")
    build(ws, inbox / "kcomplete.ipynb")
    build(ws, inbox / "kempty.ipynb", complete=False)
    for sid, code in (("khidden", HIDDEN_TO_KEY), ("kinstructor", INSTRUCTOR_KEY)):
        _with_edit(build(ws, inbox / f"{sid}.ipynb", prepend={"as-array": code}), *SAY_IN_ADD)
    build(ws, inbox / "kstore.ipynb", prepend={"as-array": STORE_ANSWERS})
    build(ws, inbox / "kreuse.ipynb", complete=False, append={"as-array": REUSE_ANSWERS})
    collect(ws, inbox, mod)
    _plant_instructor_key()
    order = ["kcomplete", "kempty", "khidden", "kinstructor", "kstore", "kreuse"]  # kreuse after kstore
    rows = {r.student: r for r in autograde(ws, mod, order, timeout=TIMEOUT, jobs=1)}
    pages = {p.parent.parent.name: _page_text(p) for p in feedback(ws, mod, order)}
    return rows, pages


def test_hidden_inputs_do_not_pass_through_the_keyring_to_the_feedback(keyring_class):
    rows, pages = keyring_class
    said = pages["khidden"] + " ".join(rows["khidden"].failures.values())
    assert "key: " in said  # the visible run's words are quoted: the channel would show
    assert str(BIG) not in said, "a hidden input went from the graded run to the feedback through the keyring"
    assert rows["khidden"].total < rows["kcomplete"].total


def test_the_instructors_session_keyring_is_out_of_reach(keyring_class):
    rows, pages = keyring_class
    said = pages["kinstructor"] + " ".join(rows["kinstructor"].failures.values())
    assert "key: " in said
    assert TOKEN not in said, "the sandbox read a key from the grading process's session keyring"


def test_answers_left_in_the_keyring_do_not_reach_the_next_submission(keyring_class):
    rows, _ = keyring_class
    assert rows["kstore"].total == rows["kcomplete"].total > 0  # storing cost it nothing: it did run
    assert rows["kreuse"].scores == rows["kempty"].scores and rows["kreuse"].total == 0


# --- time that a neighbour cannot steal ---------------------------------------------------------------------------
SLOW_IMPORT = "import time as _time\n_time.sleep(20)  # waits, using no CPU time"


def test_a_graded_cell_is_timed_by_its_cpu_time_not_by_the_clock(course01, tmp_path):
    "A correct submission that waits 20 s (no CPU) under a 6 s cell limit: what a loaded machine does to any cell."
    ws, mod = course01, course01.module("01")
    build(ws, tmp_path / "inbox" / "waits.ipynb", prepend={"as-array": SLOW_IMPORT})
    build(ws, tmp_path / "inbox" / "wcomplete.ipynb")
    collect(ws, tmp_path / "inbox", mod)
    rows = {r.student: r for r in autograde(ws, mod, ["waits", "wcomplete"], timeout=6, jobs=1)}
    assert rows["waits"].scores == rows["wcomplete"].scores and not rows["waits"].timed_out, rows["waits"].failures


# --- what tito reads back ----------------------------------------------------------------------------------------
# 8 MiB of `{}` in every answer file: small on disk, a gigabyte of Python objects once parsed.
BIG_ANSWERS = textwrap.dedent('''
    import json as _json, os as _os, sys as _sys
    _tapes = _json.load(open(_sys.argv[1]))["tapes"]
    _bomb = "[" + ",".join(["{}"] * (8 * 2 ** 20 // 3 - 1)) + "]"
    for _i in range(len(_tapes)):
        open(_os.path.join(_sys.argv[2], "result-%d.json" % _i), "w").write(_bomb)
    open(_os.path.join(_sys.argv[2], "status.json"), "w").write(_json.dumps({"stage": "done"}))
    _os._exit(0)
''')
# 1,200 nested folders in the answer folder, then honest answers.
NESTED = textwrap.dedent('''
    import os as _os, sys as _sys
    _here = _os.getcwd()
    _os.chdir(_sys.argv[2])
    for _k in range(1200):
        _os.mkdir("d")
        _os.chdir("d")
    _os.chdir(_here)
''')
GRADE_SCRIPT = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    from tito.workspace import Workspace
    from tito.grading.autograde import autograde
    ws = Workspace.find(Path(sys.argv[1]))
    rows = autograde(ws, ws.module("01"), sys.argv[3].split(","), timeout=int(sys.argv[2]), jobs=1)
    peak = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    print(json.dumps({"rss_mb": peak / 1024, "scores": {r.student: r.scores for r in rows}}))
''')


def _grade_apart(ws, students: list, tmp) -> dict:
    "Autograde `students` in a process of its own whose temporary folder is `tmp`: its peak memory and the scores."
    import json
    import os
    import subprocess
    import sys

    tmp.mkdir()
    done = subprocess.run([sys.executable, "-c", GRADE_SCRIPT, str(ws.root), str(TIMEOUT), ",".join(students)],
                          capture_output=True, text=True, timeout=1500, env={**os.environ, "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_huge_answer_files_score_nothing_and_cost_tito_little(course01, tmp_path):
    ws, mod = course01, course01.module("01")
    inbox = tmp_path / "inbox"
    build(ws, inbox / "bempty.ipynb", complete=False)
    build(ws, inbox / "bigjson.ipynb", complete=False, append={"as-array": BIG_ANSWERS})
    collect(ws, inbox, mod)
    out = _grade_apart(ws, ["bempty", "bigjson"], tmp_path / "tmp")
    assert out["scores"]["bigjson"] == out["scores"]["bempty"]
    assert out["rss_mb"] < 500, f"tito's process peaked at {out['rss_mb']:.0f} MB"


def test_deeply_nested_answer_folders_neither_stop_autograde_nor_stay_behind(course01, tmp_path):
    ws, mod = course01, course01.module("01")
    inbox = tmp_path / "inbox"
    build(ws, inbox / "ncomplete.ipynb")
    build(ws, inbox / "nested.ipynb", prepend={"as-array": NESTED})
    collect(ws, inbox, mod)
    out = _grade_apart(ws, ["ncomplete", "nested"], tmp_path / "tmp")
    assert out["scores"]["nested"] == out["scores"]["ncomplete"]
    assert not list((tmp_path / "tmp").iterdir()), "autograde left files in the temporary folder"


# --- other local accounts ----------------------------------------------------------------------------------------
TRESPASS = textwrap.dedent('''
    import sys
    try:
        open(sys.argv[1]).read()
        print("read: allowed")
    except OSError:
        print("read: denied")
    try:
        open(sys.argv[2] + "/result-0.json", "w").write("[]")
        print("write: allowed")
    except OSError:
        print("write: denied")
''')


@pytest.fixture
def other_account():
    "An unprivileged local account (made with useradd, removed afterwards): (uid, gid)."
    import os
    import pwd
    import shutil
    import subprocess

    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("making a local account needs root and useradd")
    name = f"titoother{os.getpid()}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid
    finally:
        subprocess.run(["userdel", name], check=False)


def test_another_local_account_reads_no_request_and_writes_no_answer(course01, tmp_path, other_account):
    import os
    import shutil
    import subprocess
    import sys
    import tempfile
    import time
    from pathlib import Path

    ws, mod = course01, course01.module("01")
    build(ws, tmp_path / "inbox" / "slow.ipynb", prepend={"as-array": SLOW_IMPORT})
    collect(ws, tmp_path / "inbox", mod)
    shared = Path(tempfile.mkdtemp(prefix="tito-test-shared-tmp-"))  # like /tmp: every account may pass
    shared.chmod(0o1777)
    grading = subprocess.Popen([sys.executable, "-c", GRADE_SCRIPT, str(ws.root), str(TIMEOUT), "slow"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "TMPDIR": str(shared)})
    said = []
    try:
        deadline = time.monotonic() + 900
        while not said and grading.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            for request in [p for p in shared.rglob("request.json")
                            if "graded" in p.parts and any(x.startswith("tito-answer-") for x in p.parts)]:
                out = request.parent.parent / "out-0"
                uid, gid = other_account
                done = subprocess.run(["/usr/bin/python3", "-c", TRESPASS, str(request), str(out)], user=uid,
                                      group=gid, extra_groups=[], capture_output=True, text=True, timeout=60)
                said = done.stdout.split("\n")
                break
        out, err = grading.communicate(timeout=900)
    finally:
        if grading.poll() is None:
            grading.kill()
            grading.wait()
        shutil.rmtree(shared, ignore_errors=True)
    assert grading.returncode == 0, err[-3000:]
    assert said[:2] == ["read: denied", "write: denied"], said

