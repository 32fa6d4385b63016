"""The progress file (`.tito/progress.json`): what `tito module complete` found for each module, and when."""
from __future__ import annotations

import functools
import json
import os
from datetime import datetime

from tito.workspace import Module, TitoError, Workspace
from tito.locking import workspace_lock
from tito.module_checks import Checks


def load(ws: Workspace) -> dict:
    "The progress record, `{'modules': {'01': {...}}}`; empty when nothing was completed yet."
    path = ws.progress_file
    if not path.is_file():
        return {"modules": {}}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise TitoError(f"the progress file {ws.rel(path)} is not valid JSON ({e}); "
                        "fix it, or delete it to start the record over") from None
    if not isinstance(data, dict) or not isinstance(data.get("modules"), dict):
        raise TitoError(f"the progress file {ws.rel(path)} has no 'modules' record; delete it to start over")
    return data


def entry(ws: Workspace, module: Module) -> dict | None:
    "What was recorded for `module`, if anything."
    return load(ws)["modules"].get(module.number)


def is_complete(ws: Workspace, module: Module | str) -> bool:
    "Whether the last `complete` run of `module` (a Module or its number, e.g. '07') passed."
    number = module if isinstance(module, str) else module.number
    return bool(load(ws)["modules"].get(number, {}).get("passed"))


def incomplete_before(ws: Workspace, module: Module) -> list[Module]:
    "Earlier modules whose last `complete` run did not pass (or never ran)."
    return [m for m in ws.modules() if m.number < module.number and not is_complete(ws, m)]


def require_earlier_complete(ws: Workspace, module: Module):
    "A TitoError unless every earlier module is complete (a later module imports them)."
    if missing := incomplete_before(ws, module):
        raise TitoError(f"complete module(s) {', '.join(m.number for m in missing)} first: "
                        f"module {module.number} builds on them")


def now() -> str:
    "Local time with its UTC offset, to the second."
    return datetime.now().astimezone().isoformat(timespec="seconds")


def _locked(update):
    "A read-modify-write of the progress file, under the workspace lock: concurrent tito runs never lose an entry."
    @functools.wraps(update)
    def locked(ws: Workspace, *args, **kwargs):
        with workspace_lock(ws, "the progress file"):
            return update(ws, *args, **kwargs)
    return locked


@_locked
def record(ws: Workspace, module: Module, pending: list[str], tests: Checks, checks: Checks) -> dict:
    "Store the result of one `complete` run of `module`; the stored entry."
    data = load(ws)
    previous = data["modules"].get(module.number, {})
    passed = not pending and tests.passed and checks.passed
    stamp = now()
    data["modules"][module.number] = {
        "module": module.name,
        "passed": passed,
        "last_run": stamp,
        "completed_at": stamp if passed else previous.get("completed_at"),
        "pending_exercises": pending,
        "tests": {**tests.counts(), "missing": tests.missing or None},
        "notebook_checks": {**checks.counts(), "missing": checks.missing or None},
    }
    _write(ws, data)
    return data["modules"][module.number]


@_locked
def mark_reset(ws: Workspace, module: Module) -> dict:
    "Record that `module` went back to its release notebook: not complete until `complete` passes again."
    data = load(ws)
    previous = data["modules"].get(module.number, {"module": module.name})
    data["modules"][module.number] = {**previous, "passed": False, "reset_at": now()}
    _write(ws, data)
    return data["modules"][module.number]


def _write(ws: Workspace, data: dict):
    "Write the file whole or not at all."
    path = ws.progress_file
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(partial, path)
