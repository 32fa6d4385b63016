__version__ = "0.1.0"

# Gradients arrive with module 02 (autograd). Once it has been exported, importing any part of tinytorch turns
# them on, so `from tinytorch.core.tensor import Tensor` always gives tensors with `.backward()`.
from importlib.util import find_spec as _find_spec

if _find_spec("tinytorch.core.autograd") is not None:
    from .core import autograd as _autograd  # noqa: F401 - imported for its effect: every op gets a gradient
