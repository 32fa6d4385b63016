"""`tito nbgrader autograde`: every submission judged, `--jobs N` at a time, the judge's points in the gradebook.

nbgrader's autograde runs as usual (its sanitizing steps put the original locked cells back and clear every
output), except that nothing is executed: `JudgeCells` takes the place of nbgrader's Execute. It has the
submission's code answer the probes of every graded cell in the sandbox (`tito.grading.sandbox.run_answer`), has
the judge compare the answers with the course's own (computed once per run, `course_answers`), and writes each
verdict as the graded cell's output: nothing (full points) or an error that says why (no points). nbgrader's
SaveAutoGrades then reads those outputs into the gradebook, and feedback shows them.
"""
from __future__ import annotations

import json
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import nbformat
from nbformat import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Any

from tito.workspace import Module, TitoError, Workspace
from tito.grading import judge, sandbox
from tito.grading.collect import valid_student_id
from tito.grading.feedback import without_hidden
from tito.grading.generate import generate
from tito.grading.report import StudentScore, scores
from tito.grading.setup import (GRADEBOOK_LOCK, Grading, _dir, _error_line, _quiet_sqlalchemy, _students,
                                hidden_from_sandbox, nbgrader_api, new_api)
from tito.locking import file_lock, released
from tito.notebooks import grade_id

def verdict_output(verdict: judge.Verdict) -> list:
    "The graded cell's outputs for nbgrader: none when it passed, else one error (nbgrader: no points)."
    if verdict.passed:
        return [NotebookNode(output_type="stream", name="stdout", text=f"passed: {verdict.title}\n")]
    ename = judge.VERDICT_ERRORS[judge.verdict_kind(verdict)]
    text = verdict.message()
    return [NotebookNode(output_type="error", ename=ename, evalue=text, traceback=[f"{ename}: {text}"])]


def _without_hidden_tests(nb):
    "A copy of `nb` without the hidden-check regions that nbgrader's OverwriteCells put back into its graded cells."
    out = nbformat.from_dict(nb)
    for cell in out.cells:
        if cell.cell_type == "code":
            cell.source = without_hidden(cell.source)
    return out


class JudgeCells(NbGraderPreprocessor):
    "In nbgrader's autograde, instead of running the notebook: the judge's verdicts as the graded cells' outputs."
    grading = Any(None, help="The tito.grading.setup.Grading of this autograde run.").tag(config=True)
    enabled = True

    def preprocess(self, nb, resources):
        g: Grading = self.grading
        ws = Workspace.find(g.root)
        mod = ws.module(resources["nbgrader"]["assignment"])
        (probes, expected), (visible, visible_expected) = _judge_inputs(g, ws, mod)
        student = resources["nbgrader"]["student"]
        with tempfile.TemporaryDirectory(prefix=f"tito-answer-{student}-", dir=g.scratch or None) as tmp:
            handed_in = Path(tmp) / mod.notebook.name
            nbformat.write(_without_hidden_tests(nb), handed_in)  # the sandbox gets no hidden check's code
            box = sandbox.Sandbox(g.bwrap, g.limits, Path(g.library) if g.library else None,
                                  tuple(hidden_from_sandbox(ws))) if g.bwrap else None

            def answers(cells: list, folder: str):
                return sandbox.run_answer([c.tape for c in cells], probes.modules, probes.package, Path(tmp) / folder,
                                          g.limits, g.timeout or ws.cell_timeout, box=box, notebook=handed_in,
                                          library=Path(g.library) if g.library else None)

            with released(file_lock(ws.root / GRADEBOOK_LOCK)):
                graded = judge.judge(probes, expected, answers(probes.cells, "graded"))
                # The graded run's process held the hidden inputs: the words about visible checks (and about an
                # export or import that failed) come from a run that never did.
                wrong = {v.grade_id for v in graded if v.visible_failed or v.kind in ("not exported", "not imported")}
                if wrong:
                    shown = [i for i, c in enumerate(visible.cells) if c.grade_id in wrong]
                    part = judge.Probes(visible.module, [visible.cells[i] for i in shown], visible.modules,
                                        visible.package)
                    said = judge.judge(part, [visible_expected[i] for i in shown], answers(part.cells, "visible"),
                                       detail=True)
                    graded = judge.with_visible_messages(graded, said)
        verdicts = {v.grade_id: v for v in graded}
        for cell in nb.cells:
            gid = grade_id(cell)
            if cell.cell_type == "code" and gid in verdicts:
                cell.outputs = verdict_output(verdicts[gid])
        return nb, resources


