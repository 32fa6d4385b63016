"""Gradients against PyTorch: one table of composite expressions, each written once and evaluated by both libraries
in float64 with the same inputs and the same random upstream gradient. Forward values and the gradients of ALL
inputs must agree to 1e-10. Together the expressions use every module 01 op."""
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")

from tinytorch.core.tensor import Tensor  # noqa: E402

pytestmark = pytest.mark.oracle


MODULE_01_OPS = {"add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "abs", "matmul", "sum", "mean",
                 "max", "reshape", "transpose", "permute", "flatten", "broadcast_to", "getitem", "masked_fill"}


class Ours:
    "The few calls whose spelling differs between the libraries, for tinytorch."
    const = staticmethod(lambda array: array)
    sum = staticmethod(lambda x, axis=None, keepdims=False: x.sum(axis=axis, keepdims=keepdims))
    mean = staticmethod(lambda x, axis=None, keepdims=False: x.mean(axis=axis, keepdims=keepdims))
    max = staticmethod(lambda x, axis=None, keepdims=False: x.max(axis=axis, keepdims=keepdims))


class Torch:
    "The same calls for PyTorch."
    const = staticmethod(lambda array: torch.from_numpy(array))
    sum = staticmethod(lambda x, axis=None, keepdims=False:
                       x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims))
    mean = staticmethod(lambda x, axis=None, keepdims=False:
                        x.mean() if axis is None else x.mean(dim=axis, keepdim=keepdims))
    max = staticmethod(lambda x, axis=None, keepdims=False:
                       x.amax() if axis is None else x.amax(dim=axis, keepdim=keepdims))


@dataclass(frozen=True)
class Positive:
    shape: tuple


@dataclass(frozen=True)
class Expression:
    name: str
    fn: Callable             # fn(lib, *tensors), lib is Ours or Torch
    inputs: tuple            # one shape (or Positive(shape)) per tensor

    def arrays(self):
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        return [rng.uniform(0.5, 2.0, size=s.shape) if isinstance(s, Positive) else rng.normal(size=s)
                for s in self.inputs]


def softmax(L, x, axis=-1):
    e = (x - L.max(x, axis, True)).exp()
    return e / L.sum(e, axis, True)


def layer_norm(L, x, gain, shift):
    centred = x - L.mean(x, -1, True)
    variance = L.mean(centred * centred, -1, True)
    return centred / (variance + 1e-5).sqrt() * gain + shift


def nll(L, logits, rows, targets):
    shifted = logits - L.max(logits, -1, True)
    log_probs = shifted - L.sum(shifted.exp(), -1, True).log()
    return -L.mean(log_probs[L.const(rows), L.const(targets)])


def attention(L, q, k, v, blocked):
    scores = (q @ k.transpose(-2, -1)) / 2.0
    return softmax(L, scores.masked_fill(L.const(blocked), -1e9)) @ v


CAUSAL_3X5 = np.triu(np.ones((3, 5), dtype=bool), k=1)   # True = blocked (masked_fill's convention)
ROWS_3X1 = np.array([[True], [False], [True]])
IDS_REPEATED = np.array([[1, 1, 4], [0, 1, 1]])
MASK_45 = np.array([[True, False, True, False, False], [False, False, True, True, False],
                    [True, True, False, False, True], [False, True, False, False, False]])

