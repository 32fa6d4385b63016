"""A term's end with a real class: 14 submissions of module 01 handed in through nbgrader's exchange (three after the
due date), graded by two graders (`--shard 1/2`, `--shard 2/2`, at once) into one gradebook, exported to a CSV an LMS
imports, and checked for copies. Once with the default SQLite gradebook, once with a real PostgreSQL server started
here in a throwaway folder; both grade the same generated class.

The class: `ana` solves every exercise; `ben` hands in ana's notebook with her variables renamed; `rel` hands in
the release untouched (its given code only); `s01`..`s11` each solve the first exercise and one or two others (some
with a catalogued bug), so their code overlaps only where the course's given code does, which is left out.
"""
import csv
import importlib.util
import os
import pwd
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from bug_catalogue import BUGS
from grading_helpers import cell, copy_course
from tito.workspace import TitoError, Workspace
from tito.grading.deadlines import lateness
from tito.grading.generate import generate
from tito.grading.gradebook import Shard
from tito.grading.setup import nbgrader_api, nbgrader_config
from tito.grading.similarity import similar_pairs
from tito.grading.report import scores
from tito.grading.sandbox import find_bwrap

needs_bwrap = pytest.mark.skipif(find_bwrap() is None, reason="bubblewrap (`bwrap`) is not installed")

# the lateness unit test's dates, read from submitted/ folders
DUE = "2026-12-01T23:59:00+00:00"
ON_TIME = "2026-12-01 20:00:00.000000 UTC"
LATE = {"ben": "2026-12-02 10:00:00.000000 UTC", "s03": "2026-12-03 12:00:00.000000 UTC",
        "s07": "2026-12-01 23:59:30.000000 UTC"}
# The term's, through the exchange, from the time of handing in: collect takes the later of a submission's name's
# time and the kernel's change times (which no one can set back), and passes over a name more than an hour ahead, so
# the class hands in before a due date still to come and the late ones are named after it.
LATE_BY = {"ben": timedelta(minutes=10), "s03": timedelta(minutes=30), "s07": timedelta(seconds=30)}


def nbgrader_stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M:%S.%f %Z")
PENALTY = 10  # percent of the module's points per day, or part of a day, late
EXERCISES = ["as-array", "broadcast-check", "arithmetic", "elementwise", "matmul", "reductions", "shape-ops",
             "indexing"]
RENAMED = {"arr": "values", "k_b": "inner_dim", "lead": "extra_axes"}  # ben's disguise of ana's code


def solved(release: nbformat.NotebookNode, solution: nbformat.NotebookNode, exercises, bug=None):
    "The release with `exercises` filled from the course's solution (and a catalogued `bug` in one of them)."
    nb = nbformat.from_dict(release)
    for gid in exercises:
        source = cell(solution, gid).source
        if bug is not None and bug.grade_id == gid:
            assert bug.old in source, bug.slug
            source = source.replace(bug.old, bug.new)
        cell(nb, gid).source = source
    return nb


def class_notebooks(ws: Workspace) -> dict:
    "Student id -> the notebook they hand in."
    mod = ws.module("01")
    release = nbformat.read(ws.released(mod).notebook, as_version=4)
    solution = nbformat.read(mod.notebook, as_version=4)
    ana = solved(release, solution, EXERCISES)
    ben = nbformat.from_dict(ana)
    for gid in EXERCISES:
        c = cell(ben, gid)
        for old, new in RENAMED.items():
            c.source = re.sub(rf"\b{old}\b", new, c.source)
    assert ben != ana
    bugs = {b.grade_id: b for b in BUGS["01"]}
    out = {"ana": ana, "ben": ben, "rel": release}
    for i in range(1, 12):
        own = [EXERCISES[1 + (i - 1) % 7]] + ([EXERCISES[1 + (i + 2) % 7]] if i % 3 == 0 else [])
        bug = bugs.get(own[0]) if i % 4 == 0 else None
        out[f"s{i:02d}"] = solved(release, solution, ["as-array", *own], bug)
    return out


