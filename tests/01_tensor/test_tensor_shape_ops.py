"""Module 01: reshape, transpose and permute."""
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from tinytorch.core.tensor import Tensor, permute, reshape, transpose

pytestmark = pytest.mark.exercise("shape-ops")


def names_shape(message, shape):
    "The error message names `shape`, written as a tuple or a list."
    return str(tuple(shape)) in message or str(list(shape)) in message


def assert_same(out, expected):
    assert isinstance(out, Tensor)
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


X = np.arange(24.0).reshape(2, 3, 4)

# --- reshape ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args, expected_shape", [
    ((6, 4), (6, 4)),
    (((6, 4),), (6, 4)),
    (([6, 4],), (6, 4)),
    ((24,), (24,)),
    ((-1,), (24,)),
    ((4, -1), (4, 6)),
    ((-1, 2, 3), (4, 2, 3)),
    (((2, -1, 4),), (2, 3, 4)),
    ((1, 24, 1), (1, 24, 1)),
    ((2, 3, 2, 2), (2, 3, 2, 2)),
], ids=str)
def test_reshape_varargs_tuple_list_and_minus_one(args, expected_shape):
    for out in (Tensor(X).reshape(*args), reshape(Tensor(X), *args)):
        assert_same(out, X.reshape(expected_shape))


def test_reshape_to_and_from_a_scalar():
    assert_same(Tensor([5.0]).reshape(()), np.array(5.0, dtype=np.float32))
    assert_same(Tensor(np.array(5.0)).reshape(1, 1), np.array([[5.0]]))


@pytest.mark.parametrize("dtype", [np.float32, np.int64, bool])
def test_reshape_keeps_the_dtype(dtype):
    x = np.zeros((2, 3), dtype=dtype)
    assert Tensor(x).reshape(3, 2).dtype == np.dtype(dtype)


def test_reshape_of_a_contiguous_tensor_is_a_view():
    t = Tensor(X.copy())
    out = t.reshape(4, 6)
    assert np.shares_memory(out.numpy(), t.numpy())
    t.numpy()[0, 0, 0] = -1.0
    assert out.numpy()[0, 0] == -1.0


def test_reshape_of_a_non_contiguous_tensor_keeps_row_major_order():
    t = Tensor(X).transpose(0, 2)  # (4, 3, 2), not contiguous
    assert_same(t.reshape(-1), np.swapaxes(X, 0, 2).reshape(-1))
    assert_same(t.reshape(12, 2), np.swapaxes(X, 0, 2).reshape(12, 2))


def test_reshape_does_not_modify_the_input():
    t = Tensor(X.copy())
    t.reshape(6, 4)
    assert t.shape == (2, 3, 4)
    np.testing.assert_array_equal(t.numpy(), X)


@settings(max_examples=40, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4), data=st.data())
def test_reshape_to_any_shape_with_the_same_size_matches_numpy(shape, data):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    target = tuple(data.draw(st.permutations(shape)))
    if target and data.draw(st.booleans()):
        i = data.draw(st.integers(0, len(target) - 1))
        target = target[:i] + (-1,) + target[i + 1:]
    assert_same(Tensor(x).reshape(*target), x.reshape(target))
    assert_same(Tensor(x).reshape(target), x.reshape(target))


@pytest.mark.parametrize("shape, target", [
    ((2, 3), (4,)),
    ((2, 3), (4, 2)),
    ((6,), (-1, 4)),
    ((2, 3, 4), (5, 5)),
    ((2, 3), (-1, -1)),
    ((4,), ()),
])
def test_reshape_to_a_bad_size_raises_value_error_naming_both_shapes(shape, target):
    t = Tensor(np.zeros(shape))
    for call in (lambda: t.reshape(*target), lambda: t.reshape(target), lambda: reshape(t, target)):
        with pytest.raises(ValueError) as info:
            call()
        message = str(info.value)
        assert "reshape" in message, message
        assert names_shape(message, shape) and names_shape(message, target), message


# --- transpose ----------------------------------------------------------------------------------------------

@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=5, min_side=1, max_side=4),
                    elements=st.floats(-10, 10)))
