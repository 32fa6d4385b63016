"""What the benchmarks measure side by side: tinytorch's plain path (the ops of modules 01-06), its fast path
(module 07's kernels, `tinytorch.perf.enable()`) and PyTorch.

Each path runs with the kernels switched as it needs them (`running`): the fast path inside `tinytorch.perf.enabled()`,
its compiled loops made ready before any timed step; the plain path and PyTorch with the kernels off.
"""
from __future__ import annotations

import functools
import importlib
import importlib.util
import sys
from contextlib import contextmanager

PLAIN, FAST, TORCH = "plain", "fast", "torch"
PERF = "tinytorch.perf"
NOT_EXPORTED = "module 07 not exported"
LABELS = {PLAIN: "plain", FAST: "fast", TORCH: "pytorch"}


def perf_spec():
    "Where tinytorch.perf would be imported from, or None when module 07 is not exported."
    return importlib.util.find_spec(PERF)


@functools.cache
def fast_missing() -> str:
    "Why the fast path cannot be measured ('' when it can): shown in its place in every report."
    if perf_spec() is None:
        return NOT_EXPORTED
    try:
        importlib.import_module(PERF)
    except Exception as e:  # module 07 as exported, whatever is wrong with it: one line in the report
        return f"{PERF} does not import: {type(e).__name__}: {e}".splitlines()[0]
    return ""


def tinytorch_paths() -> list[str]:
    "The tinytorch paths there are to measure: plain, and fast when module 07 is exported."
    return [PLAIN] if fast_missing() else [PLAIN, FAST]


@contextmanager
def running(path: str):
    "The kernels as `path` runs: module 07's for the fast path, off for the plain path and for PyTorch."
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
