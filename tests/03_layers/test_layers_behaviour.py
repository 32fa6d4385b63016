"""Numerical stability, dropout, initialisers and bad input."""
import numpy as np
import pytest

from tinytorch.core.layers import (Dropout, Embedding, LayerNorm, Linear, Softmax, get_rng, kaiming_uniform_,
                                   layer_norm, log_softmax, manual_seed, relu, sigmoid, softmax, xavier_uniform_)
from tinytorch.core.tensor import Tensor


# --- stability ---------------------------------------------------------------------------------
@pytest.mark.exercise("softmax")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_of_huge_logits_is_finite_and_correct(dtype):
    x = np.array([[1e4, 0.0, -1e4], [-1e4, -1e4 + 1, -1e4 + 2], [1e4, 1e4, 1e4]], dtype=dtype)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        p = softmax(Tensor(x)).data
        lp = log_softmax(Tensor(x)).data
    assert p.dtype == lp.dtype == dtype
    small = np.exp([0.0, 1.0, 2.0]) / np.exp([0.0, 1.0, 2.0]).sum()
    np.testing.assert_allclose(p, [[1, 0, 0], small, [1 / 3] * 3], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(lp, [[0, -1e4, -2e4], np.log(small), [np.log(1 / 3)] * 3], rtol=1e-6)


@pytest.mark.exercise("softmax")
def test_huge_logits_give_finite_gradients():
    x = Tensor(np.array([[1e4, 0.0, -1e4]]), requires_grad=True)
    (softmax(x) * Tensor(np.array([[1.0, 2.0, 3.0]]))).sum().backward()
    assert np.all(np.isfinite(x.grad.data))
    y = Tensor(np.array([[1e4, 0.0, -1e4]]), requires_grad=True)
    log_softmax(y)[:, 2].sum().backward()
    np.testing.assert_allclose(y.grad.data, [[-1, 0, 1]])


@pytest.mark.exercise("activations")
def test_relu_gradient_at_zero_is_zero():
    x = Tensor(np.array([-1.0, 0.0, 2.0]), requires_grad=True)
    relu(x).backward(np.ones(3))
    np.testing.assert_array_equal(x.grad.data, [0.0, 0.0, 1.0])


@pytest.mark.exercise("activations")
def test_sigmoid_is_stable_for_large_inputs():
    with np.errstate(over="raise", invalid="raise"):
        s = sigmoid(Tensor(np.array([-1e4, -800.0, 0.0, 800.0, 1e4]))).data
    np.testing.assert_allclose(s, [0, 0, 0.5, 1, 1])


@pytest.mark.exercise("layer-norm")
def test_layer_norm_of_a_constant_row_gives_bias_and_finite_gradients(rng):
    ln = LayerNorm(4).to(np.float64)
    ln.bias.data[...] = [1.0, -2.0, 3.0, 0.5]
    ln.weight.data[...] = [2.0, 1.0, -1.0, 0.5]
    x = Tensor(np.full((2, 4), 3.25), requires_grad=True)
    y = ln(x)
    np.testing.assert_allclose(y.data, np.broadcast_to(ln.bias.data, (2, 4)))
    y.backward(rng.normal(size=(2, 4)))
    for g in (x.grad, ln.weight.grad, ln.bias.grad):
        assert np.all(np.isfinite(g.data))
    np.testing.assert_allclose(ln.weight.grad.data, 0)


@pytest.mark.exercise("layer-norm")
def test_layer_norm_output_statistics(rng):
    x = rng.normal(10, 50, size=(8, 32))
    y = LayerNorm(32).to(np.float64)(Tensor(x)).data
    np.testing.assert_allclose(y.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=-1), 1, rtol=1e-4)


@pytest.mark.exercise("layer-norm")
def test_layer_norm_accepts_int_or_one_tuple():
    assert LayerNorm((7,)).weight.shape == LayerNorm(7).bias.shape == (7,)
    assert np.all(LayerNorm(7).weight.data == 1) and np.all(LayerNorm(7).bias.data == 0)
    with pytest.raises(ValueError, match="last axis"):
        LayerNorm((3, 4))


