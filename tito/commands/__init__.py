"""tito's commands: one typer app (`app`) per file, named for the command (`tito module ...` is `module.py`),
registered in `tito.cli.COMMANDS`. A command parses its arguments, calls the functions that do the work
(elsewhere in tito, where tests call them too) and prints through `tito.output`. What several commands take is here.
"""
from __future__ import annotations

from typing import Optional

import typer

from tito.workspace import Module, TitoError, Workspace

MODULE = typer.Argument(..., help="Module number or name, e.g. 01.")
ALL = typer.Option(False, "--all", help="Every module, in order.")


def chosen_modules(ws: Workspace, names: Optional[list[str]], all_modules: bool) -> list[Module]:
    "The modules named on the command line, or every module with --all (one or the other)."
    if all_modules == bool(names):
        raise TitoError("name the modules (e.g. 01) or pass --all")
    modules = ws.modules() if all_modules else [ws.module(name) for name in names]
    if not modules:
        raise TitoError(f"no modules in {ws.rel(ws.modules_dir)}/")
    return modules