_JUDGE_INPUTS: dict = {}  # in a grading process: (expected file, module) -> (probes, expected answers)


def _judge_inputs(g: Grading, ws: Workspace, mod: Module):
    """((all probes, the course's answers), (the release's visible probes, the course's answers)), traced again in
    this process and checked against the tapes the answers were made for."""
    key = (g.expected, mod.name)
    if key not in _JUDGE_INPUTS:
        saved = json.loads(Path(g.expected).read_text(encoding="utf-8"))
        pairs = []
        for name, probes in (("graded", judge.read_probes(ws, mod)),
                             ("visible", judge.read_probes(ws, mod, ws.released(mod).notebook))):
            if [c.digest for c in probes.cells] != saved[name]["tapes"]:
                raise TitoError(f"{mod.name}: the graded cells changed while autograding ran; run autograde again")
            pairs.append((probes, saved[name]["answers"]))
        _JUDGE_INPUTS[key] = tuple(pairs)
    return _JUDGE_INPUTS[key]


def _assignment_in_gradebook(ws: Workspace, mod: Module) -> bool:
    from nbgrader.api import MissingEntry

    with nbgrader_api(ws) as api, api.gradebook as gb:
        try:
            gb.find_notebook(mod.name, mod.name)
            return True
        except MissingEntry:
            return False


_APIS: dict = {}  # in a worker process: (Grading, module) -> its NbGraderAPI, reused for every student it grades


def grade_one(grading: Grading, module: str, student: str, api=None) -> str:
    """nbgrader autograde of one submission (in this process or a worker); '' or nbgrader's error in one line.
    The gradebook lock is held throughout, except while the answer processes run (JudgeCells)."""
    ws = Workspace.find(grading.root)
    with file_lock(ws.root / GRADEBOOK_LOCK), _quiet_sqlalchemy():
        if api is None:
            api = _APIS.get((grading, module)) or _APIS.setdefault(
                (grading, module), new_api(ws, grading.verbose, grading))
        result = api.autograde(module, student, force=True, create=True)
    return "" if result["success"] else _error_line(result)


