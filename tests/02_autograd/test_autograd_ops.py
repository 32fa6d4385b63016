"""The gradient rule of every module 01 op, driven from ONE table of cases.

Each case is a single op applied to fresh random inputs. `gradcheck` compares the analytic gradient of every input
with central differences in float64, contracted with a random upstream gradient, at every coordinate. The table
covers broadcast shapes ((3, 1) with (1, 4), 0-d tensors, Python numbers), batched and broadcast-batch matmul with
1-D operands, every reduction axis form, and every indexing form (slices, None, Ellipsis, repeated integer indices,
boolean masks).
"""
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

from tinytorch.core.autograd import GRADIENTS, gradcheck
from tinytorch.core.tensor import Tensor

MODULE_01_OPS = {"add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sqrt", "tanh", "abs", "matmul", "sum", "mean",
                 "max", "reshape", "transpose", "permute", "flatten", "broadcast_to", "getitem", "masked_fill"}


@dataclass(frozen=True)
class Positive:
    "An input shape whose values must be positive (log, sqrt, division, a base raised to a tensor power)."
    shape: tuple


@dataclass(frozen=True)
class Case:
    name: str
    op: str                  # the one op the expression records
    fn: Callable
    inputs: tuple            # one shape (or Positive(shape)) per tensor argument of fn

    def make_inputs(self, dtype=np.float64):
        "Fresh tensors that require grad, the same for a given case name every time."
        rng = np.random.default_rng(zlib.crc32(self.name.encode()))
        tensors = []
        for spec in self.inputs:
            if isinstance(spec, Positive):
                data = rng.uniform(0.5, 2.0, size=spec.shape)
            else:
                data = rng.normal(size=spec)
            tensors.append(Tensor(np.asarray(data, dtype=dtype), requires_grad=True))
        return tensors


MASK_34 = np.array([[True, False, False, True], [False, False, True, False], [True, True, False, False]])
MASK_3X1 = np.array([[True], [False], [True]])
MASK_4 = np.array([False, True, True, False])
REPEATED = np.array([0, 2, 2, 0, 2])                 # rows 0 and 2 are picked more than once: gradients add up
REPEATED_2D = np.array([[1, 1], [0, 1]])

