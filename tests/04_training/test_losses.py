"""Module 04: `cross_entropy` and `mse_loss` (and their module forms): values, gradients (gradcheck in float64 with a
random upstream gradient), numerical stability, dtypes, and one-line errors for bad input."""
import numpy as np
import pytest

from tinytorch.core.autograd import GradcheckError, gradcheck, no_grad
from tinytorch.core.losses import CrossEntropyLoss, MSELoss, cross_entropy, mse_loss
from tinytorch.core.tensor import Tensor


def reference_cross_entropy(z, y):
    "Straightforward float64 reference (fine for moderate logits)."
    z = z.astype(np.float64)
    log_probs = z - z.max(axis=-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(axis=-1, keepdims=True))
    return -np.take_along_axis(log_probs, y[..., None], axis=-1).mean()


def leaf(array):
    return Tensor(np.array(array, dtype=np.float64), requires_grad=True)


# --- cross_entropy: values ------------------------------------------------------------------------------------------
@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("shape", [(1, 2), (5, 3), (2, 3, 7), (2, 2, 2, 4), (3,)])
def test_cross_entropy_matches_reference(shape, rng):
    z = rng.normal(scale=3, size=shape)
    y = rng.integers(0, shape[-1], size=shape[:-1])
    assert np.isclose(cross_entropy(Tensor(z), y).item(), reference_cross_entropy(z, y), rtol=1e-12)


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_of_uniform_logits_is_log_num_classes():
    assert np.isclose(cross_entropy(Tensor(np.zeros((4, 10))), np.array([0, 3, 9, 2])).item(), np.log(10))


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_is_a_scalar_mean_over_all_positions(rng):
    z, y = rng.normal(size=(2, 3, 5)), rng.integers(0, 5, size=(2, 3))
    loss = cross_entropy(Tensor(z), y)
    assert loss.shape == ()
    per_position = [reference_cross_entropy(z[b, t][None], y[b, t][None]) for b in range(2) for t in range(3)]
    assert np.isclose(loss.item(), np.mean(per_position))


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e2, 1e4, 1e6])
def test_cross_entropy_is_finite_and_exact_for_huge_logits(dtype, scale):
    z = np.array([[scale, 0.0, -scale], [0.0, scale, scale]], dtype=dtype)
    y = np.array([1, 0])
    logits = Tensor(z, requires_grad=True)
    loss = cross_entropy(logits, y)
    # row 0: the target is `scale` below the max; row 1: the target is `scale` below two tied maxima
    assert np.isclose(loss.item(), (scale + scale + np.log(2)) / 2, rtol=1e-6)
    loss.backward()
    grad = logits.grad.data
    assert np.all(np.isfinite(grad))
    assert np.allclose(grad, np.array([[1, -1, 0], [-1, 0.5, 0.5]]) / 2, atol=1e-6)


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_keeps_the_logits_dtype(rng):
    z = rng.normal(size=(3, 4))
    y = np.array([0, 1, 3])
    for dtype in (np.float32, np.float64):
        logits = Tensor(z.astype(dtype), requires_grad=True)
        loss = cross_entropy(logits, y)
        assert loss.dtype == dtype
        loss.backward()
        assert logits.grad.dtype == dtype


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("targets", [np.array([2, 0]), np.array([2, 0], dtype=np.int32), np.array([2, 0], dtype=np.uint8),
                                     Tensor(np.array([2, 0])), [2, 0]])
def test_cross_entropy_accepts_integer_arrays_lists_and_tensors(targets):
    z = np.array([[0.1, 0.2, 3.0], [1.0, 0.0, 0.0]])
    assert np.isclose(cross_entropy(Tensor(z), targets).item(), reference_cross_entropy(z, np.array([2, 0])))


@pytest.mark.exercise("mse-loss")
def test_loss_modules_call_the_functions(rng):
    z, y = rng.normal(size=(4, 3)), rng.integers(0, 3, size=4)
    assert CrossEntropyLoss()(Tensor(z), y).item() == cross_entropy(Tensor(z), y).item()
    p, t = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    assert MSELoss()(Tensor(p), t).item() == mse_loss(Tensor(p), t).item()
    assert CrossEntropyLoss().parameters() == [] and MSELoss().parameters() == []


