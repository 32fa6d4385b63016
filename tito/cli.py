"""The `tito` command line. Commands parse their arguments, call tito's modules, and print what happened.

Other course tools plug in as typer apps (see PLUGINS), imported only when their command runs:
`tito.grading.nbgrader_app` (`tito nbgrader ...`), `tito.student.student_app` (`tito student ...`),
`tito.student.module_reset` (a command function: `tito module reset NN`) and
`tito.milestone.milestone_app` (`tito milestone ...`). They find the workspace with
`tito.course.Workspace.find()`, which honours `--root` (tito sets TITO_ROOT from it), and may raise
`tito.course.TitoError` for a one-line error.
"""
from __future__ import annotations

import functools
import importlib
import os
import re
import textwrap
from datetime import datetime
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from tito import doctor, lab as jupyter_lab, progress
from tito.course import Module, TitoError, Workspace
from tito.exporting import export_modules
from tito.notebooks import (Header, default_exp, exported_files, is_exported, module_file, pending_exercises,
                            read_header, read_notebook)
from tito.testing import (Checks, Outcome, fix_first, run_judged_checks, run_notebook_checks, run_test_suite,
                          unjudged)

PLUGINS = {  # command name: (module, attribute) that other parts of the course provide
    "nbgrader": ("tito.grading.commands", "nbgrader_app"),
    "student": ("tito.student", "student_app"),
    "milestone": ("tito.milestone", "milestone_app"),
    "fetch": ("tito.exchange", "fetch_command"),  # students, with nbgrader's exchange (JupyterHub)
    "submit": ("tito.exchange", "submit_command"),
}
MODULE_PLUGINS = {"reset": ("tito.student", "module_reset")}  # a typer command function
LENIENT = {"allow_extra_args": True, "ignore_unknown_options": True}


def _optional(module_name: str, attribute: str):
    "(`module_name.attribute` or None, why it is unusable or ''); a module that is not there is no problem."
    try:
        return getattr(importlib.import_module(module_name), attribute), ""
    except ModuleNotFoundError as e:
        if e.name == module_name:
            return None, ""
        return None, f"{type(e).__name__}: {e}"
    except (ImportError, AttributeError) as e:
        return None, f"{type(e).__name__}: {e}"


def _stand_in(name: str, problem: str):
    "A command in place of a plug-in that does not import: it says why, so the rest of tito keeps working."
    def unavailable(ctx: typer.Context):
        raise TitoError(f"`tito {name}` is unavailable: {problem}")
    unavailable.__doc__ = f"(unavailable: {problem})"
    return unavailable


@functools.lru_cache(maxsize=None)
def _plugin(name: str, module_name: str, attribute: str):
    "The click command for a plug-in (a typer app or command function), or None when it is not installed."
    found, problem = _optional(module_name, attribute)
    if found is None and not problem:
        return None
    if isinstance(found, typer.Typer):
        command = typer.main.get_group(found)
    else:  # a command function, or the stand-in for a broken plug-in
        single = typer.Typer()
        single.command(name, context_settings=LENIENT if problem else None)(found or _stand_in(name, problem))
        command = typer.main.get_command(single)
    command.name = name
    return command


class PluginGroup(TyperGroup):
    """A command group whose plug-ins are imported only when used (or listed by --help): some import
    nbgrader, which takes seconds, and a broken one must not break the other commands."""
    plugins: dict = {}

    def list_commands(self, ctx):
        names = super().list_commands(ctx)
        return names + [name for name in self.plugins if name not in names and self.get_command(ctx, name)]

    def get_command(self, ctx, name):
        if name in self.plugins:
            return _plugin(name, *self.plugins[name])
        return super().get_command(ctx, name)


class MainGroup(PluginGroup):
    plugins = PLUGINS


class ModuleGroup(PluginGroup):
    plugins = MODULE_PLUGINS


app = typer.Typer(name="tito", help="TinyTorch course tool: export, test and complete the modules.", cls=MainGroup,
                  no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False)
module_app = typer.Typer(help="List, export, test and complete course modules.", no_args_is_help=True,
                         cls=ModuleGroup)
system_app = typer.Typer(help="Check this installation.", no_args_is_help=True)
app.add_typer(module_app, name="module")
app.add_typer(system_app, name="system")

