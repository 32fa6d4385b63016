"""float64 gradient checks (random upstream gradient, every coordinate) w.r.t. inputs and every parameter."""
import numpy as np
import pytest

from tinytorch.core.autograd import GRADIENTS, GradcheckError, gradcheck
from tinytorch.core.layers import (GELU, Dropout, Embedding, LayerNorm, Linear, ReLU, Sequential, Sigmoid, Softmax,
                                   Tanh, embedding, gelu, layer_norm, linear, log_softmax, relu, sigmoid, softmax)
from tinytorch.core.tensor import Tensor


def check_module(module, x):
    "gradcheck w.r.t. the input and every parameter of `module` (float64)."
    module.to(np.float64)
    params = module.parameters()
    inputs = ([x] if isinstance(x, Tensor) else []) + params
    call = (lambda *args: module(args[0])) if isinstance(x, Tensor) else (lambda *args: module(x))
    assert gradcheck(call, inputs)


def away_from_zero(t, margin=1e-3):
    t.data[np.abs(t.data) < margin] = 0.5      # ReLU has no derivative at 0
    return t


@pytest.mark.exercise("linear")
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4), (4,)])
def test_linear_gradients(leaf, shape):
    check_module(Linear(4, 3), leaf(*shape))


@pytest.mark.exercise("linear")
def test_linear_without_bias_gradients(leaf):
    check_module(Linear(4, 2, bias=False), leaf(2, 3, 4))


@pytest.mark.exercise("linear")
def test_linear_is_one_op_and_skips_the_input_gradient_when_not_needed(leaf, rng):
    w, b = leaf(4, 3), leaf(3)
    x = Tensor(rng.normal(size=(2, 5, 4)))                                   # a constant input
    out = linear(x, w, b)
    assert out._node.op == "linear" and out._node.inputs == (x, w, b)
    np.testing.assert_allclose(out.data, x.data @ w.data + b.data, rtol=1e-12)
    assert gradcheck(lambda w, b: linear(x, w, b), [w, b])
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    assert x.grad is None
    np.testing.assert_allclose(w.grad.data, x.data.reshape(-1, 4).T @ upstream.reshape(-1, 3), rtol=1e-12)
    np.testing.assert_allclose(b.grad.data, upstream.sum(axis=(0, 1)), rtol=1e-12)


@pytest.mark.exercise("activations")
@pytest.mark.parametrize("fn", [relu, sigmoid, gelu, ReLU(), Sigmoid(), GELU(), Tanh()],
                         ids=["relu", "sigmoid", "gelu", "ReLU", "Sigmoid", "GELU", "Tanh"])
def test_activation_gradients(leaf, fn):
    assert gradcheck(fn, [away_from_zero(leaf(2, 3, 4, scale=2.0))])


@pytest.mark.exercise("activations")
def test_gelu_and_sigmoid_gradients_for_large_inputs(leaf):
    x = leaf(3, 4, scale=6.0)
    assert gradcheck(gelu, [x]) and gradcheck(sigmoid, [x])


@pytest.mark.exercise("softmax")
@pytest.mark.parametrize("dim", [-1, 0, 1, 2])
@pytest.mark.parametrize("fn", [softmax, log_softmax])
def test_softmax_gradients(leaf, fn, dim):
    assert gradcheck(lambda x: fn(x, dim=dim), [leaf(2, 3, 4, scale=3.0)])


@pytest.mark.exercise("softmax")
def test_softmax_module_gradient(leaf):
    assert gradcheck(Softmax(dim=1), [leaf(2, 3, 4)])


@pytest.mark.exercise("embedding")
def test_embedding_gradient_with_repeated_ids():
    ids = np.array([[0, 2, 2, 5], [5, 5, 1, 0]])
    check_module(Embedding(6, 3), ids)


@pytest.mark.exercise("embedding")
def test_embedding_gradient_with_integer_tensor_ids():
    check_module(Embedding(4, 2), Tensor(np.array([3, 3, 3, 0])))


@pytest.mark.exercise("layer-norm")
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 5), (5,)])
def test_layer_norm_gradients(leaf, rng, shape):
    ln = LayerNorm(5)
    ln.to(np.float64)
    ln.weight.data[...] = rng.normal(size=5)     # not the identity affine, so weight mistakes show
    ln.bias.data[...] = rng.normal(size=5)
    check_module(ln, leaf(*shape, scale=3.0))


@pytest.mark.exercise("layer-norm")
def test_layer_norm_functional_gradients(leaf):
    x, w, b = leaf(3, 6), leaf(6), leaf(6)
    assert gradcheck(lambda x, w, b: layer_norm(x, w, b, eps=1e-3), [x, w, b])


