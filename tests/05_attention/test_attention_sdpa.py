"""scaled_dot_product_attention: values, masks, fully blocked rows, gradients (float64 gradcheck), dtypes, errors."""
import numpy as np
import pytest

from tinytorch.core.attention import (create_bidirectional_mask, create_causal_mask, create_padding_mask,
                                      scaled_dot_product_attention)
from tinytorch.core.autograd import gradcheck, no_grad
from tinytorch.core.tensor import Tensor

ROW_BLOCKED = np.array([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 0, 1, 0, 1]], dtype=bool)   # (3, 5), row 1 blocked
MASKS = {
    "none": None,
    "causal n<m (top-left)": create_causal_mask(3, 5),
    "causal with offset (KV cache)": create_causal_mask(3, 5, offset=2),
    "padding (B,1,1,m)": create_padding_mask([5, 2], 5),
    "bidirectional": np.ones((3, 5), bool),
    "random with a fully blocked row": ROW_BLOCKED,
}


@pytest.mark.exercise("attention-forward")
def test_matches_independent_reference(rng, reference):
    Q, K, V = rng.normal(size=(2, 3, 6, 4)), rng.normal(size=(2, 3, 9, 4)), rng.normal(size=(2, 3, 9, 5))
    out, weights = scaled_dot_product_attention(Tensor(Q), Tensor(K), Tensor(V))
    expected_out, expected_weights = reference(Q, K, V)
    np.testing.assert_allclose(out.data, expected_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights.data, expected_weights, rtol=1e-12, atol=1e-12)
    assert out.shape == (2, 3, 6, 5) and weights.shape == (2, 3, 6, 9)


@pytest.mark.exercise("attention-forward")
@pytest.mark.parametrize("name", MASKS)
def test_masked_values_match_reference(rng, reference, name):
    mask = MASKS[name]
    Q, K, V = rng.normal(size=(2, 1, 3, 4)), rng.normal(size=(2, 1, 5, 4)), rng.normal(size=(2, 1, 5, 2))
    out, weights = scaled_dot_product_attention(Q, K, V, mask)
    expected_out, expected_weights = reference(Q, K, V, mask)
    np.testing.assert_allclose(out.data, expected_out, atol=1e-12)
    np.testing.assert_allclose(weights.data, expected_weights, atol=1e-12)
    allowed = np.broadcast_to(True if mask is None else mask, weights.shape)
    assert np.all(weights.data[~allowed] == 0)


@pytest.mark.exercise("masks")
def test_rows_sum_to_one_and_are_nonnegative(rng):
    X = Tensor(rng.normal(size=(4, 7, 3)) * 5)
    _, weights = scaled_dot_product_attention(X, X, X, create_causal_mask(7))
    assert np.all(weights.data >= 0)
    np.testing.assert_allclose(weights.data.sum(axis=-1), 1, rtol=1e-12)


@pytest.mark.exercise("masks")
def test_causal_mask_means_no_future(rng):
    Q, K, V = (rng.normal(size=(6, 3)) for _ in range(3))
    out, weights = scaled_dot_product_attention(Q, K, V, create_causal_mask(6))
    assert np.all(np.triu(weights.data, 1) == 0)
    changed = V.copy()
    changed[4:] += 100.0                                   # the future changes...
    out2, _ = scaled_dot_product_attention(Q, K, changed, create_causal_mask(6))
    np.testing.assert_array_equal(out.data[:4], out2.data[:4])   # ...and the past does not notice


@pytest.mark.exercise("masks")
def test_inverting_the_mask_changes_the_result(rng):
    Q, K, V = (rng.normal(size=(5, 3)) for _ in range(3))
    mask = create_causal_mask(5)
    right, _ = scaled_dot_product_attention(Q, K, V, mask)
    wrong, _ = scaled_dot_product_attention(Q, K, V, ~mask)
    assert not np.allclose(right.data[:4], wrong.data[:4])
    np.testing.assert_allclose(right.data[0], V[0])          # the first query only sees itself
    assert np.all(wrong.data[4] == 0)                        # inverted: the last query sees nothing


@pytest.mark.exercise("attention-backward")
def test_fully_blocked_row_gives_zeros_and_finite_gradients(leaf):
    Q, K, V = leaf(2, 3, 4), leaf(2, 5, 4), leaf(2, 5, 3)
    out, weights = scaled_dot_product_attention(Q, K, V, ROW_BLOCKED)
    assert np.all(out.data[:, 1] == 0) and np.all(weights.data[:, 1] == 0)
    assert np.all(np.isfinite(out.data)) and np.all(np.isfinite(weights.data))
    (out.sum() + (weights * weights).sum()).backward()
    for t in (Q, K, V):
        assert np.all(np.isfinite(t.grad.data))
    assert np.all(Q.grad.data[:, 1] == 0)


