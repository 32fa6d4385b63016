"""Past the quadratic wall: memory-efficient attention (== plain, forward and gradients, without the n x m scores)
and LSH attention (exact when one chunk holds everything; error shrinking with more hash rounds)."""
import tracemalloc

import numpy as np
import pytest

from tinytorch.core.attention import (create_causal_mask, create_padding_mask, lsh_attention, lsh_buckets,
                                      memory_efficient_attention, scaled_dot_product_attention)
from tinytorch.core.autograd import gradcheck, no_grad
from tinytorch.core.tensor import Tensor

RANDOM_MASK = np.random.default_rng(5).random((2, 1, 7, 10)) < 0.5
RANDOM_MASK[0, 0, 3] = False                                            # a fully blocked row
CASES = {                                                               # name: (mask, causal, equivalent plain mask)
    "none": (None, False, None),
    "causal flag": (None, True, create_causal_mask(7, 10)),
    "random mask with a blocked row": (RANDOM_MASK, False, RANDOM_MASK),
    "padding mask and causal flag": (create_padding_mask([10, 4], 10), True,
                                     create_padding_mask([10, 4], 10) & create_causal_mask(7, 10)),
    "causal mask with offset": (create_causal_mask(7, 10, offset=3), False, create_causal_mask(7, 10, offset=3)),
}


def grads_of(result, inputs, upstream):
    for t in inputs:
        t.grad = None
    result.backward(upstream)
    return [t.grad.data.copy() for t in inputs]


@pytest.mark.exercise("memory-efficient")
@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("block_size", [3, 4, 16])
def test_memory_efficient_equals_plain_forward_and_gradients(leaf, rng, name, block_size):
    mask, causal, plain_mask = CASES[name]
    Q, K, V = leaf(2, 2, 7, 3), leaf(2, 1, 10, 3), leaf(2, 1, 10, 2)
    plain = scaled_dot_product_attention(Q, K, V, plain_mask)[0]
    tiled = memory_efficient_attention(Q, K, V, mask, block_size=block_size, causal=causal)
    np.testing.assert_allclose(tiled.data, plain.data, rtol=1e-12, atol=1e-13)
    upstream = rng.normal(size=plain.shape)
    for ours, expected in zip(grads_of(tiled, [Q, K, V], upstream), grads_of(plain, [Q, K, V], upstream)):
        np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.exercise("memory-efficient")
@pytest.mark.parametrize("name", CASES)
def test_memory_efficient_gradcheck(leaf, name):
    mask, causal, _ = CASES[name]
    Q, K, V = leaf(2, 2, 7, 3), leaf(2, 1, 10, 3), leaf(2, 1, 10, 2)
    assert gradcheck(lambda q, k, v: memory_efficient_attention(q, k, v, mask, block_size=4, causal=causal), [Q, K, V])


@pytest.mark.exercise("memory-efficient")
def test_memory_efficient_blocked_rows_are_zero_with_finite_gradients(leaf):
    Q, K, V = leaf(5, 3), leaf(6, 3), leaf(6, 2)
    mask = np.ones((5, 6), bool)
    mask[[1, 4]] = False
    out = memory_efficient_attention(Q, K, V, mask, block_size=2)
    assert np.all(out.data[[1, 4]] == 0)
    out.backward(np.ones(out.shape))
    assert all(np.all(np.isfinite(t.grad.data)) for t in (Q, K, V)) and np.all(Q.grad.data[[1, 4]] == 0)


@pytest.mark.exercise("memory-efficient")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_memory_efficient_keeps_dtype(rng, dtype):
    Q, K, V = (Tensor(rng.normal(size=(2, 9, 4)).astype(dtype), requires_grad=True) for _ in range(3))
    out = memory_efficient_attention(Q, K, V, block_size=4, causal=True)
    assert out.dtype == dtype
    out.backward(np.ones(out.shape, dtype))
    assert all(t.grad.dtype == dtype for t in (Q, K, V))
    expected = scaled_dot_product_attention(Q, K, V, create_causal_mask(9))[0].data
    np.testing.assert_allclose(out.data, expected, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)


@pytest.mark.exercise("memory-efficient")
def test_memory_efficient_never_holds_the_score_matrix(rng):
    n, d = 1024, 16
    Q, K, V = (Tensor(rng.normal(size=(n, d)).astype(np.float32), requires_grad=True) for _ in range(3))
    score_bytes = n * n * 4

    def peak(fn):
        tracemalloc.start()
        fn()
        result = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return result

    plain = peak(lambda: scaled_dot_product_attention(Q, K, V)[0].backward(np.ones((n, d), np.float32)))
    tiled = peak(lambda: memory_efficient_attention(Q, K, V, block_size=64, causal=True).backward(
        np.ones((n, d), np.float32)))
    assert plain >= score_bytes            # the plain op holds P: the measurement sees it
    # forward and backward: a few 64 x 64 tiles and O(n·d) arrays only (Q, K, V, O, the three gradients and their
    # copies into .grad: about 0.5 MiB here), never the 4 MiB of P
    assert tiled < score_bytes / 4


@pytest.mark.exercise("memory-efficient")
def test_memory_efficient_errors(rng):
    Q = Tensor(rng.normal(size=(4, 3)))
    with pytest.raises(ValueError, match=r"\(4, 3\).*\(5, 2\)"):
        memory_efficient_attention(Q, Tensor(np.zeros((5, 2))), Tensor(np.zeros((5, 2))))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 5\)"):
        memory_efficient_attention(Q, Q, Q, np.ones((4, 5), bool))


