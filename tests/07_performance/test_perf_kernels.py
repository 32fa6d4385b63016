"""Every fast kernel equals the plain op it replaces: values in float32 and float64, gradients against the plain op's
and against central differences (float64, random upstream gradient), on one thread and on two, in one block and in
many; and inputs a kernel does not take go to the plain op unchanged."""
import numpy as np
import pytest

from tinytorch.perf import numpy_kernels, threads as perf_threads
from tinytorch.perf.numpy_kernels import NUMPY_KERNELS
from tinytorch.core.attention import create_causal_mask, scaled_dot_product_attention
from tinytorch.core.layers import gelu, layer_norm, linear
from tinytorch.core.tensor import KERNELS, Tensor

from perf_helpers import (DTYPES, HANDED_OVER, MASKS, assert_a_broken_rule_is_caught, assert_handed_over_to_the_plain_op,
                          assert_same_as_plain, check_a_fully_blocked_row_gives_zeros,
                          check_inputs_that_need_no_gradient, check_split_heads_keep_their_layout, leaves)



# --- linear -------------------------------------------------------------------------------------------------------
@pytest.mark.exercise("fast-linear")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape", [(2, 3, 4), (5, 4), (4,), (2, 1, 3, 4)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_equals_the_plain_op(rng, dtype, x_shape, bias):
    inputs = leaves(rng, x_shape, (4, 3), *([(3,)] if bias else []), dtype=dtype)
    assert_same_as_plain(numpy_kernels.fast_linear, linear.plain, inputs)


@pytest.mark.exercise("fast-linear")
def test_linear_gives_no_gradient_to_an_input_that_needs_none(rng):
    x, w, b = leaves(rng, (2, 5, 4), (4, 3), (3,))
    x.requires_grad = False
    assert_same_as_plain(numpy_kernels.fast_linear, linear.plain, [x, w, b])
    out = numpy_kernels.fast_linear(x, w, b)
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    assert x.grad is None
    np.testing.assert_allclose(b.grad.data, upstream.sum(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(w.grad.data, x.data.reshape(-1, 4).T @ upstream.reshape(-1, 3), rtol=1e-12)


@pytest.mark.exercise("fast-linear")
def test_linear_leaves_its_inputs_alone(rng):
    x, w, b = leaves(rng, (6, 4), (4, 3), (3,), dtype=np.float32)
    before = [t.data.copy() for t in (x, w, b)]
    out = numpy_kernels.fast_linear(x, w, b)
    out.backward(np.ones(out.shape, np.float32))
    assert all(np.array_equal(t.data, saved) for t, saved in zip((x, w, b), before))


# --- layer norm ---------------------------------------------------------------------------------------------------
@pytest.mark.exercise("fast-layer-norm")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 5), (5,)])
@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_layer_norm_equals_the_plain_op(rng, dtype, shape, eps):
    inputs = leaves(rng, shape, (5,), (5,), dtype=dtype, scale=3.0)
    assert_same_as_plain(numpy_kernels.fast_layer_norm, layer_norm.plain, inputs, eps=eps)


@pytest.mark.exercise("fast-layer-norm")
def test_layer_norm_of_constant_rows_is_the_bias(rng):
    x = Tensor(np.full((3, 4), 7.0), requires_grad=True)
    w, b = leaves(rng, (4,), (4,))
    np.testing.assert_allclose(numpy_kernels.fast_layer_norm(x, w, b).data, np.broadcast_to(b.data, (3, 4)), atol=1e-12)
    assert_same_as_plain(numpy_kernels.fast_layer_norm, layer_norm.plain, [x, w, b])


# --- gelu ---------------------------------------------------------------------------------------------------------
@pytest.mark.exercise("gelu-chunk")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_equals_the_plain_op(rng, dtype, threads):
    assert_same_as_plain(numpy_kernels.fast_gelu, gelu.plain, leaves(rng, (2, 3, 4), dtype=dtype, scale=3.0))
    t = Tensor(rng.normal(size=(4, 2, 3)).astype(dtype).transpose(2, 0, 1), requires_grad=True)   # not contiguous
    assert_same_as_plain(numpy_kernels.fast_gelu, gelu.plain, [t])


@pytest.mark.exercise("gelu-chunk")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_in_many_chunks_on_one_or_two_threads(rng, monkeypatch, dtype, threads, pools):
    monkeypatch.setattr(numpy_kernels, "chunk_slices", lambda size: [slice(i, min(i + 5, size)) for i in range(0, size, 5)])
    assert_same_as_plain(numpy_kernels.fast_gelu, gelu.plain, leaves(rng, (3, 2, 4), dtype=dtype, scale=2.0))   # 5 chunks
    if threads == 1:
        assert pools == []
    else:
        assert pools and set(pools) == {2}                      # the forward's and the backward's chunks


