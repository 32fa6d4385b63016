"""SelfAttention, MultiHeadAttention and KVCache: structure, values, gradients w.r.t. input and all parameters."""
import numpy as np
import pytest

from tinytorch.core.attention import (KVCache, MultiHeadAttention, SelfAttention, create_causal_mask,
                                      create_padding_mask)
from tinytorch.core.autograd import gradcheck, no_grad
from tinytorch.core.layers import Module
from tinytorch.core.tensor import Tensor


def project(x, layer):
    return x @ layer.weight.data + layer.bias.data


@pytest.mark.exercise("multi-head-attention")
def test_multi_head_structure():
    mha = MultiHeadAttention(12, 3)
    assert isinstance(mha, Module)
    assert (mha.embed_dim, mha.num_heads, mha.head_dim) == (12, 3, 4)
    names = [name for name, _ in mha.named_parameters()]
    assert len(names) == 8 and {n.split(".")[0] for n in names} == {"q_proj", "k_proj", "v_proj", "out_proj"}
    assert all(p.shape == (12, 12) for p in mha.parameters() if p.ndim == 2)
    assert mha.num_parameters() == 4 * 12 * 12 + 4 * 12
    assert len(MultiHeadAttention(12, 3, bias=False).parameters()) == 4


@pytest.mark.exercise("multi-head-attention")
@pytest.mark.parametrize("embed_dim, num_heads", [(10, 3), (8, 16), (6, 4)])
def test_heads_must_divide_embed_dim(embed_dim, num_heads):
    with pytest.raises(ValueError, match=f"{embed_dim}.*{num_heads}"):
        MultiHeadAttention(embed_dim, num_heads)


@pytest.mark.exercise("multi-head-attention")
def test_multi_head_values_match_a_per_head_reference(rng, reference):
    mha = MultiHeadAttention(8, 2).to(np.float64)
    x = rng.normal(size=(2, 5, 8))
    mask = create_causal_mask(5)
    out, weights = mha(Tensor(x), mask, return_weights=True)
    q, k, v = (project(x, layer) for layer in (mha.q_proj, mha.k_proj, mha.v_proj))
    heads = []
    for h in range(2):
        cols = slice(4 * h, 4 * h + 4)
        head_out, head_weights = reference(q[..., cols], k[..., cols], v[..., cols], mask)
        np.testing.assert_allclose(weights.data[:, h], head_weights, atol=1e-12)
        heads.append(head_out)
    np.testing.assert_allclose(out.data, project(np.concatenate(heads, axis=-1), mha.out_proj), atol=1e-12)


@pytest.mark.exercise("multi-head-attention")
def test_cross_attention_shapes_and_values(rng, reference):
    mha = MultiHeadAttention(6, 3).to(np.float64)
    x, context = rng.normal(size=(2, 4, 6)), rng.normal(size=(2, 7, 6))
    out, weights = mha(Tensor(x), context=Tensor(context), return_weights=True)
    assert out.shape == (2, 4, 6) and weights.shape == (2, 3, 4, 7)
    q, k = project(x, mha.q_proj), project(context, mha.k_proj)
    _, expected = reference(q[..., :2], k[..., :2], k[..., :2])
    np.testing.assert_allclose(weights.data[:, 0], expected, atol=1e-12)
    with pytest.raises(ValueError):
        mha(Tensor(x), context=Tensor(context[:1]))


@pytest.mark.exercise("multi-head-attention")
def test_padding_mask_in_multi_head(rng):
    mha = MultiHeadAttention(8, 4)
    x = Tensor(rng.normal(size=(3, 6, 8)).astype(np.float32))
    _, weights = mha(x, create_padding_mask([6, 2, 4], 6) & create_causal_mask(6), return_weights=True)
    assert np.all(weights.data[1, :, :, 2:] == 0) and np.all(weights.data[2, :, :, 4:] == 0)
    assert np.all(np.triu(weights.data[0, 0], 1) == 0)


@pytest.mark.exercise("multi-head-attention")
def test_gradcheck_self_attention_input_and_all_8_parameters(rng):
    mha = MultiHeadAttention(6, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 4, 6)), requires_grad=True)
    params = mha.parameters()
    assert len(params) == 8
    assert gradcheck(lambda x, *p: mha(x, create_causal_mask(4)), [x, *params])


@pytest.mark.exercise("multi-head-attention")
def test_gradcheck_cross_attention_input_context_and_all_8_parameters(rng):
    mha = MultiHeadAttention(4, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 3, 4)), requires_grad=True)
    context = Tensor(rng.normal(size=(2, 5, 4)), requires_grad=True)
    assert gradcheck(lambda x, c, *p: mha(x, create_padding_mask([5, 3], 5), context=c), [x, context, *mha.parameters()])


@pytest.mark.exercise("multi-head-attention")
def test_gradcheck_through_the_returned_weights(rng):
    mha = MultiHeadAttention(4, 2).to(np.float64)
    x = Tensor(rng.normal(size=(1, 3, 4)), requires_grad=True)
    params = [mha.q_proj.weight, mha.q_proj.bias, mha.k_proj.weight, mha.k_proj.bias]
    assert gradcheck(lambda x, *p: mha(x, return_weights=True)[1], [x, *params])