# --------------------------------------------------------------------------------------------- LSH
def clustered(batch, n, d, n_clusters, seed):
    "Tokens near one of n_clusters directions (so attention is sparse), values shared within a cluster."
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(batch, n_clusters, d))
    centres *= 8 * np.sqrt(d) / np.linalg.norm(centres, axis=-1, keepdims=True)
    labels, b = rng.integers(0, n_clusters, size=(batch, n)), np.arange(batch)[:, None]
    qk = centres[b, labels] + 0.3 * rng.normal(size=(batch, n, d))
    values = rng.normal(size=(batch, n_clusters, d))[b, labels] + 0.3 * rng.normal(size=(batch, n, d))
    return qk, values


def shared_qk_reference(qk, values, causal=False):
    "Full attention with normalized keys where a position attends to itself only when it has no other key."
    n = qk.shape[-2]
    mask = ~np.eye(n, dtype=bool)
    if causal:
        mask &= create_causal_mask(n)
        mask[0, 0] = True
    keys = qk / np.linalg.norm(qk, axis=-1, keepdims=True)
    return scaled_dot_product_attention(qk, keys, values, mask)[0].data


@pytest.mark.exercise("lsh-buckets")
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("n_hashes", [1, 3])
@pytest.mark.parametrize("chunk_size", [16, 8])
def test_lsh_is_exact_when_the_chunks_cover_everything(rng, causal, n_hashes, chunk_size):
    # one chunk, or two chunks that each look back at the other: every query meets every key, whatever the hash
    qk, values = rng.normal(size=(2, 16, 4)), rng.normal(size=(2, 16, 3))
    out = lsh_attention(qk, values, n_hashes=n_hashes, n_buckets=4, chunk_size=chunk_size, causal=causal)
    np.testing.assert_allclose(out.data, shared_qk_reference(qk, values, causal), atol=1e-10)


@pytest.mark.exercise("lsh-buckets")
@pytest.mark.parametrize("causal", [False, True])
def test_lsh_error_shrinks_with_more_rounds(causal):
    qk, values = clustered(2, 512, 32, n_clusters=16, seed=0)
    exact = shared_qk_reference(qk, values, causal)
    errors = []
    with no_grad():
        for n_hashes in (1, 2, 4, 8):
            approx = lsh_attention(qk, values, n_hashes, n_buckets=16, chunk_size=32, causal=causal, seed=0).data
            errors.append(np.linalg.norm(approx - exact) / np.linalg.norm(exact))
    assert all(later < earlier for earlier, later in zip(errors, errors[1:])), errors
    assert errors[-1] < 0.6 * errors[0], errors


@pytest.mark.exercise("lsh-buckets")
def test_lsh_causal_never_looks_ahead(rng):
    qk, values = rng.normal(size=(1, 64, 8)), rng.normal(size=(1, 64, 4))
    out = lsh_attention(qk, values, n_hashes=2, n_buckets=4, chunk_size=8, causal=True).data
    changed = values.copy()
    changed[:, 40:] += 50.0
    later = lsh_attention(qk, changed, n_hashes=2, n_buckets=4, chunk_size=8, causal=True).data
    np.testing.assert_allclose(out[:, :40], later[:, :40], atol=1e-12)


@pytest.mark.exercise("lsh-buckets")
def test_lsh_shapes_dtype_seed(rng):
    qk = rng.normal(size=(2, 3, 32, 8)).astype(np.float32)
    values = rng.normal(size=(2, 3, 32, 5)).astype(np.float32)
    out = lsh_attention(qk, values, n_hashes=2, n_buckets=4, chunk_size=8, seed=1)
    assert out.shape == (2, 3, 32, 5) and out.dtype == np.float32
    again = lsh_attention(qk, values, n_hashes=2, n_buckets=4, chunk_size=8, seed=1)
    other = lsh_attention(qk, values, n_hashes=2, n_buckets=4, chunk_size=8, seed=2)
    np.testing.assert_array_equal(out.data, again.data)
    assert not np.allclose(out.data, other.data)


@pytest.mark.exercise("lsh-buckets")
def test_lsh_buckets_are_angular_hashes(rng):
    x = rng.normal(size=(40, 6))
    buckets = lsh_buckets(x, n_hashes=3, n_buckets=8, seed=0)
    assert buckets.shape == (3, 40) and buckets.min() >= 0 and buckets.max() < 8
    np.testing.assert_array_equal(buckets, lsh_buckets(5 * x, 3, 8, seed=0))
    assert np.all(lsh_buckets(-x, 3, 8, seed=0) != buckets)


@pytest.mark.exercise("lsh-buckets")
@pytest.mark.parametrize("causal", [False, True])
def test_lsh_gradcheck(leaf, causal):
    qk, values = leaf(1, 16, 4), leaf(1, 16, 2)
    assert gradcheck(lambda a, b: lsh_attention(a, b, n_hashes=2, n_buckets=4, chunk_size=4, causal=causal),
                     [qk, values])


@pytest.mark.exercise("memory-efficient")
@pytest.mark.parametrize("kwargs, words", [
    (dict(chunk_size=5), ["16", "chunk_size 5"]),
    (dict(n_buckets=3), ["n_buckets", "3"]),
])
def test_lsh_errors(rng, kwargs, words):
    with pytest.raises(ValueError) as info:
        lsh_attention(rng.normal(size=(16, 4)), rng.normal(size=(16, 2)), **kwargs)
    assert all(w in str(info.value) for w in words)
    with pytest.raises(ValueError, match=r"\(16, 4\).*\(15, 2\)"):
        lsh_attention(rng.normal(size=(16, 4)), rng.normal(size=(15, 2)))
