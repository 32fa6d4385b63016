__version__ = "0.1.0"

import os as _os
import sys as _sys

# After each matrix product, OpenBLAS's idle threads spin for about 0.1 s waiting for the next one, holding the
# cores that tinytorch's own threads (`parallel_map`, module 01) need for the elementwise work in between. 2^20
# cycles (about 0.4 ms) frees them soon enough, yet bridges the short gaps between products: a thread that went to
# sleep takes longer to wake than that. OpenBLAS reads this once, when numpy loads: import tinytorch first.
if "numpy" not in _sys.modules:
    _os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "20")

# Gradients arrive with module 02 (autograd). Once it has been exported, importing any part of tinytorch turns
# them on, so `from tinytorch.core.tensor import Tensor` always gives tensors with `.backward()`.
from importlib.util import find_spec as _find_spec

if _find_spec("tinytorch.core.autograd") is not None:
    from .core import autograd as _autograd