@pytest.mark.exercise("gelu-chunk")
def test_gelu_of_a_large_input_in_real_chunks(rng, threads, pools):
    assert_same_as_plain(numpy_kernels.fast_gelu, gelu.plain, leaves(rng, (3, 100_001), dtype=np.float32))   # 2 chunks + a bit
    assert bool(pools) == (threads == 2)


@pytest.mark.exercise("gelu-chunk")
def test_gelu_stays_on_the_calling_thread_below_the_threshold(rng, monkeypatch, pools):
    monkeypatch.setattr(perf_threads, "num_threads", lambda: 2)
    numpy_kernels.fast_gelu(Tensor(np.zeros(numpy_kernels._THREAD_NUMBERS - 1, np.float32)))
    assert pools == []
    numpy_kernels.fast_gelu(Tensor(np.zeros(numpy_kernels._THREAD_NUMBERS, np.float32)))
    assert pools == [2]


@pytest.mark.exercise("gelu-chunk")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_at_extreme_inputs_is_exact_and_warns_of_nothing(dtype):
    v = np.array([-1e4, -60.0, -12.0, -9.0, -3.0, 0.0, 3.0, 12.0, 60.0, 1e4], dtype=dtype)
    x = Tensor(v, requires_grad=True)
    upstream = np.linspace(-1, 1, v.size).astype(dtype)
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        out = numpy_kernels.fast_gelu(x)
        out.backward(upstream)
    w = v.astype(np.float64)
    u = np.sqrt(2 / np.pi) * (w + 0.044715 * w ** 3)
    slope = 0.5 * (1 + np.tanh(u)) + 0.5 * w * (1 - np.tanh(u) ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * w ** 2)
    tol = dict(rtol=1e-6, atol=1e-20) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-20)
    assert out.dtype == dtype and x.grad.dtype == dtype
    np.testing.assert_allclose(out.data, 0.5 * w * (1 + np.tanh(u)), **tol)
    np.testing.assert_allclose(x.grad.data, upstream * slope, **tol)


# --- attention ----------------------------------------------------------------------------------------------------
@pytest.mark.exercise("fast-attention")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", MASKS)
def test_attention_equals_the_plain_op(rng, dtype, name, threads, cache_bytes, pools):
    Q, K, V = leaves(rng, (2, 1, 3, 4), (1, 2, 5, 4), (2, 2, 5, 2), dtype=dtype)
    groups = numpy_kernels._score_blocks((2, 2, 3, 5), np.dtype(dtype).itemsize)
    assert len(groups) == threads
    assert sum(map(len, groups)) == (threads if cache_bytes > 100 else 2 * 2 * (2 if dtype == np.float64 else 1))
    assert_same_as_plain(numpy_kernels.fast_attention, scaled_dot_product_attention.plain, [Q, K, V], mask=MASKS[name])
    assert bool(pools) == (threads == 2)


@pytest.mark.exercise("fast-attention-backward")
def test_attention_with_inputs_that_need_no_gradient(rng, threads, cache_bytes):
    check_inputs_that_need_no_gradient(numpy_kernels.fast_attention, rng)


@pytest.mark.exercise("fast-attention")
def test_attention_of_split_heads_keeps_their_layout(rng):
    check_split_heads_keep_their_layout(numpy_kernels.fast_attention, rng)


@pytest.mark.exercise("fast-attention")
def test_a_fully_blocked_row_gives_zeros_forward_and_backward(rng, threads, cache_bytes):
    check_a_fully_blocked_row_gives_zeros(numpy_kernels.fast_attention, rng)


@pytest.mark.exercise("fast-attention")
@pytest.mark.parametrize("scores_shape", [(7, 5), (1, 1, 9, 4), (3, 1, 6, 6), (1, 5, 2, 8, 3), (4, 2, 64, 64)])
@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("cache_bytes", [100, 2 ** 22])
def test_score_blocks_cover_every_score_once_in_groups_that_share_no_matrix(monkeypatch, scores_shape, threads,
                                                                           cache_bytes):
    monkeypatch.setattr(numpy_kernels, "_CACHE_BYTES", cache_bytes)
    monkeypatch.setattr(numpy_kernels, "_THREAD_BYTES", 1)
    monkeypatch.setattr(numpy_kernels, "num_threads", lambda: threads)
    groups = numpy_kernels._score_blocks(scores_shape, 8)
    assert 1 <= len(groups) <= threads
    covered = np.zeros(scores_shape, int)
    owner = np.full(scores_shape[:-2], -1)
    # each matrix's row blocks come in order from row 0: the backward writes dK and dV at the first, adds the later ones
    next_row = np.zeros(scores_shape[:-2], int)
    for g, blocks in enumerate(groups):
        for index, rows in blocks:
            covered[index + (rows, slice(None))] += 1
            assert np.all(np.isin(owner[index], (-1, g))), "two groups write to the same matrix"
            owner[index] = g
            assert np.all(next_row[index] == rows.start), "a matrix's row blocks out of order"
            next_row[index] = rows.stop
    assert np.all(covered == 1)