# --- cross_entropy: gradients ------------------------------------------------------------------------------------------
@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_gradient_is_softmax_minus_onehot_over_n(rng):
    z, y = rng.normal(size=(5, 4)), rng.integers(0, 4, size=5)
    logits = leaf(z)
    cross_entropy(logits, y).backward(np.array(2.5))
    softmax = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    expected = softmax.copy()
    expected[np.arange(5), y] -= 1
    np.testing.assert_allclose(logits.grad.data, 2.5 * expected / 5, rtol=1e-12, atol=1e-15)


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 7), (1, 1, 2, 3), (6, 1)])
def test_cross_entropy_gradcheck(shape, rng):
    y = rng.integers(0, shape[-1], size=shape[:-1])
    assert gradcheck(lambda z: cross_entropy(z, y), [leaf(rng.normal(scale=2, size=shape))])


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_gradcheck_inside_a_model_with_random_weighting(rng):
    "A random linear map in front of the loss: checks the gradient w.r.t. an input and a weight through the fused op."
    x, w = leaf(rng.normal(size=(3, 4))), leaf(rng.normal(size=(4, 5)))
    y = rng.integers(0, 5, size=3)
    assert gradcheck(lambda x, w: cross_entropy(x @ w, y), [x, w])


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_gradcheck_catches_a_wrong_rule(monkeypatch, rng):
    "The check above can fail: a rule that forgets the 1/N factor is caught."
    from tinytorch.core import autograd
    good = autograd.GRADIENTS["cross_entropy"]
    monkeypatch.setitem(autograd.GRADIENTS, "cross_entropy",
                        lambda grad, out, logits, **attrs: (good(grad, out, logits, **attrs)[0] * attrs["targets"].size,))
    with pytest.raises(GradcheckError):
        gradcheck(lambda z: cross_entropy(z, np.array([0, 1, 2])), [leaf(rng.normal(size=(3, 4)))])


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_records_one_fused_node():
    logits = leaf(np.zeros((2, 3)))
    loss = cross_entropy(logits, np.array([0, 1]))
    assert loss._node.op == "cross_entropy" and loss._node.inputs == (logits,)
    with no_grad():
        assert not cross_entropy(logits, np.array([0, 1])).requires_grad


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_gradient_accumulates_like_any_op():
    logits = leaf(np.array([[1.0, 2.0, 3.0]]))
    cross_entropy(logits, np.array([0])).backward()
    first = logits.grad.data.copy()
    cross_entropy(logits, np.array([0])).backward()
    np.testing.assert_allclose(logits.grad.data, 2 * first)


# --- cross_entropy: errors ---------------------------------------------------------------------------------------------
@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("bad, words", [(np.array([0, 3, 1]), ["3", "3 classes"]), (np.array([0, -1, 1]), ["-1", "3 classes"]),
                                        (np.array([[0, 7], [1, 1]]), None)])
def test_cross_entropy_rejects_targets_out_of_range(bad, words):
    z = Tensor(np.zeros(bad.shape + (3,)))
    with pytest.raises(ValueError, match="out of range") as info:
        cross_entropy(z, bad)
    assert "\n" not in str(info.value)
    for word in words or ["7"]:
        assert word in str(info.value)


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("logits_shape, targets_shape", [((4, 3), (5,)), ((4, 3), (4, 1)), ((2, 3, 5), (2,)), ((2, 3, 5), (3, 2))])
def test_cross_entropy_shape_mismatch_names_both_shapes(logits_shape, targets_shape):
    with pytest.raises(ValueError) as info:
        cross_entropy(Tensor(np.zeros(logits_shape)), np.zeros(targets_shape, dtype=np.int64))
    assert str(logits_shape) in str(info.value) and str(targets_shape) in str(info.value)


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("targets", [np.array([0.0, 1.0]), np.array([True, False]), Tensor([0.0, 1.0])])
def test_cross_entropy_rejects_non_integer_targets(targets):
    with pytest.raises(TypeError, match="integer"):
        cross_entropy(Tensor(np.zeros((2, 3))), targets)


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_rejects_scalar_logits_integer_logits_and_empty_targets():
    with pytest.raises(ValueError):
        cross_entropy(Tensor(np.array(1.0)), np.array(0))
    with pytest.raises(TypeError, match="floating"):
        cross_entropy(Tensor(np.zeros((2, 3), dtype=np.int64)), np.array([0, 1]))
    with pytest.raises(ValueError, match="no targets"):
        cross_entropy(Tensor(np.zeros((0, 3))), np.zeros(0, dtype=np.int64))


