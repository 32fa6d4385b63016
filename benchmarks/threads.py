"""The thread count both libraries run with, so every benchmark compares like with like."""
import os


def threads() -> int:
    "numpy's BLAS thread count (threadpoolctl if installed, else OPENBLAS/OMP_NUM_THREADS, else all cores)."
    try:
        from threadpoolctl import threadpool_info
        counts = [pool["num_threads"] for pool in threadpool_info() if pool.get("user_api") == "blas"]
        if counts:
            return max(counts)
    except ImportError:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        if os.environ.get(var):
            return int(os.environ[var])
    return os.cpu_count() or 1


def torch_like_numpy():
    "PyTorch set to numpy's thread count, or None when it is not installed."
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads())
    return torch
