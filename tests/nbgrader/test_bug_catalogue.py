"""No free points, no free passes: autograde every module's solution, its untouched release and every bug of its
catalogue (`bug_catalogue.py`) with the real nbgrader, through tito's own API.

The solution scores full marks and the release zero. The answers to the visible checks ship with the release, and a
submission's code runs in the process that answers them, so the FORGER cell makes that process hand back the shipped
answers for the visible checks: the release with it still scores zero, and the solution with it still full marks.
Each bug is handed in as a student would (the release with every exercise filled in, one of them wrong) with the
forger appended, and must lose points in a graded cell: some hidden check, on inputs of its own, catches it. The same
bug handed in without the forger then loses points too (the hidden checks run the same code either way), so it is not
graded a second time; the blame table (`test_blame_table.py`) shows that the visible checks name it.
The solution, the release and the forger go through nbgrader's autograde, each in the sandbox. The bugs are the
course's own code, not a student's (the sandbox meets hostile code in `tests/grading/`): one trusted answer process
answers them all, one after another (`tito.grading.trusted`), and the judge decides each one as autograde would,
from the same course answers. A module whose graded cells are not probes yet (they are being converted) is skipped
with that reason.
"""
import base64
import hashlib
import json
import zlib
from collections import Counter

import nbformat
import pytest

from bug_catalogue import BUGS
from grading_helpers import REPO, copy_course, repo_modules, require_probes, submission
from tito.grading import judge
from tito.grading.autograde import autograde
from tito.grading.collect import collect
from tito.grading.generate import generate
from tito.grading.judge import DESCRIBED, _bare, expected_file, read_probes
from tito.grading.sandbox import Limits, grading_library
from tito.grading.trusted import answer_trusted

MODULES = repo_modules()
MIN_BUGS = 8
MIN_PER_EXERCISE = 3  # so that the blame table (test_blame_table.py) tries each exercise with several wrong answers
# Seconds a graded cell's probes may run (the bugs' one answer process: this for each cell of each bug, in all). The
# catalogue's bugs give wrong answers, not endless loops: the limit only stops a hung answer early. The slowest graded
# cell of any solution takes a few seconds on one core.
CELL_TIMEOUT = 120


def _number(name: str) -> str:
    return name[:2]


@pytest.mark.parametrize("name", MODULES)
def test_every_module_has_a_catalogue(name):
    bugs = BUGS.get(_number(name), [])
    assert len(bugs) >= MIN_BUGS, f"{name}: {len(bugs)} catalogued bugs, want at least {MIN_BUGS}"
    assert len({b.slug for b in bugs}) == len(bugs), f"{name}: bug slugs must be unique"


