"""`gradcheck` itself: it passes correct rules, and it catches wrong ones, including the ones a plain `.sum()` probe
(all-ones upstream gradient) cannot see. Wrong rules are put into `GRADIENTS` with monkeypatch, undone after."""
import re

import numpy as np
import pytest

from tinytorch.core.autograd import GRADIENTS, GradcheckError, gradcheck, no_grad
from tinytorch.core.tensor import Tensor, _result


def leaf(data, dtype=np.float64):
    return Tensor(np.asarray(data, dtype=dtype), requires_grad=True)


def numbers_in(message, label):
    "The number printed after `label` in a gradcheck message."
    return float(re.search(label + r"\s+(-?[0-9.eE+-]+)", message).group(1))


def sum_probe(fn, x, eps=1e-6):
    """The weak check: analytic gradient of `fn(x).sum()` (upstream all ones) and its central differences."""
    x.grad = None
    out = fn(x)
    out.backward(np.ones(out.shape))
    numeric = np.zeros_like(x.data)
    for idx in np.ndindex(x.shape):
        original = x.data[idx]
        with no_grad():
            x.data[idx] = original + eps
            plus = fn(x).data.sum()
            x.data[idx] = original - eps
            minus = fn(x).data.sum()
        x.data[idx] = original
        numeric[idx] = (plus - minus) / (2 * eps)
    return x.grad.data, numeric


@pytest.mark.exercise("reduction-gradients")
def test_passes_correct_rules_and_returns_true(rng):
    x, w, b = leaf(rng.normal(size=(2, 3))), leaf(rng.normal(size=(3, 4))), leaf(rng.normal(size=4))
    assert gradcheck(lambda x, w, b: (x @ w + b).tanh().mean(axis=0), [x, w, b]) is True


@pytest.mark.exercise("arithmetic-gradients")
def test_error_names_op_input_index_expected_and_received(monkeypatch, rng):
    "A mul rule that is wrong by +1 in one coordinate of its second input only."
    seen = {}
    right = GRADIENTS["mul"]

    def wrong(grad, out, a, b):
        grad_a, grad_b = right(grad, out, a, b)
        seen["true"] = grad_b[1, 2]
        grad_b = np.array(grad_b, copy=True)
        grad_b[1, 2] += 1.0
        return grad_a, grad_b

    monkeypatch.setitem(GRADIENTS, "mul", wrong)
    a, b = leaf(rng.normal(size=(3, 4))), leaf(rng.normal(size=(3, 4)))
    with pytest.raises(GradcheckError) as excinfo:
        gradcheck(lambda a, b: a * b, [a, b])
    message = str(excinfo.value)
    assert "'mul'" in message and "input 1" in message and "(1, 2)" in message
    expected, received = numbers_in(message, "expected"), numbers_in(message, "received")
    assert expected == pytest.approx(seen["true"], abs=1e-6)
    assert received == pytest.approx(seen["true"] + 1.0, rel=1e-8, abs=1e-8)
    assert isinstance(excinfo.value, AssertionError)


@pytest.mark.exercise("arithmetic-gradients")
def test_catches_a_missing_gradient(monkeypatch, rng):
    right = GRADIENTS["mul"]
    monkeypatch.setitem(GRADIENTS, "mul", lambda grad, out, a, b: (right(grad, out, a, b)[0], None))
    with pytest.raises(GradcheckError, match="input 1"):
        gradcheck(lambda a, b: a * b, [leaf(rng.normal(size=(2, 2))), leaf(rng.normal(size=(2, 2)))])


@pytest.mark.exercise("elementwise-gradients")
def test_checks_every_coordinate(monkeypatch, rng):
    "A rule wrong only at the last coordinate of a (3, 4) input is caught there."
    right = GRADIENTS["tanh"]

    def wrong_in_a_corner(grad, out, a):
        (g,) = right(grad, out, a)
        g = np.array(g, copy=True)
        g[-1, -1] *= 1.01
        return (g,)

    monkeypatch.setitem(GRADIENTS, "tanh", wrong_in_a_corner)
    with pytest.raises(GradcheckError, match=re.escape("index (2, 3)")):
        gradcheck(lambda x: x.tanh(), [leaf(rng.normal(size=(3, 4)))])