@pytest.mark.exercise("attention-backward")
def test_all_keys_blocked_everywhere(leaf):
    Q, K, V = leaf(3, 2), leaf(4, 2), leaf(4, 2)
    out, weights = scaled_dot_product_attention(Q, K, V, np.zeros((3, 4), bool))
    assert np.all(out.data == 0) and np.all(weights.data == 0)
    out.backward(np.ones(out.shape))
    assert all(np.all(t.grad.data == 0) for t in (Q, K, V))


@pytest.mark.exercise("attention-backward")
@pytest.mark.parametrize("name", MASKS)
@pytest.mark.parametrize("which", ["output", "weights"])
def test_gradcheck_against_q_k_v(leaf, name, which):
    mask = MASKS[name]
    Q, K, V = leaf(2, 1, 3, 4), leaf(2, 1, 5, 4), leaf(2, 1, 5, 2)
    pick = 0 if which == "output" else 1
    assert gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, mask)[pick], [Q, K, V])


@pytest.mark.exercise("masks", after=("attention-backward",))
def test_gradcheck_with_broadcast_batch_axes(leaf):
    Q, K, V = leaf(2, 3, 4, 3), leaf(1, 3, 5, 3), leaf(2, 1, 5, 2)       # K shared over batch, V over heads
    assert gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, create_causal_mask(4, 5))[0], [Q, K, V])


@pytest.mark.exercise("attention-backward")
def test_gradcheck_output_and_weights_in_one_loss(leaf):
    Q, K, V = leaf(3, 4), leaf(5, 4), leaf(5, 2)

    def both(q, k, v):
        out, weights = scaled_dot_product_attention(q, k, v, ROW_BLOCKED)
        return out.sum(axis=-1, keepdims=True) * weights
    assert gradcheck(both, [Q, K, V])


@pytest.mark.exercise("masks", after=("attention-backward",))
def test_gradcheck_self_attention_one_tensor(leaf):
    X = leaf(2, 4, 3)
    assert gradcheck(lambda x: scaled_dot_product_attention(x, x, x, create_causal_mask(4))[0], [X])


@pytest.mark.exercise("attention-backward")
def test_only_inputs_that_require_grad_get_one(rng, leaf):
    Q, K, V = leaf(3, 4), Tensor(rng.normal(size=(5, 4))), Tensor(rng.normal(size=(5, 2)))
    assert gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v)[0], [Q, K, V])
    out, _ = scaled_dot_product_attention(Q, K, V)
    out.backward(np.ones(out.shape))
    assert K.grad is None and V.grad is None


@pytest.mark.exercise("attention-forward")
def test_no_grad_records_nothing(leaf):
    Q = leaf(3, 4)
    with no_grad():
        out, weights = scaled_dot_product_attention(Q, Q, Q)
    assert not out.requires_grad and not weights.requires_grad


@pytest.mark.exercise("attention-forward")
def test_large_scores_do_not_overflow(rng):
    Q, K, V = rng.normal(size=(4, 8)) * 1e3, rng.normal(size=(6, 8)) * 1e3, rng.normal(size=(6, 2))
    for dtype in (np.float32, np.float64):
        out, weights = scaled_dot_product_attention(*(Tensor(a.astype(dtype)) for a in (Q, K, V)))
        assert np.all(np.isfinite(out.data)) and np.allclose(weights.data.sum(-1), 1, atol=1e-5)


@pytest.mark.exercise("masks", after=("attention-backward",))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_is_kept_forward_and_backward(rng, dtype):
    Q, K, V = (Tensor(rng.normal(size=(2, 3, 4)).astype(dtype), requires_grad=True) for _ in range(3))
    out, weights = scaled_dot_product_attention(Q, K, V, create_causal_mask(3))
    assert out.dtype == dtype and weights.dtype == dtype
    (out.sum() + weights.sum()).backward()
    assert all(t.grad.dtype == dtype for t in (Q, K, V))


@pytest.mark.exercise("attention-forward")
def test_mixed_dtypes_are_an_error(rng):
    Q = Tensor(rng.normal(size=(3, 4)).astype(np.float32))
    K = Tensor(rng.normal(size=(3, 4)))
    with pytest.raises(TypeError, match="float32.*float64"):
        scaled_dot_product_attention(Q, K, K)


@pytest.mark.exercise("masks")
def test_mask_may_be_01_numbers_or_a_tensor(rng):
    Q, K, V = (Tensor(rng.normal(size=(4, 3))) for _ in range(3))
    mask = create_causal_mask(4)
    expected = scaled_dot_product_attention(Q, K, V, mask)[0].data
    for variant in (mask.astype(int), mask.astype(np.float32), Tensor(mask), Tensor(mask.astype(np.float32))):
        np.testing.assert_array_equal(scaled_dot_product_attention(Q, K, V, variant)[0].data, expected)


