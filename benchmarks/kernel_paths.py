"""What the benchmarks measure side by side: tinytorch's plain path (the ops of modules 01-06), its fast path
(module 07's kernels, `tinytorch.perf.enable()`) and PyTorch.

Each path runs with the kernels switched as it needs them, through the capstone's own switch
(`tito.milestone.kernel_path`); PyTorch runs with them off, i.e. in the process as it is without tinytorch.perf.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager

from tito.workspace import TitoError
from tito.milestone import kernel_path, perf_spec

PLAIN, FAST, TORCH = "plain", "fast", "torch"
NOT_EXPORTED = "module 07 not exported"
LABELS = {PLAIN: "plain", FAST: "fast", TORCH: "pytorch"}


@functools.cache
def fast_missing() -> str:
    "Why the fast path cannot be measured ('' when it can): shown in its place in every report."
    if perf_spec() is None:
        return NOT_EXPORTED
    try:
        with kernel_path(True):
            pass
    except TitoError as e:
        return str(e)
    return ""


def tinytorch_paths() -> list[str]:
    "The tinytorch paths there are to measure: plain, and fast when module 07 is exported."
    return [PLAIN] if fast_missing() else [PLAIN, FAST]


@contextmanager
def running(path: str):
    "The kernels as `path` runs: module 07's for the fast path, off for the plain path and for PyTorch."
    with kernel_path(path == FAST):
        yield
