"""What a layer does with inputs of another dtype, and with sizes that make no layer."""
import numpy as np
import pytest

from tinytorch.core.autograd import GRADIENTS, gradcheck
from tinytorch.core.layers import Embedding, LayerNorm, Linear, Sequential, cast
from tinytorch.core.tensor import Tensor


@pytest.mark.exercise("linear")
def test_cast_is_an_op_whose_gradient_returns_in_the_input_dtype(rng):
    x = Tensor(rng.normal(size=(2, 3)), requires_grad=True)
    y = cast(x, np.float32)
    assert y.dtype == np.float32 and y._node.op == "cast" and "cast" in GRADIENTS
    np.testing.assert_array_equal(y.data, x.data.astype(np.float32))
    upstream = rng.normal(size=(2, 3)).astype(np.float32)
    y.backward(upstream)
    assert x.grad.dtype == np.float64
    np.testing.assert_array_equal(x.grad.data, upstream.astype(np.float64))
    assert gradcheck(lambda t: cast(t, np.float64) * 3.0, [Tensor(rng.normal(size=(4,)), requires_grad=True)])


@pytest.mark.exercise("layer-norm")
@pytest.mark.parametrize("make", [lambda: Linear(6, 4), lambda: LayerNorm(6),
                                  lambda: Sequential(Linear(6, 5), LayerNorm(5), Linear(5, 2))])
def test_a_float64_input_to_a_float32_layer_is_cast_and_its_gradient_comes_back_in_float64(rng, make):
    model = make()
    x = Tensor(rng.normal(size=(3, 6)), requires_grad=True)          # float64, as np.random.randn gives
    out = model(x)
    assert out.dtype == np.float32
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    assert x.grad.dtype == np.float64
    # the same computation in float64 from the start gives the same gradient, to float32 precision
    reference = make()
    reference.load_state_dict(model.state_dict())
    reference.to(np.float64)
    x64 = Tensor(x.data, requires_grad=True)
    reference(x64).backward(upstream)
    np.testing.assert_allclose(x.grad.data, x64.grad.data, rtol=1e-4, atol=1e-5)
    # and the parameters' gradients stay in their own dtype
    assert all(p.grad.dtype == np.float32 for p in model.parameters())


@pytest.mark.exercise("linear")
def test_a_float32_input_to_a_float64_model_is_cast_up(rng):
    model = Linear(4, 2).to(np.float64)
    x = Tensor(rng.normal(size=(2, 4)).astype(np.float32), requires_grad=True)
    out = model(x)
    assert out.dtype == np.float64
    out.backward(np.ones((2, 2)))
    assert x.grad.dtype == np.float32


@pytest.mark.exercise("layer-norm")
@pytest.mark.parametrize("layer", [Linear(3, 2), LayerNorm(3)])
@pytest.mark.parametrize("ids", [np.arange(6).reshape(2, 3), np.ones((2, 3), dtype=bool)])
def test_integer_input_is_a_clear_error_with_advice_that_works(layer, ids):
    with pytest.raises(TypeError) as error:
        layer(Tensor(ids))
    message = str(error.value)
    assert str(ids.dtype) in message and "Embedding" in message and "astype(np.float32)" in message
    assert layer(Tensor(ids.astype(np.float32))).dtype == np.float32      # the advice, followed, works


@pytest.mark.exercise("layer-norm")
@pytest.mark.parametrize("make, name", [(lambda: Linear(0, 2), "in_features"), (lambda: Linear(3, -1), "out_features"),
                                        (lambda: Linear(2.5, 2), "in_features"), (lambda: LayerNorm(0), "normalized_shape"),
                                        (lambda: Embedding(0, 4), "num_embeddings"), (lambda: Embedding(5, 0), "embedding_dim")])
def test_sizes_that_make_no_layer_are_a_clear_error(make, name):
    with pytest.raises(ValueError, match=f"{name} must be a whole number >= 1"):
        make()
