"""File locks that keep concurrent tito runs from undoing each other's writes.

One lock per workspace (`.tito/lock`) serializes what rewrites shared files: exports into the package and
updates of the progress file. Autograding serializes its gradebook work with a lock beside the gradebook.
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from tito.output import note
from tito.workspace import TitoError, Workspace

WORKSPACE_LOCK = ".tito/lock"
_LOCKS: dict[str, FileLock] = {}


def file_lock(path: Path) -> FileLock:
    "The one FileLock object of this process for `path` (a second object on the same file would wait for the first)."
    key = str(Path(path).resolve())
    if key not in _LOCKS:
        _LOCKS[key] = FileLock(key, thread_local=False)
    return _LOCKS[key]


@contextmanager
def held(path: Path, what: str):
    "Hold the lock file `path` for the block; say once on stderr when another tito run makes this one wait."
    lock = file_lock(path)
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(timeout=1)
        except Timeout:
            note(f"waiting for another tito run to finish {what} ({path})", "")
            lock.acquire()
    except OSError as e:
        raise TitoError(f"cannot lock {path} for {what}: {e.strerror or e}") from None
    try:
        yield lock
    finally:
        lock.release()


def workspace_lock(ws: Workspace, what: str):
    "The workspace's lock: exports and progress updates hold it, so two tito runs never interleave them."
    return held(ws.root / WORKSPACE_LOCK, what)


@contextmanager
def released(lock: FileLock | None):
    "Let other processes take `lock`, held by this one, during the block (a no-op for None or a free lock)."
    if lock is None or not lock.is_locked:
        yield
        return
    depth = lock.lock_counter
    lock.release(force=True)
    try:
        yield
    finally:
        for _ in range(depth):
            lock.acquire()
