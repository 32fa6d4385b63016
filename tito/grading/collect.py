"""`tito nbgrader collect`: submissions from a folder or from the exchange into nbgrader's submitted/ folder.

Submissions are read through file descriptors, one folder at a time, never through a symlink (`O_NOFOLLOW` at every
level): a student controls what their entry holds, and tito (often root) must read only what the student handed in,
never a file a link points at. What is read is a regular file, checked as a notebook, then written as read."""
from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Optional

import nbformat

from tito.workspace import Module, TitoError, Workspace
from tito.grading.setup import _dir, exchange_inbound

MAX_NOTEBOOK_MB = 16  # a submitted notebook larger than this is not collected (its outputs do not count anyway)
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,99}$")
FUTURE_SLACK = timedelta(hours=1)  # a submission dated later than now by more than this was not made by nbgrader
NOFOLLOW_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
NOFOLLOW_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # NONBLOCK: a FIFO never hangs the open


@dataclass
class Collected:
    student: str
    source: Optional[Path]
    dest: Optional[Path] = None
    status: str = ""  # new, updated, unchanged, or why it cannot be collected
    data: bytes = b""  # the notebook as read (and checked): exactly what is written to submitted/


class Refused(Exception):
    "A submission's file that is not collected; the message says why, in a few words."


def valid_student_id(sid: str) -> bool:
    "Letters and digits, then also `.`, `_`, `@` and `-`: safe as a folder name, in nbgrader's records and in a shell."
    return bool(STUDENT_ID.fullmatch(sid))


def _kind(mode: int) -> str:
    return ("a symlink" if stat.S_ISLNK(mode) else "a file, not a folder" if stat.S_ISREG(mode) else "a folder" if stat.S_ISDIR(mode) else
            "a named pipe" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode) else
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file")


def open_beneath(top_fd: int, parts: tuple, flags: int) -> int:
    "A descriptor for `parts` (names) below the folder `top_fd`, opened one name at a time, never through a symlink."
    fd = top_fd
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            try:
                new = os.open(name, flags if last else NOFOLLOW_DIR, dir_fd=fd)
            except OSError as e:
                try:
                    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                except OSError:
                    raise Refused(e.strerror.lower()) from None
                raise Refused(f"is {_kind(mode)}" if last else f"{name!r} in its path is {_kind(mode)}") from None
            if fd != top_fd:
                os.close(fd)
            fd = new
        return fd
    except BaseException:
        if fd != top_fd:
            os.close(fd)
        raise


