"""The thread count both libraries run with, so every benchmark compares like with like.

numpy's BLAS sets it (OPENBLAS_NUM_THREADS, or all cores by default); PyTorch is given the same count.
"""
import functools
import os

import numpy as np  # noqa: F401  (loads numpy's BLAS, which threadpoolctl then finds)

THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@functools.cache
def threads() -> int:
    "numpy's BLAS thread count, read with threadpoolctl; without it, from the environment or the cores there are."
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return _from_environment()
    blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
    numpy_blas = [lib for lib in blas if f"{os.sep}numpy" in lib["filepath"]] or blas  # not PyTorch's, if it has one
    return max((lib["num_threads"] for lib in numpy_blas), default=1)


def _from_environment() -> int:
    for name in THREAD_VARIABLES:
        if os.environ.get(name, "").strip().isdigit():
            return max(1, int(os.environ[name]))
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@functools.cache
def torch_like_numpy():
    "PyTorch set to numpy's thread count, or None when it is not installed."
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads())
    return torch
