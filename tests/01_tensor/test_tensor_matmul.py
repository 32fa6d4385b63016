"""Module 01: matrix multiplication (`@`, `Tensor.matmul`, `matmul`), against numpy."""
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from tinytorch.core.tensor import Tensor, matmul

pytestmark = pytest.mark.exercise("matmul")


def names_shape(message, shape):
    "The error message names `shape`, written as a tuple or a list."
    return str(tuple(shape)) in message or str(list(shape)) in message


def all_three(a, b):
    "a @ b through the operator, the method and the function."
    return [Tensor(a) @ Tensor(b), Tensor(a).matmul(Tensor(b)), matmul(Tensor(a), Tensor(b))]


@pytest.mark.parametrize("shape_a, shape_b, shape_out", [
    ((2, 3), (3, 4), (2, 4)),
    ((1, 1), (1, 1), (1, 1)),
    ((7, 2, 3), (7, 3, 4), (7, 2, 4)),
    ((5, 1, 2, 3), (4, 3, 6), (5, 4, 2, 6)),
    ((2, 3), (4, 3, 5), (4, 2, 5)),
    ((4, 2, 3), (3, 5), (4, 2, 5)),
    ((1, 3, 2, 3), (2, 1, 3, 2), (2, 3, 2, 2)),
    ((3,), (3,), ()),
    ((2, 3), (3,), (2,)),
    ((3,), (3, 4), (4,)),
    ((3,), (2, 3, 4), (2, 4)),
    ((2, 4, 3), (3,), (2, 4)),
])
def test_matmul_shapes_and_values_match_numpy(shape_a, shape_b, shape_out, rng):
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    expected = np.matmul(a, b)
    assert expected.shape == shape_out
    for out in all_three(a, b):
        assert isinstance(out, Tensor)
        assert out.shape == shape_out
        assert out.dtype == np.float64
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_matmul_known_values():
    a = Tensor([[1.0, 2.0], [3.0, 4.0]])
    b = Tensor([[5.0, 6.0], [7.0, 8.0]])
    np.testing.assert_array_equal((a @ b).numpy(), [[19.0, 22.0], [43.0, 50.0]])
    np.testing.assert_array_equal((b @ a).numpy(), [[23.0, 34.0], [31.0, 46.0]])
    assert (Tensor([1.0, 2.0, 3.0]) @ Tensor([4.0, 5.0, 6.0])).item() == 32.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_keeps_the_float_dtype(dtype):
    a = np.ones((2, 3), dtype=dtype)
    assert (Tensor(a) @ Tensor(a.T)).dtype == np.dtype(dtype)


def test_matmul_with_a_numpy_array_on_either_side_gives_a_tensor():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    for out in (a @ Tensor(b), Tensor(a) @ b):
        assert isinstance(out, Tensor)
        np.testing.assert_array_equal(out.numpy(), a @ b)


def test_matmul_does_not_modify_its_inputs():
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    ta, tb = Tensor(a.copy()), Tensor(b.copy())
    ta @ tb
    np.testing.assert_array_equal(ta.numpy(), a)
    np.testing.assert_array_equal(tb.numpy(), b)


@st.composite
def matmul_operands(draw):
    "Operands for a valid matmul: broadcastable batch dims, an inner size that agrees, 1-D on either side."
    (batch_a, batch_b), _ = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                                    min_side=1, max_side=3))
    n, k, m = draw(st.integers(1, 4)), draw(st.integers(1, 4)), draw(st.integers(1, 4))
    shape_a = (k,) if draw(st.booleans()) and draw(st.booleans()) else batch_a + (n, k)
    shape_b = (k,) if draw(st.booleans()) and draw(st.booleans()) else batch_b + (k, m)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    elements = st.floats(-10, 10, width=32)
    return draw(hnp.arrays(dtype, shape_a, elements=elements)), draw(hnp.arrays(dtype, shape_b, elements=elements))


@settings(max_examples=30, deadline=None)
@given(operands=matmul_operands())
def test_matmul_matches_numpy(operands):
    a, b = operands
    expected = np.matmul(a, b)
    tol = 1e-5 if expected.dtype == np.float32 else 1e-12
    for out in all_three(a, b):
        assert out.shape == expected.shape
        assert out.dtype == expected.dtype
        np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol * 100)


# --- shapes that do not multiply -----------------------------------------------------------------------------

@pytest.mark.parametrize("shape_a, shape_b", [
    ((2, 3), (4, 5)),
    ((2, 3), (2, 3)),
    ((3,), (4,)),
    ((2, 3), (4,)),
    ((3,), (4, 5)),
    ((5, 2, 3), (4, 5)),
    ((2, 2, 3), (3, 3, 4)),
    ((5, 1, 2, 3), (4, 2, 3, 6)),
    ((), (3,)),
    ((2, 3), ()),
    ((), ()),
])
def test_bad_matmul_shapes_raise_value_error_naming_matmul_and_both_shapes(shape_a, shape_b):
    a, b = Tensor(np.ones(shape_a)), Tensor(np.ones(shape_b))
    for call in (lambda: a @ b, lambda: a.matmul(b), lambda: matmul(a, b)):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "matmul" in message, message
        assert names_shape(message, shape_a) and names_shape(message, shape_b), message


@pytest.mark.parametrize("expr", [lambda t: t @ 2.0, lambda t: 2.0 @ t], ids=["t@2.0", "2.0@t"])
def test_matmul_with_a_python_number_is_a_value_error(expr):
    with pytest.raises(ValueError, match="matmul"):
        expr(Tensor(np.ones((2, 2))))


@st.composite
def misaligned_operands(draw):
    "Shapes whose inner sizes differ (with optional batch dims and 1-D operands)."
    k1, k2 = draw(st.lists(st.integers(1, 5), min_size=2, max_size=2, unique=True))
    batch = st.lists(st.integers(1, 3), max_size=2).map(tuple)
    shape_a = (k1,) if draw(st.booleans()) else draw(batch) + (draw(st.integers(1, 4)), k1)
    shape_b = (k2,) if draw(st.booleans()) else draw(batch) + (k2, draw(st.integers(1, 4)))
    return shape_a, shape_b


@settings(max_examples=40, deadline=None)
@given(shapes=misaligned_operands())
def test_misaligned_matmul_raises_value_error(shapes):
    shape_a, shape_b = shapes
    with pytest.raises(ValueError) as info:
        Tensor(np.ones(shape_a)) @ Tensor(np.ones(shape_b))
    message = str(info.value)
    assert "matmul" in message
    assert names_shape(message, shape_a) and names_shape(message, shape_b), message


def test_matmul_shape_error_is_raised_before_any_result_is_built(recorded_ops):
    Tensor(np.ones((2, 3))) @ Tensor(np.ones((3, 4)))
    assert recorded_ops, "control: a successful matmul is seen by the op recorder"
    recorded_ops.clear()
    with pytest.raises(ValueError, match="matmul"):
        Tensor(np.ones((2, 3))) @ Tensor(np.ones((4, 3)))
    with pytest.raises(ValueError, match="matmul"):
        Tensor(np.ones((2, 2, 3))) @ Tensor(np.ones((3, 3, 4)))
    assert recorded_ops == []