def hand_in(exchange: Path, notebooks: dict) -> str:
    """Each notebook in nbgrader's exchange inbound folder, as `nbgrader submit` leaves it (with its timestamp); the
    due date (ISO 8601), 20 minutes from now."""
    inbound = exchange / "tinytorch" / "inbound"
    now = datetime.now(timezone.utc)
    due = now + timedelta(minutes=20)
    for sid, nb in notebooks.items():
        stamp = nbgrader_stamp(due + LATE_BY[sid] if sid in LATE_BY else now - timedelta(hours=4))
        folder = inbound / f"{sid}+01_tensor+{stamp}+{sid}x"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "01_tensor.ipynb")
        (folder / "timestamp.txt").write_text(stamp)
    return due.isoformat()


def tito(cwd: Path, *args: str) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if k not in ("TITO_ROOT", "PYTHONPATH")}
    return subprocess.Popen([sys.executable, "-m", "tito", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**clean, "COLUMNS": "250"})


def run(cwd: Path, *args: str) -> str:
    proc = tito(cwd, *args)
    out, err = proc.communicate(timeout=1800)
    assert proc.returncode == 0, f"tito {' '.join(args)}:\n{out}\n{err}"
    return out


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    "(a course with module 01's release generated, the exchange holding the class's submissions, the class)."
    base = tmp_path_factory.mktemp("term")
    ws = copy_course(base / "course")
    generate(ws, [ws.module("01")])
    notebooks = class_notebooks(ws)
    due = hand_in(base / "exchange", notebooks)
    return ws, base / "exchange", sorted(notebooks), due


def find_postgres() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
    if not found:
        pytest.skip("no PostgreSQL server here (`apt-get install postgresql`)")
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install -e '.[postgres]')")
    return found[-1].parent