def _exercises(name: str) -> list[str]:
    "The grade_ids of the solution cells of module `name`."
    nb = nbformat.read(REPO / "modules" / name / f"{name}.ipynb", as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


@pytest.mark.parametrize("name", MODULES)
def test_every_exercise_has_bugs_of_its_own(name):
    counts = Counter(b.grade_id for b in BUGS.get(_number(name), []))
    thin = {gid: counts[gid] for gid in _exercises(name) if counts[gid] < MIN_PER_EXERCISE}
    assert not thin, f"{name}: exercises with fewer than {MIN_PER_EXERCISE} catalogued bugs: {thin}"


FORGER = """{export}
# No exercise done by this cell. The answer process imports `probes` before this package and calls probes.replay
# once per graded cell: made to hand back, for every tape that starts with a visible cell's steps, the answers shipped
# with the release for those visible checks, and the submission's own answers for the checks after them.
import base64 as _base64, hashlib as _hashlib, json as _json, sys as _sys, zlib as _zlib


def _bare(steps):
    return [step[:-1] if step[0] in {described!r} else step for step in steps]


def _forge():
    probes = _sys.modules.get("probes")
    if probes is None:
        return
    known = _json.loads(_zlib.decompress(_base64.b64decode({known!r})))  # [[steps, checks, digest, answers], ...]
    honest = probes.replay

    def replay(tape, namespace, strict=False):
        results = honest(tape, namespace, strict)
        for steps, checks, digest, answers in known:
            start = _json.dumps(_bare(tape["steps"][:steps])).encode()
            if len(tape["steps"]) >= steps and _hashlib.sha256(start).hexdigest() == digest:
                return answers + results[checks:]
        return results
    probes.replay = replay


_forge()
"""


def forger_cell(ws, mod, release) -> str:
    "The FORGER for `release`: its visible checks answered from the answers shipped beside it, whatever the code does."
    shipped = json.loads(expected_file(release).read_text(encoding="utf-8"))["cells"]
    known = [[len(c.tape["steps"]), c.tape["checks"],
              hashlib.sha256(json.dumps(_bare(c.tape["steps"])).encode()).hexdigest(), shipped[c.grade_id]["results"]]
             for c in read_probes(ws, mod, release).cells]
    export = next(line for c in nbformat.read(release, as_version=4).cells if c.cell_type == "code"
                  for line in c.source.splitlines() if line.startswith("#| export"))
    packed = base64.b64encode(zlib.compress(json.dumps(known).encode())).decode()
    return FORGER.format(export=export, described=sorted(DESCRIBED), known=packed)


def with_cell(base, source: str, out):
    "The notebook `base` (a submission) with one more code cell, `source`, written to `out`."
    nb = nbformat.read(base, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(source))
    nbformat.write(nb, out)


# What a catalogued bug must not cause: the judge saw it fail to run, not give wrong answers.
BROKEN = {"timed out", "died", "limit", "flood", "not exported", "not imported", "no answer"}


def bug_verdicts(ws, mod, release, forging: str, tmp_path) -> dict:
    """slug -> the judge's verdicts on each catalogued bug of `mod`, handed in with the forger: every graded cell,
    hidden checks included, against the course's own answers, as autograde decides them."""
    probes = read_probes(ws, mod)
    expected = judge.course_answers(ws, probes, tmp_path / "course-answers", Limits.of(ws), CELL_TIMEOUT)
    notebooks = {}
    (tmp_path / "bugs").mkdir()
    for bug in BUGS.get(_number(mod.name), []):
        submission(mod.notebook, release, tmp_path / "bug.ipynb", (bug.grade_id, bug.old, bug.new))
        notebooks[bug.slug] = tmp_path / "bugs" / f"{bug.slug}.ipynb"
        with_cell(tmp_path / "bug.ipynb", forging, notebooks[bug.slug])
    runs = answer_trusted(notebooks, [c.tape for c in probes.cells], probes.modules, probes.package,
                          tmp_path / "trusted", CELL_TIMEOUT * len(notebooks),  # a hung bug stops CI soon
                          library=grading_library(ws, mod, tmp_path / "lib"))
    return {slug: judge.judge(probes, expected, run) for slug, run in runs.items()}


@pytest.mark.slow
@pytest.mark.parametrize("name", MODULES)
def test_solution_full_release_zero_and_every_bug_loses_points(name, tmp_path):
    require_probes(name)
    ws = copy_course(tmp_path / "course")
    mod = ws.module(name)
    [release] = generate(ws, [mod])
    inbox = tmp_path / "inbox"
    submission(mod.notebook, release, inbox / "solution.ipynb")
    (inbox / "release.ipynb").write_bytes(release.read_bytes())
    forging = forger_cell(ws, mod, release)  # traced once: every forged submission gets the same cell
    with_cell(release, forging, inbox / "forger.ipynb")
    with_cell(inbox / "solution.ipynb", forging, inbox / "solution-forged.ipynb")
    collected = collect(ws, inbox, mod)
    assert all(c.status == "new" for c in collected), [(c.student, c.status) for c in collected]

    judged = bug_verdicts(ws, mod, release, forging, tmp_path)
    students = ["solution", "release", "forger", "solution-forged"]
    rows = {r.student: r for r in autograde(ws, mod, students, timeout=CELL_TIMEOUT)}
    sol, rel = rows["solution"], rows["release"]
    for full in (sol, rows["solution-forged"]):
        assert full.scores and all(s == m for s, m in full.scores.values()), (full.student, full.scores)
        assert not (full.timed_out or full.changed or full.error or full.died or full.limits or full.broken
                    or full.failures), \
            (full.student, full.timed_out, full.changed, full.error, full.died, full.limits, full.broken, full.failures)
    assert rel.scores.keys() == sol.scores.keys() and rel.total == 0, rel.scores
    assert not (rel.broken or rel.died or rel.error), (rel.broken, rel.died, rel.error)  # zero for not done, not a crash
    forgery = rows["forger"]
    assert forgery.scores.keys() == sol.scores.keys() and forgery.total == 0, f"{name}: the forger scored {forgery.scores}"
    assert not (forgery.broken or forgery.died or forgery.error), (forgery.broken, forgery.died, forgery.error)

    free, broken = [], []
    for bug in BUGS.get(_number(name), []):
        verdicts = judged[bug.slug]
        assert {v.grade_id for v in verdicts} == set(sol.scores), (bug.slug, [v.grade_id for v in verdicts])
        broken += [f"{bug.slug}: {v.grade_id} {v.reason}" for v in verdicts if judge.verdict_kind(v) in BROKEN
                   and not v.passed]
        if sum(v.points for v in verdicts) >= sol.total:
            free.append(f"{bug.slug} ({bug.what}, cell {bug.grade_id}): no hidden check catches it")
    assert not broken, f"{name}: these bugs did not run as the course's code runs: " + "; ".join(broken)
    assert not free, f"{name}: these bugs keep full marks: " + "; ".join(free)
