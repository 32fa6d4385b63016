"""`tito nbgrader collect`: submissions from a folder or from the exchange into nbgrader's submitted/ folder."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import nbformat

from tito.workspace import Module, TitoError, Workspace
from tito.grading.setup import _dir, _error_line, exchange_inbound, nbgrader_api

MAX_NOTEBOOK_MB = 16  # a submitted notebook larger than this is not collected (its outputs do not count anyway)
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")


@dataclass
class Collected:
    student: str
    source: Optional[Path]
    dest: Optional[Path] = None
    status: str = ""  # new, updated, unchanged, or why it cannot be collected


def valid_student_id(sid: str) -> bool:
    "Letters and digits, then also `.`, `_`, `@` and `-`: safe as a folder name, in nbgrader's records and in a shell."
    return bool(STUDENT_ID.fullmatch(sid))


def _pick_notebook(folder: Path, name: str) -> tuple[Optional[Path], str]:
    "The submitted notebook in a student's folder: the one called `name`, else the only notebook there."
    found = [p for p in sorted(folder.rglob("*.ipynb"))
             if not any(part.startswith(".") for part in p.relative_to(folder).parts)]
    named = [p for p in found if p.name == name]
    if len(named) == 1:
        return named[0], ""
    if len(named) > 1:
        return None, f"{len(named)} notebooks called {name}"
    if len(found) == 1:
        return found[0], ""
    return None, f"no {name}" if not found else f"no {name} and {len(found)} other notebooks"


def examine(path: Path, mod: Module) -> list[Collected]:
    """What `path` holds for `mod`: one entry per student (the notebook to collect), and one per item that
    cannot be collected (`source` None, `status` says why). Nothing is written."""
    path = Path(path)
    if not path.is_dir():
        raise TitoError(f"{path} is not a folder of submissions")
    entries: dict[str, Collected] = {}
    problems = []
    for item in sorted(path.iterdir()):
        shown = repr(item.name)
        if item.name.startswith("."):
            problems.append(Collected(item.name, None, status=f"{shown} is hidden"))
            continue
        if item.is_dir():
            nb, why = _pick_notebook(item, mod.notebook.name)
            entry = Collected(item.name, nb, status=f"{shown}: {why}" if why else "")
        elif item.suffix == ".ipynb":
            entry = Collected(item.stem, item)
        else:
            problems.append(Collected(item.name, None, status=f"{shown} is not a notebook"))
            continue
        if not valid_student_id(entry.student):
            entry = Collected(entry.student, None, status=f"{shown} does not name a usable student id "
                                                          "(letters, digits, then also . _ @ -)")
        elif entry.student in entries:
            entries.pop(entry.student)
            entry = Collected(entry.student, None, status=f"{entry.student!r} handed in twice (a folder and a file)")
        elif entry.source is not None and entry.source.stat().st_size > MAX_NOTEBOOK_MB * 2**20:
            entry = Collected(entry.student, None, status=f"{shown} is over {MAX_NOTEBOOK_MB} MB "
                                                          "(clear its outputs and hand it in again)")
        elif entry.source is not None:
            try:
                nbformat.read(entry.source, as_version=4)
            except Exception as exc:  # noqa: BLE001 - any unreadable file is reported
                entry = Collected(entry.student, None, status=f"{shown} is not a readable notebook "
                                                              f"({type(exc).__name__})")
        if entry.source is None:
            problems.append(entry)
        else:
            entries[entry.student] = entry
    return list(entries.values()) + problems


def _problem_line(problems: list[Collected], where: str) -> str:
    shown = [p.status for p in problems[:8]] + ([f"and {len(problems) - 8} more"] if len(problems) > 8 else [])
    return (f"nothing collected: {len(problems)} item(s) in {where} cannot be collected: {'; '.join(shown)} "
            "(fix or remove them, then collect again)")


def collect(ws: Workspace, path: Path, mod: Module) -> list[Collected]:
    """Copy submissions from `path` into submitted/<student>/<assignment>/<notebook>.ipynb; all of them, or
    (when any item cannot be collected) none, with a one-line error naming every such item.

    `path` holds `<student>/…/<anything>.ipynb` folders (the notebook named like the module's is taken, or
    the only notebook there) or `<student>.ipynb` files, and nothing else."""
    entries = examine(path, mod)
    if problems := [e for e in entries if e.source is None]:
        raise TitoError(_problem_line(problems, str(path)))
    if not entries:
        raise TitoError(f"no submissions in {path} (expected <student>/<notebook>.ipynb or <student>.ipynb)")
    submitted = _dir(ws, "submitted")
    for e in entries:
        e.dest = submitted / e.student / mod.name / mod.notebook.name
        data = e.source.read_bytes()
        e.status = "new" if not e.dest.exists() else ("unchanged" if e.dest.read_bytes() == data else "updated")
        e.dest.parent.mkdir(parents=True, exist_ok=True)
        partial = e.dest.with_name(f".{e.dest.name}.tito-partial")
        partial.write_bytes(data)
        os.replace(partial, e.dest)
    return entries


def _inbound(ws: Workspace, mod: Module) -> list[tuple[str, Path]]:
    "(student id, folder) of every submission of `mod` in the exchange, as nbgrader's collect reads them."
    inbound = exchange_inbound(ws)
    if not inbound.is_dir():
        raise TitoError(f"no inbound folder in the exchange ({inbound}): release a module first "
                        f"(tito nbgrader release {mod.number})")
    out = []
    for folder in sorted(inbound.iterdir()):
        parts = folder.name.rsplit("+", 3)
        if len(parts) >= 3 and parts[1] == mod.name:
            out.append((parts[0], folder))
    return out


def _timestamp(folder: Path) -> Optional[str]:
    stamp = folder / "timestamp.txt"
    return stamp.read_text(encoding="utf-8").strip() if stamp.is_file() else None


def collect_from_exchange(ws: Workspace, mod: Module, verbose: bool = False) -> list[Collected]:
    """Copy each student's latest submission of `mod` from the exchange to submitted/ with nbgrader's collect;
    all of them, or none when a submission has a student id that is not usable."""
    found = _inbound(ws, mod)
    if bad := sorted({sid for sid, _ in found if not valid_student_id(sid)}):
        raise TitoError(f"nothing collected: submissions in the exchange have unusable student ids: "
                        f"{', '.join(map(repr, bad))} (letters, digits, then also . _ @ -; remove them from "
                        f"{exchange_inbound(ws)})")
    students = sorted({sid for sid, _ in found})
    target = lambda sid: _dir(ws, "submitted") / sid / mod.name
    before = {sid: _timestamp(target(sid)) for sid in students}
    if students:
        with nbgrader_api(ws, verbose=verbose) as api:
            result = api.collect(mod.name, update=True)
        if not result["success"]:
            raise TitoError(f"nbgrader could not collect {mod.name}: {_error_line(result)}")
    out = []
    for sid in students:
        after = _timestamp(target(sid))
        status = "new" if before[sid] is None else "unchanged" if after == before[sid] else "updated"
        if left := _keep_only_the_notebook(target(sid), mod):
            status += f" (left out {len(left)} other file(s): {', '.join(left[:5])}{' ...' if len(left) > 5 else ''})"
        if not (target(sid) / mod.notebook.name).is_file():
            status += f" (no {mod.notebook.name} in it: it will score 0)"
        out.append(Collected(sid, None, target(sid) / mod.notebook.name, f"{status}, submitted {after}"))
    return out




def _keep_only_the_notebook(folder: Path, mod: Module) -> list[str]:
    """Remove from a collected submission everything but the module's notebook (and nbgrader's timestamp): the
    judge uses the notebook alone, and a file beside it must never reach an import path. The names removed."""
    import shutil

    removed = []
    if not folder.is_dir():
        return removed
    for item in sorted(folder.iterdir()):
        if item.name == "timestamp.txt":
            continue
        if item.name == mod.notebook.name and item.is_file() and not item.is_symlink() \
                and item.stat().st_size <= MAX_NOTEBOOK_MB * 2**20:
            continue
        removed.append(item.name)
        if item.is_dir() and not item.is_symlink():
            shutil.rmtree(item)
        else:
            item.unlink()
    return removed
