"""`tito system doctor`: is everything the course needs installed and configured?"""
from __future__ import annotations

import typer

from tito import doctor, output
from tito.workspace import TitoError

app = typer.Typer(help="Check this installation.", no_args_is_help=True)


@app.command("doctor")
def doctor_command():
    "Check Python, the packages, the nbdev config, the Jupyter kernel and the tools tito runs."
    checks = doctor.run_checks()
    output.table(["check", "status", "detail", "fix"],
                 [[c.name, ("ok", "green") if c.ok else ("problem", "bold red"), c.detail, c.fix] for c in checks],
                 "tito system doctor")
    if problems := [c.name for c in checks if not c.ok]:
        raise TitoError(f"{len(problems)} problem(s): {', '.join(problems)}")
