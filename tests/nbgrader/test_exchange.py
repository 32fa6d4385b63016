"""A class through nbgrader's exchange on one machine, as on a JupyterHub: the instructor releases module 01, three
students (each in a workspace made by `tito student init`) fetch it, work and submit it, and the instructor collects
the latest submission of each and autogrades them. Student ids are given explicitly (`--student`): one machine has
one login name, where a Hub has one per student.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grading_helpers import copy_course, submission
from tito import exchange
from tito.workspace import TitoError, Workspace
from tito.grading.autograde import autograde
from tito.grading.sandbox import find_bwrap
from tito.student_workspace import init_student_workspace


def tito(cwd: Path, *args: str, env: dict = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-m", "tito", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**clean, "COLUMNS": "200", **(env or {})})


def tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()} if folder.is_dir() else {}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    "The course (with its exchange in a temporary folder) and three student workspaces made from it."
    base = tmp_path_factory.mktemp("hub")
    ws = copy_course(base / "course", full=True)
    settings = ws.root / "settings.ini"
    settings.write_text(settings.read_text().replace("[nbgrader]", f"[nbgrader]\nexchange_dir = {base / 'exchange'}"))
    ws = Workspace.find(ws.root)
    env = {"JUPYTER_DATA_DIR": str(base / "jupyter")}  # nbgrader's submission cache
    students = {}
    for sid in ("alice", "bob", "carol"):
        init_student_workspace(ws, base / sid)
        students[sid] = Workspace.find(base / sid)
    return ws, students, env


def test_release_fetch_submit_collect_autograde(hub, monkeypatch):
    ws, students, env = hub
    monkeypatch.setenv("JUPYTER_DATA_DIR", env["JUPYTER_DATA_DIR"])
    mod = ws.module("01")
    done = tito(ws.root, "nbgrader", "release", "01", env=env)
    assert done.returncode == 0, done.stderr
    outbound = Path(done.stdout.split(" to ")[-1].strip())
    assert (outbound / "01_tensor.ipynb").read_bytes() == ws.released(mod).notebook.read_bytes()

    done = tito(students["alice"].root, "fetch", "01", env=env)
    assert done.returncode == 0 and "already the released version" in done.stdout, done.stdout + done.stderr
    for sid, edit in (("alice", None), ("carol", ("reductions", "out = np.max(", "out = np.min("))):
        nb = students[sid].module("01").notebook
        submission(mod.notebook, nb, nb, edit or ())
    done = tito(students["alice"].root, "submit", "01", "--student", "alice", env=env)
    assert done.returncode == 0 and done.stdout.strip() == "submitted modules/01_tensor/01_tensor.ipynb as alice", \
        done.stdout + done.stderr
    exchange.submit(students["bob"], students["bob"].module("01"), "bob")  # bob hands in the release untouched
    carol = students["carol"].module("01").notebook
    fixed = carol.read_bytes()
    carol.write_bytes(ws.released(mod).notebook.read_bytes())
    exchange.submit(students["carol"], students["carol"].module("01"), "carol")  # too early: the release
    carol.write_bytes(fixed)
    exchange.submit(students["carol"], students["carol"].module("01"), "carol")  # her final answer

    done = tito(ws.root, "nbgrader", "collect", "01", "--exchange", env=env)
    assert done.returncode == 0, done.stderr
    assert sorted(line.split(":")[0] for line in done.stdout.splitlines()) == ["alice", "bob", "carol"]
    # the student's folder also holds the release's shipped answers (01_tensor.expected.json): only the notebook is kept
    assert all(re.match(r"^\w+: new( \(left out \d+ other file\(s\): [^)]*\))?, submitted ", line)
               for line in done.stdout.splitlines()), done.stdout
    for sid in ("alice", "bob", "carol"):
        kept = {p.name for p in (ws.root / "submitted" / sid / mod.name).iterdir()}
        assert kept <= {mod.notebook.name, "timestamp.txt"} and mod.notebook.name in kept, (sid, kept)
    again = tito(ws.root, "nbgrader", "collect", "01", "--exchange", env=env)
    assert again.returncode == 0 and all(": unchanged" in x for x in again.stdout.splitlines()), again.stdout

    if find_bwrap() is None:
        pytest.skip("bubblewrap is not installed: the collected notebooks are not autograded here")
    rows = {r.student: r for r in autograde(ws, mod, timeout=60, jobs=2)}
    alice = rows["alice"]
    assert alice.total == alice.max_total > 0 and rows["bob"].total == 0
    assert rows["carol"].total == alice.total - alice.scores["test-reductions"][1]  # her last submission counts


def test_a_module_released_later_is_fetched_into_the_workspace(hub):
    ws, students, env = hub
    bob = students["bob"]
    folder = bob.module("02").folder
    for f in sorted(folder.rglob("*"), reverse=True):
        f.unlink() if f.is_file() else f.rmdir()
    folder.rmdir()
    assert tito(ws.root, "nbgrader", "release", "02", env=env).returncode == 0
    done = tito(bob.root, "fetch", "02", env=env)
    assert done.returncode == 0 and done.stdout.strip() == "fetched modules/02_autograd/02_autograd.ipynb", \
        done.stdout + done.stderr
    assert bob.module("02").notebook.read_bytes() == ws.released(ws.module("02")).notebook.read_bytes()


def test_fetch_keeps_the_students_own_notebook(hub):
    ws, students, env = hub
    assert tito(ws.root, "nbgrader", "release", "01", env=env).returncode == 0  # whichever test ran first
    alice = students["alice"]
    notebook = alice.module("01").notebook  # her own work, whether or not another test (another worker) edited it
    notebook.write_bytes(ws.released(ws.module("01")).notebook.read_bytes().replace(b"YOUR CODE HERE", b"MY CODE", 1))
    mine = notebook.read_bytes()
    done = tito(alice.root, "fetch", "01", env=env)
    assert done.returncode == 0 and "kept your modules/01_tensor/01_tensor.ipynb" in done.stdout
    assert alice.module("01").notebook.read_bytes() == mine


def test_a_submission_with_an_unusable_id_stops_the_collect(hub):
    ws, _, env = hub
    inbound = ws.root.parent / "exchange" / "tinytorch" / "inbound"
    sneaky = inbound / "eve\nadmin+01_tensor+2030-01-01 00:00:00.000000 UTC+abc"
    sneaky.mkdir()
    (sneaky / "01_tensor.ipynb").write_text(json.dumps({"cells": []}))
    before = tree(ws.root / "submitted")
    try:
        done = tito(ws.root, "nbgrader", "collect", "01", "--exchange", env=env)
    finally:
        (sneaky / "01_tensor.ipynb").unlink()
        sneaky.rmdir()
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and "'eve\\nadmin'" in lines[0], done.stderr
    assert tree(ws.root / "submitted") == before


def test_student_commands_refuse_what_would_hurt(hub):
    ws, students, env = hub
    done = tito(ws.root, "fetch", "01", env=env)
    assert done.returncode == 1 and "for student workspaces" in done.stderr
    with pytest.raises(TitoError, match="not a usable student id"):
        exchange.submit(students["bob"], students["bob"].module("01"), "bob smith")


def exchange_course(tmp_path: Path) -> tuple[Workspace, Path]:
    "A course copy whose exchange is a folder of the test's, and that exchange's inbound folder for the course."
    ws = copy_course(tmp_path / "course")
    settings = ws.root / "settings.ini"
    settings.write_text(settings.read_text().replace("[nbgrader]", f"[nbgrader]\nexchange_dir = {tmp_path / 'ex'}"))
    inbound = tmp_path / "ex" / "tinytorch" / "inbound"
    inbound.mkdir(parents=True)
    return Workspace.find(ws.root), inbound


def hand_in_as(inbound: Path, student: str, when, notebook: Path) -> Path:
    "A submission folder named as `nbgrader submit` names it, dated `when` by the name alone."
    stamp = when.strftime("%Y-%m-%d %H:%M:%S.%f %Z")
    folder = inbound / f"{student}+01_tensor+{stamp}+{os.urandom(4).hex()}"
    folder.mkdir()
    (folder / "01_tensor.ipynb").write_bytes(notebook.read_bytes())
    (folder / "timestamp.txt").write_text(stamp)
    return folder


def test_a_back_dated_submission_counts_from_when_it_reached_the_exchange(tmp_path):
    from datetime import datetime, timedelta, timezone

    from tito.grading.collect import collect_from_exchange
    from nbgrader.utils import parse_utc

    ws, inbound = exchange_course(tmp_path)
    mod = ws.module("01")
    now = datetime.now(timezone.utc)
    hand_in_as(inbound, "eve", now - timedelta(days=3), mod.notebook)  # her clock set back three days
    [got] = collect_from_exchange(ws, mod)
    assert got.source is not None, got.status
    stamp = parse_utc((ws.root / "submitted" / "eve" / mod.name / "timestamp.txt").read_text().strip())
    assert stamp.replace(tzinfo=timezone.utc) >= now - timedelta(minutes=1), stamp


@pytest.mark.skipif(os.geteuid() != 0, reason="making folders owned by other accounts needs root")
def test_a_folder_of_another_account_under_a_students_name_shadows_nothing(tmp_path):
    import pwd
    from datetime import datetime, timedelta, timezone

    from tito.grading.collect import collect_from_exchange

    ws, inbound = exchange_course(tmp_path)
    mod = ws.module("01")
    now = datetime.now(timezone.utc)
    student, other = pwd.getpwnam("daemon"), pwd.getpwnam("nobody")  # ids that are local accounts
    own = hand_in_as(inbound, "daemon", now - timedelta(hours=1), mod.notebook)
    planted = hand_in_as(inbound, "daemon", now + timedelta(minutes=30), mod.notebook)  # newer, within the slack
    for folder, account in ((own, student), (planted, other)):
        for path in (folder, *folder.iterdir()):
            os.chown(path, account.pw_uid, account.pw_gid)
    [got] = collect_from_exchange(ws, mod)
    assert got.source == own, got.status  # her own submission, not "not collected"
    assert f"{planted.name!r} is owned by nobody" in got.status
