"""What the benchmarks measure side by side: tinytorch's plain path (the ops of modules 01-06), its fast path
(the kernels of modules 07 and 08, `tinytorch.perf.enable()`) and PyTorch, under one of two allocator settings.

Each path runs with the kernels switched as it needs them (`running`): the fast path inside `tinytorch.perf.enabled()`,
its compiled loops made ready before any timed step; the plain path and PyTorch with the kernels off.

The allocator is a setting of the whole process, so it is the same for every path of a measurement: glibc's malloc as
a process starts, or freed memory kept for reuse (module 07's `perf.reuse_freed_memory()`, called first thing in
every path's process, PyTorch's too). Workers started inside `with allocator("reuse"):` get the second.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import platform
import sys
from contextlib import contextmanager

PLAIN, FAST, TORCH = "plain", "fast", "torch"
PERF = "tinytorch.perf"
NOT_EXPORTED = "module 08 not exported"
SWITCH_BESIDE = "compiled_kernels.py"  # module 08 exports it beside the switch, tinytorch/perf/__init__.py
LABELS = {PLAIN: "plain", FAST: "fast", TORCH: "pytorch"}
ALLOCATORS = {
    "glibc": "glibc's malloc as every process starts (it returns freed blocks to the system)",
    "reuse": "freed memory reused: module 07's perf.reuse_freed_memory() in every path's process, PyTorch's too",
}
REUSE = "TINYTORCH_BENCH_REUSE_FREED_MEMORY"  # "1" in a worker's environment: its process reuses freed memory


def perf_spec():
    """Where tinytorch.perf would be imported from, or None when module 08 has not exported its switch there (module
    07's parts alone sit under an empty __init__.py)."""
    spec = importlib.util.find_spec(PERF)
    if spec is None or spec.origin is None or not os.path.isfile(os.path.join(os.path.dirname(spec.origin), SWITCH_BESIDE)):
        return None
    return spec


@functools.cache
def fast_missing() -> str:
    "Why the fast path cannot be measured ('' when it can): shown in its place in every report."
    if perf_spec() is None:
        return NOT_EXPORTED
    try:
        importlib.import_module(PERF)
    except Exception as e:  # modules 07 and 08 as exported, whatever is wrong with them: one line in the report
        return f"{PERF} does not import: {type(e).__name__}: {e}".splitlines()[0]
    return ""


def tinytorch_paths() -> list[str]:
    "The tinytorch paths there are to measure: plain, and fast when module 08 is exported."
    return [PLAIN] if fast_missing() else [PLAIN, FAST]


def can_reuse_freed_memory() -> bool:
    "Whether the 'reuse' setting can be measured here: module 08 exported, and glibc's malloc."
    return not fast_missing() and platform.libc_ver()[0] == "glibc"


@contextmanager
def allocator(setting: str):
    "Worker processes started inside the block run with the allocator `setting` (a key of ALLOCATORS)."
    if setting not in ALLOCATORS:
        raise ValueError(f"allocator must be one of {', '.join(ALLOCATORS)}, not {setting!r}")
    before = os.environ.pop(REUSE, None)
    if setting == "reuse":
        os.environ[REUSE] = "1"
    try:
        yield
    finally:
        os.environ.pop(REUSE, None)
        if before is not None:
            os.environ[REUSE] = before


def _set_allocator():
    "In a worker, before anything else: reuse freed memory if the worker was started to."
    if os.environ.get(REUSE) == "1" and not (can_reuse_freed_memory()
                                             and importlib.import_module(PERF).reuse_freed_memory()):
        raise RuntimeError("the allocator setting 'reuse' needs module 08 exported and glibc (Linux)")


@contextmanager
def running(path: str):
    """The process as `path` runs: the allocator setting it was started with, then the kernels: modules 07 and 08's for the
    fast path, off for the plain path and for PyTorch."""
    _set_allocator()
    if path == FAST:
        perf = importlib.import_module(PERF)
        with perf.enabled():
            perf.warm_up()  # the compiled loops get ready now (compiled, or loaded from disk), not in a timed step
            yield
        return
    perf = sys.modules.get(PERF)  # never imported: no kernel can be on
    if perf is None or not perf.is_enabled():
        yield
        return
    perf.disable()
    try:
        yield
    finally:
        perf.enable()
