"""The student side of nbgrader's exchange, how notebooks move between instructor and students on one machine
or a JupyterHub (the instructor side, `release` and `collect_from_exchange`, is in tito.grading):

    instructor: tito nbgrader release 01          release/01_tensor -> <exchange>/<course>/outbound/01_tensor
    student:    tito fetch 01                     outbound -> modules/01_tensor (never over the student's own work)
    student:    tito submit 01                    modules/01_tensor/01_tensor.ipynb -> <exchange>/<course>/inbound
    instructor: tito nbgrader collect 01 --exchange   the latest submission of each student -> submitted/

The exchange is nbgrader's own (its folder layout, timestamps and permissions), so students may use nbgrader's
Assignment List in JupyterLab instead of `tito fetch` / `tito submit`. Where it lives: settings.ini [nbgrader]
exchange_dir, else nbgrader's default (/usr/local/share/nbgrader/exchange). A student is known by their login name
(on a JupyterHub whose users are all `jovyan`: $JUPYTERHUB_USER), as in nbgrader.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Optional

from tito.workspace import MODULE_FOLDER, Module, TitoError, Workspace
from tito.grading.collect import valid_student_id
from tito.grading.setup import _logger, exchange_outbound, nbgrader_config

IGNORED = shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__", "*.pyc", ".*")


def _student_exchange(ws: Workspace, kind: str, assignment: str, folder: Path, student: Optional[str] = None,
                      verbose: bool = False):
    "Run nbgrader's student-side exchange step `kind` (FetchAssignment, Submit) for `assignment` in `folder`."
    from nbgrader.auth import Authenticator
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.exchange import ExchangeError, ExchangeFactory

    c = nbgrader_config(ws)
    c.Exchange.assignment_dir = str(folder)
    c.CourseDirectory.assignment_id = assignment
    if student is not None:
        c.CourseDirectory.student_id = student
    step = getattr(ExchangeFactory(config=c), kind)(coursedir=CourseDirectory(config=c), config=c,
                                                     authenticator=Authenticator(config=c), log=_logger(verbose))
    try:
        step.start()
    except ExchangeError as e:
        raise TitoError(f"nbgrader could not {kind.lower().replace('assignment', '')} {assignment}: {e}") from None


def _released_module(ws: Workspace, ident: str) -> Module:
    "The module `ident` names: one in the workspace, else one released in the exchange (a new module)."
    try:
        return ws.module(ident)
    except TitoError:
        outbound = exchange_outbound(ws)
        names = sorted(p.name for p in outbound.iterdir() if MODULE_FOLDER.match(p.name)) if outbound.is_dir() else []
        ident = ident.strip()
        match = [n for n in names if ident in (n, n[3:]) or (ident.isdigit() and int(n[:2]) == int(ident))]
        if len(match) != 1:
            raise
        m = MODULE_FOLDER.match(match[0])
        return Module(m.group(1), match[0], ws.modules_dir / match[0])


def released_modules(ws: Workspace) -> list[Module]:
    "The workspace's modules released to the exchange so far; a TitoError when there is none."
    outbound = exchange_outbound(ws)
    found = [m for m in ws.modules() if (outbound / m.name).is_dir()]
    if not found:
        raise TitoError(f"no module has been released to the exchange ({outbound}) yet: "
                        "`tito nbgrader release NN` first")
    return found


def fetch(ws: Workspace, ident: str) -> tuple[Module, str]:
    """Fetch a released module from the exchange into a student workspace: the pristine copy in release/ is
    replaced, and the student's notebook is written only when they have none. Returns (module, what happened)."""
    if not ws.is_student:
        raise TitoError("`tito fetch` is for student workspaces (made by `tito student init`); here it would "
                        "overwrite the notebooks that hold the solutions")
    mod = _released_module(ws, ident)
    with tempfile.TemporaryDirectory(prefix="tito-fetch-") as tmp:
        _student_exchange(ws, "FetchAssignment", mod.name, Path(tmp))
        fetched = Path(tmp) / mod.name
        if not (fetched / mod.notebook.name).is_file():
            raise TitoError(f"the release of {mod.name} in the exchange has no {mod.notebook.name}")
        pristine = ws.released(mod).folder
        staging = pristine.with_name(f".{pristine.name}.tito-partial")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(fetched, staging, ignore=IGNORED)
        shutil.rmtree(pristine, ignore_errors=True)
        os.replace(staging, pristine)
    new = (pristine / mod.notebook.name).read_bytes()
    if not mod.notebook.is_file():
        mod.folder.mkdir(parents=True, exist_ok=True)
        shutil.copytree(pristine, mod.folder, dirs_exist_ok=True)
        return mod, f"fetched {ws.rel(mod.notebook)}"
    if mod.notebook.read_bytes() == new:
        return mod, f"{ws.rel(mod.notebook)} is already the released version"
    return mod, (f"kept your {ws.rel(mod.notebook)}; the released version is in {ws.rel(pristine)}/ "
                 f"(tito module reset {mod.number} switches to it, keeping a backup of yours)")


def submit(ws: Workspace, mod: Module, student: Optional[str] = None) -> str:
    "Hand in the module's notebook (and the files beside it) through the exchange; the id it was submitted as."
    from nbgrader.utils import get_username

    from tito.notebooks import read_notebook

    read_notebook(ws, mod)  # a missing or broken notebook is a one-line error, and nothing is handed in
    sid = student if student is not None else get_username()
    if not valid_student_id(sid):
        raise TitoError(f"{sid!r} is not a usable student id (letters, digits, then also . _ @ -)")
    with tempfile.TemporaryDirectory(prefix="tito-submit-") as tmp:
        shutil.copytree(mod.folder, Path(tmp) / mod.name, ignore=IGNORED)
        _student_exchange(ws, "Submit", mod.name, Path(tmp), sid)
    return sid