CASES = [
    # --- arithmetic, with every kind of broadcasting ------------------------------------------------------------
    Case("add same shape", "add", lambda a, b: a + b, ((3, 4), (3, 4))),
    Case("add (3,1)+(1,4)", "add", lambda a, b: a + b, ((3, 1), (1, 4))),
    Case("add (4,)+(2,3,4)", "add", lambda a, b: a + b, ((4,), (2, 3, 4))),
    Case("add 0-d+(2,3)", "add", lambda a, b: a + b, ((), (2, 3))),
    Case("add 0-d+0-d", "add", lambda a, b: a + b, ((), ())),
    Case("add tensor+number", "add", lambda a: a + 1.5, ((2, 3),)),
    Case("radd number+tensor", "add", lambda a: 1.5 + a, ((2, 3),)),
    Case("add same tensor twice", "add", lambda a: a + a, ((2, 3),)),
    Case("sub (3,1)-(1,4)", "sub", lambda a, b: a - b, ((3, 1), (1, 4))),
    Case("sub (2,3)-(3,)", "sub", lambda a, b: a - b, ((2, 3), (3,))),
    Case("sub 0-d-(2,2)", "sub", lambda a, b: a - b, ((), (2, 2))),
    Case("rsub number-tensor", "sub", lambda a: 2.0 - a, ((2, 3),)),
    Case("mul (3,1)*(1,4)", "mul", lambda a, b: a * b, ((3, 1), (1, 4))),
    Case("mul (2,1,4)*(3,1)", "mul", lambda a, b: a * b, ((2, 1, 4), (3, 1))),
    Case("mul 0-d*(2,3)", "mul", lambda a, b: a * b, ((), (2, 3))),
    Case("mul same tensor", "mul", lambda a: a * a, ((2, 3),)),
    Case("rmul number*tensor", "mul", lambda a: 3.0 * a, ((2, 3),)),
    Case("div same shape", "div", lambda a, b: a / b, ((2, 3), Positive((2, 3)))),
    Case("div (3,1)/(1,4)", "div", lambda a, b: a / b, ((3, 1), Positive((1, 4)))),
    Case("div (2,3)/0-d", "div", lambda a, b: a / b, ((2, 3), Positive(()))),
    Case("div tensor/number", "div", lambda a: a / 4.0, ((2, 3),)),
    Case("rdiv number/tensor", "div", lambda a: 2.0 / a, (Positive((2, 3)),)),
    Case("neg", "neg", lambda a: -a, ((2, 3),)),
    Case("neg 0-d", "neg", lambda a: -a, ((),)),
    # --- pow: number exponent, tensor exponent (with broadcasting), number base -------------------------------------
    Case("pow square", "pow", lambda a: a ** 2, ((2, 3),)),
    Case("pow cube of negatives", "pow", lambda a: a ** 3, ((3, 4),)),
    Case("pow fractional", "pow", lambda a: a ** 0.5, (Positive((2, 3)),)),
    Case("pow negative exponent", "pow", lambda a: a ** -1.5, (Positive((2, 3)),)),
    Case("pow tensor exponent", "pow", lambda a, b: a ** b, (Positive((2, 3)), (2, 3))),
    Case("pow tensor exponent (3,1)**(1,4)", "pow", lambda a, b: a ** b, (Positive((3, 1)), (1, 4))),
    Case("pow 0-d exponent", "pow", lambda a, b: a ** b, (Positive((2, 3)), ())),
    Case("pow 0-d base", "pow", lambda a, b: a ** b, (Positive(()), (2, 3))),
    Case("rpow number**tensor", "pow", lambda b: 2.0 ** b, ((2, 3),)),
    # --- elementwise functions -------------------------------------------------------------------------------------
    Case("exp", "exp", lambda a: a.exp(), ((2, 3),)),
    Case("exp 0-d", "exp", lambda a: a.exp(), ((),)),
    Case("log", "log", lambda a: a.log(), (Positive((2, 3)),)),
    Case("sqrt", "sqrt", lambda a: a.sqrt(), (Positive((2, 3)),)),
    Case("tanh", "tanh", lambda a: a.tanh(), ((2, 3, 2),)),
    Case("abs", "abs", lambda a: a.abs(), ((2, 3, 2),)),
    Case("abs builtin", "abs", lambda a: abs(a), ((3, 4),)),
    Case("abs 0-d", "abs", lambda a: abs(a), ((),)),
    # --- matmul: 2-D, batched, broadcast batch dims, 1-D operands ----------------------------------------------------
    Case("matmul 2-D", "matmul", lambda a, b: a @ b, ((3, 4), (4, 2))),
    Case("matmul square", "matmul", lambda a, b: a @ b, ((3, 3), (3, 3))),
    Case("matmul batched", "matmul", lambda a, b: a @ b, ((2, 3, 4), (2, 4, 5))),
    Case("matmul broadcast batch (5,1,2,3)@(4,3,2)", "matmul", lambda a, b: a @ b, ((5, 1, 2, 3), (4, 3, 2))),
    Case("matmul broadcast batch (2,1,3,4)@(1,3,4,2)", "matmul", lambda a, b: a @ b, ((2, 1, 3, 4), (1, 3, 4, 2))),
    Case("matmul batch@matrix", "matmul", lambda a, b: a @ b, ((2, 3, 4), (4, 5))),
    Case("matmul matrix@batch", "matmul", lambda a, b: a @ b, ((2, 3), (4, 3, 5))),
    Case("matmul vector@vector", "matmul", lambda a, b: a @ b, ((4,), (4,))),
    Case("matmul vector@matrix", "matmul", lambda a, b: a @ b, ((4,), (4, 3))),
    Case("matmul matrix@vector", "matmul", lambda a, b: a @ b, ((3, 4), (4,))),
    Case("matmul vector@batch", "matmul", lambda a, b: a @ b, ((3,), (2, 3, 4))),
    Case("matmul batch@vector", "matmul", lambda a, b: a @ b, ((2, 4, 3), (3,))),
    Case("matmul method", "matmul", lambda a, b: a.matmul(b), ((2, 3), (3, 2))),
    # --- reductions: axis None / int / negative / tuple, with and without keepdims ------------------------------------
    *[Case(f"{red} axis={axis} keepdims={keep}", red,
           (lambda red, axis, keep: lambda a: getattr(a, red)(axis=axis, keepdims=keep))(red, axis, keep),
           ((2, 3, 4),))
      for red in ("sum", "mean", "max")
      for axis in (None, 0, 1, -1, (0, 2), (-1, -3), (0, 1, 2))
      for keep in (False, True)],
    Case("sum 0-d", "sum", lambda a: a.sum(), ((),)),
    Case("mean 0-d", "mean", lambda a: a.mean(), ((),)),
    Case("max 0-d", "max", lambda a: a.max(), ((),)),
    Case("max positional axis", "max", lambda a: a.max(1), ((3, 5),)),
    # --- shape ops ------------------------------------------------------------------------------------------------
    Case("reshape", "reshape", lambda a: a.reshape(6, 4), ((2, 3, 4),)),
    Case("reshape -1", "reshape", lambda a: a.reshape(-1), ((2, 3, 4),)),
    Case("reshape tuple", "reshape", lambda a: a.reshape((4, 1, 6)), ((2, 3, 4),)),
    Case("reshape 0-d to (1,1)", "reshape", lambda a: a.reshape(1, 1), ((),)),
    Case("transpose default", "transpose", lambda a: a.transpose(), ((3, 4),)),
    Case("transpose square", "transpose", lambda a: a.transpose(), ((3, 3),)),
    Case("transpose (0,2)", "transpose", lambda a: a.transpose(0, 2), ((2, 3, 4),)),
    Case("transpose (-3,-1)", "transpose", lambda a: a.transpose(-3, -1), ((2, 3, 4),)),
    Case("transpose (1,0) of 3-D", "transpose", lambda a: a.transpose(1, 0), ((2, 3, 4),)),
    Case("permute (2,0,1)", "permute", lambda a: a.permute(2, 0, 1), ((2, 3, 4),)),
    Case("permute (1,2,0)", "permute", lambda a: a.permute(1, 2, 0), ((2, 3, 4),)),
    Case("permute negative", "permute", lambda a: a.permute(-1, 0, -2), ((2, 3, 4),)),
    Case("permute tuple 4-D", "permute", lambda a: a.permute((3, 1, 0, 2)), ((2, 3, 2, 3),)),
    Case("T of a matrix", "transpose", lambda a: a.T, ((3, 4),)),
    Case("flatten all", "flatten", lambda a: a.flatten(), ((2, 3, 4),)),
    Case("flatten (1, 2)", "flatten", lambda a: a.flatten(1, 2), ((2, 3, 4, 2),)),
    Case("flatten (-3, -2)", "flatten", lambda a: a.flatten(-3, -2), ((2, 3, 4, 2),)),
    Case("flatten 0-d", "flatten", lambda a: a.flatten(), ((),)),
    Case("broadcast_to new and stretched axes", "broadcast_to", lambda a: a.broadcast_to((2, 3, 4)), ((3, 1),)),
    Case("broadcast_to ints", "broadcast_to", lambda a: a.broadcast_to(2, 4), ((4,),)),
    Case("broadcast_to 0-d", "broadcast_to", lambda a: a.broadcast_to((2, 3)), ((),)),
    Case("expand with -1", "broadcast_to", lambda a: a.expand(2, -1, 4), ((3, 1),)),
    Case("expand middle axis", "broadcast_to", lambda a: a.expand(2, 5, 3), ((2, 1, 3),)),
    # --- indexing -------------------------------------------------------------------------------------------------
    Case("getitem int", "getitem", lambda a: a[1], ((3, 4),)),
    Case("getitem negative int", "getitem", lambda a: a[-1, -2], ((3, 4),)),
    Case("getitem slice", "getitem", lambda a: a[1:3], ((4, 3),)),
    Case("getitem strided slices", "getitem", lambda a: a[::2, 1::2], ((4, 5),)),
    Case("getitem reversed slice", "getitem", lambda a: a[::-1], ((4, 2),)),
    Case("getitem None", "getitem", lambda a: a[None, 1:], ((3, 4),)),
    Case("getitem Ellipsis", "getitem", lambda a: a[..., 1], ((2, 3, 4),)),
    Case("getitem int Ellipsis None", "getitem", lambda a: a[1, ..., None], ((2, 3, 4),)),
    Case("getitem 0-d empty tuple", "getitem", lambda a: a[()], ((),)),
    Case("getitem repeated rows", "getitem", lambda a: a[REPEATED], ((3, 4),)),
    Case("getitem repeated rows as list", "getitem", lambda a: a[[1, 1, 1, 0]], ((3, 4),)),
    Case("getitem repeated 2-D index", "getitem", lambda a: a[REPEATED_2D], ((3, 4),)),
    Case("getitem repeated index Tensor", "getitem", lambda a: a[Tensor(REPEATED)], ((3, 4),)),
    Case("getitem repeated columns", "getitem", lambda a: a[:, [3, 3, 0]], ((3, 4),)),
    Case("getitem negative index aliasing a positive one", "getitem", lambda a: a[[0, -3, 0]], ((3, 4),)),
    Case("getitem repeated pairs", "getitem", lambda a: a[np.array([0, 2, 0]), np.array([1, 3, 1])], ((3, 4),)),
    Case("getitem boolean mask", "getitem", lambda a: a[MASK_34], ((3, 4),)),
    Case("getitem boolean row mask", "getitem", lambda a: a[np.array([True, False, True])], ((3, 4),)),
    Case("getitem boolean mask Tensor", "getitem", lambda a: a[Tensor(MASK_4)], ((4, 2),)),
    # --- masked_fill: full-shape and broadcast masks ----------------------------------------------------------------
    Case("masked_fill full mask", "masked_fill", lambda a: a.masked_fill(MASK_34, 0.0), ((3, 4),)),
    Case("masked_fill mask (3,1)", "masked_fill", lambda a: a.masked_fill(MASK_3X1, -1.0), ((3, 4),)),
    Case("masked_fill mask (4,)", "masked_fill", lambda a: a.masked_fill(MASK_4, 7.0), ((2, 3, 4),)),
    Case("masked_fill causal mask", "masked_fill",
         lambda a: a.masked_fill(np.triu(np.ones((3, 3), dtype=bool), k=1), -5.0), ((2, 3, 3),)),
    Case("masked_fill Tensor mask", "masked_fill", lambda a: a.masked_fill(Tensor(MASK_4), 0.0), ((3, 4),)),
]
IDS = [case.name for case in CASES]
assert len(set(IDS)) == len(IDS), "case names must be unique (they seed the inputs)"
EXERCISE = {  # the exercise that writes each op's gradient rule
    **dict.fromkeys(["add", "sub", "mul", "div", "neg"], "arithmetic-gradients"),
    **dict.fromkeys(["pow", "exp", "log", "sqrt", "tanh", "abs"], "elementwise-gradients"),
    "matmul": "matmul-gradient", **dict.fromkeys(["sum", "mean", "max"], "reduction-gradients"),
    **dict.fromkeys(["reshape", "transpose", "permute", "flatten", "broadcast_to", "getitem", "masked_fill"],
                    "shape-gradients"),
}
PARAMS = [pytest.param(case, id=case.name, marks=pytest.mark.exercise(EXERCISE[case.op])) for case in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_gradient_matches_central_differences(case):
    assert gradcheck(case.fn, case.make_inputs()) is True


@pytest.mark.parametrize("case", PARAMS)
def test_case_records_exactly_its_op(case, recorded_nodes):
    "Each case exercises the op it claims to, and nothing else (so the table is a per-op table)."
    case.fn(*case.make_inputs())
    assert recorded_nodes == [case.op]


@pytest.mark.exercise("backward")
def test_table_covers_every_module_01_op():
    assert {case.op for case in CASES} == MODULE_01_OPS
    assert MODULE_01_OPS <= set(GRADIENTS)


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("case", PARAMS)
def test_gradient_has_shape_and_dtype_of_its_input(case, dtype, rng):
    inputs = case.make_inputs(dtype)
    out = case.fn(*inputs)
    assert out.dtype == dtype
    out.backward(rng.normal(size=out.shape))
    for x in inputs:
        assert x.grad is not None
        assert x.grad.shape == x.shape
        assert x.grad.dtype == dtype




@pytest.mark.parametrize("case", PARAMS)
def test_rule_returns_gradients_in_the_input_dtype(case, monkeypatch, rng):
    """In float32 every rule hands back float32 gradients (no silent upcast to float64 inside backward, which would
    double the memory and time of the backward pass of a float32 model)."""
    returned = []
    rule = GRADIENTS[case.op]

    def watched(grad, out, *inputs, **attrs):
        grads = rule(grad, out, *inputs, **attrs)
        returned.extend((x.dtype, np.asarray(g).dtype) for x, g in zip(inputs, grads) if g is not None)
        return grads

    monkeypatch.setitem(GRADIENTS, case.op, watched)
    inputs = case.make_inputs(np.float32)
    out = case.fn(*inputs)
    out.backward(rng.normal(size=out.shape).astype(np.float32))
    assert returned and all(got == want for want, got in returned), returned


# --- points the random table does not reach ------------------------------------------------------------------------

@pytest.mark.exercise("reduction-gradients")
def test_max_splits_the_gradient_evenly_between_ties():
    "Ties share the upstream gradient equally (as torch.amax does), so it still sums to the upstream gradient."
    x = Tensor(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0], [5.0, 0.0, 1.0]]), requires_grad=True)
    x.max(axis=1).backward(np.array([1.0, 3.0, -2.0]))
    np.testing.assert_allclose(x.grad.data, [[0, 0.5, 0.5], [1, 1, 1], [-2, 0, 0]], rtol=1e-15)


@pytest.mark.exercise("elementwise-gradients")
def test_pow_exponent_gradient_at_a_zero_base():
    "d(0**y)/dy = 0 for y > 0: the function is the constant 0 there."
    base = Tensor(np.array([0.0, 1.5]))
    exponent = Tensor(np.array([2.0, 0.5]), requires_grad=True)
    (base ** exponent).backward(np.ones(2))
    np.testing.assert_allclose(exponent.grad.data, [0.0, 1.5 ** 0.5 * np.log(1.5)], rtol=1e-14)


@pytest.mark.exercise("elementwise-gradients")
def test_pow_zero_exponent_gradient_at_a_zero_base():
    "x**0 is the constant 1, so its gradient is 0 everywhere, x = 0 included."
    x = Tensor(np.array([0.0, 2.0]), requires_grad=True)
    (x ** 0.0).backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0])
