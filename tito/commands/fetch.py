"""`tito fetch NN`: a student fetches a released module from nbgrader's exchange (the work: `tito.exchange`)."""
from __future__ import annotations

import typer

from tito.commands import MODULE
from tito.output import say
from tito.workspace import Workspace

app = typer.Typer()


@app.command("fetch")
def fetch(module: str = MODULE):
    "Fetch a module your instructor released (JupyterHub / nbgrader exchange) into this workspace."
    from tito.exchange import fetch  # nbgrader: only when the command runs

    _, said = fetch(Workspace.find(), module)
    say(said)
