__version__ = "0.1.0"

import os as _os
import sys as _sys

# After each matrix product, OpenBLAS's idle threads spin for about 0.1 s waiting for the next one, holding the
# cores that tinytorch's own threads (`parallel_map`, module 01) would need if they started then. 2^26 cycles
# (about 27 ms) bridges every gap between the products of a training step, whose elementwise work at GPT sizes stays
# on the calling thread, so the BLAS threads never have to be woken (on a busy virtual machine that can take far
# longer than the work), and it frees the core soon after the products stop, for the threaded elementwise work of
# large inputs. OpenBLAS reads this once, when numpy loads: import tinytorch first.
if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "26")

# Gradients arrive with module 02 (autograd). Once it has been exported, importing any part of tinytorch turns
# them on, so `from tinytorch.core.tensor import Tensor` always gives tensors with `.backward()`.
from importlib.util import find_spec as _find_spec

if _find_spec("tinytorch.core.autograd") is not None:
    from .core import autograd as _autograd
