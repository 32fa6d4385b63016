"""The mask makers: one convention (True = may attend), causal with n_queries != n_keys and offsets, padding."""
import numpy as np
import pytest

from tinytorch.core.attention import (create_bidirectional_mask, create_causal_mask, create_padding_mask,
                                      scaled_dot_product_attention)
from tinytorch.core.tensor import Tensor

pytestmark = pytest.mark.exercise("masks")


def test_causal_square():
    mask = create_causal_mask(4)
    assert mask.dtype == bool and mask.shape == (4, 4)
    np.testing.assert_array_equal(mask, np.tril(np.ones((4, 4), bool)))


@pytest.mark.parametrize("n, m, offset", [(2, 5, 0), (5, 2, 0), (3, 7, 4), (1, 6, 5), (4, 4, -1)])
def test_causal_rectangular_and_offset(n, m, offset):
    mask = create_causal_mask(n, m, offset=offset)
    assert mask.shape == (n, m)
    i, j = np.indices((n, m))
    np.testing.assert_array_equal(mask, j <= i + offset)


def test_causal_offset_is_the_bottom_rows_of_the_full_mask():
    # a KV cache: 3 new queries after 5 cached positions see exactly the last 3 rows of the 8 x 8 causal mask
    np.testing.assert_array_equal(create_causal_mask(3, 8, offset=5), create_causal_mask(8)[5:])


def test_padding_mask_shape_values_and_broadcast():
    mask = create_padding_mask([3, 0, 5], 5)
    assert mask.shape == (3, 1, 1, 5) and mask.dtype == bool
    np.testing.assert_array_equal(mask[:, 0, 0], [[1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]])
    assert np.broadcast_shapes(mask.shape, (3, 4, 2, 5)) == (3, 4, 2, 5)
    combined = mask & create_causal_mask(5)
    assert combined.shape == (3, 1, 5, 5)


def test_padding_mask_accepts_arrays_and_tensors():
    expected = create_padding_mask([2, 1], 3)
    np.testing.assert_array_equal(create_padding_mask(np.array([2, 1]), 3), expected)
    np.testing.assert_array_equal(create_padding_mask(Tensor(np.array([2, 1])), 3), expected)


@pytest.mark.parametrize("lengths", [[4], [-1], [[1, 2]]])
def test_padding_mask_rejects_bad_lengths(lengths):
    with pytest.raises(ValueError, match="lengths"):
        create_padding_mask(lengths, 3)


def test_bidirectional_mask():
    mask = create_bidirectional_mask(3)
    assert mask.shape == (3, 3) and mask.dtype == bool and mask.all()


def test_padded_keys_get_no_weight_in_any_head_or_query(rng):
    X = Tensor(rng.normal(size=(2, 3, 4, 5)))                  # (B, heads, n, d)
    _, weights = scaled_dot_product_attention(X, X, X, create_padding_mask([4, 2], 4))
    assert np.all(weights.data[1, :, :, 2:] == 0)
    np.testing.assert_allclose(weights.data.sum(-1), 1)


def test_padding_changes_nothing_for_the_real_tokens(rng):
    # a sequence of 3 real tokens padded to 5 gives the same outputs on its real tokens as the unpadded sequence
    X = rng.normal(size=(1, 5, 4))
    padded, _ = scaled_dot_product_attention(X, X, X, create_padding_mask([3], 5)[:, 0])
    alone, _ = scaled_dot_product_attention(X[:, :3], X[:, :3], X[:, :3])
    np.testing.assert_allclose(padded.data[:, :3], alone.data, atol=1e-12)