out = Console(highlight=False)
WIDE_TABLE = 100  # columns a table of checks needs to stay readable; a narrower console gets one block per row
NO_TORCH = re.compile(r"(PyTorch|torch) is not installed")
err = Console(stderr=True, highlight=False)
STATUS_STYLE = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}


@app.callback()
def _options(root: Optional[Path] = typer.Option(
        None, "--root", help="The course workspace (default: $TITO_ROOT, else the nearest folder upwards "
                             "with settings.ini and modules/).")):
    if root is not None:
        os.environ["TITO_ROOT"] = str(root.expanduser().resolve())


def error(message: str):
    "Print a one-line error (never wrapped, never parsed as markup)."
    err.print(Text.assemble(("error: ", "bold red"), (message, "red")), soft_wrap=True)


def say(message: str, style: str = ""):
    "Print a line of plain text as it is (file names and code may contain rich markup characters)."
    out.print(Text(message, style=style), soft_wrap=True)


def _chosen(ws: Workspace, module: Optional[str], all_modules: bool) -> list[Module]:
    if all_modules == (module is not None):
        raise TitoError("name one module (e.g. 01) or pass --all")
    if module is not None:
        return [ws.module(module)]
    modules = ws.modules()
    if not modules:
        raise TitoError(f"no modules in {ws.rel(ws.modules_dir)}/")
    return modules


# --- tito module list / status -------------------------------------------------------------------------


def _header(ws: Workspace, module: Module) -> tuple[Header, str]:
    "The module's header, or an empty one and the one-line problem with its notebook."
    try:
        return read_header(read_notebook(ws, module)), ""
    except TitoError as e:
        return Header(), str(e)


@module_app.command("list")
def list_modules():
    "The course modules, from the folders in modules/ and their notebooks' headers."
    ws = Workspace.find()
    table = Table("NN", "Module", "Title", "Difficulty", "Time", "Prerequisites",
                  title=f"Modules in {ws.rel(ws.modules_dir)}/")
    for module in ws.modules():
        header, problem = _header(ws, module)
        table.add_row(module.number, module.name, header.title or Text(problem, style="red"), header.difficulty,
                      header.time, header.prerequisites)
    out.print(table)


def _exported(ws: Workspace, module: Module, entry: Optional[dict]) -> Text:
    "yes when the package holds this notebook's export, made after the module's last reset."
    try:
        nb = read_notebook(ws, module)
        exported = is_exported(ws, module, nb)
    except TitoError:
        return Text("?", style="red")
    if exported and entry and entry.get("reset_at"):
        target = module_file(ws.lib_dir, default_exp(ws, nb, module))
        if target.stat().st_mtime < datetime.fromisoformat(entry["reset_at"]).timestamp():
            return Text("no (reset since)", style="yellow")
    return Text("yes", style="green") if exported else Text("no", style="yellow")


def _when(stamp: str) -> str:
    "A progress-file timestamp as local date and minute."
    return datetime.fromisoformat(stamp).astimezone().strftime("%Y-%m-%d %H:%M")


def _last_result(entry: Optional[dict]) -> Text:
    "What the progress file says about the last `tito module complete`."
    if not entry:
        return Text("never completed", style="dim")
    if entry.get("reset_at") and (not entry.get("last_run") or
                                  datetime.fromisoformat(entry["reset_at"]) >= datetime.fromisoformat(entry["last_run"])):
        return Text(f"reset {_when(entry['reset_at'])}: not complete", style="yellow")
    tests, checks = entry.get("tests", {}), entry.get("notebook_checks", {})
    counts = f"{tests.get('passed', 0)} tests, {checks.get('passed', 0)} checks passed"
    if entry.get("passed"):
        return Text(f"passed {_when(entry['last_run'])} ({counts})", style="green")
    since = f"; last passed {_when(entry['completed_at'])}" if entry.get("completed_at") else ""
    return Text(f"failed {_when(entry['last_run'])} ({counts}){since}", style="red")