@pytest.mark.exercise("dropout")
def test_dropout_gradient_is_mask_over_keep_probability(leaf):
    x = leaf(4, 5)
    drop = Dropout(0.3, rng=np.random.default_rng(1))
    # the same mask in every evaluation: a fresh generator with the same seed for each call
    assert gradcheck(lambda x: Dropout(0.3, rng=np.random.default_rng(1))(x), [x])
    y = drop(x)
    y.backward(np.ones(x.shape))
    assert np.allclose(x.grad.data, (y.data != 0) / 0.7)


@pytest.mark.exercise("layer-norm")
def test_sequential_mlp_gradients(leaf):
    model = Sequential(Linear(3, 6), GELU(), LayerNorm(6), Linear(6, 4), Tanh(), Linear(4, 2), Sigmoid())
    check_module(model, leaf(5, 3))


@pytest.mark.exercise("layer-norm")
@pytest.mark.parametrize("op", ["linear", "relu", "sigmoid", "gelu", "softmax", "log_softmax", "embedding",
                                "layer_norm"])
def test_fused_rules_are_registered_and_a_broken_one_is_caught(op, leaf):
    "Each layer op has its own rule, and gradcheck (as used above) notices when it is wrong."
    cases = {
        "linear": (lambda x, w, b: linear(x, w, b), [leaf(2, 3, 4), leaf(4, 5), leaf(5)]),
        "relu": (relu, [away_from_zero(leaf(3, 4))]),
        "sigmoid": (sigmoid, [leaf(3, 4)]),
        "gelu": (gelu, [leaf(3, 4)]),
        "softmax": (softmax, [leaf(3, 4)]),
        "log_softmax": (log_softmax, [leaf(3, 4)]),
        "embedding": (lambda w: embedding(np.array([1, 1, 4]), w), [leaf(5, 3)]),
        "layer_norm": (lambda x, w, b: layer_norm(x, w, b), [leaf(3, 4), leaf(4), leaf(4)]),
    }
    fn, inputs = cases[op]
    good = GRADIENTS[op]
    GRADIENTS[op] = lambda grad, out, *ins, **attrs: tuple(1.1 * g for g in good(grad, out, *ins, **attrs))
    try:
        with pytest.raises(GradcheckError):
            gradcheck(fn, inputs)
    finally:
        GRADIENTS[op] = good
    assert gradcheck(fn, inputs)


@pytest.mark.exercise("activations")
def test_gelu_of_a_large_input_matches_its_formula_and_derivative(rng):
    v = rng.normal(size=(3, 50_001)) * 3                                     # 150,003 numbers: two chunks and a bit
    x = Tensor(v, requires_grad=True)
    upstream = rng.normal(size=v.shape)
    out = gelu(x)
    out.backward(upstream)
    u = np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)
    du = np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * v ** 2)
    np.testing.assert_allclose(out.data, 0.5 * v * (1 + np.tanh(u)), rtol=1e-12, atol=1e-15)
    derivative = 0.5 * (1 + np.tanh(u)) + 0.5 * v * (1 - np.tanh(u) ** 2) * du
    np.testing.assert_allclose(x.grad.data, upstream * derivative, rtol=1e-10, atol=1e-13)


@pytest.mark.exercise("activations")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_at_extreme_inputs_is_exact_and_warns_of_nothing(dtype):
    # no overflow, division by zero or invalid value anywhere, forward or backward, even at ±1e4
    v = np.array([-1e4, -60.0, -12.0, -9.0, -3.0, 0.0, 3.0, 12.0, 60.0, 1e4], dtype=dtype)
    x = Tensor(v, requires_grad=True)
    upstream = np.linspace(-1, 1, v.size).astype(dtype)
    with np.errstate(over="raise", divide="raise", invalid="raise"):   # numpy warns of these by default
        out = gelu(x)
        out.backward(upstream)
    w = v.astype(np.float64)
    u = np.sqrt(2 / np.pi) * (w + 0.044715 * w ** 3)
    expected = 0.5 * w * (1 + np.tanh(u))
    derivative = 0.5 * (1 + np.tanh(u)) + 0.5 * w * (1 - np.tanh(u) ** 2) * np.sqrt(2 / np.pi) * (1 + 3 * 0.044715 * w ** 2)
    # far left the exact values are below 1e-20 and the tanh form rounds 1 + tanh u to 0; near v = -3, 1 + tanh u
    # cancels, so float32 keeps about five digits there (PyTorch's tanh form does the same)
    tol = dict(rtol=5e-5, atol=1e-20) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-20)
    assert out.dtype == dtype and x.grad.dtype == dtype
    np.testing.assert_allclose(out.data, expected, **tol)
    np.testing.assert_allclose(x.grad.data, upstream * derivative, **tol)