# --- dropout --------------------------------------------------------------------------------------
@pytest.mark.exercise("dropout")
def test_dropout_preserves_the_mean_in_training(rng):
    x = Tensor(np.full((400, 500), 2.0, dtype=np.float32))
    y = Dropout(0.3, rng=rng)(x).data
    assert abs(y.mean() - 2.0) < 0.02
    assert abs((y == 0).mean() - 0.3) < 0.01
    np.testing.assert_allclose(np.unique(y), [0.0, 2.0 / 0.7], rtol=1e-6)


@pytest.mark.exercise("dropout")
def test_dropout_eval_and_p_zero_are_identity(rng):
    x = Tensor(rng.normal(size=(3, 4)))
    assert Dropout(0.5).eval()(x) is x
    assert Dropout(0.0)(x) is x


@pytest.mark.exercise("dropout")
@pytest.mark.parametrize("p", [-0.01, 1.0001, 1.5, float("nan")])
def test_dropout_rejects_p_outside_unit_interval(p):
    with pytest.raises(ValueError, match=r"Dropout: p must be in \[0, 1\]"):
        Dropout(p)


@pytest.mark.exercise("dropout")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_of_one_gives_zeros_and_zero_gradients(dtype):
    "As torch.nn.Dropout(p=1.0): every element dropped, no division by zero, no NaN."
    x = Tensor(np.random.default_rng(0).normal(size=(4, 5)).astype(dtype), requires_grad=True)
    y = Dropout(1.0)(x)
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.data, np.zeros((4, 5)))
    y.backward(np.ones((4, 5)))
    np.testing.assert_array_equal(x.grad.data, np.zeros((4, 5)))
    assert Dropout(1.0).eval()(x) is x


@pytest.mark.exercise("dropout")
def test_manual_seed_makes_dropout_and_init_reproducible():
    x = Tensor(np.ones((10, 10), dtype=np.float32))
    manual_seed(123)
    a_mask, a_w = Dropout(0.5)(x).data, Linear(3, 3).weight.data
    manual_seed(123)
    b_mask, b_w = Dropout(0.5)(x).data, Linear(3, 3).weight.data
    assert np.array_equal(a_mask, b_mask) and np.array_equal(a_w, b_w)
    assert isinstance(get_rng(), np.random.Generator)


@pytest.mark.exercise("dropout")
def test_dropout_masks_differ_between_calls(rng):
    drop, x = Dropout(0.5, rng=rng), Tensor(np.ones(1000, dtype=np.float32))
    assert not np.array_equal(drop(x).data, drop(x).data)


# --- initialisers ---------------------------------------------------------------------------------
@pytest.mark.exercise("dropout")
def test_xavier_and_kaiming_bounds_use_in_out_layout(rng):
    w = Tensor(np.zeros((300, 100)))
    assert xavier_uniform_(w, rng=rng) is w
    bound = np.sqrt(6 / 400)
    assert np.abs(w.data).max() <= bound and np.abs(w.data).max() > 0.95 * bound
    kaiming_uniform_(w, rng=rng)
    bound = np.sqrt(2) * np.sqrt(3 / 300)                  # fan_in = shape[0] in our (in, out) layout
    assert np.abs(w.data).max() <= bound and np.abs(w.data).max() > 0.95 * bound
    kaiming_uniform_(w, a=np.sqrt(5), rng=rng)
    assert np.abs(w.data).max() <= 1 / np.sqrt(300)


@pytest.mark.exercise("dropout")
def test_initialisers_keep_dtype_and_reject_vectors():
    w = Tensor(np.zeros((4, 5), dtype=np.float32))
    assert xavier_uniform_(w).dtype == np.float32
    with pytest.raises(ValueError, match="2 axes"):
        kaiming_uniform_(Tensor(np.zeros(5)))