def _grade_all(ws: Workspace, grading: Grading, module: str, students: list[str], jobs: int, done=None) -> dict:
    "Grade `students`, `jobs` at a time; student -> nbgrader's error ('' when fine). `done(student)` after each."
    errors = {}
    if jobs <= 1 or len(students) <= 1:
        api = new_api(ws, grading.verbose, grading)
        with _noticing_ctrl_c() as interrupted:
            for sid in students:
                errors[sid] = grade_one(grading, module, sid, api)
                if interrupted:  # nbgrader turns Ctrl-C into a failed result: make it stop the class again
                    raise KeyboardInterrupt
                if done:
                    done(sid)
        return errors
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(max_workers=min(jobs, len(students)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_ignore_ctrl_c)
    try:
        futures = {pool.submit(grade_one, grading, module, sid): sid for sid in students}
        for future in as_completed(futures):
            errors[futures[future]] = future.result()
            if done:
                done(futures[future])
    except BaseException as e:  # Ctrl-C too: stop the workers now (their sandboxes die with them)
        for worker in multiprocessing.active_children():
            worker.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(e, BrokenProcessPool):
            raise TitoError(f"a grading worker process died ({e}); the submissions it had not finished are not "
                            "graded: run autograde again") from None
        raise
    pool.shutdown(wait=True)
    return errors


@contextmanager
def _noticing_ctrl_c():
    "A list that gets an item when Ctrl-C (SIGINT) arrives during the block; Ctrl-C still interrupts."
    import signal

    seen: list = []

    def handler(signum, frame):
        seen.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: no handler, nothing noticed
        yield seen
        return
    try:
        yield seen
    finally:
        signal.signal(signal.SIGINT, previous)


def _ignore_ctrl_c():
    "Workers leave Ctrl-C to the main process, which stops them."
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Interrupted(TitoError):
    "Ctrl-C during autograding."


def autograde(ws: Workspace, mod: Module, students: Optional[list[str]] = None, timeout: Optional[int] = None,
              verbose: bool = False, *, jobs: int = 1, sandboxed: bool = True, progress=None) -> list[StudentScore]:
    """nbgrader autograde for each submission of `mod` (all collected students by default), each cell limited
    to `timeout` seconds (settings.ini [limits] cell_timeout by default), `jobs` submissions at a time, each in the
    sandbox (unless not `sandboxed`) within settings.ini [limits] submission_*; returns the scores."""
    everyone = _students(ws, "submitted", mod)
    students = list(students) if students else everyone
    if not students:
        raise TitoError(f"no submissions for {mod.name}: "
                        f"run `tito nbgrader collect PATH --assignment {mod.number}` first")
    unknown = sorted(set(students) - set(everyone))
    if unknown:
        raise TitoError(f"no submission of {mod.name} from {', '.join(unknown)}")
    if bad := [s for s in students if not valid_student_id(s)]:
        raise TitoError(f"not a usable student id: {', '.join(map(repr, bad))} (rename its folder in "
                        f"{ws.rel(_dir(ws, 'submitted'))}/)")
    limits = sandbox.Limits.of(ws)
    bwrap = ""
    if sandboxed:
        bwrap = sandbox.require_bwrap()
        sandbox.Sandbox(bwrap, limits).check()
    release = ws.released(mod).notebook
    if not _assignment_in_gradebook(ws, mod) or not release.is_file() \
            or release.stat().st_mtime < mod.notebook.stat().st_mtime:
        generate(ws, [mod], verbose=verbose)
    graded: list[str] = []

    def done(sid: str):
        graded.append(sid)
        if progress:
            progress(len(graded), len(students), sid)

    with tempfile.TemporaryDirectory(prefix="tito-grading-") as tmp:
        library = sandbox.grading_library(ws, mod, Path(tmp) / "lib")  # in a folder of tito's own (0700): the
        # sandbox is shown the copy, not its parents
        private = Path(tmp) / "judge"  # the course's answers, hidden checks' included: nobody else reads them
        private.mkdir(mode=0o700)
        saved = {}
        for name, probes in (("graded", judge.read_probes(ws, mod)), ("visible", judge.read_probes(ws, mod, release))):
            saved[name] = {"tapes": [c.digest for c in probes.cells],
                           "answers": judge.course_answers(ws, probes, private / name, limits,
                                                           timeout or ws.cell_timeout)}
        (private / "expected.json").write_text(json.dumps(saved), encoding="utf-8")
        grading = Grading(str(ws.root), timeout, bwrap, str(library or ""), str(tmp), limits, verbose,
                          str(private / "expected.json"))
        try:
            errors = _grade_all(ws, grading, mod.name, students, jobs, done)
        except KeyboardInterrupt:
            rest = [s for s in students if s not in graded]
            raise Interrupted(f"autograde interrupted: {len(graded)} of {len(students)} submissions graded (their "
                              f"scores are in the gradebook); not graded: {', '.join(rest)}") from None
    rows = scores(ws, mod, students)
    for row in rows:
        if errors.get(row.student) and not row.missing:
            row.error = errors[row.student]
    return rows
