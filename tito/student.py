"""`tito student init DIR` and `tito module reset NN`: the commands of student workspaces (see `tito.workspace`)."""
from __future__ import annotations

from pathlib import Path

import typer

from tito import progress
from tito.course import Workspace
from tito.workspace import init_student_workspace, reset_module

student_app = typer.Typer(help="Student workspaces: make one from the course's nbgrader release.",
                          no_args_is_help=True)


@student_app.command("init")
def student_init(directory: Path = typer.Argument(..., help="New folder for the student workspace.")):
    "Make a student workspace: the release notebooks, the module tests, tito, and an empty tinytorch package."
    modules = init_student_workspace(Workspace.find(), directory)
    typer.echo(f"student workspace ready in {directory}: {', '.join(m.name for m in modules)}")
    typer.echo(f'next: cd {directory} && python3 -m venv .venv && .venv/bin/pip install -e ".[dev]"')


def module_reset(module: str = typer.Argument(..., help="Module number or name, e.g. 01.")):
    "Restore a module's release notebook, after saving yours to a timestamped backup (student workspaces)."
    ws = Workspace.find()
    chosen = ws.module(module)
    backup = reset_module(ws, chosen)
    progress.mark_reset(ws, chosen)  # `module status` and the prerequisites of later modules see it
    if backup is None:
        typer.echo(f"{ws.rel(chosen.notebook)} is the release version; nothing to back up")
    else:
        typer.echo(f"saved your notebook to {ws.rel(backup)}")
        typer.echo(f"restored {ws.rel(chosen.notebook)} from the release (reopen it in JupyterLab)")