@pytest.fixture(scope="module")
def postgres():
    "A PostgreSQL server of its own, in a temporary folder, for this module's tests: makes a database, gives its URL."
    bin_dir = find_postgres()
    as_user = []
    folder = Path(tempfile.mkdtemp(prefix="tito-pg-"))
    if os.geteuid() == 0:  # the server refuses to run as root
        as_user = ["runuser", "-u", "postgres", "--"]
        entry = pwd.getpwnam("postgres")
        os.chown(folder, entry.pw_uid, entry.pw_gid)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = folder / "data"
    subprocess.run([*as_user, str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust"],
                   check=True, capture_output=True)
    subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(folder / "log"), "-o",
                    f"-p {port} -k {folder} -c listen_addresses=127.0.0.1", "start"], check=True, capture_output=True)
    import psycopg

    server = f"postgresql://postgres@127.0.0.1:{port}"

    def database(name: str) -> str:
        "A new, empty database on the server: its URL."
        with psycopg.connect(f"{server}/postgres", autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")
        return f"{server}/{name}"

    try:
        yield database
    finally:
        subprocess.run([*as_user, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def course_for(term, name: str, db_url: str = "") -> Workspace:
    "A copy of the generated course for one gradebook, with the exchange, the due date and a late penalty set."
    ws, exchange, _, due = term
    root = ws.root.parent / name
    shutil.copytree(ws.root, root, ignore=shutil.ignore_patterns("gradebook.db") if db_url else None)
    settings = root / "settings.ini"
    text = settings.read_text().replace("[nbgrader]", f"[nbgrader]\nexchange_dir = {exchange}"
                                        + (f"\ndb_url = {db_url}" if db_url else ""))
    settings.write_text(text + f"\n[deadlines]\n01 = {due}\nlate_penalty_percent_per_day = {PENALTY}\n")
    return Workspace.find(root)


def grade_the_term(ws: Workspace, students: list[str]):
    """Collect, generate (a new gradebook), grade in two shards at once, then check the report, the CSV and the
    similarity page."""
    collected = run(ws.root, "nbgrader", "collect", "01", "--exchange")
    assert sorted(line.split(":")[0] for line in collected.splitlines()) == students
    run(ws.root, "nbgrader", "generate", "01")  # the assignment in this gradebook before the graders start
    graders = [tito(ws.root, "nbgrader", "autograde", "01", "--shard", f"{k}/2", "--timeout", "600")
               for k in (1, 2)]
    graded = []
    for proc in graders:
        out, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, out + err
        graded.append({s for s in students if re.search(rf"^\W*{s}\b", out, re.M)})
    assert graded[0] and graded[1] and not graded[0] & graded[1] and graded[0] | graded[1] == set(students)

    check_report(ws, students)
    check_csv(ws, students)
    check_similarity(ws)


def check_report(ws: Workspace, students: list[str]):
    "The report shows every student, and a late line for each late submission."
    report = run(ws.root, "nbgrader", "report", "01")
    assert all(re.search(rf"^\W*{s}\b", report, re.M) for s in students), report  # the whole class
    late_lines = {line.split(":")[0] for line in report.splitlines() if ": late: submitted" in line}
    assert late_lines == set(LATE_BY), report



def check_csv(ws: Workspace, students: list[str]):
    "The CSV's points are the report's rows', after the late penalty; the late columns mark the late submissions."
    mod = ws.module("01")
    rows = {r.student: r for r in scores(ws, mod)}
    assert sorted(rows) == students
    assert rows["ana"].total == rows["ana"].max_total > 0 and rows["ben"].total == rows["ana"].total
    assert rows["rel"].total == 0
    assert len({r.total for r in rows.values()}) >= 4, {s: r.total for s, r in rows.items()}

    run(ws.root, "nbgrader", "export", "01", "--exercises", "-o", "grades.csv")
    with open(ws.root / "grades.csv", newline="") as f:
        table = {line["student"]: line for line in csv.DictReader(f)}
    assert sorted(table) == students
    for sid, row in rows.items():
        line = table[sid]
        late = lateness(ws, mod, sid)
        assert late.late == (sid in LATE_BY)
        assert float(line["01_tensor"]) == pytest.approx(max(0.0, row.total - late.penalty(row.max_total)))
        assert float(line["01_tensor_max"]) == row.max_total
        assert {k.split(":")[1]: float(v) for k, v in line.items() if ":" in k} == \
            {g.removeprefix("test-"): s for g, (s, _) in row.scores.items()}
        assert bool(line["01_tensor_late_hours"]) == (sid in LATE_BY)
        assert ("late" in line["01_tensor_why"]) == (sid in LATE_BY)
    ben = table["ben"]  # 10 minutes late: a part of a day, so one day's penalty, 10% of the module's points
    assert float(ben["01_tensor_late_hours"]) == pytest.approx(10 / 60, abs=0.01)
    assert float(ben["01_tensor_penalty"]) == pytest.approx(rows["ben"].max_total * PENALTY / 100)
    assert float(table["s03"]["01_tensor_late_hours"]) == pytest.approx(0.5, abs=0.01)



def check_similarity(ws: Workspace):
    "The page names the copied pair first, and never the submission of the release's own code."
    run(ws.root, "nbgrader", "similarity", "01", "-o", "similar.html")
    page = (ws.root / "similar.html").read_text()
    pairs = re.findall(r'<tr id="row-\d+">.*?<td class="a">(\w+)</td><td class="b">(\w+)</td>', page, re.S)
    assert pairs and set(pairs[0]) == {"ana", "ben"}, pairs
    assert not any("rel" in p for p in pairs), pairs
    assert "highlight-red" in page and "highlight-green" in page  # the matching regions, side by side


@pytest.mark.slow
@needs_bwrap
def test_a_term_with_a_sqlite_gradebook(term):
    ws = course_for(term, "sqlite")
    assert not ws.settings.get("nbgrader", "db_url", fallback="")
    grade_the_term(ws, term[2])
    assert (ws.root / "gradebook.db").is_file()


@pytest.mark.slow
@needs_bwrap
def test_a_term_with_a_postgresql_gradebook(term, postgres):
    url = postgres("term")
    ws = course_for(term, "postgres", url)
    grade_the_term(ws, term[2])
    assert not (ws.root / "gradebook.db").exists()  # every grade went to the server
    import psycopg

    with psycopg.connect(url) as db:
        count = db.execute("select count(*) from submitted_assignment").fetchone()[0]
    assert count == len(term[2])


def test_similarity_names_the_copied_pair_first_and_leaves_the_release_out(term, tmp_path):
    ws = course_for(term, "similarity")
    mod = ws.module("01")
    for sid, nb in class_notebooks(ws).items():
        folder = ws.root / "submitted" / sid / mod.name
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / mod.notebook.name)
    pairs, compared = similar_pairs(ws, mod, 0.01)
    assert compared == 14 and {pairs[0].a, pairs[0].b} == {"ana", "ben"}
    assert pairs[0].share_a == pairs[0].share_b == 1.0  # renamed variables hide nothing
    assert not [p for p in pairs if "rel" in (p.a, p.b)]  # the release's own code is not a match


def test_shards_split_a_class_into_disjoint_parts_whatever_else_was_collected():
    students = [f"student{i}" for i in range(40)]
    parts = [Shard.parse(f"{k}/3").of(students) for k in (1, 2, 3)]
    assert sorted(sum(parts, [])) == sorted(students) and all(parts)
    assert Shard.parse("2/3").of(students[:7]) == [s for s in parts[1] if s in students[:7]]
    for bad in ("0/2", "3/2", "2", "a/b", ""):
        with pytest.raises(TitoError, match="--shard takes K/N"):
            Shard.parse(bad)


def test_the_gradebook_url_comes_from_settings(tmp_path):
    ws = copy_course(tmp_path / "course")
    assert nbgrader_config(ws).CourseDirectory.db_url == f"sqlite:///{ws.root / 'gradebook.db'}"
    settings = ws.root / "settings.ini"
    settings.write_text(settings.read_text().replace("[nbgrader]", "[nbgrader]\ndb_url = postgresql://g@db/course"))
    ws = Workspace.find(ws.root)
    if importlib.util.find_spec("psycopg"):
        assert nbgrader_config(ws).CourseDirectory.db_url == "postgresql+psycopg://g@db/course"
    settings.write_text(settings.read_text().replace("postgresql://g@db/course", "not a url"))
    with pytest.raises(TitoError, match="db_url is not a database URL"):
        nbgrader_config(Workspace.find(ws.root))


def test_lateness_comes_from_the_exchange_timestamp_and_the_due_date(tmp_path):
    ws = copy_course(tmp_path / "course")
    mod = ws.module("01")
    for sid, stamp in (("early", ON_TIME), *LATE.items()):
        folder = ws.root / "submitted" / sid / mod.name
        folder.mkdir(parents=True)
        (folder / "timestamp.txt").write_text(stamp)
    assert not lateness(ws, mod, "ben").late  # no due date: nobody is late
    settings = ws.root / "settings.ini"
    settings.write_text(settings.read_text() + f"\n[deadlines]\n01 = {DUE}\n")
    ws = Workspace.find(ws.root)
    assert not lateness(ws, mod, "early").late and lateness(ws, mod, "ben").late
    assert lateness(ws, mod, "ben").penalty(20) == 0  # no penalty unless the instructor sets one
    assert lateness(ws, mod, "s07").seconds_late == 30
    settings.write_text(settings.read_text() + f"late_penalty_percent_per_day = {PENALTY}\n")
    ws = Workspace.find(ws.root)
    assert lateness(ws, mod, "ben").penalty(20) == 2 and lateness(ws, mod, "s03").penalty(20) == 4
    assert lateness(ws, mod, "s03").after_penalty(3, 20) == 0
    for bad, words in (("01 = tomorrow", "not an ISO 8601"), ("01 = 2026-12-01T23:59:00", "time zone"),
                       ("99 = 2026-12-01T23:59:00+00:00", "not a module")):
        settings.write_text(settings.read_text().replace(f"01 = {DUE}", bad))
        with pytest.raises(TitoError, match=words):
            lateness(Workspace.find(ws.root), mod, "ben")
        settings.write_text(settings.read_text().replace(bad, f"01 = {DUE}"))


def test_postgresql_gradebook_holds_what_nbgrader_writes(postgres, tmp_path):
    ws = copy_course(tmp_path / "course")
    settings = ws.root / "settings.ini"
    settings.write_text(settings.read_text().replace("[nbgrader]", f"[nbgrader]\ndb_url = {postgres('one')}"))
    ws = Workspace.find(ws.root)
    generate(ws, [ws.module("01")])
    assert not (ws.root / "gradebook.db").exists()
    with nbgrader_api(ws) as api, api.gradebook as gb:
        assert gb.find_assignment("01_tensor").name == "01_tensor"
