"""The `tito` command line: the one place where commands are registered.

Each command is a typer app named `app` in `tito/commands/<command>.py` (a group of commands, or a single one),
imported only when it runs or `--help` lists it; a command whose module does not import (a missing package) is
replaced by one that says why, so the rest of tito keeps working. Commands find the workspace with
`Workspace.find()`, which honours `--root`, and raise `TitoError` for a one-line error.
"""
from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from typing import Optional

import typer
from typer.core import TyperGroup

from tito import output
from tito.workspace import TitoError

COMMANDS = ("module", "system", "lab", "student", "fetch", "submit", "milestone", "nbgrader", "book")  # tito/commands/<name>.py
LENIENT = {"allow_extra_args": True, "ignore_unknown_options": True}


def _load(module_name: str):
    "(the module's `app`, or None; why it is unusable, or '' when it is simply not there)."
    try:
        return importlib.import_module(module_name).app, ""
    except ModuleNotFoundError as e:
        if e.name == module_name:
            return None, ""
        return None, f"{type(e).__name__}: {e}"
    except (ImportError, AttributeError) as e:
        return None, f"{type(e).__name__}: {e}"


def _unavailable(name: str, problem: str) -> typer.Typer:
    "A command in place of one that does not import: it says why."
    app = typer.Typer()

    @app.command(name, context_settings=LENIENT, help=f"(unavailable: {problem})")
    def unavailable(ctx: typer.Context):
        raise TitoError(f"`tito {name}` is unavailable: {problem}")
    return app


@functools.lru_cache(maxsize=None)
def command(name: str, module_name: str):
    """The click command of `tito <name>`, or None when its module is not there: the app's one command when it is
    named `name` (`tito lab`), else the app as a group of commands (`tito module list`)."""
    app, problem = _load(module_name)
    if app is None and not problem:
        return None
    group = typer.main.get_group(app or _unavailable(name, problem))
    if list(group.commands) == [name]:
        return group.commands[name]
    group.name = name
    return group


class Commands(TyperGroup):
    "tito's top-level group: its commands come from `commands`, each imported when first needed."
    commands_package = "tito.commands"
    names = COMMANDS

    def list_commands(self, ctx):
        return [name for name in self.names if self.get_command(ctx, name)]

    def get_command(self, ctx, name):
        return command(name, f"{self.commands_package}.{name}") if name in self.names else None


app = typer.Typer(name="tito", help="TinyTorch course tool: export, test and complete the modules.", cls=Commands,
                  no_args_is_help=True, add_completion=False, pretty_exceptions_show_locals=False)


@app.callback()
def _options(root: Optional[Path] = typer.Option(
        None, "--root", help="The course workspace (default: $TITO_ROOT, else the nearest folder upwards "
                             "with settings.ini and modules/).")):
    if root is not None:
        os.environ["TITO_ROOT"] = str(root.expanduser().resolve())


def main():
    "Entry point of the `tito` script: one-line errors for the problems tito knows about."
    try:
        app()
    except TitoError as e:
        output.error(str(e))
        raise SystemExit(1)
