"""`tito book build / serve`: the course as a static website (the work is in `tito.book`; needs the docs extra)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from tito.output import say
from tito.workspace import Workspace

app = typer.Typer(help="The course as a static website (needs the docs extra).", no_args_is_help=True)

BOOK_DIR = "_book"  # under the workspace root


@app.command("build")
def build(out: Optional[Path] = typer.Option(None, "--out", help=f"Folder to write the site to, replaced "
                                                                  f"(default: {BOOK_DIR}/ in the workspace)."),
          only: Optional[List[str]] = typer.Option(None, "--only", help="Build only this chapter (a module number, "
                                                                         "e.g. 05; repeatable): a quick look while "
                                                                         "writing.")):
    "Run every chapter once, then write the website: open OUT/index.html, or `tito book serve`."
    from tito import book

    ws = Workspace.find()
    built = book.build(ws, (out or ws.root / BOOK_DIR).resolve(), say=say, only=only)
    say(f"built {built.out / 'index.html'} in {built.total:.0f} s", "bold green")


@app.command("serve")
def serve(folder: Optional[Path] = typer.Option(None, "--dir", help=f"The built site (default: {BOOK_DIR}/ in "
                                                                     "the workspace)."),
          port: int = typer.Option(8000, help="Port to serve on (127.0.0.1 only).")):
    "Serve the built website on this machine until Ctrl-C."
    from tito import book

    folder = (folder or Workspace.find().root / BOOK_DIR).resolve()
    server = book.server(folder, port)
    say(f"serving {folder} at http://127.0.0.1:{server.server_address[1]}/ (Ctrl-C stops)", "bold green")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