# --- what the kernels leave to the plain ops ---------------------------------------------------------------------
EXERCISE = {"linear": "fast-linear", "gelu": "gelu-chunk", "layer_norm": "fast-layer-norm",
            "scaled_dot_product_attention": "fast-attention"}


@pytest.mark.parametrize("case", [pytest.param(case, marks=pytest.mark.exercise(EXERCISE[op]))
                                  for case, (op, _) in HANDED_OVER.items()])
def test_inputs_a_kernel_does_not_take_go_to_the_plain_op(recorded_ops, case):
    "The same values, or the same error (for a bad mask: module 05's own), as the plain op, and no fast op recorded."
    assert_handed_over_to_the_plain_op(NUMPY_KERNELS, case, recorded_ops)


@pytest.mark.exercise("fast-attention")
def test_every_kind_of_mask_gives_exactly_the_same_result(rng):
    "Booleans, 0/1 numbers, a Tensor and the additive form of one mask: one bias, bit for bit the same output."
    Q, K, V = (Tensor(rng.normal(size=(2, 4, 3))) for _ in range(3))
    causal = create_causal_mask(4)
    expected = numpy_kernels.fast_attention(Q, K, V, causal)[0].data
    for variant in (causal.astype(int), causal.astype(np.float32), Tensor(causal), np.tril(np.ones((4, 4))).tolist(),
                    np.where(causal, 0.0, -np.inf)):
        np.testing.assert_array_equal(numpy_kernels.fast_attention(Q, K, V, variant)[0].data, expected)


RULE_EXERCISE = {"fast_linear": "fast-linear", "fast_gelu": "gelu-chunk", "fast_layer_norm": "fast-layer-norm",
                 "fast_attention": "fast-attention-backward", "fast_attention_weights": "fast-attention-backward"}


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.exercise(gid)) for op, gid in RULE_EXERCISE.items()])
def test_a_broken_fast_gradient_rule_is_caught(rng, monkeypatch, numpy_kernels_in, op):
    "The gradient checks above run the fast rules: scale one by 1.1 and gradcheck fails."
    cases = {
        "fast_linear": (lambda x, w, b: linear(x, w, b), leaves(rng, (2, 3, 4), (4, 5), (5,))),
        "fast_gelu": (numpy_kernels.fast_gelu, leaves(rng, (3, 4))),
        "fast_layer_norm": (numpy_kernels.fast_layer_norm, leaves(rng, (3, 4), (4,), (4,))),
        "fast_attention": (lambda q, k, v: numpy_kernels.fast_attention(q, k, v)[0], leaves(rng, (3, 2), (4, 2), (4, 2))),
        "fast_attention_weights": (lambda q, k: numpy_kernels.fast_attention(q, k, k)[1], leaves(rng, (3, 2), (4, 2))),
    }
    assert_a_broken_rule_is_caught(monkeypatch, op, *cases[op])


@pytest.mark.exercise("fast-attention")
def test_multi_head_attention_splits_and_merges_heads_without_copies(rng, monkeypatch):
    """With section 8's kernel the attention output takes Q's memory layout and its gradients take the layouts of Q, K
    and V, so every reshape between (B, n, E) and (B, H, n, E/H) is a view, forward and backward. (The compiled loop
    writes contiguous arrays: merge_heads copies its output.)"""
    import tinytorch.core.autograd as autograd
    monkeypatch.setitem(KERNELS, "scaled_dot_product_attention", numpy_kernels.fast_attention)
    from tinytorch.core.attention import MultiHeadAttention
    views, reshape_backward = [], autograd.GRADIENTS["reshape"]

    def spy(grad, out, x, **attrs):
        result = reshape_backward(grad, out, x, **attrs)
        views.append(np.shares_memory(result[0], grad))
        return result
    monkeypatch.setitem(autograd.GRADIENTS, "reshape", spy)
    mha = MultiHeadAttention(16, 4)
    attention_output = []
    mha.merge_heads = lambda o, merge=mha.merge_heads: attention_output.append(o) or merge(o)
    x = Tensor(rng.normal(size=(2, 5, 16)).astype(np.float32), requires_grad=True)
    out = mha(x, create_causal_mask(5))
    assert attention_output[0]._node.op == "fast_attention"
    assert np.shares_memory(out._node.inputs[0].data, attention_output[0].data)        # merge_heads: a view
    out.backward(rng.normal(size=out.shape).astype(np.float32))
    assert views == [True] * 4                                 # merge_heads, then q, k and v split back
