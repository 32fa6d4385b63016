"""Attention with the compiled masked softmax (`compiled_attention`) equals the plain op, on every kind of mask, one
thread or two, one block or many; its softmax is module 05's; inputs it does not take, and the other compiled ops'
odd inputs, go to the plain op; a broken compiled gradient rule is caught.

The compiled masked softmax and attention are given code, not an exercise of module 08: their tests are marked with
the switch (Exercise 5), which puts them in the table."""
import numpy as np
import pytest

import tinytorch.perf as perf
from tinytorch.core.attention import scaled_dot_product_attention

from perf_helpers import (DTYPES, HANDED_OVER, MASKS, ROW_BLOCKED, assert_a_broken_rule_is_caught,
                          assert_handed_over_to_the_plain_op, assert_same_as_plain, check_a_fully_blocked_row_gives_zeros,
                          check_inputs_that_need_no_gradient, check_split_heads_keep_their_layout, leaves)


@pytest.mark.exercise("switch")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", MASKS)
def test_compiled_attention_equals_the_plain_op(rng, dtype, name, threads, cache_bytes, pools):
    Q, K, V = leaves(rng, (2, 1, 3, 4), (1, 2, 5, 4), (2, 2, 5, 2), dtype=dtype)
    assert_same_as_plain(perf.compiled_attention, scaled_dot_product_attention.plain, [Q, K, V], mask=MASKS[name])
    assert bool(pools) == (threads == 2)


@pytest.mark.exercise("switch")
def test_compiled_attention_with_inputs_that_need_no_gradient(rng, threads, cache_bytes):
    check_inputs_that_need_no_gradient(perf.compiled_attention, rng)


@pytest.mark.exercise("switch")
def test_compiled_attention_of_split_heads_keeps_their_layout(rng):
    check_split_heads_keep_their_layout(perf.compiled_attention, rng)


@pytest.mark.exercise("switch")
def test_compiled_attention_of_a_fully_blocked_row_gives_zeros_forward_and_backward(rng, threads, cache_bytes):
    check_a_fully_blocked_row_gives_zeros(perf.compiled_attention, rng)


@pytest.mark.exercise("switch")
@pytest.mark.parametrize("case", HANDED_OVER)
def test_inputs_a_fast_kernel_does_not_take_go_to_the_plain_op(recorded_ops, case):
    "Every kernel of FAST_KERNELS: the same values, or the same error, as the plain op, and no fast op recorded."
    assert_handed_over_to_the_plain_op(perf.FAST_KERNELS, case, recorded_ops)


RULE_EXERCISE = {"fast_compiled_softmax": "switch", "fast_compiled_layer_norm": "compiled-layer-norm-loops",
                 "fast_compiled_gelu": "compiled-gelu-loops", "fast_compiled_cross_entropy": "compiled-cross-entropy-loops",
                 "fast_compiled_attention": "switch", "fast_compiled_attention_weights": "switch"}


@pytest.mark.parametrize("op", [pytest.param(op, marks=pytest.mark.exercise(gid)) for op, gid in RULE_EXERCISE.items()])
def test_a_broken_compiled_gradient_rule_is_caught(rng, monkeypatch, op):
    "The gradient checks run the compiled ops' rules: scale one by 1.1 and gradcheck fails."
    cases = {
        "fast_compiled_attention": (lambda q, k, v: perf.compiled_attention(q, k, v)[0],
                                    leaves(rng, (3, 2), (4, 2), (4, 2))),
        "fast_compiled_attention_weights": (lambda q, k: perf.compiled_attention(q, k, k)[1],
                                            leaves(rng, (3, 2), (4, 2))),
        "fast_compiled_softmax": (perf.compiled_softmax, leaves(rng, (3, 4))),
        "fast_compiled_layer_norm": (perf.compiled_layer_norm, leaves(rng, (3, 4), (4,), (4,))),
        "fast_compiled_gelu": (perf.compiled_gelu, leaves(rng, (3, 4))),
        "fast_compiled_cross_entropy": (lambda z: perf.compiled_cross_entropy(z, np.array([0, 3, 1])),
                                        leaves(rng, (3, 4))),
    }
    assert_a_broken_rule_is_caught(monkeypatch, op, *cases[op])


@pytest.mark.exercise("switch")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [*MASKS, "additive, a row all -1e9 (uniform weights)"])
def test_the_compiled_masked_softmax_is_module_05s(rng, dtype, name):
    """Every kind of mask, read by module 05's _mask_bias, broadcast to the scores (a view or, for (B,1,1,m), a copy).
    A row all -1e9 has uniform weights (values only: -1e9 leaves a float64 score too few digits for a gradient check)."""
    from tinytorch.core.attention import _mask_bias, _masked_softmax
    scores = (3 * rng.normal(size=(2, 2, 3, 5))).astype(dtype)
    mask = MASKS.get(name, np.where(ROW_BLOCKED, 0.0, -1e9))
    bias = _mask_bias(mask, scores.shape, dtype)
    expected = _masked_softmax(scores, bias)
    scores_in = scores.copy()
    got = perf.compiled_kernels._compiled_masked_softmax(scores_in, bias)
    assert got is scores_in                                  # the loop's path: written over the scores, in place
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=0)
    assert got.dtype == dtype


@pytest.mark.exercise("switch")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_nan_or_infinite_score_spreads_as_in_module_05(rng, dtype, bad):
    from tinytorch.core.attention import _masked_softmax
    scores = rng.normal(size=(2, 3, 4)).astype(dtype)
    scores[0, 1, 2] = bad
    expected = _masked_softmax(scores, None)
    got = perf.compiled_kernels._compiled_masked_softmax(scores.copy(), None)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == np.float32 else 1e-13, atol=0)
