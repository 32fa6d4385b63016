"""Export notebooks into the package with nbdev, atomically: validate, export into a copy, import, copy back."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

from tito.output import last_line, one_line
from tito.workspace import Module, TitoError, Workspace, tool_env
from tito.locking import workspace_lock
from tito.notebooks import (DIRECTIVE, Node, cell_at, cell_index, cell_label, default_exp, directives, exported_files,
                            read_notebook, source_notebook)

EXPORT_DIRECTIVES = {"export", "exports", "exporti"}
MAGIC_LINE = re.compile(r"^\s*(%|!(?!=))")  # IPython magics and shell escapes, which are not Python
TRACEBACK_FRAME = re.compile(r'^\s*File "(.+)", line (\d+)')
IMPORT_TIMEOUT = 120  # seconds to import one freshly exported module (each, in one process)
COPIED = ("pyproject.toml", "settings.ini")
SKIPPED = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc")


def check_notebook(ws: Workspace, module: Module) -> Node:
    "The notebook, after checking what nbdev needs: valid nbformat, `#| default_exp`, export cells that parse."
    nb = read_notebook(ws, module)
    default_exp(ws, nb, module)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and EXPORT_DIRECTIVES & directives(cell.source).keys():
            _check_syntax(ws, module, nb, index)
    return nb


def _check_syntax(ws: Workspace, module: Module, nb: Node, index: int):
    "Parse an export cell as Python, blanking directive and magic lines so line numbers still match the cell."
    lines = nb.cells[index].source.splitlines()
    code = "\n".join("" if DIRECTIVE.match(line) or MAGIC_LINE.match(line) else line for line in lines)
    try:
        ast.parse(code)
    except SyntaxError as e:
        text = f": {lines[e.lineno - 1].strip()}" if e.lineno and e.lineno <= len(lines) else ""
        raise TitoError(f"{ws.rel(module.notebook)}, {cell_label(nb, index)}: SyntaxError: {e.msg} "
                        f"(line {e.lineno} of the cell{text})") from None


def export_modules(ws: Workspace, modules: list[Module]) -> list[str]:
    """Export `modules` into the workspace's package; the changed files, relative to the root.

    All notebooks are checked first, then exported into a temporary copy of the workspace and imported there.
    Only when everything worked are the changed files copied back, so a failure leaves the package untouched.
    The workspace lock is held from the copy to the copy back: a concurrent export (of another module) waits, and
    never copies back a package that predates this one's changes."""
    notebooks = [check_notebook(ws, module) for module in modules]
    with workspace_lock(ws, "an export"), tempfile.TemporaryDirectory(prefix="tito-export-") as tmp:
        copy = Path(tmp)
        _copy_workspace(ws, copy)
        for module in modules:
            _nbdev_export(ws, copy, module)
        for module, nb in zip(modules, notebooks):
            _check_imports(ws, copy, module, nb)
        return _copy_back(ws, copy, modules)


def _in_copy(ws: Workspace, copy: Path, path: Path) -> Path:
    return copy / path.relative_to(ws.root)


def _copy_workspace(ws: Workspace, copy: Path):
    "Copy what nbdev reads and writes, keeping the layout so nbdev's relative paths are the same."
    for name in COPIED:
        if not (ws.root / name).is_file():
            raise TitoError(f"cannot export: {name} is missing from the workspace {ws.root}")
        shutil.copy2(ws.root / name, copy / name)
    for folder in (ws.modules_dir, ws.lib_dir):
        if folder.is_dir():
            shutil.copytree(folder, _in_copy(ws, copy, folder), ignore=SKIPPED)


@contextmanager
def _without_in_test():
    "nbdev_export silently does nothing while IN_TEST is set."
    saved = os.environ.pop("IN_TEST", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["IN_TEST"] = saved


def _nbdev_export(ws: Workspace, copy: Path, module: Module):
    """Run nbdev's export of one notebook inside the copy (it also rebuilds `_modidx.py` from the whole package),
    after removing the files it exported before: a file the notebook no longer exports to must not stay behind."""
    from fastcore.xtras import working_directory
    from nbdev.doclinks import nbdev_export

    for path in exported_files(_in_copy(ws, copy, ws.lib_dir), _in_copy(ws, copy, module.notebook)):
        path.unlink()
    try:
        with _without_in_test(), working_directory(copy):
            nbdev_export(path=str(_in_copy(ws, copy, module.notebook)))
    except Exception as e:
        raise TitoError(f"{ws.rel(module.notebook)}: nbdev could not export it: "
                        f"{type(e).__name__}: {one_line(str(e))}") from None


# Imports each module named on the command line in turn, saying which one it is about to import (on stdout, after
# a marker that the imported code is unlikely to print), so a failure or a hang is put on the right module.
_IMPORTING = "tito-importing:"
_IMPORT_EACH = f"""import sys
for name in sys.argv[1:]:
    print({_IMPORTING!r} + name, flush=True)
    exec("import " + name)
"""


def _check_imports(ws: Workspace, copy: Path, module: Module, nb: Node):
    """Import every module exported from the notebook, one after another in one fresh Python inside the copy (one
    Python, not one per module: each start costs about half a second, and module 07 exports five files)."""
    lib = _in_copy(ws, copy, ws.lib_dir)
    names = []
    for path in exported_files(lib, _in_copy(ws, copy, module.notebook)):
        parts = path.relative_to(copy).with_suffix("").parts
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))  # a package by its name
    if not names:
        return
    try:
        done = subprocess.run([sys.executable, "-c", _IMPORT_EACH, *names], cwd=copy, env=tool_env(copy),
                              capture_output=True, text=True, timeout=IMPORT_TIMEOUT * len(names))
    except subprocess.TimeoutExpired as e:
        raise TitoError(f"{ws.rel(module.notebook)}: importing {_importing(e.stdout, names)} took over "
                        f"{IMPORT_TIMEOUT * len(names)} s") from None
    if done.returncode != 0:
        raise TitoError(_import_error(ws, copy, module, nb, _importing(done.stdout, names), done.stderr))