@module_app.command("status")
def status():
    "Each module's header, whether it is exported, and its last `tito module complete` result."
    ws = Workspace.find()
    table = Table("NN", "Title", "Difficulty", "Time", "Exported", "Last complete",
                  title=f"Progress in {ws.root} ({ws.rel(ws.progress_file)})")
    for module in ws.modules():
        header, problem = _header(ws, module)
        entry = progress.entry(ws, module)
        table.add_row(module.number, header.title or Text(problem, style="red"), header.difficulty, header.time,
                      _exported(ws, module, entry), _last_result(entry))
    out.print(table)


# --- tito module export / test / complete -------------------------------------------------------------


def _show_export(ws: Workspace, modules: list[Module], changed: list[str]):
    for module in modules:
        files = ", ".join(ws.rel(p) for p in exported_files(ws.lib_dir, module.notebook))
        say(f"exported {ws.rel(module.notebook)} -> {files or 'nothing (it has no `#| export` cells)'}")
    say(f"changed: {', '.join(changed)}" if changed else "no file changed: the package already matched the notebooks")


@module_app.command("export")
def export(module: Optional[str] = typer.Argument(None, help="Module number or name, e.g. 01."),
           all_modules: bool = typer.Option(False, "--all", help="Export every module.")):
    "Export notebooks into the package with nbdev (nothing changes unless every step succeeds)."
    ws = Workspace.find()
    modules = _chosen(ws, module, all_modules)
    _show_export(ws, modules, export_modules(ws, modules))


def _show_checks(title: str, checks: Checks, verbose: bool, list_passed: bool = True):
    """A summary line, then a table: every outcome when `verbose`, else one row per exercise a failure is blamed
    on and one per group of near-identical failures (passed outcomes only when `list_passed`). PyTorch comparisons
    skipped because torch is not installed are one line, not rows. On a narrow console (80 columns: no terminal)
    each row is a block of lines instead, its reason wrapped under it, so nothing is cut."""
    if checks.missing:
        say(f"{title}: {checks.missing}", "yellow")
        return
    say(f"{title}: " + ", ".join(f"{n} {status}" for status, n in checks.counts().items() if n))
    no_torch = [o for o in checks.outcomes if o.status == "skipped" and NO_TORCH.search(o.reason)]
    shown = [o for o in checks.outcomes if (verbose or list_passed or o.status != "passed") and o not in no_torch]
    rows = [[o] for o in shown] if verbose else _fold(shown)
    lines = []
    for group in rows:
        first = group[0]
        result = first.status if len(group) == 1 else f"{len(group)} {first.status}"
        named_by_exercise = first.exercise and not verbose
        name = first.exercise if named_by_exercise else _base_name(first.name) if len(group) > 1 else first.name
        reason = f"{first.name}: {first.reason}" if named_by_exercise or len(group) > 1 else first.reason
        lines.append((name, result, reason, STATUS_STYLE[first.status]))
    if lines and out.width >= WIDE_TABLE:
        table = Table("exercise or check", "result", "first failure" if not verbose else "reason")
        table.columns[0].overflow = "fold"
        for name, result, reason, style in lines:
            table.add_row(Text(name), Text(result, style=style), Text(reason))
        out.print(table)
    for name, result, reason, style in lines if out.width < WIDE_TABLE else ():
        out.print(Text.assemble("  ", (result, style), "  ", name), overflow="fold")
        if reason:
            out.print(textwrap.fill(reason, max(out.width - 6, 20), initial_indent=" " * 6,
                                    subsequent_indent=" " * 6), markup=False)
    if no_torch:
        say(f"{len(no_torch)} comparison{'s' if len(no_torch) != 1 else ''} with PyTorch skipped: "
            "torch is not installed", "dim")


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
        out.rule(Text(o.name + (f" — {o.exercise}" if o.exercise else "")), style="red", align="left")
        say(o.detail or o.reason)


def _check_prerequisites(ws: Workspace, module: Module):
    "A one-line error unless every earlier module is complete (a later module imports them)."
    if missing := progress.incomplete_before(ws, module):
        raise TitoError(f"complete module(s) {', '.join(m.number for m in missing)} first: "
                        f"module {module.number} builds on them")


