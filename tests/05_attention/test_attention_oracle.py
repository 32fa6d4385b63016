"""PyTorch oracle, float64: our attention against torch.nn.functional.scaled_dot_product_attention and our
MultiHeadAttention against torch.nn.MultiheadAttention with the weights copied in.

Layouts: our Linear.weight is (in, out); torch's in_proj_weight stacks the q, k, v weights as three (out, in) blocks.
Masks: ours and F.scaled_dot_product_attention use True = may attend; nn.MultiheadAttention uses True = blocked.
"""
import numpy as np
import pytest

from tinytorch.core.attention import (MultiHeadAttention, create_causal_mask, create_padding_mask,
                                      memory_efficient_attention, scaled_dot_product_attention)
from tinytorch.core.tensor import Tensor

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
F = torch.nn.functional
pytestmark = pytest.mark.oracle


def assert_close(ours, theirs, atol=1e-10):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-9, atol=atol)


def leaves(rng, *shapes):
    arrays = [rng.normal(size=s) for s in shapes]
    return [Tensor(a.copy(), requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays]


MASKS = {
    "none": lambda: None,
    "random (no fully blocked row)": lambda: np.random.default_rng(1).random((2, 3, 4, 6)) < 0.6,
    "padding (B,1,1,m)": lambda: create_padding_mask([6, 3], 6),
    "padding & causal with offset": lambda: create_padding_mask([6, 5], 6) & create_causal_mask(4, 6, offset=2),
}


@pytest.mark.exercise("masks", after=("attention-backward",))
@pytest.mark.parametrize("name", MASKS)
def test_sdpa_matches_torch(rng, name):
    mask = MASKS[name]()
    if mask is not None:
        mask[..., 0] = True                               # torch gives NaN for fully blocked rows; ours gives 0
    (Q, K, V), (tq, tk, tv) = leaves(rng, (2, 3, 4, 5), (2, 3, 6, 5), (2, 3, 6, 2))
    ours, _ = scaled_dot_product_attention(Q, K, V, mask)
    theirs = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=None if mask is None else torch.tensor(mask))
    assert_close(ours.data, theirs)
    upstream = rng.normal(size=ours.shape)
    ours.backward(upstream)
    theirs.backward(torch.tensor(upstream))
    for a, b in zip((Q, K, V), (tq, tk, tv)):
        assert_close(a.grad.data, b.grad)


@pytest.mark.exercise("masks", after=("attention-backward",))
@pytest.mark.parametrize("n, m", [(3, 5), (5, 3), (4, 4)])
def test_causal_mask_matches_torch_is_causal_top_left(rng, n, m):
    (Q, K, V), (tq, tk, tv) = leaves(rng, (2, n, 4), (2, m, 4), (2, m, 3))
    ours, _ = scaled_dot_product_attention(Q, K, V, create_causal_mask(n, m))
    theirs = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    assert_close(ours.data, theirs)
    upstream = rng.normal(size=ours.shape)
    ours.backward(upstream)
    theirs.backward(torch.tensor(upstream))
    for a, b in zip((Q, K, V), (tq, tk, tv)):
        assert_close(a.grad.data, b.grad)


@pytest.mark.exercise("memory-efficient")
def test_memory_efficient_matches_torch(rng):
    (Q, K, V), (tq, tk, tv) = leaves(rng, (2, 2, 9, 4), (2, 2, 13, 4), (2, 2, 13, 3))
    ours = memory_efficient_attention(Q, K, V, block_size=4, causal=True)
    theirs = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    assert_close(ours.data, theirs)
    upstream = rng.normal(size=ours.shape)
    ours.backward(upstream)
    theirs.backward(torch.tensor(upstream))
    for a, b in zip((Q, K, V), (tq, tk, tv)):
        assert_close(a.grad.data, b.grad)


def torch_copy(mha: MultiHeadAttention):
    "A torch.nn.MultiheadAttention (float64, batch_first) holding the same weights as our layer."
    E = mha.embed_dim
    theirs = torch.nn.MultiheadAttention(E, mha.num_heads, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.tensor(np.concatenate(
            [mha.q_proj.weight.data.T, mha.k_proj.weight.data.T, mha.v_proj.weight.data.T])))
        theirs.in_proj_bias.copy_(torch.tensor(np.concatenate(
            [mha.q_proj.bias.data, mha.k_proj.bias.data, mha.v_proj.bias.data])))
        theirs.out_proj.weight.copy_(torch.tensor(mha.out_proj.weight.data.T))
        theirs.out_proj.bias.copy_(torch.tensor(mha.out_proj.bias.data))
    return theirs


def compare_parameter_gradients(mha, theirs):
    E = mha.embed_dim
    w, b = theirs.in_proj_weight.grad, theirs.in_proj_bias.grad
    for i, layer in enumerate((mha.q_proj, mha.k_proj, mha.v_proj)):
        assert_close(layer.weight.grad.data, w[i * E:(i + 1) * E].T)
        assert_close(layer.bias.grad.data, b[i * E:(i + 1) * E])
    assert_close(mha.out_proj.weight.grad.data, theirs.out_proj.weight.grad.T)
    assert_close(mha.out_proj.bias.grad.data, theirs.out_proj.bias.grad)


