"""Attacks on what surrounds a submission in nbgrader's workflow: what `collect` reads (a student's folder, the
exchange), what tito reads back, and a class in which one submission is broken.

One course copy holds one class. Through the exchange: `ann` (complete work) and attacks that link to the course's
solution or to her submission, hand in something that is not a notebook, forge the timestamp, date a submission in
the future under ann's name, or hand in under a local account's name from another account. From a folder: an entry
that links to the course's solution (refused), then `alice` (complete), `dup` (complete, a solution cell pasted twice),
`errnames` (complete, plus a different built-in error class raised for each hidden input it recognises) and, put in
submitted/ by hand as an older tito collected it, `garbled`. The class is autograded, reported and given feedback by
the `tito` command; each attack scores nothing it did not earn and shows no solution or classmate code anywhere.
"""
import html
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from attack_helpers import build, copy_course, hand_in, paste_twice
from tito.grading.collect import collect
from tito.grading.feedback import feedback
from tito.grading.generate import generate, release
from tito.grading.report import notes, scores, why
from tito.grading.sandbox import find_bwrap
from tito.workspace import TitoError, Workspace

pytestmark = pytest.mark.slow
FORGED_STAMP = "2020-01-01 00:00:00.000000 UTC\nann: new, submitted 2099-01-01 00:00:00.000000 UTC"
RARE = ["ChildProcessError", "BlockingIOError", "FloatingPointError", "UnicodeTranslateError", "ProcessLookupError",
        "InterruptedError", "BrokenPipeError", "NotADirectoryError"]  # raised nowhere in the course or its checks
# A different error class for each kind of input that only hidden checks of module 01 use (a huge int64, float16,
# int32, uint8): which class each hidden check raised would spell out what its input was.
ERROR_NAMES = textwrap.dedent(f'''
    import builtins as _builtins
    _RARE = [name[::-1] for name in {[n[::-1] for n in RARE]!r}]  # spelled backwards: the page shows this code
    _plain_as_array = _as_array

    def _as_array(data, dtype=None):
        arr = _plain_as_array(data, dtype)
        kind = {{"float16": 1, "int32": 2, "uint8": 3}}.get(arr.dtype.name)
        if arr.dtype.kind in "iu" and arr.size and abs(int(arr.max())) > 10 ** 6:
            kind = 4 + int(arr.max()) % 4
        if kind is not None:
            raise getattr(_builtins, _RARE[kind])("chosen by the submission")
        return arr
''')


