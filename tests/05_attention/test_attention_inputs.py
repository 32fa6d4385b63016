"""MultiHeadAttention's inputs as the seeds and PyTorch give them: float64 data, masks per sequence or per head,
separate keys and values; and a clear error for everything else."""
import numpy as np
import pytest

from tinytorch.core.attention import (MultiHeadAttention, create_causal_mask, memory_efficient_attention,
                                      scaled_dot_product_attention)
from tinytorch.core.autograd import gradcheck
from tinytorch.core.tensor import Tensor


@pytest.mark.exercise("multi-head-attention")
def test_float64_input_into_a_float32_layer_just_works(rng):
    mha = MultiHeadAttention(64, 8)
    x = Tensor(rng.normal(size=(2, 8, 64)), requires_grad=True)     # the seeds' Tensor(np.random.randn(2, 8, 64))
    out = mha(x)
    assert out.shape == (2, 8, 64) and out.dtype == np.float32
    out.backward(rng.normal(size=out.shape))
    assert x.grad.dtype == np.float64 and x.grad.shape == x.shape


@pytest.mark.exercise("multi-head-attention")
def test_a_mask_per_sequence_is_shared_by_the_heads_not_read_per_head(rng):
    # batch 2 == heads 2: matched from the right, (2, n, n) would be read as one mask per head
    mha = MultiHeadAttention(8, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 5, 8)))
    masks = np.stack([create_causal_mask(5), np.ones((5, 5), bool)])
    out, weights = mha(x, masks, return_weights=True)
    for b in range(2):
        alone, alone_weights = mha(x[b:b + 1], masks[b], return_weights=True)
        np.testing.assert_allclose(out.data[b], alone.data[0], atol=1e-12)
        np.testing.assert_allclose(weights.data[b], alone_weights.data[0], atol=1e-12)
    assert np.all(weights.data[0][:, np.triu(np.ones((5, 5), bool), 1)] == 0)    # sequence 0 causal, both heads
    assert np.all(weights.data[1] > 0)                                            # sequence 1 sees everything


@pytest.mark.exercise("multi-head-attention")
def test_a_mask_per_sequence_works_when_batch_and_heads_differ(rng):
    mha = MultiHeadAttention(8, 4).to(np.float64)
    x = Tensor(rng.normal(size=(3, 5, 8)))
    masks = rng.random((3, 5, 5)) < 0.7
    masks[..., 0] = True
    out = mha(x, masks)
    np.testing.assert_allclose(out.data[2], mha(x[2:], masks[2]).data[0], atol=1e-12)


@pytest.mark.exercise("multi-head-attention")
def test_masks_per_head_and_broadcast_heads_are_read_as_given(rng):
    mha = MultiHeadAttention(8, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 5, 8)))
    per_head = rng.random((2, 2, 5, 5)) < 0.7
    per_head[..., 0] = True
    _, weights = mha(x, per_head, return_weights=True)
    assert np.all(weights.data[~per_head] == 0)
    shared = per_head[:, :1]
    _, weights = mha(x, shared, return_weights=True)
    assert np.all(weights.data[~np.broadcast_to(shared, weights.shape)] == 0)


@pytest.mark.exercise("multi-head-attention")
@pytest.mark.parametrize("shape", [(5,), (3, 5, 5), (2, 3, 5, 5), (1, 2, 1, 5, 5), (2, 5)])
def test_a_mask_of_another_shape_is_an_error_naming_it(rng, shape):
    mha = MultiHeadAttention(8, 2)
    x = Tensor(rng.normal(size=(2, 5, 8)).astype(np.float32))
    with pytest.raises(ValueError, match=r"mask of shape \(" + ", ".join(map(str, shape))):
        mha(x, np.ones(shape, bool))


@pytest.mark.exercise("multi-head-attention")
def test_separate_values_for_cross_attention(rng):
    mha = MultiHeadAttention(6, 2).to(np.float64)
    x, keys, values = (Tensor(rng.normal(size=s), requires_grad=True) for s in [(2, 3, 6), (2, 5, 6), (2, 5, 6)])
    out, weights = mha(x, context=keys, value=values, return_weights=True)
    assert out.shape == (2, 3, 6) and weights.shape == (2, 2, 3, 5)
    # values change the output but not the weights; keys change both
    other = Tensor(rng.normal(size=(2, 5, 6)))
    _, same_weights = mha(x, context=keys, value=other, return_weights=True)
    np.testing.assert_array_equal(weights.data, same_weights.data)
    assert gradcheck(lambda a, k, v: mha(a, context=k, value=v), [x, keys, values])
    with pytest.raises(ValueError, match="length"):
        mha(x, context=keys, value=Tensor(rng.normal(size=(2, 4, 6))))


@pytest.mark.exercise("multi-head-attention")
@pytest.mark.parametrize("embed_dim, num_heads", [(8, 0), (8, -2), (0, 1), (8, 2.5), (8, 3)])
def test_sizes_that_make_no_layer_are_a_clear_error(embed_dim, num_heads):
    with pytest.raises(ValueError, match="MultiHeadAttention"):
        MultiHeadAttention(embed_dim, num_heads)


@pytest.mark.exercise("multi-head-attention")
def test_the_seeds_lower_triangular_tensor_mask(rng):
    x = Tensor(rng.normal(size=(1, 4, 8)))
    mha = MultiHeadAttention(8, 2).to(np.float64)
    np.testing.assert_array_equal(mha(x, Tensor(np.tril(np.ones((4, 4))))).data,
                                  mha(x, create_causal_mask(4)).data)
    Q = Tensor(rng.normal(size=(4, 3)))
    additive = np.triu(np.full((4, 4), -np.inf), k=1)              # 0 on and below the diagonal, -inf above
    np.testing.assert_array_equal(scaled_dot_product_attention(Q, Q, Q, additive)[0].data,
                                  scaled_dot_product_attention(Q, Q, Q, create_causal_mask(4))[0].data)


@pytest.mark.exercise("memory-efficient")
def test_memory_efficient_attention_takes_an_additive_mask_too(rng):
    Q, K, V = (Tensor(rng.normal(size=(2, 9, 4)), requires_grad=True) for _ in range(3))
    additive = np.where(rng.random((9, 9)) < 0.6, 0.0, -np.inf)
    expected = scaled_dot_product_attention(Q, K, V, additive)[0].data
    np.testing.assert_allclose(memory_efficient_attention(Q, K, V, additive, block_size=4).data, expected, atol=1e-12)
    assert gradcheck(lambda q, k, v: memory_efficient_attention(q, k, v, additive, block_size=4), [Q, K, V])
