"""Module 01: elementwise arithmetic, broadcasting, shape errors, elementwise functions and comparisons."""
import operator

import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from tinytorch.core.tensor import Tensor, add, div, exp, log, mul, neg, power, sqrt, sub, tanh

# (name the error message must contain, operator, functional form, numpy reference)
BINARY_OPS = [
    ("add", operator.add, add, np.add),
    ("sub", operator.sub, sub, np.subtract),
    ("mul", operator.mul, mul, np.multiply),
    ("div", operator.truediv, div, np.true_divide),
    ("pow", operator.pow, power, np.power),
]
BINARY_IDS = [name for name, *_ in BINARY_OPS]
EXERCISE = {"pow": "elementwise"}  # the exercise that writes each op; the others are `arithmetic`'s
BINARY_PARAMS = [pytest.param(*case, id=case[0], marks=pytest.mark.exercise(EXERCISE.get(case[0], "arithmetic")))
                 for case in BINARY_OPS]
TOL = {np.dtype(np.float32): dict(rtol=1e-6, atol=1e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-12)}


def assert_tensor_matches(t, expected):
    "`t` is a Tensor holding exactly `expected`'s shape and dtype, and its values up to rounding."
    expected = np.asarray(expected)
    assert isinstance(t, Tensor), f"expected a Tensor, got {type(t).__name__}"
    assert t.shape == expected.shape
    assert t.dtype == expected.dtype
    np.testing.assert_allclose(t.numpy(), expected, **TOL.get(expected.dtype, {}))


def names_shape(message, shape):
    "The error message names `shape`, written as a tuple or a list."
    return str(tuple(shape)) in message or str(list(shape)) in message


# --- the operators on small known values ----------------------------------------------------------------------

A = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
B = np.array([[0.5, -1.0, 2.0], [3.0, 0.25, -4.0]])


@pytest.mark.parametrize("name, op, fn, ref", BINARY_PARAMS)
def test_operator_and_function_match_numpy(name, op, fn, ref):
    a, b = Tensor(A), Tensor(B)
    assert_tensor_matches(op(a, b), ref(A, B))
    assert_tensor_matches(fn(a, b), ref(A, B))


@pytest.mark.exercise("arithmetic")
def test_known_values():
    a, b = Tensor([1.0, 2.0, 3.0]), Tensor([4.0, 5.0, 6.0])
    np.testing.assert_array_equal((a + b).numpy(), [5, 7, 9])
    np.testing.assert_array_equal((a - b).numpy(), [-3, -3, -3])
    np.testing.assert_array_equal((a * b).numpy(), [4, 10, 18])
    np.testing.assert_array_equal((b / a).numpy(), np.array([4, 2.5, 2], dtype=np.float32))
    np.testing.assert_array_equal((a ** 2).numpy(), [1, 4, 9])
    np.testing.assert_array_equal((-a).numpy(), [-1, -2, -3])


@pytest.mark.parametrize("name, op, fn, ref", BINARY_PARAMS)
def test_operators_do_not_modify_their_inputs(name, op, fn, ref):
    a_data, b_data = A.copy(), B.copy()
    a, b = Tensor(a_data), Tensor(b_data)
    op(a, b)
    op(a, 2.0)
    op(3.0, b)
    np.testing.assert_array_equal(a.numpy(), A)
    np.testing.assert_array_equal(b.numpy(), B)


@pytest.mark.exercise("arithmetic")
def test_result_is_a_new_array():
    a = Tensor(A.copy())
    out = a + 0.0
    out.numpy()[...] = 99
    np.testing.assert_array_equal(a.numpy(), A)


@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_unary_minus_and_neg(dtype):
    x = np.array([[1, -2], [0, 3]], dtype=dtype)
    assert_tensor_matches(-Tensor(x), -x)
    assert_tensor_matches(neg(Tensor(x)), -x)


# --- Python numbers on either side ---------------------------------------------------------------------------

X = np.array([0.5, 1.0, 2.0, 4.0], dtype=np.float32)