def tito(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    return subprocess.run([sys.executable, "-m", "tito", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=1200, env={**clean, "COLUMNS": "250"})


def _solution_lines(ws: Workspace) -> list[str]:
    "Lines of module 01's solutions that its release does not show (what only the course's notebook holds)."
    mod = ws.module("01")
    shown = ws.released(mod).notebook.read_text(encoding="utf-8")
    lines = [line.strip() for c in nbformat.read(mod.notebook, as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("solution") for line in c.source.splitlines()]
    found = sorted({x for x in lines if len(x) > 25 and json.dumps(x)[1:-1] not in shown})
    assert len(found) > 10
    return found


def _exchange(ws: Workspace, base: Path) -> dict:
    "The exchange's submissions of module 01 (see the module's docstring), collected; what collect said and did."
    mod = ws.module("01")
    inbound = base / "exchange" / "tinytorch" / "inbound"
    complete = build(ws, base / "made" / "complete.ipynb")
    empty = build(ws, base / "made" / "empty.ipynb", complete=False)
    ann = hand_in(inbound, "ann", mod.name)
    (ann / mod.notebook.name).write_bytes(complete.read_bytes())
    (hand_in(inbound, "linkfile", mod.name) / mod.notebook.name).symlink_to(mod.notebook)  # the course's solution
    linkdir = inbound / f"linkdir+{mod.name}+2026-01-05 10:00:00.000000 UTC+12345678"
    linkdir.symlink_to(mod.folder, target_is_directory=True)  # a folder that holds the solution notebook
    (hand_in(inbound, "linkmate", mod.name) / mod.notebook.name).symlink_to(ann / mod.notebook.name)
    (hand_in(inbound, "notjson", mod.name) / mod.notebook.name).write_text("not a notebook at all")
    os.mkfifo(hand_in(inbound, "fifo", mod.name) / mod.notebook.name)  # reading it would wait for a writer forever
    stamp = hand_in(inbound, "stamp", mod.name, "2026-01-05 11:00:00.000000 UTC")
    (stamp / mod.notebook.name).write_bytes(empty.read_bytes())
    (stamp / "timestamp.txt").write_text(FORGED_STAMP)  # what nbgrader copied and tito read back, verbatim
    future = hand_in(inbound, "ann", mod.name, "2099-01-01 00:00:00.000000 UTC")  # a classmate, under ann's name
    (future / mod.notebook.name).write_bytes(empty.read_bytes())
    owned = None
    if os.geteuid() == 0:  # under the name of the local account `daemon`, made by the account `nobody`
        owned = hand_in(inbound, "daemon", mod.name)
        (owned / mod.notebook.name).write_bytes(empty.read_bytes())
        for p in (owned / mod.notebook.name, owned / "timestamp.txt", owned):
            os.chown(p, 65534, 65534)
    done = tito(ws.root, "nbgrader", "collect", "01", "--exchange")
    kept = {p.parent.parent.name for p in (ws.root / "submitted").glob(f"*/{mod.name}/{mod.notebook.name}")}
    return {"done": done, "kept": kept, "owned": owned, "complete": complete, "empty": empty}


def _folder(ws: Workspace, base: Path, made: dict) -> dict:
    "Collect from a folder: first with an entry linked to the solution (refused), then the honest folder."
    mod = ws.module("01")
    bad = base / "inbox-links"
    bad.mkdir()
    (bad / "alice.ipynb").write_bytes(made["complete"].read_bytes())
    (bad / "mallory").symlink_to(mod.folder, target_is_directory=True)  # the course's module folder
    (bad / "trudy.ipynb").symlink_to(mod.notebook)
    before = sorted((ws.root / "submitted").rglob("*"))
    try:
        refused = collect(ws, bad, mod)
    except TitoError as e:
        refused = e
    after = sorted((ws.root / "submitted").rglob("*"))
    inbox = base / "inbox"
    inbox.mkdir()
    for sid in ("alice", "dup", "errnames"):
        build(ws, inbox / f"{sid}.ipynb", append={"as-array": ERROR_NAMES} if sid == "errnames" else None)
    paste_twice(inbox / "dup.ipynb", "arithmetic")
    collect(ws, inbox, mod)
    garbled = ws.root / "submitted" / "garbled" / mod.name / mod.notebook.name  # put there as an older tito did
    garbled.parent.mkdir(parents=True, exist_ok=True)
    garbled.write_text("not a notebook at all")
    return {"refused": refused, "unchanged": before == after}


@pytest.fixture(scope="module")
def flow(tmp_path_factory):
    "The class above: collected, autograded (`tito nbgrader autograde 01 --jobs 2`), reported, with feedback."
    if find_bwrap() is None:
        pytest.skip("bubblewrap is not installed")
    base = tmp_path_factory.mktemp("flow")
    ws = copy_course(base / "course")
    settings = ws.root / "settings.ini"
    settings.write_text(settings.read_text().replace("[nbgrader]", f"[nbgrader]\nexchange_dir = {base / 'exchange'}"))
    ws = Workspace.find(ws.root)
    mod = ws.module("01")
    generate(ws, [mod])
    release(ws, mod)
    out = {"ws": ws, "exchange": _exchange(ws, base)}
    out["folder"] = _folder(ws, base, out["exchange"])
    out["autograde"] = tito(ws.root, "nbgrader", "autograde", "01", "--jobs", "2", "--timeout", "60")
    out["report"] = tito(ws.root, "nbgrader", "report", "01", "--details")
    try:  # each step may fail on its own (the tests say which and how)
        out["rows"] = {r.student: r for r in scores(ws, mod)}
    except Exception as e:  # noqa: BLE001
        out["rows"] = e
    try:
        out["pages"] = {p.parent.parent.name: p for p in feedback(ws, mod)}
    except Exception as e:  # noqa: BLE001
        out["pages"] = e
    return out


def _page_text(path: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def _pages(flow) -> dict:
    assert isinstance(flow["pages"], dict), f"feedback stopped: {flow['pages']!r}"
    return flow["pages"]


def _rows(flow) -> dict:
    assert isinstance(flow["rows"], dict), f"the report stopped: {flow['rows']!r}"
    return flow["rows"]


# --- 1. no path out through the file system ------------------------------------------------------------------------
def test_collect_from_a_folder_refuses_links_to_the_solution(flow):
    refused = flow["folder"]["refused"]
    assert isinstance(refused, TitoError), f"collected: {[(c.student, c.status) for c in refused]}"
    message = str(refused)
    assert "\n" not in message and "'mallory' is a symlink" in message and "'trudy.ipynb' is a symlink" in message
    assert flow["folder"]["unchanged"]  # all or nothing: not even alice's good notebook


@pytest.mark.parametrize("student", ["linkfile", "linkdir", "linkmate", "notjson", "fifo"])
def test_the_exchange_takes_regular_notebooks_only(flow, student):
    done, kept = flow["exchange"]["done"], flow["exchange"]["kept"]
    assert student not in kept and student not in _rows(flow)  # scores nothing: it has no row
    [line] = [x for x in done.stdout.splitlines() if x.startswith(f"{student}:")]
    what = {"linkfile": "01_tensor.ipynb is a symlink", "linkdir": "is a symlink", "linkmate": "is a symlink",
            "notjson": "is not a readable notebook (NotJSONError", "fifo": "01_tensor.ipynb is a named pipe"}
    assert line.startswith(f"{student}: not collected: ") and what[student] in line and "/inbound/" in line, line
    assert done.returncode == 1 and student in done.stderr.strip().splitlines()[-1], done.stderr
    assert "ann" in kept and _rows(flow)["ann"].total == _rows(flow)["ann"].max_total > 0  # the others collected


def test_no_page_shows_the_solution_or_a_classmates_code(flow):
    ws, pages = flow["ws"], _pages(flow)
    solution = _solution_lines(ws)
    complete = {"ann", "alice", "dup", "errnames"}  # their own work is the solution
    assert set(pages) - complete, "the attacks' pages are there to look at"
    for student, page in pages.items():
        if student not in complete:
            text = _page_text(page)
            assert not [line for line in solution if line in text], student


# --- 2. hidden checks say only that they failed ---------------------------------------------------------------------
def test_hidden_checks_report_no_error_class(flow):
    ws = flow["ws"]
    said = _page_text(_pages(flow)["errnames"]) + flow["report"].stdout + flow["autograde"].stdout
    autograded = (ws.root / "autograded" / "errnames" / "01_tensor" / "01_tensor.ipynb").read_text(encoding="utf-8")
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{ws.root / 'gradebook.db'}", "tinytorch") as gb:
        comments = " ".join(str(c.comment) for c in gb.find_submission("01_tensor", "errnames").notebooks[0].comments)
    for name in RARE + ["wrong values", "raised "]:
        for where, text in (("feedback or report", said), ("autograded notebook", autograded),
                            ("gradebook comments", comments)):
            assert name not in text, f"{name!r} in the {where}"
    row = _rows(flow)["errnames"]
    assert row.total < row.max_total and "test-constructor" in row.failures, row.failures
    assert re.fullmatch(r"hidden check \d+ failed(; hidden check \d+ failed)*(; and \d+ more)?",
                        row.failures["test-constructor"])


def test_visible_checks_keep_their_explanation(flow):
    row = _rows(flow)["errnames"]
    alice = _rows(flow)["alice"]
    assert alice.total == alice.max_total and not alice.failures
    assert set(row.failures) == {"test-constructor"}, row.failures  # only the hidden checks of it failed


# --- 3. one bad submission never stops the class -------------------------------------------------------------------
def test_a_broken_submission_is_a_row_with_a_reason(flow):
    rows, done, report = _rows(flow), flow["autograde"], flow["report"]
    assert done.returncode == 0 and report.returncode == 0, done.stderr + report.stderr
    assert {"alice", "ann", "dup", "errnames", "garbled", "stamp"} <= set(rows), sorted(rows)
    assert rows["alice"].total == rows["alice"].max_total > 0
    for student, reason in (("dup", "cell `arithmetic` is in the notebook 2 times"),
                            ("garbled", "not a readable notebook (NotJSONError)")):
        said = " ".join(notes(rows[student]))
        assert "not graded" in why(rows[student]) and reason in said, (student, said)
        table = [x for x in report.stdout.splitlines() if x.count("│") > 3 and f" {student} " in x]
        assert table and "not graded" in table[0], report.stdout
        assert f"{student}: not graded: " in report.stdout and reason in report.stdout
    assert "not graded: dup, garbled" in done.stderr, done.stderr


def test_a_broken_submission_gets_a_page_that_says_why(flow):
    pages = _pages(flow)
    assert {"alice", "ann", "errnames"} <= set(pages)
    text = _page_text(pages["dup"])
    assert "not graded" in text and "cell `arithmetic` is in the notebook 2 times" in text, text
    assert "not a readable notebook" in _page_text(pages["garbled"])


# --- 4. what surrounds a submission: timestamps, names, accounts ----------------------------------------------------
def test_a_submission_dated_in_the_future_does_not_shadow_the_real_one(flow):
    done = flow["exchange"]["done"]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("ann:")]
    assert "2099-01-01" in line and "dated in the future" in line, line
    assert _rows(flow)["ann"].total == _rows(flow)["ann"].max_total > 0  # her own work, not the classmate's


def test_a_forged_timestamp_file_is_not_read_back(flow):
    ws, done = flow["ws"], flow["exchange"]["done"]
    lines = [x for x in done.stdout.splitlines() if x.startswith("stamp:") or "2099" in x]
    assert [x.split(":")[0] for x in lines] == ["ann", "stamp"], done.stdout  # no line forged into the output
    stamp = ws.root / "submitted" / "stamp" / "01_tensor" / "timestamp.txt"
    written = stamp.read_text(encoding="utf-8")  # tito's own: the later of the name's time and when it arrived
    assert written.count("\n") == 1 and written.strip() >= "2026-01-05 11:00:00.000000 UTC", written
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} UTC\n", written), written
    assert _rows(flow)["stamp"].total == 0


def test_a_submission_under_another_accounts_name_is_refused(flow):
    if flow["exchange"]["owned"] is None:
        pytest.skip("needs root, to hand in as another account")
    done, kept = flow["exchange"]["done"], flow["exchange"]["kept"]
    [line] = [x for x in done.stdout.splitlines() if x.startswith("daemon:")]
    assert "not collected" in line and "owned by nobody, not by the account daemon" in line, line
    assert "daemon" not in kept