def _run_checks(ws: Workspace, module: Module, verbose: bool) -> tuple[Checks, Checks]:
    try:
        verdicts, judged = run_judged_checks(ws, module), None
    except TitoError as e:  # the tests still say what they can, then this
        verdicts, judged = unjudged(module), e
    tests = run_test_suite(ws, module, verdicts)
    _show_checks(f"pytest {ws.rel(ws.tests_for(module))}/", tests, verbose, list_passed=False)
    if judged:
        raise judged
    ran = run_notebook_checks(ws, module)
    checks = Checks(verdicts.outcomes + ran.outcomes, ran.missing)
    _show_checks(f"graded checks of {ws.rel(module.notebook)} (one verdict per exercise)", checks, verbose)
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


VERBOSE = typer.Option(False, "--verbose", "-v",
                       help="List every test and check, and show each failure in full (its traceback).")


@module_app.command("test")
def test(module: str = typer.Argument(..., help="Module number or name, e.g. 01."), verbose: bool = VERBOSE):
    "Run the module's test suite against the exported package, and the notebook's graded cells."
    ws = Workspace.find()
    chosen = ws.module(module)
    _check_prerequisites(ws, chosen)
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
    _check_prerequisites(ws, module)
    changed = export_modules(ws, [module])  # first, so a notebook that cannot export is one line and nothing more
    nb = read_notebook(ws, module)
    out.rule(f"Module {module.number}: {read_header(nb).title or module.name}")
    pending = pending_exercises(nb)
    for gid in pending:
        say(f"exercise `{gid}` not done yet", "yellow")
    _show_export(ws, [module], changed)
    tests, checks = _run_checks(ws, module, verbose)
    entry = progress.record(ws, module, pending, tests, checks)
    if entry["passed"]:
        say(f"module {module.number} complete (recorded in {ws.rel(ws.progress_file)})", "bold green")
        return ""
    say(f"module {module.number} is not complete yet (recorded in {ws.rel(ws.progress_file)})", "bold red")
    return f"module {module.number}: {_shortfall(tests, checks, pending)}"


@module_app.command("complete")
def complete(module: Optional[str] = typer.Argument(None, help="Module number or name, e.g. 01."),
             all_modules: bool = typer.Option(False, "--all", help="Complete every module, in order."),
             verbose: bool = VERBOSE):
    "Export your notebook, run its tests and graded cells, and record the result."
    ws = Workspace.find()
    modules = _chosen(ws, module, all_modules)
    for i, chosen in enumerate(modules):
        try:
            shortfall = _complete(ws, chosen, verbose)
        except TitoError as e:
            shortfall = str(e)
        if shortfall:
            rest = ", ".join(m.number for m in modules[i + 1:])
            raise TitoError(shortfall + (f"; stopped at module {chosen.number}; not run: {rest}" if rest else ""))


# --- tito system doctor, tito lab ---------------------------------------------------------------------


@system_app.command("doctor")
def doctor_command():
    "Check Python, the packages, the nbdev config, the Jupyter kernel and the tools tito runs."
    checks = doctor.run_checks()
    table = Table("check", "status", "detail", "fix", title="tito system doctor")
    table.columns[2].overflow = "fold"
    for c in checks:
        table.add_row(c.name, Text("ok", style="green") if c.ok else Text("problem", style="bold red"), c.detail, c.fix)
    out.print(table)
    if problems := [c.name for c in checks if not c.ok]:
        raise TitoError(f"{len(problems)} problem(s): {', '.join(problems)}")


@app.command()
def lab(port: int = typer.Option(8888, help="Port to serve on (127.0.0.1 only)."),
        token: Optional[str] = typer.Option(None, help="Access token (default: a new random one).")):
    "Start JupyterLab on the modules folder (headless) and print its URL."
    ws = Workspace.find()
    token = token or jupyter_lab.new_token()
    say(f"starting JupyterLab on {ws.modules_dir} ...")
    server = jupyter_lab.start(ws, port, token)
    say(f"JupyterLab is running: {jupyter_lab.lab_url(port, token)}", "bold green")
    say("press Ctrl-C to stop it")
    raise typer.Exit(jupyter_lab.serve(server))


def main(command: typer.Typer = app):
    "Entry point of the `tito` script (or of one of its apps): one-line errors for the problems tito knows about."
    try:
        command()
    except TitoError as e:
        error(str(e))
        raise SystemExit(1)