@pytest.mark.exercise("embedding")
def test_embedding_init_is_standard_normal():
    w = Embedding(1000, 64).weight.data
    assert w.dtype == np.float32 and abs(w.mean()) < 0.02 and abs(w.std() - 1) < 0.02


# --- bad input --------------------------------------------------------------------------------------
@pytest.mark.exercise("linear")
def test_linear_wrong_width_names_both():
    with pytest.raises(ValueError, match=r"\(2, 5\).*4"):
        Linear(4, 3)(Tensor(np.ones((2, 5), dtype=np.float32)))


@pytest.mark.exercise("linear")
def test_linear_scalar_input_is_a_clear_error():
    with pytest.raises(ValueError, match="expects 4"):
        Linear(4, 3)(Tensor(np.float32(1.0)))


@pytest.mark.exercise("embedding")
@pytest.mark.parametrize("bad", [10, 11, -1])
def test_embedding_id_out_of_range_names_id_and_vocab(bad):
    with pytest.raises(IndexError, match=rf"{bad}.*vocabulary of 10"):
        Embedding(10, 3)(np.array([[0, bad, 2]]))


@pytest.mark.exercise("embedding")
def test_embedding_rejects_float_ids():
    with pytest.raises(TypeError, match="integers"):
        Embedding(10, 3)(Tensor([1.0, 2.0]))


@pytest.mark.exercise("embedding")
def test_embedding_shapes():
    emb = Embedding(10, 3)
    assert emb(np.array([[1, 2, 3], [4, 5, 6]])).shape == (2, 3, 3)
    assert emb([1, 2]).shape == (2, 3) and emb(np.int64(4)).shape == (3,)
    assert emb(np.zeros((0,), dtype=np.int64)).shape == (0, 3)


@pytest.mark.exercise("embedding")
def test_empty_embedding_backward():
    emb = Embedding(5, 2)
    out = emb(np.zeros((0,), dtype=np.int64))
    out.backward(np.zeros((0, 2), dtype=np.float32))
    assert np.array_equal(emb.weight.grad.data, np.zeros((5, 2)))


@pytest.mark.exercise("softmax")
def test_softmax_bad_dim():
    with pytest.raises(ValueError, match="dim 2"):
        softmax(Tensor(np.ones((2, 3))), dim=2)
    with pytest.raises(ValueError, match="dim"):
        Softmax(dim=-3)(Tensor(np.ones((2, 3))))


@pytest.mark.exercise("layer-norm")
def test_layer_norm_wrong_width():
    with pytest.raises(ValueError, match=r"\(2, 4\).*\(5,\)"):
        LayerNorm(5)(Tensor(np.ones((2, 4), dtype=np.float32)))
    with pytest.raises(ValueError):
        layer_norm(Tensor(np.ones(4)), Tensor(np.ones(3)), Tensor(np.zeros(3)))


# --- dtypes -----------------------------------------------------------------------------------------
@pytest.mark.exercise("dropout")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_every_op_keeps_the_dtype_forward_and_backward(dtype, rng):
    from tinytorch.core.layers import GELU, ReLU, Sequential, Sigmoid, Tanh, gelu
    x = Tensor(rng.normal(size=(2, 3, 4)).astype(dtype), requires_grad=True)
    model = Sequential(Linear(4, 6), GELU(), LayerNorm(6), Dropout(0.2), Linear(6, 5), ReLU(), Linear(5, 4),
                       Sigmoid(), Linear(4, 4), Tanh()).to(dtype)
    emb = Embedding(9, 4).to(dtype)
    outs = [model(x), softmax(x), log_softmax(x, dim=0), gelu(x), relu(x), sigmoid(x), emb(np.array([[1, 1, 8]]))]
    for out in outs:
        assert out.dtype == dtype
        out.backward(np.ones(out.shape, dtype=dtype))
    assert x.grad.dtype == dtype
    assert all(p.grad.dtype == dtype for p in model.parameters() + emb.parameters())