@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("expr, expected", [
    (lambda t: t + 2, X + np.float32(2)),
    (lambda t: 2 + t, np.float32(2) + X),
    (lambda t: t - 2, X - np.float32(2)),
    (lambda t: 2 - t, np.float32(2) - X),
    (lambda t: t * 3, X * np.float32(3)),
    (lambda t: 3 * t, np.float32(3) * X),
    (lambda t: t / 2, X / np.float32(2)),
    (lambda t: 2 / t, np.float32(2) / X),
    (lambda t: t ** 3, X ** np.float32(3)),
    (lambda t: 2 ** t, np.float32(2) ** X),
    (lambda t: t ** 0.5, X ** np.float32(0.5)),
], ids=["t+2", "2+t", "t-2", "2-t", "t*3", "3*t", "t/2", "2/t", "t**3", "2**t", "t**0.5"])
def test_python_numbers_on_either_side(expr, expected):
    assert_tensor_matches(expr(Tensor(X)), expected)


@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("expr", [
    lambda t: t * 0.1, lambda t: 0.1 * t, lambda t: t + 1, lambda t: 1 - t, lambda t: t / 3,
    lambda t: 3 / t, lambda t: t ** 2, lambda t: 2.5 ** t, lambda t: t - 1e-3,
], ids=["t*0.1", "0.1*t", "t+1", "1-t", "t/3", "3/t", "t**2", "2.5**t", "t-1e-3"])
def test_python_number_keeps_the_float_tensor_dtype(dtype, expr):
    x = np.array([0.5, 1.5, 3.0], dtype=dtype)
    out = expr(Tensor(x))
    assert out.dtype == np.dtype(dtype)
    # Same value as numpy, which applies the Python number in the array's dtype.
    np.testing.assert_array_equal(out.numpy(), expr(x))


@pytest.mark.exercise("arithmetic")
def test_float64_tensor_with_python_number_is_exact():
    x = np.array([1.0, 3.0, 1e-300])
    np.testing.assert_array_equal((Tensor(x) * 0.1).numpy(), x * 0.1)
    np.testing.assert_array_equal((Tensor(x) + 1e300).numpy(), x + 1e300)
    np.testing.assert_array_equal((1 / 3 - Tensor(x)).numpy(), 1 / 3 - x)


@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("expr", [lambda t: t + 1, lambda t: 1 + t, lambda t: t * 2, lambda t: t - 1,
                                  lambda t: t ** 2], ids=["t+1", "1+t", "t*2", "t-1", "t**2"])
def test_integer_tensor_with_python_int_stays_integer(expr):
    ids = np.array([[0, 5], [7, 2]], dtype=np.int64)
    out = expr(Tensor(ids))
    assert out.dtype == np.dtype(np.int64)
    np.testing.assert_array_equal(out.numpy(), expr(ids))


@pytest.mark.exercise("arithmetic")
def test_integer_tensors_divide_to_floats():
    out = Tensor(np.array([1, 2, 3])) / Tensor(np.array([2, 2, 2]))
    assert out.dtype.kind == "f"
    np.testing.assert_allclose(out.numpy(), [0.5, 1.0, 1.5])


@pytest.mark.exercise("arithmetic")
def test_integer_tensors_add_as_integers():
    out = Tensor(np.array([1, 2])) + Tensor(np.array([10, 20]))
    assert_tensor_matches(out, np.array([11, 22]))


@pytest.mark.exercise("arithmetic")
def test_mixed_float_dtypes_promote_like_numpy():
    a32 = np.array([1.5, 2.5], dtype=np.float32)
    b64 = np.array([0.1, 0.2])
    assert_tensor_matches(Tensor(a32) + Tensor(b64), a32 + b64)
    assert_tensor_matches(Tensor(b64) * Tensor(a32), b64 * a32)


# --- numpy arrays on the left still give a Tensor --------------------------------------------------------------

@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("op", [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow],
                         ids=["add", "sub", "mul", "div", "pow"])
