"""`tito submit NN`: a student hands in a module through nbgrader's exchange (the work: `tito.exchange`)."""
from __future__ import annotations

from typing import Optional

import typer

from tito.commands import MODULE
from tito.output import say
from tito.workspace import Workspace

app = typer.Typer()


@app.command("submit")
def submit(module: str = MODULE,
           student: Optional[str] = typer.Option(None, "--student", help=(
               "Submit under this id (default: your login name, as nbgrader does)."))):
    "Hand in a module's notebook through the nbgrader exchange (JupyterHub)."
    from tito.exchange import submit  # nbgrader: only when the command runs

    ws = Workspace.find()
    chosen = ws.module(module)
    sid = submit(ws, chosen, student)
    say(f"submitted {ws.rel(chosen.notebook)} as {sid}")
