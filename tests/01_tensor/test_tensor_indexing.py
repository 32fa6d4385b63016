"""Module 01: indexing (`__getitem__`, `getitem`) and `masked_fill`."""
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from tinytorch.core.tensor import Tensor, getitem, masked_fill

pytestmark = pytest.mark.exercise("indexing")


def names_shape(message, shape):
    "The error message names `shape`, written as a tuple or a list."
    return str(tuple(shape)) in message or str(list(shape)) in message


def assert_same(out, expected):
    expected = np.asarray(expected)
    assert isinstance(out, Tensor)
    assert out.shape == expected.shape
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out.numpy(), expected)


X = np.arange(60.0).reshape(3, 4, 5)

# --- basic and integer-array indexing ---------------------------------------------------------------------

INDICES = [
    1,
    -1,
    (1, 2),
    (1, 2, 3),
    (-1, -2, -3),
    slice(None, None, 2),
    slice(1, None),
    slice(None, None, -1),
    (slice(None), 0),
    (0, slice(1, 3), slice(None, None, 2)),
    None,
    (None, 1),
    (slice(None), None, 2),
    Ellipsis,
    (Ellipsis, 0),
    (0, Ellipsis),
    (Ellipsis, None),
    (1, Ellipsis, slice(1, 3)),
    [0, 2],
    np.array([2, 0, 2, 1]),
    np.array([[0, 1], [2, 2]]),
    (np.array([0, 2]), slice(None), np.array([1, 4])),
    (slice(None), np.array([3, 0])),
    (np.array([[0], [2]]), np.array([1, 3])),
    (Ellipsis, np.array([4, 4, 0])),
]


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_indexing_matches_numpy(index):
    t = Tensor(X)
    assert_same(t[index], X[index])
    assert_same(getitem(t, index), X[index])


def test_single_element_index_gives_a_scalar_tensor():
    out = Tensor(X)[1, 2, 3]
    assert isinstance(out, Tensor)
    assert out.shape == ()
    assert out.item() == X[1, 2, 3]


@pytest.mark.parametrize("dtype", [np.float32, np.int64, bool])
def test_indexing_keeps_the_dtype(dtype):
    x = np.ones((3, 4), dtype=dtype)
    assert Tensor(x)[1:].dtype == np.dtype(dtype)
    assert Tensor(x)[np.array([0, 0])].dtype == np.dtype(dtype)


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=5))
def test_basic_indices_match_numpy(data, shape):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    index = data.draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    assert_same(Tensor(x)[index], x[index])


@settings(max_examples=40, deadline=None)
@given(data=st.data(), shape=hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=5))
def test_integer_array_indices_match_numpy(data, shape):
    x = np.arange(float(np.prod(shape))).reshape(shape)
    index = data.draw(hnp.integer_array_indices(shape))
    assert_same(Tensor(x)[index], x[index])
    as_tensors = tuple(Tensor(i) for i in index)
    assert_same(Tensor(x)[as_tensors], x[index])


def test_indexing_does_not_modify_the_input():
    t = Tensor(X.copy())
    t[1]
    t[np.array([0, 2])]
    t[t > 10]
    np.testing.assert_array_equal(t.numpy(), X)


def test_out_of_range_index_is_an_index_error():
    with pytest.raises(IndexError):
        Tensor(X)[3]
    with pytest.raises(IndexError):
        Tensor(X)[np.array([0, 7])]


# --- embedding-style lookups and Tensor indices --------------------------------------------------------

@pytest.mark.parametrize("index_as_tensor", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_embedding_lookup(index_as_tensor, dtype, rng):
    vocab, dim, batch, time = 11, 4, 3, 5
    weight = rng.standard_normal((vocab, dim)).astype(dtype)
    ids = rng.integers(0, vocab, size=(batch, time))
    out = Tensor(weight)[Tensor(ids) if index_as_tensor else ids]
    assert out.shape == (batch, time, dim)
    assert out.dtype == np.dtype(dtype)
    for b in range(batch):
        for t in range(time):
            np.testing.assert_array_equal(out.numpy()[b, t], weight[ids[b, t]])


@pytest.mark.parametrize("index, expected_index", [
    (lambda: Tensor(np.array([2, 0])), np.array([2, 0])),
    (lambda: Tensor(np.array([[1, 1], [0, 2]], dtype=np.int32)), np.array([[1, 1], [0, 2]])),
    (lambda: Tensor(np.int64(1)), 1),
    (lambda: (Tensor(np.array([0, 2])), slice(1, 3)), (np.array([0, 2]), slice(1, 3))),
    (lambda: (slice(None), Tensor(np.array([3])), Tensor(np.array([4]))),
     (slice(None), np.array([3]), np.array([4]))),
], ids=["1d", "2d-int32", "0d", "tensor-and-slice", "two-tensors"])
def test_integer_tensor_as_index(index, expected_index):
    assert_same(Tensor(X)[index()], X[expected_index])


# --- boolean masks -----------------------------------------------------------------------------------------

def test_boolean_numpy_mask_selects_elements():
    mask = (X % 7) == 0
    assert_same(Tensor(X)[mask], X[mask])


def test_boolean_tensor_mask_from_a_comparison():
    t = Tensor(X)
    assert_same(t[t > 30.5], X[X > 30.5])


def test_boolean_mask_over_the_first_axis():
    rows = np.array([True, False, True])
    assert_same(Tensor(X)[rows], X[rows])
    assert_same(Tensor(X)[Tensor(rows)], X[rows])
    assert_same(Tensor(X)[:, np.array([False, True, True, False])], X[:, [1, 2]])


@settings(max_examples=30, deadline=None)
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4),
                    elements=st.floats(-10, 10)), data=st.data())