EXPRESSIONS = [
    Expression("mlp", lambda L, x, w, b, v: L.mean((x @ w + b).tanh() @ v, axis=0),
               ((4, 3), (3, 5), (5,), (5, 2))),
    Expression("broadcast arithmetic (3,1) (1,4) (4,) 0-d",
               lambda L, a, b, c, d: (a - b) * c / (d ** 2 + 1.0), ((3, 1), (1, 4), (4,), ())),
    Expression("softmax", lambda L, x: softmax(L, x), ((3, 5),)),
    Expression("log-softmax NLL, repeated targets",
                            lambda L, x: nll(L, x, np.array([0, 1, 2, 2, 0]), np.array([1, 1, 4, 4, 1])),
                            ((3, 5),)),
    Expression("layer norm", layer_norm, ((4, 6), (6,), (6,))),
    Expression("masked attention, batch matmul",
                            lambda L, q, k, v: attention(L, q, k, v, CAUSAL_3X5), ((2, 3, 4), (2, 5, 4), (2, 5, 4))),
    Expression("broadcast batch matmul, permute, reshape",
               lambda L, a, b: (a @ b).permute(3, 0, 1, 2).reshape(2, -1).tanh(), ((5, 1, 2, 3), (4, 3, 2))),
    Expression("embedding lookup with repeated ids",
               lambda L, table, w: (table[L.const(IDS_REPEATED)] @ w).tanh(), ((6, 3), (3, 2))),
    Expression("tensor exponents", lambda L, a, b, c: (a ** b + 2.0 ** c).log(), (Positive((3, 1)), (1, 4), (4,))),
    Expression("1-D matmuls", lambda L, v, m, u: L.sum((v @ m) * u) * ((m @ u) @ v), ((3,), (3, 4), (4,))),
    Expression("tuple-axis reductions",
               lambda L, x: L.sum(x, (0, 2)) * L.max(x, (-1, 0)) + L.mean(x, (0, -1)), ((2, 3, 4),)),
    Expression("slices, None, Ellipsis, boolean mask",
               lambda L, x: L.sum(x[1:, ::2] * x[None, :3, 1:4][0], 1) + x[..., -1][:3] + L.sum(x[L.const(MASK_45)]),
               ((4, 5),)),
    Expression("elementwise: sqrt, neg, rsub, tanh",
               lambda L, x: ((x * x + 1.0).sqrt() - (-x)).tanh() / (2.0 - x.tanh()), ((3, 4),)),
    Expression("divide by the row max (no ties)", lambda L, x: x / L.max(x, 1, True), (Positive((3, 4)),)),
    Expression("masked_fill with a broadcast mask",
               lambda L, x, y: L.mean(x.masked_fill(L.const(ROWS_3X1), 0.0) * y, axis=1), ((2, 3, 4), (4,))),
    Expression("transpose, permute, reshape, matmul",
               lambda L, x, w: x.transpose(0, 2).permute(1, 0, 2).reshape(3, 8) @ w, ((2, 3, 4), (8, 2))),
    Expression("abs and the builtin abs", lambda L, x: (abs(x) * x).tanh() + x.abs(), ((3, 4),)),
    Expression("flatten, T, expand, broadcast_to",
               lambda L, x, w, b: (x.flatten(1) @ w.T).tanh() * b.expand(2, -1) + b.broadcast_to((2, 3)),
               ((2, 3, 4), (3, 12), (3,))),
    Expression("flatten ranges and expand of a middle axis",
               lambda L, x, y: x.flatten(-3, -2).flatten(0, 1) * y.expand(2, 4, 2).flatten(end_dim=1),
               ((2, 2, 2, 2), (2, 1, 2))),
    Expression("max keepdims and mean of squares",
               lambda L, x, y: L.max(x * y, axis=-1, keepdims=True) ** 2 + L.mean(y, axis=0), ((2, 3, 3), (3, 3))),
]


def _expression(param):
    return param.values[0] if hasattr(param, "values") else param


IDS = [_expression(e).name for e in EXPRESSIONS]


@pytest.mark.exercise("reduction-gradients")
@pytest.mark.parametrize("expression", EXPRESSIONS, ids=IDS)
def test_forward_and_all_gradients_match_torch(expression, rng):
    arrays = expression.arrays()
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    out, expected = expression.fn(Ours, *ours), expression.fn(Torch, *theirs)

    assert out.dtype == np.float64 and out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-10, atol=1e-10)

    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    for i, (x, tx) in enumerate(zip(ours, theirs)):
        assert x.grad is not None and x.grad.shape == x.shape, f"input {i}"
        np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-10, atol=1e-10, err_msg=f"input {i}")


NEW_OP_EXPRESSIONS = [e for e in EXPRESSIONS if any(w in e.name for w in ("abs", "flatten"))]


@pytest.mark.exercise("elementwise-gradients")
@pytest.mark.parametrize("expression", NEW_OP_EXPRESSIONS, ids=[e.name for e in NEW_OP_EXPRESSIONS])
def test_float32_forward_and_gradients_match_torch(expression):
    "The same expressions in float32: values and gradients stay float32 and agree with PyTorch's float32 to rounding."
    arrays = [a.astype(np.float32) for a in expression.arrays()]
    ours = [Tensor(a.copy(), requires_grad=True) for a in arrays]
    theirs = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    out, expected = expression.fn(Ours, *ours), expression.fn(Torch, *theirs)
    assert out.dtype == np.float32 and out.shape == tuple(expected.shape)
    np.testing.assert_allclose(out.data, expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    upstream = np.random.default_rng(7).normal(size=out.shape).astype(np.float32)
    out.backward(upstream)
    expected.backward(torch.from_numpy(upstream))
    for i, (x, tx) in enumerate(zip(ours, theirs)):
        assert x.grad.dtype == np.float32, f"input {i}"
        np.testing.assert_allclose(x.grad.data, tx.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"input {i}")


@pytest.mark.exercise("reduction-gradients")
def test_expressions_use_every_module_01_op(recorded_nodes):
    for e in map(_expression, EXPRESSIONS):
        e.fn(Ours, *[Tensor(a, requires_grad=True) for a in e.arrays()])
    assert set(recorded_nodes) == MODULE_01_OPS
