"""Due dates per module (settings.ini `[deadlines]`), when each submission was handed in (nbgrader's exchange
timestamp), and a late penalty when the instructor sets one."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Optional

from tito.workspace import Module, TitoError, Workspace

SECTION = "deadlines"
PENALTY_KEY = "late_penalty_percent_per_day"


def due_dates(ws: Workspace) -> dict[str, datetime]:
    """Module name -> due date, from settings.ini `[deadlines] NN = 2026-12-01T23:59:00+00:00` (a module number or
    name, an ISO 8601 date and time with its time zone)."""
    if not ws.settings.has_section(SECTION):
        return {}
    out = {}
    for key, value in ws.settings.items(SECTION):
        if key == PENALTY_KEY:
            continue
        try:
            mod = ws.module(key)
        except TitoError:
            raise TitoError(f"settings.ini: [{SECTION}] {key}: not a module of this course "
                            f"(a module number such as 01, or {PENALTY_KEY})") from None
        try:
            due = datetime.fromisoformat(value.strip())
        except ValueError:
            raise TitoError(f"settings.ini: [{SECTION}] {key} = {value}: not an ISO 8601 date and time "
                            "(e.g. 2026-12-01T23:59:00+00:00)") from None
        if due.tzinfo is None:
            raise TitoError(f"settings.ini: [{SECTION}] {key} = {value}: give its time zone (e.g. +00:00)")
        out[mod.name] = due
    return out


def penalty_percent(ws: Workspace) -> float:
    "settings.ini `[deadlines] late_penalty_percent_per_day`: percent of a module's points per day late (0: none)."
    value = ws.settings.get(SECTION, PENALTY_KEY, fallback="0").strip() or "0"
    try:
        percent = float(value)
    except ValueError:
        percent = -1.0
    if not 0 <= percent <= 100:
        raise TitoError(f"settings.ini: [{SECTION}] {PENALTY_KEY} = {value}: a percentage from 0 to 100")
    return percent


def submitted_at(ws: Workspace, mod: Module, student: str) -> Optional[datetime]:
    """When `student` handed `mod` in: the timestamp nbgrader's exchange wrote beside the collected notebook
    (submitted/<student>/<NN_topic>/timestamp.txt); None when there is none (collected from a folder) or it is not a
    timestamp."""
    from nbgrader.utils import parse_utc

    stamp = ws.setting_path("nbgrader", "submitted_dir", "submitted") / student / mod.name / "timestamp.txt"
    if not stamp.is_file():
        return None
    text = stamp.read_text(encoding="utf-8", errors="replace").strip()[:200]
    try:
        return parse_utc(text).replace(tzinfo=timezone.utc)  # nbgrader gives naive UTC
    except (ValueError, OverflowError, TypeError):
        return None  # one unreadable stamp (an old collect copied the student's own) stops no report


@dataclass(frozen=True)
class Lateness:
    due: Optional[datetime]  # None: the module has no due date
    submitted: Optional[datetime]  # None: no exchange timestamp
    penalty_percent: float = 0.0  # per day, or part of a day, late

    @property
    def seconds_late(self) -> float:
        if self.due is None or self.submitted is None:
            return 0.0
        return max(0.0, (self.submitted - self.due).total_seconds())

    @property
    def late(self) -> bool:
        return self.seconds_late > 0

    def penalty(self, max_points: float) -> float:
        "Points taken off: `penalty_percent` of `max_points` for each day or part of a day late."
        days = math.ceil(self.seconds_late / 86400)
        return max_points * min(100.0, self.penalty_percent * days) / 100

    def after_penalty(self, total: float, max_points: float) -> float:
        return max(0.0, total - self.penalty(max_points))

    def note(self, max_points: float) -> str:
        "One line for the report: when it came, how late, what the penalty took."
        hours = self.seconds_late / 3600
        line = (f"late: submitted {self.submitted:%Y-%m-%d %H:%M} UTC, {hours:.1f} h after the due date "
                f"({self.due.isoformat()})")
        if taken := self.penalty(max_points):
            line += f"; late penalty -{taken:g} points"
        return line


def lateness(ws: Workspace, mod: Module, student: str) -> Lateness:
    "How late `student`'s submission of `mod` came, and the penalty settings.ini sets for it."
    due = due_dates(ws).get(mod.name)
    return Lateness(due, submitted_at(ws, mod, student) if due else None, penalty_percent(ws))
