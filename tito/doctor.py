"""`tito system doctor`: is everything the course needs installed and configured?"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from tito.workspace import TitoError, Workspace, tool_env

MIN_PYTHON = (3, 10)
# import name = distribution; the last four come with the course's install (`.[course]`): the compiled loops of module
# 08, its thread limits, the test runner of `tito module complete`, and PyTorch, which the tests compare against.
PACKAGES = ("numpy", "nbdev", "nbgrader", "jupyterlab", "nbclient", "typer", "rich",
            "numba", "threadpoolctl", "pytest", "torch")
TOOLS = {"alembic": "nbgrader runs it to create its gradebook", "jupyter": "the Jupyter command line"}
REINSTALL = """.venv/bin/pip install -e ".[course]" in the course folder"""


@dataclass(frozen=True)
class Check:
    "One line of the doctor's report; `fix` says what to do when it is not ok."
    name: str
    ok: bool
    detail: str
    fix: str = ""


def run_checks() -> list[Check]:
    "Every check, in the order the report shows them."
    checks = [check_python(), *map(check_package, PACKAGES)]
    try:
        ws = Workspace.find()
    except TitoError as e:
        checks.append(Check("workspace", False, str(e), "run tito inside the course folder, or pass --root"))
    else:
        checks += [Check("workspace", True, str(ws.root)), check_nbdev_config(ws)]
    return checks + [check_kernel(), check_bin_dir(), *(check_tool(name, why) for name, why in TOOLS.items())]


def check_python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= MIN_PYTHON
    return Check("python", ok, f"{version} at {sys.executable}",
                 "" if ok else f"use Python {'.'.join(map(str, MIN_PYTHON))} or newer")


def check_package(name: str) -> Check:
    try:
        importlib.import_module(name)
        version = importlib.metadata.version(name)
    except Exception as e:  # an installed package can fail to import for many reasons; report it, whatever it is
        return Check(name, False, f"cannot import: {type(e).__name__}: {e}", REINSTALL)
    return Check(name, True, version)


def check_nbdev_config(ws: Workspace) -> Check:
    "pyproject.toml [tool.nbdev] must point at this workspace's package and notebooks and keep nbgrader metadata."
    from nbdev.config import get_config, is_nbdev

    name = "nbdev config"
    if not is_nbdev(ws.root) or Path(get_config(ws.root).config_path).resolve() != ws.root:
        return Check(name, False, f"no [tool.nbdev] in {ws.root / 'pyproject.toml'}",
                     "add [tool.nbdev] with lib_path, nbs_path and allowed_cell_metadata_keys")
    cfg = get_config(ws.root)
    problems = []
    if Path(cfg.lib_path).resolve() != ws.lib_dir.resolve():
        problems.append(f"lib_path is {cfg.lib_path}, not {ws.lib_dir}")
    if Path(cfg.nbs_path).resolve() != ws.modules_dir.resolve():
        problems.append(f"nbs_path is {cfg.nbs_path}, not {ws.modules_dir}")
    if "nbgrader" not in (cfg.get("allowed_cell_metadata_keys") or []):
        problems.append("allowed_cell_metadata_keys lacks 'nbgrader' (nbdev-clean would wipe the grading metadata)")
    if problems:
        return Check(name, False, "; ".join(problems), "fix [tool.nbdev] in pyproject.toml")
    return Check(name, True, f"lib_path={ws.rel(ws.lib_dir)}, nbs_path={ws.rel(ws.modules_dir)}, "
                             "keeps nbgrader metadata")


def check_kernel() -> Check:
    "A `python3` Jupyter kernel, which tito and nbgrader run notebooks in."
    try:
        from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

        spec = KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        return Check("python3 kernel", False, "no kernel named python3",
                     f"{sys.executable} -m ipykernel install --sys-prefix")
    except Exception as e:
        return Check("python3 kernel", False, f"{type(e).__name__}: {e}", REINSTALL)
    program = spec.argv[0] if spec.argv else ""
    found = shutil.which(program, path=tool_env()["PATH"]) if program else None
    if not found:
        return Check("python3 kernel", False, f"its program {program!r} is not found",
                     f"{sys.executable} -m ipykernel install --sys-prefix")
    return Check("python3 kernel", True, f"{spec.resource_dir} runs {program}")


def check_bin_dir() -> Check:
    "tito puts the folder of its own Python first on PATH for every tool it runs."
    folder = Path(sys.executable).parent
    ok = folder.is_dir() and os.access(folder, os.X_OK)
    return Check("python bin folder", ok, str(folder), "" if ok else "reinstall the virtual environment")


def check_tool(name: str, why: str) -> Check:
    found = shutil.which(name, path=tool_env()["PATH"])
    if found:
        return Check(name, True, found)
    return Check(name, False, f"not on PATH ({why})", REINSTALL)