def read_notebook_beneath(top_fd: int, parts: tuple) -> bytes:
    """The bytes of the notebook at `parts` below `top_fd`: a regular file, reached without a symlink, at most
    MAX_NOTEBOOK_MB, a valid notebook (nbformat's schema). Refused (why) otherwise."""
    fd = open_beneath(top_fd, parts, NOFOLLOW_FILE)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"is {_kind(info.st_mode)}")
        if info.st_size > MAX_NOTEBOOK_MB * 2**20:
            raise Refused(f"is over {MAX_NOTEBOOK_MB} MB (clear its outputs and hand it in again)")
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(MAX_NOTEBOOK_MB * 2**20 + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_NOTEBOOK_MB * 2**20:
        raise Refused(f"is over {MAX_NOTEBOOK_MB} MB (clear its outputs and hand it in again)")
    check_notebook(data)
    return data


def check_notebook(data: bytes):
    "Refused unless `data` is a notebook nbformat reads and validates (any error, in one line)."
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
        nbformat.validate(nb)
    except Exception as exc:  # noqa: BLE001 - whatever makes it unreadable is reported
        words = str(exc).strip().splitlines()
        raise Refused(f"is not a readable notebook ({type(exc).__name__}{': ' + words[0][:120] if words else ''})") \
            from None


def _notebooks_beneath(top_fd: int, name: str) -> list[tuple]:
    "The paths (tuples of names, from `name`) of the `.ipynb` entries below the folder `name`, hidden folders left out."
    found = []
    for folder, dirs, files, _ in os.fwalk(name, dir_fd=top_fd, follow_symlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [(*Path(folder).parts, f) for f in sorted(files) if f.endswith(".ipynb") and not f.startswith(".")]
    return found


def _pick_notebook(top_fd: int, name: str, wanted: str) -> tuple[Optional[tuple], str]:
    "The submitted notebook in a student's folder: the one called `wanted`, else the only notebook there."
    found = _notebooks_beneath(top_fd, name)
    named = [p for p in found if p[-1] == wanted]
    if len(named) == 1:
        return named[0], ""
    if len(named) > 1:
        return None, f"{len(named)} notebooks called {wanted}"
    if len(found) == 1:
        return found[0], ""
    return None, f"no {wanted}" if not found else f"no {wanted} and {len(found)} other notebooks"


def _entry(top_fd: int, path: Path, name: str, mod: Module) -> tuple[Optional[Collected], str]:
    "(the submission `name` in the folder, or None when it is no submission; why it cannot be collected, or '')."
    shown = repr(name)
    if name.startswith("."):
        return None, f"{shown} is hidden"
    mode = os.stat(name, dir_fd=top_fd, follow_symlinks=False).st_mode
    if stat.S_ISLNK(mode):
        return None, f"{shown} is a symlink (only files and folders handed in are collected, never what a link names)"
    if stat.S_ISDIR(mode):
        parts, why = _pick_notebook(top_fd, name, mod.notebook.name)
        student = name
    elif name.endswith(".ipynb"):
        parts, why, student = (name,), "", name[: -len(".ipynb")]
    else:
        return None, f"{shown} is not a notebook"
    entry = Collected(student, path.joinpath(*parts) if parts else None)
    if not valid_student_id(student):
        return entry, f"{shown} does not name a usable student id (letters, digits, then also . _ @ -)"
    if why:
        return entry, f"{shown}: {why}"
    try:
        entry.data = read_notebook_beneath(top_fd, parts)
    except Refused as e:
        return entry, f"{'/'.join(parts)!r} {e}"
    return entry, ""


def examine(path: Path, mod: Module) -> list[Collected]:
    """What `path` holds for `mod`: one entry per student (the notebook to collect, read and checked), and one per
    item that cannot be collected (`source` None, `status` says why). Nothing is written."""
    path = Path(path)
    if not path.is_dir():
        raise TitoError(f"{path} is not a folder of submissions")
    entries: dict[str, Collected] = {}
    problems = []
    top = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)  # the instructor's folder: named on purpose
    try:
        for name in sorted(os.listdir(top)):
            entry, why = _entry(top, path, name, mod)
            if entry is not None and not why and entry.student in entries:
                entries.pop(entry.student)
                why = f"{entry.student!r} handed in twice (a folder and a file)"
            if why:
                problems.append(Collected(entry.student if entry else name, None, status=why))
            else:
                entries[entry.student] = entry
    finally:
        os.close(top)
    return list(entries.values()) + problems


def _problem_line(problems: list[Collected], where: str) -> str:
    shown = [p.status for p in problems[:8]] + ([f"and {len(problems) - 8} more"] if len(problems) > 8 else [])
    return (f"nothing collected: {len(problems)} item(s) in {where} cannot be collected: {'; '.join(shown)} "
            "(fix or remove them, then collect again)")


def _write(dest: Path, data: bytes) -> str:
    "Write `data` to `dest` (through a partial file); new, updated or unchanged."
    status = "new" if not dest.exists() else ("unchanged" if dest.read_bytes() == data else "updated")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f".{dest.name}.tito-partial")
    partial.write_bytes(data)
    os.replace(partial, dest)
    return status


