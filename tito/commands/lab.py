"""`tito lab`: JupyterLab on the modules folder, headless; it prints the URL (the server is `tito.lab_server`)."""
from __future__ import annotations

from typing import Optional

import typer

from tito import lab_server
from tito.output import say
from tito.workspace import Workspace

app = typer.Typer()


@app.command("lab")
def lab(port: int = typer.Option(8888, help="Port to serve on (127.0.0.1 only)."),
        token: Optional[str] = typer.Option(None, help="Access token (default: a new random one).")):
    "Start JupyterLab on the modules folder (headless) and print its URL."
    ws = Workspace.find()
    token = token or lab_server.new_token()
    say(f"starting JupyterLab on {ws.modules_dir} ...")
    server = lab_server.start(ws, port, token)
    say(f"JupyterLab is running: {lab_server.lab_url(port, token)}", "bold green")
    say("press Ctrl-C to stop it")
    raise typer.Exit(lab_server.serve(server))
