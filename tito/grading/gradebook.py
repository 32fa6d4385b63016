"""Where the gradebook lives (settings.ini `[nbgrader] db_url`), and splitting a class between graders (`--shard`).

nbgrader keeps its gradebook through SQLAlchemy: the default is a SQLite file in the course folder; a PostgreSQL
server is a gradebook that several graders, on one machine or several, write into at once.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from tito.workspace import Module, TitoError, Workspace

POSTGRES_DRIVER = "postgresql+psycopg"  # psycopg 3, the `postgres` extra


def db_url(ws: Workspace) -> str:
    """settings.ini `[nbgrader] db_url` (an SQLAlchemy URL; a bare `postgresql://` uses psycopg 3), else the SQLite
    file `[nbgrader] gradebook` in the course folder. A TitoError names a URL SQLAlchemy cannot read or use."""
    value = ws.settings.get("nbgrader", "db_url", fallback="").strip()
    if not value:
        return "sqlite:///" + str(ws.root / ws.settings.get("nbgrader", "gradebook", fallback="gradebook.db"))
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(value)
    except ArgumentError:
        raise TitoError(f"settings.ini: [nbgrader] db_url is not a database URL: {value!r} "
                        "(e.g. postgresql://grader@db.example.org/tinytorch)") from None
    if url.drivername == "postgresql":
        url = url.set(drivername=POSTGRES_DRIVER)
    if url.drivername == POSTGRES_DRIVER:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise TitoError("settings.ini: [nbgrader] db_url is a PostgreSQL server, and psycopg is not installed: "
                            "pip install -e '.[postgres]'") from None
    return url.render_as_string(hide_password=False)


@dataclass(frozen=True)
class Shard:
    "Part `index` of `count` of a class: the students whose id hashes to it (the same on every machine)."
    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise TitoError(f"--shard takes K/N with 1 <= K <= N (e.g. 1/2), not {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    def holds(self, student: str) -> bool:
        "Whether `student` is in this shard: by a hash of the id, so a shard never depends on who else was collected."
        digest = hashlib.sha256(student.encode("utf-8")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def of(self, students: list[str]) -> list[str]:
        return [s for s in students if self.holds(s)]


def collected(ws: Workspace, mod: Module) -> list[str]:
    "The students with a folder for `mod` in nbgrader's submitted/ folder (settings.ini [nbgrader] submitted_dir)."
    base = ws.setting_path("nbgrader", "submitted_dir", "submitted")
    return sorted(d.parent.name for d in base.glob(f"*/{mod.name}") if d.is_dir()) if base.is_dir() else []
