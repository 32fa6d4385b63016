"""Module 04's training step (`tinytorch.core.train`): one step equals the same step computed by hand in numpy
(softmax regression in float64, whose gradient is known in closed form), gradients are clipped when asked and only
then, the learning rate given is the one used, gradients do not pile up across steps, and the two phases make up
the step."""
import numpy as np
import pytest

from tinytorch.core.layers import Linear, ReLU, Sequential
from tinytorch.core.losses import cross_entropy, mse_loss
from tinytorch.core.optim import SGD, AdamW
from tinytorch.core.tensor import Tensor
from tinytorch.core.train import forward_loss, train_step, update

# the given step is built from the exercises: SGD's update and zero_grad, clip_grad_norm_ (marked on its tests)
pytestmark = pytest.mark.exercise("sgd")

B, D, C = 6, 4, 3


def problem(rng):
    "A softmax-regression model in float64 (its weight and bias), and a batch."
    w = Tensor(rng.normal(size=(D, C)), requires_grad=True)
    b = Tensor(rng.normal(size=C), requires_grad=True)
    x, y = Tensor(rng.normal(size=(B, D))), rng.integers(0, C, size=B)
    return (lambda inputs: inputs @ w + b), w, b, x, y


def by_hand(w, b, x, y):
    "The loss and the gradients of mean cross-entropy for logits x @ w + b, in closed form."
    logits = x @ w + b
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    delta = np.exp(log_probs)
    delta[np.arange(len(y)), y] -= 1
    delta /= len(y)
    return -log_probs[np.arange(len(y)), y].mean(), x.T @ delta, delta.sum(axis=0)


def test_one_step_equals_the_step_by_hand(rng):
    model, w, b, x, y = problem(rng)
    w0, b0 = w.data.copy(), b.data.copy()
    loss = train_step(model, SGD([w, b], lr=0.5), x, y)
    want_loss, gw, gb = by_hand(w0, b0, x.data, y)
    assert isinstance(loss, float)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-12)
    np.testing.assert_allclose(w.data, w0 - 0.5 * gw, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.data, b0 - 0.5 * gb, rtol=1e-12, atol=1e-14)


def test_gradients_do_not_pile_up_across_steps(rng):
    model, w, b, x, y = problem(rng)
    expected_w, expected_b = w.data.copy(), b.data.copy()
    optimizer = SGD([w, b], lr=0.5)
    for _ in range(3):
        _, gw, gb = by_hand(expected_w, expected_b, x.data, y)
        expected_w, expected_b = expected_w - 0.5 * gw, expected_b - 0.5 * gb
        train_step(model, optimizer, x, y)
    np.testing.assert_allclose(w.data, expected_w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.data, expected_b, rtol=1e-12, atol=1e-14)


@pytest.mark.exercise("clip-grad-norm")
def test_gradients_are_clipped_to_max_norm_when_asked(rng):
    model, w, b, x, y = problem(rng)
    w0, b0 = w.data.copy(), b.data.copy()
    _, gw, gb = by_hand(w0, b0, x.data, y)
    norm = np.sqrt((gw ** 2).sum() + (gb ** 2).sum())
    max_norm = norm / 4
    train_step(model, SGD([w, b], lr=0.5), x, y, max_norm=max_norm)
    scale = max_norm / (norm + 1e-6)
    np.testing.assert_allclose(w.data, w0 - 0.5 * scale * gw, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(b.data, b0 - 0.5 * scale * gb, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.sqrt((w.grad.data ** 2).sum() + (b.grad.data ** 2).sum()), scale * norm, rtol=1e-12)


@pytest.mark.exercise("clip-grad-norm")
def test_a_max_norm_above_the_norm_changes_nothing(rng):
    model, w, b, x, y = problem(rng)
    w0 = w.data.copy()
    _, gw, gb = by_hand(w0, b.data, x.data, y)
    train_step(model, SGD([w, b], lr=0.5), x, y, max_norm=10 * np.sqrt((gw ** 2).sum() + (gb ** 2).sum()))
    np.testing.assert_allclose(w.data, w0 - 0.5 * gw, rtol=1e-12, atol=1e-14)


def test_the_learning_rate_given_is_used_and_kept(rng):
    model, w, b, x, y = problem(rng)
    w0 = w.data.copy()
    _, gw, _ = by_hand(w0, b.data, x.data, y)
    optimizer = SGD([w, b], lr=0.1)
    train_step(model, optimizer, x, y, lr=0.7)
    np.testing.assert_allclose(w.data, w0 - 0.7 * gw, rtol=1e-12, atol=1e-14)
    assert optimizer.lr == 0.7


def test_without_lr_the_optimizers_own_is_used(rng):
    model, w, b, x, y = problem(rng)
    w0 = w.data.copy()
    _, gw, _ = by_hand(w0, b.data, x.data, y)
    optimizer = SGD([w, b], lr=0.1)
    train_step(model, optimizer, x, y)
    np.testing.assert_allclose(w.data, w0 - 0.1 * gw, rtol=1e-12, atol=1e-14)
    assert optimizer.lr == 0.1


def twin_models(rng):
    "Two MLPs with the same float64 weights, each with its AdamW."
    models = [Sequential(Linear(D, 8), ReLU(), Linear(8, C)).to(np.float64) for _ in range(2)]
    for p in models[0].parameters():
        p.data[...] = rng.normal(size=p.shape)
    for p, q in zip(models[0].parameters(), models[1].parameters()):
        q.data[...] = p.data
    return [(m, AdamW(m.parameters(), lr=1e-2)) for m in models]


def test_the_two_phases_make_up_the_step(rng):
    (a, opt_a), (b, opt_b) = twin_models(rng)
    x, y = Tensor(rng.normal(size=(B, D))), rng.integers(0, C, size=B)
    for _ in range(3):
        loss = forward_loss(a, x, y)
        assert isinstance(loss, Tensor) and loss.requires_grad
        np.testing.assert_allclose(loss.data, cross_entropy(a(x), y).data, rtol=1e-12)
        first = update(opt_a, loss, max_norm=0.5, lr=3e-3)
        second = train_step(b, opt_b, x, y, max_norm=0.5, lr=3e-3)
        assert first == second
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_array_equal(p.data, q.data)


def test_another_loss_function(rng):
    w = Tensor(rng.normal(size=(D, 1)), requires_grad=True)
    x, target = Tensor(rng.normal(size=(B, D))), rng.normal(size=(B, 1))
    w0 = w.data.copy()
    loss = train_step(lambda inputs: inputs @ w, SGD([w], lr=0.1), x, target, loss_fn=mse_loss)
    residual = x.data @ w0 - target
    np.testing.assert_allclose(loss, (residual ** 2).mean(), rtol=1e-12)
    np.testing.assert_allclose(w.data, w0 - 0.1 * 2 * x.data.T @ residual / residual.size, rtol=1e-12, atol=1e-14)


@pytest.mark.exercise("clip-grad-norm")
@pytest.mark.parametrize("max_norm", [0.0, -1.0])
def test_a_max_norm_that_is_not_positive_is_refused(rng, max_norm):
    model, w, b, x, y = problem(rng)
    with pytest.raises(ValueError, match="max_norm"):
        train_step(model, SGD([w, b], lr=0.1), x, y, max_norm=max_norm)
