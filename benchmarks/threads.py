"""The thread count both libraries run with, so every benchmark compares like with like."""
from tinytorch.core.tensor import num_threads


def threads() -> int:
    "tinytorch's thread count: numpy's BLAS threads (set with OPENBLAS_NUM_THREADS; all cores by default)."
    return num_threads()


def torch_like_numpy():
    "PyTorch set to tinytorch's thread count, or None when it is not installed."
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads())
    return torch
