"""PyTorch oracle: forward values and gradients in float64 with weights copied in.

Our Linear.weight is (in, out); torch's is (out, in), so weights are transposed when copied.
"""
import numpy as np
import pytest

from tinytorch.core.layers import (GELU, Embedding, LayerNorm, Linear, ReLU, Sequential, Sigmoid, Tanh, gelu,
                                   log_softmax, relu, sigmoid, softmax)
from tinytorch.core.tensor import Tensor

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
pytestmark = pytest.mark.oracle


def both(array):
    "The same float64 data as our leaf Tensor and as a torch leaf tensor."
    return Tensor(array.copy(), requires_grad=True), torch.tensor(array, requires_grad=True)


def assert_close(ours, theirs, atol=1e-10):
    np.testing.assert_allclose(np.asarray(ours), theirs.detach().numpy(), rtol=1e-9, atol=atol)


def run_both(our_fn, torch_fn, x_array, rng):
    "Forward both, backward a random upstream gradient, compare outputs and input gradients."
    ours_x, torch_x = both(x_array)
    ours_y, torch_y = our_fn(ours_x), torch_fn(torch_x)
    assert_close(ours_y.data, torch_y)
    upstream = rng.normal(size=ours_y.shape)
    ours_y.backward(upstream)
    torch_y.backward(torch.tensor(upstream))
    assert_close(ours_x.grad.data, torch_x.grad)


@pytest.mark.exercise("activations")
@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "gelu", "ReLU", "Sigmoid", "Tanh", "GELU"])
def test_activations_match_torch(rng, name):
    ours = {"relu": relu, "sigmoid": sigmoid, "tanh": lambda t: t.tanh(), "gelu": gelu,
            "ReLU": ReLU(), "Sigmoid": Sigmoid(), "Tanh": Tanh(), "GELU": GELU()}[name]
    theirs = {"relu": torch.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
              "gelu": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}[name.lower()]
    x = rng.normal(size=(3, 4, 5)) * 4
    x[0, 0, :4] = [-50.0, 50.0, 0.5, 0.0]     # at 0 torch takes ReLU's derivative as 0
    run_both(ours, theirs, x, rng)


@pytest.mark.exercise("softmax")
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_and_log_softmax_match_torch(rng, dim):
    x = rng.normal(size=(3, 4, 5)) * 5
    run_both(lambda t: softmax(t, dim=dim), lambda t: torch.softmax(t, dim=dim), x, rng)
    run_both(lambda t: log_softmax(t, dim=dim), lambda t: torch.log_softmax(t, dim=dim), x, rng)


@pytest.mark.exercise("softmax")
def test_softmax_and_log_softmax_match_torch_for_huge_logits(rng):
    x = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4 + 1.0, -1e4 + 3.0], [5e3, 5e3, 5e3]])
    run_both(softmax, lambda t: torch.softmax(t, dim=-1), x, rng)
    run_both(log_softmax, lambda t: torch.log_softmax(t, dim=-1), x, rng)


def copy_linear(ours, theirs):
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.data.T))
        if ours.bias is not None:
            theirs.bias.copy_(torch.tensor(ours.bias.data))


@pytest.mark.exercise("linear")
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(rng, bias):
    ours = Linear(4, 3, bias=bias).to(np.float64)
    theirs = torch.nn.Linear(4, 3, bias=bias, dtype=torch.float64)
    copy_linear(ours, theirs)
    run_both(ours, theirs, rng.normal(size=(2, 5, 4)), rng)
    assert_close(ours.weight.grad.data.T, theirs.weight.grad)
    if bias:
        assert_close(ours.bias.grad.data, theirs.bias.grad)


@pytest.mark.exercise("linear")
def test_linear_default_init_has_torch_bounds():
    ours = Linear(256, 64)
    bound = 1 / np.sqrt(256)
    assert np.abs(ours.weight.data).max() <= bound and np.abs(ours.bias.data).max() <= bound
    # uniform(-a, a) has std a/sqrt(3): the same distribution as torch's default, not just the same bound
    assert abs(ours.weight.data.std() - bound / np.sqrt(3)) < 0.05 * bound
    theirs = torch.nn.Linear(256, 64)
    assert abs(ours.weight.data.std() - theirs.weight.detach().numpy().std()) < 0.05 * bound


@pytest.mark.exercise("embedding")
def test_embedding_matches_torch_with_repeated_ids(rng):
    ours = Embedding(11, 4).to(np.float64)
    theirs = torch.nn.Embedding(11, 4, dtype=torch.float64)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.data))
    ids = np.array([[3, 3, 0, 10], [3, 7, 7, 0], [10, 10, 10, 10]])
    ours_y, torch_y = ours(ids), theirs(torch.tensor(ids))
    assert_close(ours_y.data, torch_y)
    upstream = rng.normal(size=ours_y.shape)
    ours_y.backward(upstream)
    torch_y.backward(torch.tensor(upstream))
    assert_close(ours.weight.grad.data, theirs.weight.grad)


@pytest.mark.exercise("layer-norm")
@pytest.mark.parametrize("constant_row", [False, True])
def test_layer_norm_matches_torch(rng, constant_row):
    ours = LayerNorm(6).to(np.float64)
    ours.weight.data[...] = rng.normal(size=6)
    ours.bias.data[...] = rng.normal(size=6)
    theirs = torch.nn.LayerNorm(6, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.data))
        theirs.bias.copy_(torch.tensor(ours.bias.data))
    x = rng.normal(size=(2, 3, 6)) * 3 + 2
    if constant_row:
        x[0, 1] = 4.0
    run_both(ours, theirs, x, rng)
    assert_close(ours.weight.grad.data, theirs.weight.grad, atol=1e-8)
    assert_close(ours.bias.grad.data, theirs.bias.grad)


@pytest.mark.exercise("layer-norm")
def test_sequential_mlp_matches_torch(rng):
    ours = Sequential(Linear(5, 8), GELU(), LayerNorm(8), Linear(8, 8), ReLU(), Linear(8, 3), Tanh()).to(np.float64)
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.GELU(approximate="tanh"), torch.nn.LayerNorm(8),
                                 torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3),
                                 torch.nn.Tanh()).to(torch.float64)
    for i in (0, 3, 5):
        copy_linear(ours[i], theirs[i])
    run_both(ours, theirs, rng.normal(size=(4, 6, 5)), rng)
    for (name, p), (torch_name, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == torch_name
        assert_close(p.grad.data.T if p.ndim == 2 else p.grad.data, tp.grad, atol=1e-9)