def test_transpose_defaults_to_swapping_the_last_two_axes(x):
    expected = np.swapaxes(x, -2, -1)
    assert_same(Tensor(x).transpose(), expected)
    assert_same(transpose(Tensor(x)), expected)


@settings(max_examples=40, deadline=None)
@given(shape=hnp.array_shapes(min_dims=1, max_dims=5, min_side=1, max_side=4), data=st.data())
def test_transpose_swaps_the_two_given_axes(shape, data):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    axis = st.integers(-len(shape), len(shape) - 1)
    dim0, dim1 = data.draw(axis), data.draw(axis)
    expected = np.swapaxes(x, dim0, dim1)
    assert_same(Tensor(x).transpose(dim0, dim1), expected)
    assert_same(transpose(Tensor(x), dim0, dim1), expected)
    assert_same(Tensor(x).transpose(dim0, dim1).transpose(dim0, dim1), x)


def test_transpose_known_values():
    t = Tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    np.testing.assert_array_equal(t.transpose().numpy(), [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]])
    assert Tensor(np.zeros((2, 3, 4, 5))).transpose().shape == (2, 3, 5, 4)
    assert Tensor(np.zeros((2, 3, 4, 5))).transpose(0, 2).shape == (4, 3, 2, 5)
    assert Tensor(np.zeros((2, 3, 4, 5))).transpose(1, -1).shape == (2, 5, 4, 3)


def test_transpose_is_a_view():
    t = Tensor(X.copy())
    out = t.transpose(0, 2)
    assert np.shares_memory(out.numpy(), t.numpy())
    t.numpy()[1, 2, 3] = -7.0
    assert out.numpy()[3, 2, 1] == -7.0


@pytest.mark.parametrize("shape", [(), (4,)])
def test_default_transpose_needs_two_axes(shape):
    with pytest.raises(ValueError):
        Tensor(np.zeros(shape)).transpose()


@pytest.mark.parametrize("shape, dims", [((2, 3), (0, 2)), ((2, 3), (-3, 1)), ((4,), (0, 1)), ((2, 3, 4), (5, 0))])
def test_transpose_out_of_range_axes_is_a_value_error(shape, dims):
    with pytest.raises(ValueError):
        Tensor(np.zeros(shape)).transpose(*dims)


# --- permute --------------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(shape=hnp.array_shapes(min_dims=0, max_dims=5, min_side=1, max_side=4), data=st.data())
def test_permute_matches_numpy_transpose(shape, data):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    dims = tuple(data.draw(st.permutations(range(len(shape)))))
    # any axis may also be written as a negative number
    signed = tuple(d - len(shape) if data.draw(st.booleans()) else d for d in dims)
    expected = np.transpose(x, dims)
    assert_same(Tensor(x).permute(*signed), expected)
    assert_same(Tensor(x).permute(signed), expected)
    assert_same(permute(Tensor(x), *signed), expected)


def test_permute_known_shapes():
    t = Tensor(np.zeros((2, 3, 4, 5)))
    assert t.permute(0, 2, 1, 3).shape == (2, 4, 3, 5)
    assert t.permute(3, 2, 1, 0).shape == (5, 4, 3, 2)
    assert t.permute([1, 0, 3, 2]).shape == (3, 2, 5, 4)
    assert t.permute(-1, 0, 1, 2).shape == (5, 2, 3, 4)


def test_permute_is_a_view():
    t = Tensor(X.copy())
    out = t.permute(2, 0, 1)
    assert np.shares_memory(out.numpy(), t.numpy())
    t.numpy()[1, 2, 3] = -7.0
    assert out.numpy()[3, 1, 2] == -7.0


@pytest.mark.parametrize("dims", [
    (0, 1),
    (0, 1, 2, 3),
    (0, 0, 1),
    (0, 1, 3),
    (0, 1, -4),
    (2, -1, 0),
    (),
], ids=str)
def test_bad_permutation_is_a_value_error(dims):
    t = Tensor(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError):
        t.permute(*dims)
    with pytest.raises(ValueError):
        permute(t, dims)
