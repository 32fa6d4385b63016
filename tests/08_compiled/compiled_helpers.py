"""Helpers for the module 08 suite."""
import tinytorch.perf as perf

# What the fast path records for GELU, LayerNorm and attention: the compiled loops where numba is installed, else
# module 07's numpy kernels.
GELU_OP, LAYER_NORM_OP = ("fast_compiled_gelu", "fast_compiled_layer_norm") if perf.numba is not None \
    else ("fast_gelu", "fast_layer_norm")
ATTENTION_OP = "fast_compiled_attention" if perf.numba is not None else "fast_attention"
