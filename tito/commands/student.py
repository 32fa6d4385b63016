"""`tito student init DIR`: make a student workspace (the work: `tito.student_workspace`)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from tito.output import say
from tito.student_workspace import init_student_workspace, serve_from_this_venv, this_venv
from tito.workspace import TitoError, Workspace

app = typer.Typer(help="Student workspaces: make one from the course's nbgrader release.", no_args_is_help=True)


@app.command("init")
def init(directory: Path = typer.Argument(..., help="New folder for the student workspace."),
         modules: Optional[str] = typer.Option(None, "--modules", help=(
             "Only these modules, e.g. 01,02 (the others come later with `tito fetch`).")),
         released: bool = typer.Option(False, "--released", help=(
             "Only the modules released to the nbgrader exchange so far (`tito nbgrader release NN`).")),
         use_this_venv: bool = typer.Option(False, "--use-this-venv", help=(
             "A self-learner's one environment: the virtual environment tito runs in serves the new workspace "
             "(installed into it with pip install -e --no-deps; DIRECTORY/.venv links to it)."))):
    "Make a student workspace: the release notebooks, the module tests, tito, and an empty tinytorch package."
    ws = Workspace.find()
    if modules and released:
        raise TitoError("choose --modules or --released, not both")
    if use_this_venv:
        this_venv()  # refused before anything is made
    only = None
    if modules:
        only = [ws.module(m.strip()) for m in modules.split(",") if m.strip()]
    elif released:
        from tito.exchange import released_modules  # nbgrader: only for --released

        only = released_modules(ws)
    made = init_student_workspace(ws, directory, only=only, progress=say)
    say(f"student workspace ready in {directory}: {', '.join(m.name for m in made)}")
    if use_this_venv:
        venv = serve_from_this_venv(directory)
        say(f"{venv} now serves {directory} (its tito and tinytorch are the workspace's; {directory}/.venv links here)")
        say(f"next: cd {directory} && .venv/bin/tito lab")
    else:
        say(f'next: cd {directory} && python3 -m venv .venv && .venv/bin/pip install -e ".[course]"')