@pytest.mark.exercise("arithmetic-gradients")
def test_refuses_float32_inputs(rng):
    x = leaf(rng.normal(size=(2, 2)), np.float32)
    with pytest.raises(TypeError, match="float64"):
        gradcheck(lambda x: x * 2.0, [x])


@pytest.mark.exercise("arithmetic-gradients")
def test_ignores_inputs_that_do_not_require_grad(rng):
    x, constant = leaf(rng.normal(size=(2, 3))), Tensor(rng.normal(size=(2, 3)).astype(np.float32))
    assert gradcheck(lambda x, c: x * c, [x, constant])
    assert constant.grad is None


@pytest.mark.exercise("elementwise-gradients")
def test_leaves_inputs_and_their_grads_untouched(rng):
    x = leaf(rng.normal(size=(2, 3)))
    before = x.data.copy()
    x.grad = Tensor(np.full((2, 3), 7.0))
    gradcheck(lambda x: (x * x).exp(), [x])
    np.testing.assert_array_equal(x.data, before)
    np.testing.assert_array_equal(x.grad.data, np.full((2, 3), 7.0))


# --- bugs that a plain .sum() probe hides -------------------------------------------------------------------------

def softmax(x):
    "A fused op registered only for these tests: softmax over the last axis."
    e = np.exp(x.data - x.data.max(axis=-1, keepdims=True))
    return _result(e / e.sum(axis=-1, keepdims=True), "softmax_under_test", (x,))


def softmax_backward(grad, out, x):
    s = out.data
    return (s * (grad - (grad * s).sum(axis=-1, keepdims=True)),)


def softmax_backward_wrong(grad, out, x):
    "Plausible bug: the plain mean of the upstream gradient instead of its s-weighted sum. Exact for all-ones."
    s = out.data
    return (s * (grad - grad.mean(axis=-1, keepdims=True)),)


@pytest.mark.exercise("backward")
def test_softmax_bug_hidden_by_a_sum_probe_is_caught(monkeypatch, rng):
    x = leaf(rng.normal(size=(3, 4)))
    monkeypatch.setitem(GRADIENTS, "softmax_under_test", softmax_backward)
    assert gradcheck(softmax, [x])

    monkeypatch.setitem(GRADIENTS, "softmax_under_test", softmax_backward_wrong)
    analytic, numeric = sum_probe(softmax, x)
    np.testing.assert_allclose(analytic, numeric, atol=1e-8)     # the sum probe sees nothing wrong
    with pytest.raises(GradcheckError, match="softmax_under_test"):
        gradcheck(softmax, [x])


@pytest.mark.exercise("backward")
def test_transpose_permutation_bug_hidden_by_a_sum_probe_is_caught(monkeypatch, rng):
    "A transpose rule that forgets to swap back: right numbers, wrong places; on a square input the shape fits."
    x = leaf(rng.normal(size=(3, 3)))
    monkeypatch.setitem(GRADIENTS, "transpose", lambda grad, out, a, dim0, dim1: (grad,))
    analytic, numeric = sum_probe(lambda x: x.transpose(), x)
    np.testing.assert_allclose(analytic, numeric, atol=1e-8)     # all ones look alike
    with pytest.raises(GradcheckError, match="'transpose'"):
        gradcheck(lambda x: x.transpose(), [x])


@pytest.mark.exercise("backward")
def test_matmul_missing_transpose_is_caught(monkeypatch, rng):
    "grad @ B instead of grad @ B.T: with square operands the shapes fit, and only values can tell."
    monkeypatch.setitem(GRADIENTS, "matmul", lambda grad, out, a, b: (grad @ b.data, a.data.T @ grad))
    with pytest.raises(GradcheckError, match="input 0"):
        gradcheck(lambda a, b: a @ b, [leaf(rng.normal(size=(3, 3))), leaf(rng.normal(size=(3, 3)))])