def test_numpy_array_on_the_left_gives_a_tensor(op):
    left = np.array([[1.0], [2.0]])
    right = np.array([0.5, 1.0, 2.0])
    assert_tensor_matches(op(left, Tensor(right)), op(left, right))


@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("scalar", [np.float64(2.0), np.float32(2.0)])
def test_numpy_scalar_on_the_left_gives_a_tensor(scalar):
    out = scalar * Tensor(X)
    assert isinstance(out, Tensor)
    np.testing.assert_allclose(out.numpy(), X * 2)


# --- broadcasting, against numpy ------------------------------------------------------------------------------

FINITE = dict(allow_nan=False, allow_infinity=False)


@st.composite
def broadcast_operands(draw, name):
    "Two float arrays whose shapes broadcast, with values that keep `name` finite."
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    (shape_a, shape_b), _ = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                                    min_side=1, max_side=4))
    if name == "pow":  # positive bases, moderate exponents
        a = draw(hnp.arrays(dtype, shape_a, elements=st.floats(0.125, 10, width=32)))
        b = draw(hnp.arrays(dtype, shape_b, elements=st.floats(-3, 3, width=32)))
    elif name == "div":  # denominators away from zero
        a = draw(hnp.arrays(dtype, shape_a, elements=st.floats(-100, 100, width=32)))
        b = draw(hnp.arrays(dtype, shape_b, elements=st.floats(0.125, 100, width=32)))
        b = b * draw(hnp.arrays(dtype, shape_b, elements=st.sampled_from([-1.0, 1.0])))
    else:
        a = draw(hnp.arrays(dtype, shape_a, elements=st.floats(-100, 100, width=32)))
        b = draw(hnp.arrays(dtype, shape_b, elements=st.floats(-100, 100, width=32)))
    return a, b


def _broadcast_test(name, op, fn, ref):
    @settings(max_examples=30, deadline=None)
    @given(operands=broadcast_operands(name))
    def check(operands):
        a, b = operands
        expected = ref(a, b)
        assert_tensor_matches(op(Tensor(a), Tensor(b)), expected)
        assert_tensor_matches(fn(Tensor(a), Tensor(b)), expected)
        # one operand a plain numpy array, on either side
        assert_tensor_matches(op(Tensor(a), b), expected)
        assert_tensor_matches(op(a, Tensor(b)), expected)
    return check


@pytest.mark.parametrize("name, op, fn, ref", BINARY_PARAMS)
def test_broadcasting_matches_numpy(name, op, fn, ref):
    _broadcast_test(name, op, fn, ref)()


@pytest.mark.exercise("arithmetic")
@pytest.mark.parametrize("shape_a, shape_b, shape_out", [
    ((2, 3), (3,), (2, 3)),
    ((2, 1), (1, 3), (2, 3)),
    ((4, 1, 3), (2, 1), (4, 2, 3)),
    ((), (2, 2), (2, 2)),
    ((5, 1, 1), (1, 1), (5, 1, 1)),
])
def test_broadcast_result_shapes(shape_a, shape_b, shape_out):
    a, b = Tensor(np.ones(shape_a)), Tensor(np.ones(shape_b))
    for op in (operator.add, operator.sub, operator.mul, operator.truediv, operator.pow):
        assert op(a, b).shape == shape_out
        assert op(b, a).shape == shape_out


# --- shapes that do not broadcast ------------------------------------------------------------------------------

@st.composite
def non_broadcastable_shapes(draw):
    "Two shapes with one trailing-aligned axis whose lengths differ and are both larger than one."
    side = st.integers(1, 4)
    a = draw(st.lists(side, min_size=1, max_size=4))
    b = draw(st.lists(side, min_size=1, max_size=4))
    k = draw(st.integers(1, min(len(a), len(b))))
    m, n = draw(st.lists(st.integers(2, 5), min_size=2, max_size=2, unique=True))
    a[-k], b[-k] = m, n
    return tuple(a), tuple(b)