def _importing(stdout, names: list[str]) -> str:
    "The module the import loop was importing when it stopped, read from its stdout (bytes after a timeout)."
    text = stdout.decode(errors="replace") if isinstance(stdout, bytes) else stdout or ""
    said = [line[len(_IMPORTING):] for line in text.splitlines() if line.startswith(_IMPORTING)]
    return said[-1] if said and said[-1] in names else names[0]


def _culprit(ws: Workspace, copy: Path, module: Module, nb, path: Path) -> tuple[Module, object]:
    """The module (and its notebook) that exported `path`, a package file in the copy: importing one module runs
    others (the package's `__init__` imports autograd), and the error belongs to the notebook it is in."""
    src = source_notebook(path)
    if src is None or not src.is_relative_to(copy.resolve()):
        return module, nb
    original = (ws.root / src.relative_to(copy.resolve())).resolve()
    for other in ws.modules():
        if other.notebook.resolve() == original and other != module:
            try:
                return other, read_notebook(ws, other)
            except TitoError:
                return other, None
    return module, nb


def _import_error(ws: Workspace, copy: Path, module: Module, nb, dotted: str, stderr: str) -> str:
    "One line: the notebook, the cell the failing line was exported from (when known), and the exception."
    lib = _in_copy(ws, copy, ws.lib_dir)
    where, culprit = "", module
    frames = [(Path(m.group(1)), int(m.group(2))) for line in stderr.splitlines() if (m := TRACEBACK_FRAME.match(line))]
    inside = [(path, line) for path, line in frames if path.is_relative_to(lib)]
    if inside:
        culprit, nb = _culprit(ws, copy, module, nb, inside[-1][0])
        if nb is not None and (cid := cell_at(*inside[-1])) and (index := cell_index(nb, cid)) is not None:
            where = f", {cell_label(nb, index)}"
    reason = last_line(stderr) or "no error message"
    if culprit != module:
        return (f"{ws.rel(culprit.notebook)}{where}: its exported code fails when {dotted} (module {module.number}) "
                f"is imported: {reason}")
    return f"{ws.rel(module.notebook)}{where}: importing the exported {dotted} fails: {reason}"


def _copy_back(ws: Workspace, copy: Path, modules: list[Module]) -> list[str]:
    """Copy new or changed package files (and nbdev's modules/llms.txt) from the copy, and remove the files the
    exported `modules` no longer export to; the changed paths."""
    changed = []
    lib = _in_copy(ws, copy, ws.lib_dir)
    for src in sorted(lib.rglob("*")):
        if src.is_file() and "__pycache__" not in src.parts and src.suffix != ".pyc":
            if _sync_file(src, ws.lib_dir / src.relative_to(lib)):
                changed.append(ws.rel(ws.lib_dir / src.relative_to(lib)))
    for module in modules:
        for dst in exported_files(ws.lib_dir, module.notebook):
            if not (lib / dst.relative_to(ws.lib_dir)).exists():
                dst.unlink()
                changed.append(ws.rel(dst))
    llms = ws.modules_dir / "llms.txt"
    if _sync_file(_in_copy(ws, copy, llms), llms):
        changed.append(ws.rel(llms))
    return changed


def _sync_file(src: Path, dst: Path) -> bool:
    "Make `dst` a copy of `src` (or remove it when `src` is gone); whether anything changed."
    if not src.exists():
        if dst.exists():
            dst.unlink()
            return True
        return False
    if dst.is_file() and dst.read_bytes() == src.read_bytes():
        return False
    dst.parent.mkdir(parents=True, exist_ok=True)
    partial = dst.with_name(f".{dst.name}.tito-partial")
    shutil.copyfile(src, partial)
    os.replace(partial, dst)
    return True
