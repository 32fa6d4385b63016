"""`tito module list / status / export / test / complete / reset`: a student's commands for the course modules."""
from __future__ import annotations

import re
from datetime import datetime
from typing import Optional

import typer

from tito import output, progress
from tito.commands import ALL, MODULE, chosen_modules
from tito.exporting import export_modules
from tito.notebooks import (Header, default_exp, exported_files, is_exported, module_file, pending_exercises,
                            read_header, read_notebook)
from tito.output import say
from tito.student_workspace import reset_module
from tito.module_checks import (Checks, Outcome, fix_first, not_done, run_judged_checks, run_notebook_checks, run_test_suite,
                          unjudged)
from tito.workspace import Module, TitoError, Workspace

app = typer.Typer(help="List, export, test and complete course modules.", no_args_is_help=True)

NO_TORCH = re.compile(r"(PyTorch|torch) is not installed")
STATUS_STYLE = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}
STATUS_RANK = {"failed": 0, "error": 0, "skipped": 1, "passed": 2}  # a table lists failures first, passes last
VERBOSE = typer.Option(False, "--verbose", "-v",
                       help="List every test and check, and show each failure in full (its traceback).")


# --- tito module list / status -------------------------------------------------------------------------


def _header(ws: Workspace, module: Module) -> tuple[Header, str]:
    "The module's header, or an empty one and the one-line problem with its notebook."
    try:
        return read_header(read_notebook(ws, module)), ""
    except TitoError as e:
        return Header(), str(e)


@app.command("list")
def list_modules():
    "The course modules, from the folders in modules/ and their notebooks' headers."
    ws = Workspace.find()
    rows = []
    for module in ws.modules():
        header, problem = _header(ws, module)
        rows.append([module.number, module.name, header.title or (problem, "red"), header.difficulty, header.time,
                     header.prerequisites])
    output.table(["NN", "Module", "Title", "Difficulty", "Time", "Prerequisites"], rows,
                 f"Modules in {ws.rel(ws.modules_dir)}/")


def _exported(ws: Workspace, module: Module, entry: Optional[dict]) -> tuple[str, str]:
    "yes when the package holds this notebook's export, made after the module's last reset."
    try:
        nb = read_notebook(ws, module)
        exported = is_exported(ws, module, nb)
    except TitoError:
        return "?", "red"
    if exported and entry and entry.get("reset_at"):
        target = module_file(ws.lib_dir, default_exp(ws, nb, module))
        if target.stat().st_mtime < datetime.fromisoformat(entry["reset_at"]).timestamp():
            return "no (reset since)", "yellow"
    return ("yes", "green") if exported else ("no", "yellow")


def _when(stamp: str) -> str:
    "A progress-file timestamp as local date and minute."
    return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")


def _last_result(entry: Optional[dict]) -> tuple[str, str]:
    "What the progress file says about the last `tito module complete`."
    if not entry:
        return "never completed", "dim"
    if entry.get("reset_at") and (not entry.get("last_run") or
                                  datetime.fromisoformat(entry["reset_at"]) >= datetime.fromisoformat(entry["last_run"])):
        return f"reset {_when(entry['reset_at'])}: not complete", "yellow"
    tests, checks = entry.get("tests", {}), entry.get("notebook_checks", {})
    counts = f"{tests.get('passed', 0)} tests, {checks.get('passed', 0)} checks passed"
    if entry.get("passed"):
        return f"passed {_when(entry['last_run'])} ({counts})", "green"
    since = f"; last passed {_when(entry['completed_at'])}" if entry.get("completed_at") else ""
    return f"failed {_when(entry['last_run'])} ({counts}){since}", "red"


@app.command("status")
def status():
    "Each module's header, whether it is exported, and its last `tito module complete` result."
    ws = Workspace.find()
    rows = []
    for module in ws.modules():
        header, problem = _header(ws, module)
        entry = progress.entry(ws, module)
        rows.append([module.number, header.title or (problem, "red"), header.difficulty, header.time,
                     _exported(ws, module, entry), _last_result(entry)])
    output.table(["NN", "Title", "Difficulty", "Time", "Exported", "Last complete"], rows,
                 f"Progress in {ws.root} ({ws.rel(ws.progress_file)})")


# --- tito module export / test / complete -------------------------------------------------------------


