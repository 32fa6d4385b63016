"""`tito student init DIR` and `tito module reset NN`: the commands of student workspaces (see `tito.workspace`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tito import progress
from tito.course import TitoError, Workspace
from tito.workspace import init_student_workspace, reset_module

student_app = typer.Typer(help="Student workspaces: make one from the course's nbgrader release.",
                          no_args_is_help=True)


@student_app.command("init")
def student_init(directory: Path = typer.Argument(..., help="New folder for the student workspace."),
                 modules: Optional[str] = typer.Option(None, "--modules", help=(
                     "Only these modules, e.g. 01,02 (the others come later with `tito fetch`).")),
                 released: bool = typer.Option(False, "--released", help=(
                     "Only the modules released to the nbgrader exchange so far (`tito nbgrader release NN`)."))):
    "Make a student workspace: the release notebooks, the module tests, tito, and an empty tinytorch package."
    ws = Workspace.find()
    if modules and released:
        raise TitoError("choose --modules or --released, not both")
    only = None
    if modules:
        only = [ws.module(m.strip()) for m in modules.split(",") if m.strip()]
    elif released:
        from tito.grading.setup import course_id, exchange_folder

        outbound = exchange_folder(ws) / course_id(ws) / "outbound"
        only = [m for m in ws.modules() if (outbound / m.name).is_dir()]
        if not only:
            raise TitoError(f"no module has been released to the exchange ({outbound}) yet: "
                            "`tito nbgrader release NN` first")
    modules = init_student_workspace(ws, directory, only=only, progress=typer.echo)
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
