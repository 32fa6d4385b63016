"""`tito nbgrader ...`: the instructor's commands; each parses, calls the stage of `tito.grading` that does the work
(imported when the command runs: nbgrader takes seconds to import), and prints."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from tito import output
from tito.commands import ALL, MODULE, chosen_modules
from tito.grading.setup import instructor_workspace  # no nbgrader import: cheap
from tito.grading.similarity import DEFAULT_THRESHOLD as SIMILARITY_THRESHOLD
from tito.output import say
from tito.workspace import Module, TitoError

app = typer.Typer(help="Instructors: generate student notebooks, release, collect, autograde and give feedback with "
                       "nbgrader.", no_args_is_help=True)
VERBOSE = typer.Option(False, "--verbose", "-v", help="Show nbgrader's log.")
STUDENTS = typer.Option(None, "--student", "-s", help="Only this student (repeat for more).")
DETAILS = typer.Option(False, "--details", "-d", help="Also list the error of every graded cell that lost points.")


def print_scores(mod: Module, rows: list, details: bool = False):
    "The score table, then one line per problem of each student."
    from tito.grading.report import notes, score_table

    headers, table = score_table(rows)
    output.table(headers, table, f"{mod.name}: autograded scores", right=range(1, len(headers) - 1))
    for r in rows:
        for note in notes(r, details):
            say(f"{r.student}: {note}")


@app.command("generate")
def generate_cmd(modules: Optional[list[str]] = typer.Argument(None, help="Module numbers or names, e.g. 01 02."),
                 all_modules: bool = ALL, verbose: bool = VERBOSE):
    "Make the student versions (release/NN_topic/) of module notebooks with nbgrader."
    from tito.grading.generate import generate

    ws = instructor_workspace()
    for path in generate(ws, chosen_modules(ws, modules, all_modules), verbose=verbose):
        say(f"generated {ws.rel(path)}")


@app.command("release")
def release_cmd(module: str = MODULE, verbose: bool = VERBOSE):
    "Put a module's student version in the nbgrader exchange, where students fetch it (JupyterHub)."
    from tito.grading.generate import release

    ws = instructor_workspace()
    chosen = ws.module(module)
    say(f"released {chosen.name} to {release(ws, chosen, verbose=verbose)}")


@app.command("collect")
def collect_cmd(source: Optional[str] = typer.Argument(None, help=(
                    "Folder of <student>/<notebook>.ipynb or <student>.ipynb; with --exchange, the module.")),
                assignment: Optional[str] = typer.Option(None, "--assignment", "-a",
                                                         help="Module number or name, e.g. 01."),
                exchange: bool = typer.Option(False, "--exchange", help=(
                    "Collect the latest submission of each student from the nbgrader exchange.")),
                verbose: bool = VERBOSE):
    "Copy submitted notebooks to submitted/<student>/<NN_topic>/, where nbgrader grades them."
    from tito.grading.collect import collect, collect_from_exchange

    ws = instructor_workspace()
    if exchange:
        if source and assignment:
            raise TitoError("with --exchange, name the module once (e.g. `tito nbgrader collect 01 --exchange`)")
        if not (source or assignment):
            raise TitoError("name the module to collect, e.g. `tito nbgrader collect 01 --exchange`")
        entries = collect_from_exchange(ws, ws.module(source or assignment), verbose=verbose)
        for e in entries:
            say(f"{e.student}: {e.status}")
        if not entries:
            raise TitoError("no submissions in the exchange yet")
        if refused := [e.student for e in entries if e.source is None]:
            raise TitoError(f"not collected from {', '.join(refused)} (see above; the others were collected)")
        return
    if source is None or assignment is None:
        raise TitoError("name the folder and the module, e.g. `tito nbgrader collect ~/inbox --assignment 01` "
                        "(or `tito nbgrader collect 01 --exchange`)")
    for e in collect(ws, Path(source), ws.module(assignment)):
        say(f"{e.student}: {e.status} <- {e.source}")


@app.command("autograde")
def autograde_cmd(module: str = MODULE, student: Optional[list[str]] = STUDENTS,
                  timeout: Optional[int] = typer.Option(None, "--timeout", min=1, help=(
                      "Seconds a cell may run (default: settings.ini \\[limits] cell_timeout).")),
                  jobs: int = typer.Option(1, "--jobs", "-j", min=1, help="Submissions graded at once."),
                  no_sandbox: bool = typer.Option(False, "--no-sandbox", help=(
                      "Run the submissions without the sandbox: with your rights, files and network (trusted code "
                      "only).")),
                  shard: Optional[str] = typer.Option(None, "--shard", help=(
                      "Grade only part K of N of the class (e.g. 1/2), chosen by student id: graders sharing one "
                      "gradebook (settings.ini \\[nbgrader] db_url) each take one part.")),
                  details: bool = DETAILS, verbose: bool = VERBOSE):
    "Autograde the collected submissions of a module with nbgrader, each in a sandbox, and print the scores."
    from tito.grading.autograde import autograde

    ws = instructor_workspace()
    chosen = ws.module(module)
    if shard:
        from tito.grading.gradebook import Shard, collected

        part = Shard.parse(shard)
        student = part.of(student or collected(ws, chosen))
        if not student:
            say(f"shard {shard}: no submission of {chosen.name} falls in it")
            return
    if no_sandbox:
        output.warn("--no-sandbox: the submissions run with your rights; they can read and change your files, use the "
              "network and the whole machine (only the time and memory limits hold)")
    show = (lambda n, total, sid: output.note(f"graded {n}/{total}: {sid}", "")) if sys.stderr.isatty() else None
    rows = autograde(ws, chosen, student, timeout=timeout, verbose=verbose, jobs=jobs, sandboxed=not no_sandbox,
                     progress=show)
    print_scores(chosen, rows, details)
    warn_not_graded(rows)


def warn_not_graded(rows: list):
    """Name the students whose submission could not be graded (their rows say why). The class was graded: every
    submission has its row, so the exit status stays 0; it is non-zero only when tito itself could not run."""
    if failed := [r.student for r in rows if r.error and not r.missing]:
        output.warn(f"not graded: {', '.join(failed)} (their rows say why; --verbose shows nbgrader's log)")


@app.command("feedback")
def feedback_cmd(module: str = MODULE, student: Optional[list[str]] = STUDENTS, verbose: bool = VERBOSE):
    "Write an HTML feedback page for each autograded submission (feedback/<student>/<NN_topic>/)."
    from tito.grading.feedback import feedback

    ws = instructor_workspace()
    for path in feedback(ws, ws.module(module), student, verbose=verbose):
        say(f"wrote {ws.rel(path)}")


@app.command("report")
def report_cmd(module: Optional[str] = typer.Argument(None, help="Module number or name (default: every module)."),
               details: bool = DETAILS):
    "Print the score tables of the autograded submissions, from the gradebook, with why points were lost."
    from tito.grading.report import scores

    ws = instructor_workspace()
    chosen = [ws.module(module)] if module else ws.modules()
    tables = [(m, rows) for m in chosen if (rows := scores(ws, m))]
    if not tables:
        raise TitoError("no submissions yet: `tito nbgrader collect PATH --assignment NN`, "
                        "then `tito nbgrader autograde NN`")
    for m, rows in tables:
        print_scores(m, rows, details)
        print_late(ws, m, rows)
        warn_not_graded(rows)


def print_late(ws, mod: Module, rows: list):
    "One line per submission that came after the module's due date (settings.ini [deadlines])."
    from tito.grading.deadlines import lateness

    for r in rows:
        if (late := lateness(ws, mod, r.student)).late:
            say(f"{r.student}: {late.note(r.max_total)}")


@app.command("export")
def export_cmd(modules: Optional[list[str]] = typer.Argument(None, help="Module numbers or names (default: all)."),
               out: Path = typer.Option(Path("grades.csv"), "--out", "-o", help="The CSV file to write."),
               exercises: bool = typer.Option(False, "--exercises", "-e", help="Also a column per graded cell."),
               ):
    "Write the gradebook as a CSV an LMS imports: a row per student, a column per module (docs/GRADING.md)."
    from tito.grading.export import export_table, to_csv

    ws = instructor_workspace()
    chosen = [ws.module(m) for m in modules] if modules else ws.modules()
    headers, rows = export_table(ws, chosen, exercises)
    if not rows:
        raise TitoError("no submissions yet: `tito nbgrader collect PATH --assignment NN`, "
                        "then `tito nbgrader autograde NN`")
    out.write_text(to_csv(headers, rows), encoding="utf-8")
    say(f"wrote {out}: {len(rows)} students, {len(headers)} columns")


@app.command("similarity")
def similarity_cmd(module: str = MODULE,
                   threshold: float = typer.Option(SIMILARITY_THRESHOLD, "--threshold", "-t", help=(
                       "List pairs sharing more than this part of either's code (0 to 1).")),
                   out: Optional[Path] = typer.Option(None, "--out", "-o", help=(
                       "The HTML page (default: similarity/NN_topic.html).")),
                   ):
    "Pairs of submissions whose code is more alike than a threshold, side by side in an HTML page (copydetect)."
    from tito.grading.similarity import similar_pairs, similarity_page

    ws = instructor_workspace()
    chosen = ws.module(module)
    pairs, compared = similar_pairs(ws, chosen, threshold)
    page = out or ws.root / "similarity" / f"{chosen.name}.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(similarity_page(chosen, pairs, compared, threshold), encoding="utf-8")
    for p in pairs:
        say(f"{p.a} ~ {p.b}: {p.share_a:.0%} of {p.a}'s code, {p.share_b:.0%} of {p.b}'s ({p.tokens} tokens)")
    say(f"{len(pairs)} pair(s) of {compared} submissions over {threshold:.0%}; wrote {ws.rel(page)}")