def _show_export(ws: Workspace, modules: list[Module], changed: list[str]):
    for module in modules:
        files = ", ".join(ws.rel(p) for p in exported_files(ws.lib_dir, module.notebook))
        say(f"exported {ws.rel(module.notebook)} -> {files or 'nothing (it has no `#| export` cells)'}")
    say(f"changed: {', '.join(changed)}" if changed else "no file changed: the package already matched the notebooks")


@app.command("export")
def export(module: Optional[str] = typer.Argument(None, help="Module number or name, e.g. 01."),
           all_modules: bool = ALL):
    "Export notebooks into the package with nbdev (nothing changes unless every step succeeds)."
    ws = Workspace.find()
    modules = chosen_modules(ws, [module] if module else [], all_modules)
    _show_export(ws, modules, export_modules(ws, modules))


def show_checks(title: str, checks: Checks, verbose: bool, list_passed: bool = True):
    """A summary line, then a table: every outcome when `verbose`, else one row per exercise a failure is blamed
    on and one per group of near-identical failures (passed outcomes only when `list_passed`). PyTorch comparisons
    skipped because torch is not installed are one line, not rows."""
    if checks.missing:
        say(f"{title}: {checks.missing}", "yellow")
        return
    say(f"{title}: " + ", ".join(f"{n} {status}" for status, n in checks.counts().items() if n))
    no_torch = [o for o in checks.outcomes if o.status == "skipped" and NO_TORCH.search(o.reason)]
    shown = [o for o in checks.outcomes if (verbose or list_passed or o.status != "passed") and o not in no_torch]
    rows = []
    groups = [[o] for o in shown] if verbose else _fold(shown)
    for group in sorted(groups, key=lambda g: STATUS_RANK[g[0].status]):
        first = group[0]
        result = first.status if len(group) == 1 else f"{len(group)} {first.status}"
        named_by_exercise = first.exercise and not verbose
        name = first.exercise if named_by_exercise else _base_name(first.name) if len(group) > 1 else first.name
        reason = f"{first.name}: {first.reason}" if named_by_exercise or len(group) > 1 else first.reason
        rows.append([name, (result, STATUS_STYLE[first.status]), reason])
    if rows:
        output.table(["exercise or check", "result", "reason"], rows)  # a group's row gives its first one's
    if no_torch:
        say(f"{len(no_torch)} PyTorch comparison{'s' if len(no_torch) != 1 else ''} not run (no torch): "
            ".venv/bin/pip install -e '.[course]'", "yellow")


def _base_name(test: str) -> str:
    "A parametrized test's name without its parameters: `test_x[add-2]` -> `test_x`."
    return re.sub(r"\[.*\]$", "", test)


def _fold(outcomes: list[Outcome]) -> list[list[Outcome]]:
    """Failures grouped: by the exercise they are blamed on, else by test (parameters aside) and kind of error, so
    one bug is one row with a count instead of forty near-identical ones."""
    groups: dict[tuple, list[Outcome]] = {}
    for i, o in enumerate(outcomes):
        if o.status == "passed":
            key = (i,)
        elif o.exercise:
            key = (o.status, o.exercise)
        else:
            kind = re.match(r"[\w.]*", o.reason).group()
            key = (o.status, _base_name(o.name), kind)
        groups.setdefault(key, []).append(o)
    return list(groups.values())


def _show_details(checks: list[Checks]):
    "Each failure in full: pytest's traceback, or the notebook cell's."
    for o in (o for c in checks for o in c.outcomes if o.status in ("failed", "error")):
        output.rule(o.name + (f" — {o.exercise}" if o.exercise else ""), style="red")
        say(o.detail or o.reason)


def _run_checks(ws: Workspace, module: Module, verbose: bool) -> tuple[Checks, Checks]:
    try:
        verdicts, judged = run_judged_checks(ws, module), None
    except TitoError as e:  # the tests still say what they can, then this
        verdicts, judged = unjudged(module), e
    tests = run_test_suite(ws, module, verdicts)
    show_checks(f"pytest {ws.rel(ws.tests_for(module))}/", tests, verbose, list_passed=False)
    if judged:
        raise judged
    ran = run_notebook_checks(ws, module)
    checks = Checks(verdicts.outcomes + ran.outcomes, ran.missing)
    show_checks(f"graded checks of {ws.rel(module.notebook)} (one verdict per exercise)", checks, verbose)
    if first := fix_first(verdicts, tests):
        say(f"fix first: {first}", "bold red")
    failing = [o for c in (tests, checks) for o in c.outcomes if o.status in ("failed", "error")]
    if verbose:
        _show_details([tests, checks])
    elif failing:
        one = next((o.nodeid for o in failing if o.nodeid), "")
        say(f"to see each failure in full: tito module test {module.number} --verbose"
            + (f' (or one test: python -m pytest "{one}")' if one else ""), "dim")
    return tests, checks