def _mismatch_test(name, op, fn):
    @settings(max_examples=25, deadline=None)
    @given(shapes=non_broadcastable_shapes())
    def check(shapes):
        shape_a, shape_b = shapes
        a, b = Tensor(np.ones(shape_a)), Tensor(np.ones(shape_b))
        for call in (lambda: op(a, b), lambda: fn(a, b), lambda: op(a, np.ones(shape_b)),
                     lambda: op(np.ones(shape_a), b)):
            with pytest.raises(ValueError) as info:
                call()
            message = str(info.value)
            assert name in message, message
            assert names_shape(message, shape_a) and names_shape(message, shape_b), message
    return check


@pytest.mark.parametrize("name, op, fn, ref", BINARY_PARAMS)
def test_non_broadcastable_shapes_raise_value_error_naming_op_and_shapes(name, op, fn, ref):
    _mismatch_test(name, op, fn)()


@pytest.mark.parametrize("name, op, fn, ref", BINARY_PARAMS)
def test_shape_error_is_raised_before_any_result_is_built(name, op, fn, ref, recorded_ops):
    a, b = Tensor(np.ones((2, 3))), Tensor(np.ones((4, 3)))
    op(Tensor(np.ones((2, 3))), Tensor(np.ones((1, 3))))
    assert recorded_ops, "control: a successful op is seen by the op recorder"
    recorded_ops.clear()
    with pytest.raises(ValueError, match=name):
        op(a, b)
    assert recorded_ops == []
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 3)))
    np.testing.assert_array_equal(b.numpy(), np.ones((4, 3)))


# --- elementwise functions ---------------------------------------------------------------------------------------

UNARY = [
    ("exp", exp, np.exp, st.floats(-20, 20, width=32)),
    ("log", log, np.log, st.floats(2.0**-10, 1e3, width=32)),
    ("sqrt", sqrt, np.sqrt, st.floats(0, 1e3, width=32)),
    ("tanh", tanh, np.tanh, st.floats(-10, 10, width=32)),
]


@pytest.mark.exercise("elementwise")
@pytest.mark.parametrize("name, fn, ref, elements", UNARY, ids=[u[0] for u in UNARY])
def test_elementwise_functions_match_numpy(name, fn, ref, elements):
    @settings(max_examples=25, deadline=None)
    @given(x=hnp.arrays(st.sampled_from([np.float32, np.float64]), hnp.array_shapes(min_dims=0, max_dims=3),
                        elements=elements))
    def check(x):
        before = x.copy()
        t = Tensor(x)
        assert_tensor_matches(getattr(t, name)(), ref(x))
        assert_tensor_matches(fn(t), ref(x))
        np.testing.assert_array_equal(t.numpy(), before)
    check()


@pytest.mark.exercise("elementwise")
def test_elementwise_known_values():
    np.testing.assert_allclose(Tensor([0.0, 1.0]).exp().numpy(), [1.0, np.e], rtol=1e-6)
    np.testing.assert_allclose(Tensor([1.0, np.e]).log().numpy(), [0.0, 1.0], rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(Tensor([4.0, 9.0]).sqrt().numpy(), [2.0, 3.0])
    np.testing.assert_allclose(Tensor([0.0, 100.0, -100.0]).tanh().numpy(), [0.0, 1.0, -1.0])


# --- comparisons ------------------------------------------------------------------------------------------------

COMPARISONS = [operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]


@pytest.mark.exercise("as-array")
@pytest.mark.parametrize("op", COMPARISONS, ids=["lt", "le", "gt", "ge", "eq", "ne"])
def test_comparisons_give_bool_tensors_without_gradient(op):
    a = np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = np.array([2.0, 2.0, 2.0])
    ta = Tensor(a, requires_grad=True)
    for out, expected in [(op(ta, Tensor(b)), op(a, b)), (op(ta, 2.0), op(a, 2.0)), (op(ta, b), op(a, b))]:
        assert isinstance(out, Tensor)
        assert out.dtype == np.dtype(bool)
        assert out.requires_grad is False
        np.testing.assert_array_equal(out.numpy(), expected)
