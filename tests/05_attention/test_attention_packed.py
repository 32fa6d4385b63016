"""Self-attention's one-product path: stacked_linear (Q, K and V projections in one matrix product) and
packed_attention (attention on the heads of a packed (B, n, 3E) tensor). Same values and gradients as the
three separate projections, every coordinate checked in float64."""
import numpy as np
import pytest

from tinytorch.core.attention import (MultiHeadAttention, create_causal_mask, packed_attention,
                                      scaled_dot_product_attention, stacked_linear)
from tinytorch.core.autograd import gradcheck
from tinytorch.core.layers import Linear
from tinytorch.core.tensor import Tensor


def linears(widths, bias=True, in_features=5):
    return [Linear(in_features, w, bias=bias).to(np.float64) for w in widths]


def params_of(layers):
    return [p for layer in layers for p in layer.parameters()]


@pytest.mark.parametrize("bias", [True, False])
def test_stacked_linear_equals_the_layers_side_by_side(rng, bias):
    layers = linears((3, 4, 2), bias)
    x = Tensor(rng.normal(size=(2, 3, 5)))
    out = stacked_linear(x, layers)
    expected = np.concatenate([x.data @ l.weight.data + (0 if l.bias is None else l.bias.data) for l in layers], -1)
    assert out.shape == (2, 3, 9)
    np.testing.assert_allclose(out.data, expected, atol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
def test_stacked_linear_gradcheck_input_and_every_parameter(rng, bias):
    layers = linears((3, 4, 2), bias)
    x = Tensor(rng.normal(size=(2, 3, 5)), requires_grad=True)
    assert gradcheck(lambda x, *p: stacked_linear(x, layers), [x, *params_of(layers)])


def test_stacked_linear_gradients_equal_the_separate_layers(rng):
    layers = linears((4, 4, 4))
    x = Tensor(rng.normal(size=(3, 2, 5)), requires_grad=True)
    upstream = rng.normal(size=(3, 2, 12))
    stacked_linear(x, layers).backward(upstream)
    stacked = [x.grad.data.copy()] + [p.grad.data.copy() for p in params_of(layers)]
    x.grad = None
    for p in params_of(layers):
        p.grad = None
    for layer, g in zip(layers, np.split(upstream, 3, axis=-1)):
        layer(x).backward(g)
    separate = [x.grad.data] + [p.grad.data for p in params_of(layers)]
    for a, b in zip(stacked, separate):
        np.testing.assert_allclose(a, b, atol=1e-12)


def test_stacked_linear_bad_input_is_a_clear_error(rng):
    with pytest.raises(ValueError, match=r"\(2, 6\).*\(5, 3\)"):
        stacked_linear(Tensor(rng.normal(size=(2, 6))), linears((3, 3)))
    with pytest.raises(ValueError, match="bias"):
        stacked_linear(Tensor(rng.normal(size=(2, 5))), linears((3,)) + linears((3,), bias=False))
    with pytest.raises(TypeError, match="float32.*float64"):
        stacked_linear(Tensor(rng.normal(size=(2, 5)).astype(np.float32)), linears((3,)))


def heads(a, num_heads):
    "(B, n, E) -> (B, H, n, E/H), written independently of the library."
    B, n, E = a.shape
    return np.ascontiguousarray(a.reshape(B, n, num_heads, E // num_heads).transpose(0, 2, 1, 3))


@pytest.mark.parametrize("mask", [None, "causal", "blocked row"])
def test_packed_attention_equals_attention_on_the_split_heads(rng, reference, mask):
    qkv = rng.normal(size=(2, 4, 18))  # E = 6, 3 heads of 2
    if mask == "causal":
        mask = create_causal_mask(4)
    elif mask == "blocked row":
        mask = np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]], bool)
    out, weights = packed_attention(Tensor(qkv), 3, mask)
    q, k, v = (heads(part, 3) for part in np.split(qkv, 3, axis=-1))
    expected_out, expected_weights = reference(q, k, v, mask)
    assert out.shape == (2, 3, 4, 2) and weights.shape == (2, 3, 4, 4)
    np.testing.assert_allclose(out.data, expected_out, atol=1e-12)
    np.testing.assert_allclose(weights.data, expected_weights, atol=1e-12)


@pytest.mark.parametrize("pick", [0, 1])
@pytest.mark.parametrize("mask", [None, create_causal_mask(4),
                                  np.array([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]], bool)])
def test_packed_attention_gradcheck(rng, pick, mask):
    qkv = Tensor(rng.normal(size=(2, 4, 12)), requires_grad=True)
    assert gradcheck(lambda t: packed_attention(t, 2, mask)[pick], [qkv])


def test_packed_attention_both_outputs_in_one_loss(rng):
    qkv = Tensor(rng.normal(size=(1, 3, 12)), requires_grad=True)
    assert gradcheck(lambda t: (lambda o, w: o.sum(axis=-1, keepdims=True) * w)(*packed_attention(t, 2)), [qkv])


@pytest.mark.parametrize("shape, num_heads", [((2, 4, 10), 2), ((4, 12), 2), ((2, 4, 12), 5)])
def test_packed_attention_bad_shape_is_a_clear_error(shape, num_heads):
    with pytest.raises(ValueError, match=rf"num_heads={num_heads}.*{shape}".replace("(", r"\(").replace(")", r"\)")):
        packed_attention(Tensor(np.zeros(shape)), num_heads)


def test_self_attention_takes_one_product_and_matches_the_three_projection_path(rng):
    # mha(x) takes the packed path; mha(x, context=x) computes the same attention with three projections
    mha = MultiHeadAttention(8, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 5, 8)), requires_grad=True)
    upstream = rng.normal(size=(2, 5, 8))
    results = []
    for context in (None, x):
        x.grad = None
        for p in mha.parameters():
            p.grad = None
        out, weights = mha(x, create_causal_mask(5), context=context, return_weights=True)
        out.backward(upstream)
        results.append([out.data, weights.data, x.grad.data] + [p.grad.data for p in mha.parameters()])
    for packed, separate in zip(*results):
        np.testing.assert_allclose(packed, separate, atol=1e-12)
    out = mha(x, create_causal_mask(5))
    attention = out._node.inputs[0]._node.inputs[0]  # out_proj <- merge_heads' reshape <- its transpose <- ...
    while attention._node.op not in ("packed_attention", "attention"):
        attention = attention._node.inputs[0]
    assert attention._node.op == "packed_attention"
    assert attention._node.inputs[0]._node.op == "stacked_linear"