@pytest.mark.exercise("multi-head-attention")
@pytest.mark.parametrize("cross", [False, True], ids=["self", "cross"])
def test_multi_head_attention_matches_torch(rng, cross):
    mha = MultiHeadAttention(8, 2).to(np.float64)
    theirs = torch_copy(mha)
    (x, context), (tx, tcontext) = leaves(rng, (2, 4, 8), (2, 6 if cross else 4, 8))
    m = context.shape[1]
    mask = create_causal_mask(4, m, offset=m - 4)        # bottom-right aligned: every row has a key
    kwargs = dict(context=context) if cross else {}
    source = tcontext if cross else tx
    out, weights = mha(x, mask, return_weights=True, **kwargs)
    t_out, t_weights = theirs(tx, source, source, attn_mask=torch.tensor(~mask), need_weights=True,
                              average_attn_weights=False)
    assert_close(out.data, t_out)
    assert_close(weights.data, t_weights)                # per head: (B, H, n, m)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    t_out.backward(torch.tensor(upstream))
    assert_close(x.grad.data, tx.grad)
    if cross:
        assert_close(context.grad.data, tcontext.grad)
    compare_parameter_gradients(mha, theirs)


@pytest.mark.exercise("multi-head-attention")
def test_padding_mask_matches_torch_key_padding_mask(rng):
    mha = MultiHeadAttention(6, 3).to(np.float64)
    theirs = torch_copy(mha)
    (x,), (tx,) = leaves(rng, (3, 5, 6))
    lengths = [5, 2, 4]
    out = mha(x, create_padding_mask(lengths, 5))
    t_out, _ = theirs(tx, tx, tx, key_padding_mask=torch.tensor(~create_padding_mask(lengths, 5)[:, 0, 0]))
    assert_close(out.data, t_out)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    t_out.backward(torch.tensor(upstream))
    assert_close(x.grad.data, tx.grad)
    compare_parameter_gradients(mha, theirs)


@pytest.mark.exercise("multi-head-attention")
def test_separate_keys_and_values_match_torch(rng):
    # PyTorch's (query, key, value): our mha(x, context=keys, value=values)
    mha = MultiHeadAttention(8, 2).to(np.float64)
    theirs = torch_copy(mha)
    (x, keys, values), (tx, tk, tv) = leaves(rng, (2, 4, 8), (2, 6, 8), (2, 6, 8))
    out = mha(x, context=keys, value=values)
    t_out, _ = theirs(tx, tk, tv)
    assert_close(out.data, t_out)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    t_out.backward(torch.tensor(upstream))
    for a, b in ((x, tx), (keys, tk), (values, tv)):
        assert_close(a.grad.data, b.grad)
    compare_parameter_gradients(mha, theirs)


@pytest.mark.exercise("multi-head-attention")
def test_a_mask_per_sequence_matches_torch_with_the_mask_repeated_per_head(rng):
    # (batch, n, m) is one mask per sequence, shared by the heads; batch == heads is where it used to go wrong
    mha = MultiHeadAttention(8, 2).to(np.float64)
    theirs = torch_copy(mha)
    (x,), (tx,) = leaves(rng, (2, 4, 8))
    mask = np.stack([create_causal_mask(4), np.ones((4, 4), bool)])
    mask[1, :, 3] = False                                   # sequence 1: bidirectional, key 3 blocked
    out = mha(x, mask)
    per_head = torch.tensor(~np.repeat(mask, 2, axis=0))     # torch: (batch * heads, n, m), True = blocked
    t_out, _ = theirs(tx, tx, tx, attn_mask=per_head)
    assert_close(out.data, t_out)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    t_out.backward(torch.tensor(upstream))
    assert_close(x.grad.data, tx.grad)


@pytest.mark.exercise("attention-backward")
def test_an_additive_float_mask_matches_torch(rng):
    (Q, K, V), (tq, tk, tv) = leaves(rng, (2, 4, 5, 3), (2, 4, 6, 3), (2, 4, 6, 2))
    additive = np.where(rng.random((5, 6)) < 0.7, 0.0, -np.inf)
    additive[:, 0] = 0.0
    additive[1] = rng.normal(size=6) - 3.0                   # any non-positive bias, not only 0 / -inf
    additive[1] = np.minimum(additive[1], 0.0)
    ours, _ = scaled_dot_product_attention(Q, K, V, additive)
    theirs = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(additive))
    assert_close(ours.data, theirs)
    upstream = rng.normal(size=ours.shape)
    ours.backward(upstream)
    theirs.backward(torch.tensor(upstream))
    for a, b in zip((Q, K, V), (tq, tk, tv)):
        assert_close(a.grad.data, b.grad)