def test_boolean_masks_match_numpy(x, data):
    mask = data.draw(hnp.arrays(bool, x.shape))
    assert_same(Tensor(x)[mask], x[mask])
    assert_same(Tensor(x)[Tensor(mask)], x[mask])


# --- masked_fill -------------------------------------------------------------------------------------------------

M = np.array([[1.0, -2.0, 3.0], [-4.0, 5.0, -6.0]])


@pytest.mark.parametrize("mask", [
    np.array([[True, False, False], [False, True, True]]),
    np.array([True, False, True]),
    np.array([[False], [True]]),
    np.array([[True, False, True]]),
    np.array(True),
    np.array(False),
    np.array([[1, 0, 0], [0, 1, 1]]),
    np.array([0, 1, 1]),
], ids=["full", "row", "column", "1x3", "scalar-true", "scalar-false", "ints-full", "ints-row"])
@pytest.mark.parametrize("as_tensor", [False, True])
def test_masked_fill_fills_where_mask_is_true(mask, as_tensor):
    t = Tensor(M.copy())
    mask_arg = Tensor(mask) if as_tensor else mask
    expected = np.where(mask.astype(bool), -1e9, M)
    assert_same(t.masked_fill(mask_arg, -1e9), expected)
    assert_same(masked_fill(t, mask_arg, -1e9), expected)
    np.testing.assert_array_equal(t.numpy(), M)  # the input is unchanged


def test_masked_fill_with_a_float_0_1_tensor_mask():
    mask = Tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # from Python numbers: float32 zeros and ones
    out = Tensor(M).masked_fill(mask, 0.0)
    np.testing.assert_array_equal(out.numpy(), [[0.0, -2.0, 3.0], [-4.0, 5.0, 0.0]])


def test_masked_fill_with_a_comparison_mask():
    t = Tensor(M)
    np.testing.assert_array_equal(t.masked_fill(t < 0, 0.0).numpy(), np.maximum(M, 0.0))


@pytest.mark.parametrize("value", [0.0, -np.inf, np.inf, 7, -1e9, 0.1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_fill_value_and_dtype(value, dtype):
    x = M.astype(dtype)
    mask = np.array([True, False, True])
    out = Tensor(x).masked_fill(mask, value)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), np.where(mask, np.asarray(value, dtype=dtype), x))


@pytest.mark.parametrize("value", [np.float64(-1e9), np.float64(0.1), np.int64(3)], ids=repr)
def test_masked_fill_with_a_numpy_scalar_value_keeps_the_tensor_dtype(value):
    x = M.astype(np.float32)
    mask = np.array([True, False, True])
    out = Tensor(x).masked_fill(mask, value)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.numpy(), np.where(mask, np.float32(value), x))


def test_masked_fill_with_a_scalar_tensor_value():
    mask = np.array([True, False, True])
    out = Tensor(M).masked_fill(mask, Tensor(np.float64(-5.0)))
    np.testing.assert_array_equal(out.numpy(), np.where(mask, -5.0, M))


def test_masked_fill_integer_tensor():
    ids = np.array([[3, 4, 5]])
    out = Tensor(ids).masked_fill(np.array([False, True, False]), 0)
    assert out.dtype == ids.dtype
    np.testing.assert_array_equal(out.numpy(), [[3, 0, 5]])


def test_masked_fill_of_a_causal_mask_over_batched_scores(rng):
    scores = rng.standard_normal((2, 3, 4, 4))
    allowed = np.tril(np.ones((4, 4), dtype=bool))
    out = Tensor(scores).masked_fill(~allowed, -np.inf)
    assert out.shape == scores.shape
    np.testing.assert_array_equal(out.numpy(), np.where(allowed, scores, -np.inf))


@settings(max_examples=40, deadline=None)
@given(x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4),
                    elements=st.floats(-10, 10)), data=st.data())
def test_masked_fill_broadcasts_masks_like_numpy(x, data):
    # a mask shape that broadcasts to x's shape: drop leading axes, set some axes to 1
    keep = data.draw(st.integers(0, x.ndim))
    mask_shape = tuple(1 if data.draw(st.booleans()) else n for n in x.shape[x.ndim - keep:])
    mask = data.draw(hnp.arrays(bool, mask_shape))
    before = x.copy()
    out = Tensor(x).masked_fill(mask, 99.0)
    assert_same(out, np.where(mask, 99.0, x))
    np.testing.assert_array_equal(x, before)


@pytest.mark.parametrize("shape, mask_shape", [
    ((2, 3), (2,)),
    ((2, 3), (3, 3)),
    ((2, 3), (4, 1)),
    ((2, 3, 4), (3, 1, 1)),
    ((5,), (4,)),
])
def test_masked_fill_mask_that_does_not_broadcast_is_a_value_error_naming_both_shapes(shape, mask_shape):
    t = Tensor(np.zeros(shape))
    mask = np.ones(mask_shape, dtype=bool)
    for mask_arg in (mask, Tensor(mask)):
        with pytest.raises(ValueError) as info:
            t.masked_fill(mask_arg, 1.0)
        message = str(info.value)
        assert names_shape(message, shape) and names_shape(message, mask_shape), message