@pytest.mark.exercise("multi-head-attention")
def test_every_parameter_receives_its_gradient(rng):
    mha = MultiHeadAttention(8, 2)
    out = mha(Tensor(rng.normal(size=(2, 5, 8)).astype(np.float32)))
    out.backward(rng.normal(size=out.shape).astype(np.float32))
    for name, p in mha.named_parameters():
        assert p.grad is not None and p.grad.shape == p.shape and p.grad.dtype == np.float32, name


@pytest.mark.exercise("multi-head-attention")
def test_float64_model_runs_in_float64(rng):
    mha = MultiHeadAttention(4, 2).to(np.float64)
    out, weights = mha(Tensor(rng.normal(size=(1, 3, 4))), return_weights=True)
    assert out.dtype == np.float64 and weights.dtype == np.float64


@pytest.mark.exercise("multi-head-attention")
@pytest.mark.parametrize("shape", [(3, 5, 6), (5, 8), (1, 2, 3, 8)])
def test_bad_input_shape_is_a_clear_error(shape):
    with pytest.raises(ValueError, match=r"\(batch, length, 8\)"):
        MultiHeadAttention(8, 2)(Tensor(np.zeros(shape, np.float32)))


@pytest.mark.exercise("self-attention")
def test_self_attention_single_head(rng, reference):
    layer = SelfAttention(5).to(np.float64)
    assert len(layer.parameters()) == 6
    x = rng.normal(size=(2, 4, 5))
    out, weights = layer(Tensor(x), create_causal_mask(4), return_weights=True)
    q, k, v = (project(x, l) for l in (layer.q_proj, layer.k_proj, layer.v_proj))
    expected_out, expected_weights = reference(q, k, v, create_causal_mask(4))
    np.testing.assert_allclose(out.data, expected_out, atol=1e-12)
    np.testing.assert_allclose(weights.data, expected_weights, atol=1e-12)
    xt = Tensor(x, requires_grad=True)
    assert gradcheck(lambda x, *p: layer(x, create_causal_mask(4)), [xt, *layer.parameters()])


# ----------------------------------------------------------------------------------------- KV cache
@pytest.mark.exercise("multi-head-attention")
def test_cache_step_by_step_equals_full_causal_attention(rng):
    mha = MultiHeadAttention(8, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 6, 8)))
    full = mha(x, create_causal_mask(6)).data
    cache, steps = KVCache(), []
    with no_grad():
        for t in range(6):
            assert len(cache) == t
            steps.append(mha(x[:, t:t + 1], create_causal_mask(1, t + 1, offset=t), cache=cache).data)
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-12)
    assert cache.keys.shape == cache.values.shape == (2, 2, 6, 4)


@pytest.mark.exercise("multi-head-attention")
def test_cache_prompt_then_chunks(rng):
    mha = MultiHeadAttention(6, 3).to(np.float64)
    x = Tensor(rng.normal(size=(1, 9, 6)))
    full = mha(x, create_causal_mask(9)).data
    cache = KVCache()
    parts = [mha(x[:, :4], create_causal_mask(4), cache=cache).data]
    parts.append(mha(x[:, 4:7], create_causal_mask(3, 7, offset=4), cache=cache).data)
    parts.append(mha(x[:, 7:], create_causal_mask(2, 9, offset=7), cache=cache).data)
    np.testing.assert_allclose(np.concatenate(parts, axis=1), full, atol=1e-12)
    cache.reset()
    assert len(cache) == 0 and cache.keys is None


@pytest.mark.exercise("multi-head-attention")
def test_cache_without_the_causal_offset_is_wrong(rng):
    # the caller's mask matters: an offset-less mask hides cached keys the new query is allowed to see
    mha = MultiHeadAttention(4, 2).to(np.float64)
    x = Tensor(rng.normal(size=(1, 4, 4)))
    full = mha(x, create_causal_mask(4)).data
    cache = KVCache()
    mha(x[:, :3], create_causal_mask(3), cache=cache)
    wrong = mha(x[:, 3:], create_causal_mask(1, 4), cache=cache).data
    assert not np.allclose(wrong, full[:, 3:])


@pytest.mark.exercise("multi-head-attention")
def test_gradients_flow_through_the_cache(rng):
    mha = MultiHeadAttention(4, 2).to(np.float64)
    x = Tensor(rng.normal(size=(1, 3, 4)), requires_grad=True)

    def two_steps(x, *params):
        cache = KVCache()
        first = mha(x[:, :2], create_causal_mask(2), cache=cache)
        second = mha(x[:, 2:], create_causal_mask(1, 3, offset=2), cache=cache)
        return first.sum(axis=1, keepdims=True) * second
    assert gradcheck(two_steps, [x, *mha.parameters()])


@pytest.mark.exercise("multi-head-attention")
def test_cache_rejects_mismatched_entries(rng):
    cache = KVCache()
    cache.update(Tensor(np.zeros((1, 2, 3, 4))), Tensor(np.zeros((1, 2, 3, 4))))
    with pytest.raises(ValueError, match=r"\(1, 2, 1, 5\).*\(1, 2, 3, 4\)"):
        cache.update(Tensor(np.zeros((1, 2, 1, 5))), Tensor(np.zeros((1, 2, 1, 5))))


@pytest.mark.exercise("multi-head-attention")
def test_cache_is_for_self_attention_only(rng):
    mha = MultiHeadAttention(4, 2)
    x = Tensor(np.zeros((1, 2, 4), np.float32))
    with pytest.raises(ValueError, match="self-attention"):
        mha(x, context=x, cache=KVCache())
