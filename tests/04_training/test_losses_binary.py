"""Binary cross-entropy (from probabilities and from logits) and mixed-dtype targets, against PyTorch where it is
installed: values and gradients in float64 and float32, weight and pos_weight, stability at |logit| >= 100."""
import numpy as np
import pytest

from tinytorch.core.autograd import gradcheck
from tinytorch.core.losses import (BCELoss, BCEWithLogitsLoss, binary_cross_entropy,
                                   binary_cross_entropy_with_logits, mse_loss)
from tinytorch.core.tensor import Tensor

RNG = np.random.default_rng(77)


def leaf(a):
    return Tensor(np.asarray(a), requires_grad=True)


@pytest.mark.exercise("binary-cross-entropy")
@pytest.mark.parametrize("kw", [{}, {"weight": RNG.random(3)}, {"weight": RNG.random((4, 1))}])
def test_bce_gradcheck(kw):
    y = RNG.random((4, 3))
    assert gradcheck(lambda p: binary_cross_entropy(p, y, **kw), [leaf(RNG.uniform(0.05, 0.95, (4, 3)))])


@pytest.mark.exercise("binary-cross-entropy")
@pytest.mark.parametrize("kw", [{}, {"weight": RNG.random(3)}, {"pos_weight": np.array([0.5, 2.0, 3.0])},
                                {"weight": RNG.random((4, 1)), "pos_weight": np.array([0.5, 2.0, 3.0])}])
def test_bce_with_logits_gradcheck(kw):
    y = (RNG.random((4, 3)) < 0.5).astype(np.float64)
    assert gradcheck(lambda z: binary_cross_entropy_with_logits(z, y, **kw), [leaf(RNG.normal(scale=3, size=(4, 3)))])


@pytest.mark.exercise("binary-cross-entropy")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_with_logits_is_finite_and_exact_far_out(dtype):
    z = Tensor(np.array([100.0, -100.0, 1000.0, -1000.0, 1e30], dtype=dtype), requires_grad=True)
    loss = binary_cross_entropy_with_logits(z, np.array([0.0, 1.0, 0.0, 1.0, 0.0]))
    assert loss.dtype == dtype
    np.testing.assert_allclose(loss.item(), (100 + 100 + 1000 + 1000 + 1e30) / 5, rtol=1e-6)
    loss.backward()
    assert z.grad.dtype == dtype
    np.testing.assert_allclose(z.grad.data, [0.2, -0.2, 0.2, -0.2, 0.2], rtol=1e-6)


@pytest.mark.exercise("binary-cross-entropy")
def test_module_forms_and_errors():
    p, y = RNG.uniform(0.1, 0.9, (3, 2)), RNG.random((3, 2))
    assert BCELoss()(Tensor(p), y).item() == binary_cross_entropy(Tensor(p), y).item()
    assert BCEWithLogitsLoss(pos_weight=2.0)(Tensor(p), y).item() == \
        binary_cross_entropy_with_logits(Tensor(p), y, pos_weight=2.0).item()
    with pytest.raises(TypeError, match="targets must be floating point"):
        binary_cross_entropy_with_logits(Tensor(p), np.array([[0, 1]] * 3))
    with pytest.raises(ValueError, match="differ"):
        binary_cross_entropy(Tensor(p), y[:, :1])
    with pytest.raises(ValueError, match=r"probability in \[0, 1\]"):
        binary_cross_entropy(Tensor(p * 3), y)


@pytest.mark.exercise("binary-cross-entropy")
def test_losses_cast_a_float_target_of_another_dtype_and_refuse_integer_tensors():
    pred = Tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    target = Tensor(np.zeros(3), requires_grad=True)           # float64
    loss = mse_loss(pred, target)
    assert loss.dtype == np.float32
    loss.backward()
    assert pred.grad.dtype == np.float32 and target.grad.dtype == np.float64
    np.testing.assert_allclose(target.grad.data, -2 / 3 * np.ones(3), rtol=1e-6)
    assert binary_cross_entropy_with_logits(pred, Tensor(np.ones(3))).dtype == np.float32
    with pytest.raises(TypeError, match="floating-point target"):
        mse_loss(pred, Tensor(np.array([1, 2, 3])))


# --- against PyTorch -------------------------------------------------------------------------------------------------

@pytest.mark.exercise("binary-cross-entropy")
@pytest.mark.oracle
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("logits", [False, True])
@pytest.mark.parametrize("kw", ["none", "weight", "pos_weight", "both"])
def test_binary_cross_entropy_like_torch(dtype, logits, kw):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
    F = torch.nn.functional
    if not logits and kw in ("pos_weight", "both"):
        pytest.skip("pos_weight exists only for the logits form (as in PyTorch)")
    rng = np.random.default_rng(5)
    x = (rng.normal(scale=4, size=(6, 3)) if logits else rng.uniform(0.001, 0.999, (6, 3))).astype(dtype)
    if logits:
        x[0, :2] = [100.0, -150.0]
    y = rng.random((6, 3)).astype(dtype)
    y[0, :2] = [0.0, 1.0]
    extra = {}
    if kw in ("weight", "both"):
        extra["weight"] = rng.random((6, 1)).astype(dtype)
    if kw in ("pos_weight", "both"):
        extra["pos_weight"] = rng.uniform(0.2, 3.0, 3).astype(dtype)
    ours, theirs = Tensor(x.copy(), requires_grad=True), torch.from_numpy(x.copy()).requires_grad_()
    fn, tfn = ((binary_cross_entropy_with_logits, F.binary_cross_entropy_with_logits) if logits
               else (binary_cross_entropy, F.binary_cross_entropy))
    out = fn(ours, y, **extra)
    expected = tfn(theirs, torch.from_numpy(y), **{k: torch.from_numpy(v) for k, v in extra.items()})
    tol = 1e-12 if dtype == np.float64 else 2e-6
    assert out.dtype == dtype
    np.testing.assert_allclose(out.item(), expected.item(), rtol=tol, atol=tol)
    upstream = 0.7
    out.backward(np.asarray(upstream, dtype=dtype))
    expected.backward(torch.tensor(upstream, dtype=expected.dtype))
    assert ours.grad.dtype == dtype
    np.testing.assert_allclose(ours.grad.data, theirs.grad.numpy(), rtol=tol * 10, atol=tol)


@pytest.mark.exercise("binary-cross-entropy")
@pytest.mark.oracle
def test_bce_clamps_logs_like_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
    p, y = np.array([0.0, 1.0, 1.0, 0.0]), np.array([1.0, 0.0, 1.0, 0.0])
    expected = torch.nn.functional.binary_cross_entropy(torch.from_numpy(p), torch.from_numpy(y)).item()
    assert binary_cross_entropy(Tensor(p), y).item() == expected


@pytest.mark.exercise("mse-loss")
@pytest.mark.oracle
def test_mixed_dtype_mse_like_torch():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
    p, t = RNG.normal(size=4).astype(np.float32), RNG.normal(size=4)
    expected = torch.nn.functional.mse_loss(torch.from_numpy(p), torch.from_numpy(t)).item()
    np.testing.assert_allclose(mse_loss(Tensor(p), Tensor(t)).item(), expected, rtol=1e-6)