def collect(ws: Workspace, path: Path, mod: Module) -> list[Collected]:
    """Copy submissions from `path` into submitted/<student>/<assignment>/<notebook>.ipynb; all of them, or
    (when any item cannot be collected) none, with a one-line error naming every such item.

    `path` holds `<student>/…/<anything>.ipynb` folders (the notebook named like the module's is taken, or
    the only notebook there) or `<student>.ipynb` files, and nothing else: regular files, never a symlink."""
    entries = examine(path, mod)
    if problems := [e for e in entries if e.source is None]:
        raise TitoError(_problem_line(problems, str(path)))
    if not entries:
        raise TitoError(f"no submissions in {path} (expected <student>/<notebook>.ipynb or <student>.ipynb)")
    submitted = _dir(ws, "submitted")
    for e in entries:
        e.dest = submitted / e.student / mod.name / mod.notebook.name
        e.status = _write(e.dest, e.data)
    return entries


# --- the exchange --------------------------------------------------------------------------------------------------
@dataclass
class Handed:
    "One submission folder in the exchange's inbound: <student>+<assignment>+<timestamp>[+<random>]."
    student: str
    name: str
    when: Optional[datetime]  # None: the name's timestamp is not one


def _stamp(text: str) -> Optional[datetime]:
    "nbgrader's timestamp (`2024-01-31 12:00:00.123456 UTC`) as an aware datetime; None when it is not one."
    from nbgrader.utils import parse_utc

    if len(text) > 64 or not re.fullmatch(r"[0-9: .+-]+ ?[A-Za-z]{0,5}", text):
        return None
    try:
        when = parse_utc(text)
    except (ValueError, OverflowError, TypeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def _inbound(ws: Workspace, mod: Module) -> list[Handed]:
    "Every submission of `mod` in the exchange, as nbgrader's collect finds them (by folder name)."
    inbound = exchange_inbound(ws)
    if not inbound.is_dir():
        raise TitoError(f"no inbound folder in the exchange ({inbound}): release a module first "
                        f"(tito nbgrader release {mod.number})")
    out = []
    for name in sorted(os.listdir(inbound)):
        parts = name.rsplit("+", 3)
        if len(parts) >= 3 and parts[1] == mod.name:
            out.append(Handed(parts[0], name, _stamp(parts[2])))
    return out


def _owner_mismatch(folder_uid: int, student: str) -> str:
    """Why a submission folder is not the student's: when the student id is a local account, the folder must belong
    to it (or to the instructor running tito); '' when it does, or when no such account exists (a Hub of `jovyan`)."""
    import pwd

    try:
        account = pwd.getpwnam(student)
    except KeyError:
        return ""
    if folder_uid in (account.pw_uid, os.geteuid()):
        return ""
    try:
        owner = pwd.getpwuid(folder_uid).pw_name
    except KeyError:
        owner = f"uid {folder_uid}"
    return f"is owned by {owner}, not by the account {student}"


def _latest(handed: list[Handed], now: datetime) -> tuple[Optional[Handed], list[str]]:
    "The student's latest submission dated no later than now (+ slack), and why each other one was passed over."
    passed = [f"{h.name!r} has no usable timestamp in its name" for h in handed if h.when is None]
    dated = sorted((h for h in handed if h.when is not None), key=lambda h: h.when, reverse=True)
    future = [h for h in dated if h.when > now + FUTURE_SLACK]
    passed += [f"{h.name!r} is dated in the future" for h in future]
    rest = [h for h in dated if h not in future]
    return (rest[0] if rest else None), passed


def _changed(ctimes) -> datetime:
    "The latest of inode change times (seconds), as an aware datetime."
    return datetime.fromtimestamp(max(ctimes), timezone.utc)


def _read_submission(inbound_fd: int, h: Handed, mod: Module) -> tuple[Optional[bytes], list[str], datetime]:
    """(the notebook of the submission folder `h`, or None when it has none; the names of the other entries there;
    when the folder or the notebook last changed). Refused when the folder or its notebook is not what nbgrader's
    submit makes (a folder, a regular file)."""
    folder = open_beneath(inbound_fd, (h.name,), NOFOLLOW_DIR)
    try:
        if why := _owner_mismatch(os.fstat(folder).st_uid, h.student):
            raise Refused(why)
        names = sorted(os.listdir(folder))
        others = [n for n in names if n not in (mod.notebook.name, "timestamp.txt")]
        if mod.notebook.name not in names:
            return None, others, _changed([os.fstat(folder).st_ctime])
        try:
            data = read_notebook_beneath(folder, (mod.notebook.name,))
        except Refused as e:
            raise Refused(f"{mod.notebook.name} {e}") from None
        notebook = os.stat(mod.notebook.name, dir_fd=folder, follow_symlinks=False)
        return data, others, _changed([os.fstat(folder).st_ctime, notebook.st_ctime])
    finally:
        os.close(folder)


def _store(dest: Path, data: Optional[bytes], mod: Module, when: str) -> str:
    "Put the submission in submitted/<student>/<module>/ (the notebook, tito's timestamp.txt); new, updated or unchanged."
    import shutil

    stamp = dest / "timestamp.txt"
    old = stamp.read_text(encoding="utf-8").strip() if stamp.is_file() and not stamp.is_symlink() else None
    notebook = dest / mod.notebook.name
    before = notebook.read_bytes() if notebook.is_file() else None
    if dest.is_dir():
        for item in dest.iterdir():
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            elif item.name != mod.notebook.name or data is None:
                item.unlink()
    if data is not None:
        _write(notebook, data)
    dest.mkdir(parents=True, exist_ok=True)
    stamp.write_text(when + "\n", encoding="utf-8")
    if old is None and before is None:
        return "new"
    return "unchanged" if old == when and before == data else "updated"


def collect_from_exchange(ws: Workspace, mod: Module, verbose: bool = False) -> list[Collected]:
    """Copy each student's latest submission of `mod` from the exchange to submitted/: its notebook only, read as
    `collect` reads a folder (a regular file, never through a symlink, a valid notebook). A submission that cannot be
    collected is named in its entry (`source` None) and leaves that student's earlier copy in submitted/ alone; all
    submissions are refused when one has a student id that is not usable."""
    found = _inbound(ws, mod)
    if bad := sorted({h.student for h in found if not valid_student_id(h.student)}):
        raise TitoError(f"nothing collected: submissions in the exchange have unusable student ids: "
                        f"{', '.join(map(repr, bad))} (letters, digits, then also . _ @ -; remove them from "
                        f"{exchange_inbound(ws)})")
    now = datetime.now(timezone.utc)
    out = []
    inbound_fd = os.open(exchange_inbound(ws), NOFOLLOW_DIR)
    try:
        for sid in sorted({h.student for h in found}):
            theirs, passed_over = [], []
            for h in (h for h in found if h.student == sid):
                try:
                    why = _owner_mismatch(os.stat(h.name, dir_fd=inbound_fd, follow_symlinks=False).st_uid, sid)
                except OSError:
                    continue
                if why:  # another account's folder under this name shadows nothing
                    passed_over.append(f"{h.name!r} {why}")
                else:
                    theirs.append(h)
            latest, passed = _latest(theirs, now)
            passed += passed_over
            where = f"{exchange_inbound(ws) / latest.name}" if latest else ""
            note = f" (passed over: {'; '.join(passed)})" if passed else ""
            if latest is None:
                out.append(Collected(sid, None, status=f"not collected: no usable submission{note}"))
                continue
            try:
                data, others, changed = _read_submission(inbound_fd, latest, mod)
            except Refused as e:
                out.append(Collected(sid, None, status=f"not collected: {where} {e}{note}"))
                continue
            dest = _dir(ws, "submitted") / sid / mod.name
            # the name's time is the student's own clock's; the kernel's change times cannot be set back
            when = max(latest.when, changed).strftime("%Y-%m-%d %H:%M:%S.%f %Z")
            status = _store(dest, data, mod, when)
            if others:
                status += f" (left out {len(others)} other file(s): {', '.join(map(repr, others[:5]))}" \
                          f"{' ...' if len(others) > 5 else ''})"
            if data is None:
                status += f" (no {mod.notebook.name} in it: it will score 0)"
            out.append(Collected(sid, Path(where), dest / mod.notebook.name, f"{status}{note}, submitted {when}",
                                 data or b""))
    finally:
        os.close(inbound_fd)
    return out