@pytest.mark.exercise("masks", after=("attention-backward",))
@pytest.mark.parametrize("blocked", [-np.inf, -1e9])
def test_an_additive_float_mask_is_added_to_the_scores(rng, reference, blocked):
    Q, K, V = (Tensor(rng.normal(size=(2, 4, 3)), requires_grad=True) for _ in range(3))
    causal = create_causal_mask(4)
    additive = np.where(causal, 0.0, blocked)
    out, weights = scaled_dot_product_attention(Q, K, V, additive)
    expected_out, expected_weights = reference(Q, K, V, causal)
    np.testing.assert_allclose(out.data, expected_out, atol=1e-12)
    np.testing.assert_allclose(weights.data, expected_weights, atol=1e-12)
    assert gradcheck(lambda q, k, v: scaled_dot_product_attention(q, k, v, additive)[0], [Q, K, V])


@pytest.mark.exercise("attention-forward")
def test_an_additive_mask_with_other_values_shifts_the_scores(rng):
    Q, K, V = (Tensor(rng.normal(size=(3, 2))) for _ in range(3))
    bias = np.array([[0.0, -1.0, -2.0]] * 3)
    scores = Q.data @ K.data.T / np.sqrt(2) + bias
    p = np.exp(scores - scores.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    np.testing.assert_allclose(scaled_dot_product_attention(Q, K, V, bias)[1].data, p, atol=1e-12)


@pytest.mark.exercise("attention-forward")
def test_an_all_zero_float_mask_blocks_nothing(rng):
    Q, K, V = (Tensor(rng.normal(size=(3, 2))) for _ in range(3))
    np.testing.assert_array_equal(scaled_dot_product_attention(Q, K, V, np.zeros((3, 3)))[0].data,
                                  scaled_dot_product_attention(Q, K, V)[0].data)


@pytest.mark.exercise("attention-forward")
@pytest.mark.parametrize("mask", [np.full((3, 3), 0.5), np.array([[1.0, -np.inf, 2.0]] * 3), np.full((3, 3), np.nan),
                                  np.array([[1, 2, 0]] * 3), np.array([["a", "b", "c"]] * 3)])
def test_masks_of_other_values_are_a_clear_error(rng, mask):
    X = Tensor(rng.normal(size=(3, 2)))
    with pytest.raises(ValueError, match="mask must be boolean"):
        scaled_dot_product_attention(X, X, X, mask)


@pytest.mark.exercise("attention-backward")
def test_zero_keys_give_zeros_as_in_pytorch(rng):
    Q = Tensor(rng.normal(size=(2, 4, 3)), requires_grad=True)
    K, V = Tensor(np.zeros((2, 0, 3)), requires_grad=True), Tensor(np.zeros((2, 0, 5)), requires_grad=True)
    out, weights = scaled_dot_product_attention(Q, K, V)
    assert out.shape == (2, 4, 5) and weights.shape == (2, 4, 0)
    assert np.all(out.data == 0)
    out.backward(rng.normal(size=out.shape))
    assert np.all(Q.grad.data == 0) and K.grad.shape == (2, 0, 3) and V.grad.shape == (2, 0, 5)


@pytest.mark.exercise("attention-forward")
@pytest.mark.parametrize("shapes, mask_shape, words", [
    (((2, 5, 4), (2, 7, 3), (2, 7, 3)), None, ["(2, 5, 4)", "(2, 7, 3)", "d_k"]),
    (((5, 4), (7, 4), (6, 3)), None, ["(7, 4)", "(6, 3)", "keys"]),
    (((5, 4), (7, 4), (7, 3)), (5, 6), ["(5, 6)", "(5, 7)", "mask"]),
    (((5, 4), (7, 4), (7, 3)), (2, 5, 7), ["(2, 5, 7)", "(5, 7)", "mask"]),   # would broadcast the scores up
    (((2, 5, 4), (3, 7, 4), (3, 7, 3)), None, ["(2, 5, 4)", "(3, 7, 4)", "batch"]),
    (((5,), (7, 4), (7, 3)), None, ["(5,)"]),
])
def test_bad_shapes_are_clear_errors(shapes, mask_shape, words):
    Q, K, V = (Tensor(np.zeros(s)) for s in shapes)
    mask = None if mask_shape is None else np.ones(mask_shape, bool)
    with pytest.raises(ValueError) as info:
        scaled_dot_product_attention(Q, K, V, mask)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.exercise("masks")
def test_bidirectional_mask_is_the_same_as_no_mask(rng):
    Q, K, V = (Tensor(rng.normal(size=(5, 3))) for _ in range(3))
    np.testing.assert_array_equal(scaled_dot_product_attention(Q, K, V, create_bidirectional_mask(5))[0].data,
                                  scaled_dot_product_attention(Q, K, V)[0].data)
