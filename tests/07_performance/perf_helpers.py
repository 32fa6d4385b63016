"""Helpers for the module 07 suite: a fast kernel against the plain op it replaces."""
import numpy as np

import tinytorch.perf as perf

from tinytorch.core.autograd import gradcheck
from tinytorch.core.tensor import Tensor

# What the fast path records for GELU and LayerNorm: the compiled loops where numba is installed, else the numpy kernels.
GELU_OP, LAYER_NORM_OP = ("fast_compiled_gelu", "fast_compiled_layer_norm") if perf.numba is not None \
    else ("fast_gelu", "fast_layer_norm")
ATTENTION_OP = "fast_compiled_attention" if perf.numba is not None else "fast_attention"

TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-4, atol=2e-5), np.dtype(np.float64): dict(rtol=1e-9, atol=1e-11)}


def leaves(rng, *shapes, dtype=np.float64, scale=1.0):
    "Random tensors of `dtype` that require grad."
    return [Tensor((scale * rng.normal(size=s)).astype(dtype), requires_grad=True) for s in shapes]


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def run(fn, inputs, which: int, upstream, **kwargs):
    "fn on fresh copies of `inputs`: (output `which`, the copies' gradients after backward(upstream))."
    copies = [Tensor(t.data.copy(), requires_grad=t.requires_grad) for t in inputs]
    out = _outputs(fn(*copies, **kwargs))[which]
    out.backward(upstream)
    return out, [None if t.grad is None else t.grad.data for t in copies]


def assert_same_as_plain(fast, plain, inputs, seed=0, **kwargs):
    """For every output of `fast(*inputs, **kwargs)`: the fast kernel ran (its result is recorded as 'fast_...'), and
    its value and the gradient of every input under one random upstream gradient equal the plain op's (same dtype,
    same shape, equal to rounding). In float64, also gradcheck the fast kernel against central differences."""
    dtype = inputs[0].dtype
    count = len(_outputs(fast(*inputs, **kwargs)))
    for which in range(count):
        shape = _outputs(fast(*inputs, **kwargs))[which].shape
        upstream = np.random.default_rng(seed + which).normal(size=shape).astype(dtype)
        out, grads = run(fast, inputs, which, upstream, **kwargs)
        assert out._node.op.startswith("fast_"), f"the fast kernel did not run: the output was recorded as {out._node.op}"
        expected_out, expected_grads = run(plain, inputs, which, upstream, **kwargs)
        pairs = [("output", out.data, expected_out.data)] + [(f"gradient of input {i}", g, e)
                                                            for i, (g, e) in enumerate(zip(grads, expected_grads))]
        for what, got, expected in pairs:
            assert (got is None) == (expected is None), f"output {which}, {what}: only one path gave one"
            if got is not None:
                assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype, expected.dtype,
                                                                                    got.shape, expected.shape)
                np.testing.assert_allclose(got, expected, **TOLERANCE[np.dtype(dtype)], err_msg=f"output {which}, {what}")
        if dtype == np.float64:
            assert gradcheck(lambda *a: _outputs(fast(*a, **kwargs))[which], inputs), \
                f"gradcheck of output {which} of {getattr(fast, '__name__', fast)} failed"