@app.command("test")
def test(module: str = MODULE, verbose: bool = VERBOSE):
    "Run the module's test suite against the exported package, and the notebook's graded cells."
    ws = Workspace.find()
    chosen = ws.module(module)
    progress.require_earlier_complete(ws, chosen)
    read_notebook(ws, chosen)  # a missing or broken notebook is a one-line error before anything runs
    tests, checks = _run_checks(ws, chosen, verbose)
    if not (tests.passed and checks.passed):
        raise TitoError(f"module {chosen.number} does not pass yet: {_shortfall(tests, checks)}")


def _shortfall(tests: Checks, checks: Checks, pending=()) -> str:
    "What keeps a module from passing, in a few words: '1 exercise not done, 3 tests failed, no checks ran'."
    count = lambda n, noun: f"{n} {noun}{'' if n == 1 else 's'}"
    parts = [f"{count(len(pending), 'exercise')} not done"] if pending else []
    for noun, found in (("test", tests), ("check", checks)):  # checks: the exercises' verdicts and notebook cells
        if found.missing or not found.outcomes:
            parts.append(f"no {noun}s ran")
        elif bad := found.count("failed") + found.count("error"):
            parts.append(f"{count(bad, noun)} failed")
    return ", ".join(parts)


def _complete(ws: Workspace, module: Module, verbose: bool) -> str:
    "Export, test and record one module; '' when it is complete, else what it lacks (one line)."
    progress.require_earlier_complete(ws, module)
    changed = export_modules(ws, [module])  # first, so a notebook that cannot export is one line and nothing more
    nb = read_notebook(ws, module)
    output.rule(f"Module {module.number}: {read_header(nb).title or module.name}")
    pending = pending_exercises(nb)
    for gid in pending:
        say(not_done(gid), "yellow")
    _show_export(ws, [module], changed)
    tests, checks = _run_checks(ws, module, verbose)
    entry = progress.record(ws, module, pending, tests, checks)
    if entry["passed"]:
        say(f"module {module.number} complete (recorded in {ws.rel(ws.progress_file)})", "bold green")
        return ""
    say(f"module {module.number} is not complete yet (recorded in {ws.rel(ws.progress_file)})", "bold red")
    return f"module {module.number}: {_shortfall(tests, checks, pending)}"


@app.command("complete")
def complete(module: Optional[str] = typer.Argument(None, help="Module number or name, e.g. 01."),
             all_modules: bool = ALL, verbose: bool = VERBOSE):
    "Export your notebook, run its tests and graded cells, and record the result."
    ws = Workspace.find()
    modules = chosen_modules(ws, [module] if module else [], all_modules)
    for i, chosen in enumerate(modules):
        try:
            shortfall = _complete(ws, chosen, verbose)
        except TitoError as e:
            shortfall = str(e)
        if shortfall:
            rest = ", ".join(m.number for m in modules[i + 1:])
            raise TitoError(shortfall + (f"; stopped at module {chosen.number}; not run: {rest}" if rest else ""))


# --- tito module reset ---------------------------------------------------------------------------------


@app.command("reset")
def reset(module: str = MODULE):
    "Restore a module's release notebook, after saving yours to a timestamped backup (student workspaces)."
    ws = Workspace.find()
    chosen = ws.module(module)
    backup = reset_module(ws, chosen)
    progress.mark_reset(ws, chosen)  # `module status` and the prerequisites of later modules see it
    if backup is None:
        say(f"{ws.rel(chosen.notebook)} is the release version; nothing to back up")
    else:
        say(f"saved your notebook to {ws.rel(backup)}")
        say(f"restored {ws.rel(chosen.notebook)} from the release (reopen it in JupyterLab)")