# --- mse_loss ----------------------------------------------------------------------------------------------------------
@pytest.mark.exercise("mse-loss")
@pytest.mark.parametrize("shape", [(), (4,), (3, 2), (2, 3, 4)])
def test_mse_value_and_gradient(shape, rng):
    p, t = rng.normal(size=shape), rng.normal(size=shape)
    pred = leaf(p)
    loss = mse_loss(pred, t)
    assert loss.shape == () and np.isclose(loss.item(), np.mean((p - t) ** 2))
    loss.backward()
    np.testing.assert_allclose(pred.grad.data, 2 * (p - t) / max(p.size, 1))


@pytest.mark.exercise("mse-loss")
def test_mse_gradcheck_wrt_prediction_and_target(rng):
    assert gradcheck(mse_loss, [leaf(rng.normal(size=(3, 4))), leaf(rng.normal(size=(3, 4)))])


@pytest.mark.exercise("mse-loss")
def test_mse_gradcheck_inside_a_model(rng):
    x, w = leaf(rng.normal(size=(5, 3))), leaf(rng.normal(size=(3, 2)))
    target = rng.normal(size=(5, 2))
    assert gradcheck(lambda x, w: mse_loss((x @ w).tanh(), target), [x, w])


@pytest.mark.exercise("mse-loss")
def test_mse_rejects_shapes_that_would_broadcast():
    with pytest.raises(ValueError) as info:
        mse_loss(Tensor(np.zeros((5, 1))), np.zeros(5))
    assert "(5, 1)" in str(info.value) and "(5,)" in str(info.value)


@pytest.mark.exercise("mse-loss")
def test_mse_dtypes():
    pred32 = Tensor(np.zeros(3, dtype=np.float32), requires_grad=True)
    loss = mse_loss(pred32, np.ones(3))            # a float64 numpy target takes the prediction's dtype
    assert loss.dtype == np.float32 and np.isclose(loss.item(), 1.0)
    loss.backward()
    assert pred32.grad.dtype == np.float32
    assert mse_loss(Tensor(np.zeros(3)), [1.0, 1.0, 1.0]).dtype == np.float64
    assert mse_loss(pred32, Tensor(np.ones(3))).dtype == np.float32   # a float64 Tensor target is cast, as in PyTorch
    with pytest.raises(TypeError, match="floating-point target"):
        mse_loss(pred32, Tensor(np.array([1, 1, 1])))


@pytest.mark.exercise("cross-entropy")
def test_ignore_index_skips_positions_in_value_and_gradient(rng):
    from tinytorch.core.autograd import gradcheck
    z = rng.normal(size=(2, 4, 6))
    y = np.array([[1, 2, -1, -1], [0, 5, 4, -1]])
    kept = y != -1
    full = cross_entropy(Tensor(z[kept]), y[kept]).item()          # the real positions alone
    assert np.isclose(cross_entropy(Tensor(z), y, ignore_index=-1).item(), full, rtol=1e-12)
    logits = Tensor(z, requires_grad=True)
    cross_entropy(logits, y, ignore_index=-1).backward()
    assert np.all(logits.grad.data[~kept] == 0) and np.all(logits.grad.data[kept] != 0)
    assert gradcheck(lambda t: cross_entropy(t, y, ignore_index=-1), [Tensor(z, requires_grad=True)])
    with pytest.raises(ValueError, match="ignore_index"):
        cross_entropy(Tensor(z), np.full((2, 4), -1), ignore_index=-1)
    with pytest.raises(ValueError, match="out of range"):
        cross_entropy(Tensor(z), y)                                 # without it, -1 is a bad class
    assert np.isclose(CrossEntropyLoss(ignore_index=-1)(Tensor(z), y).item(), full, rtol=1e-12)
