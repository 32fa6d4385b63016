"""Module 04 losses against PyTorch (float64): forward values and gradients of `cross_entropy` for (B, C) and (B, T, C)
logits, including logits of scale 1e4, and of `mse_loss`."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
F = torch.nn.functional

from tinytorch.core.losses import cross_entropy, mse_loss  # noqa: E402
from tinytorch.core.tensor import Tensor  # noqa: E402

pytestmark = pytest.mark.oracle


def torch_cross_entropy(z, y):
    "PyTorch's cross_entropy wants the classes on axis 1: (B, T, C) logits become (B, C, T)."
    z = torch.tensor(z, requires_grad=True)
    logits = z if z.ndim <= 2 else z.movedim(-1, 1)
    return z, F.cross_entropy(logits, torch.tensor(y))


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("shape, scale", [((8, 5), 1.0), ((8, 5), 1e4), ((3, 6, 11), 1.0), ((3, 6, 11), 1e4),
                                          ((2, 3, 4, 5), 3.0), ((1, 2), 1e4), ((16, 97), 10.0)])
def test_cross_entropy_matches_torch(shape, scale, rng):
    z = rng.normal(scale=scale, size=shape)
    y = rng.integers(0, shape[-1], size=shape[:-1])
    upstream = rng.normal()

    logits = Tensor(z.copy(), requires_grad=True)
    loss = cross_entropy(logits, y)
    loss.backward(np.array(upstream))
    z_t, loss_t = torch_cross_entropy(z.copy(), y)
    loss_t.backward(torch.tensor(upstream, dtype=torch.float64))

    assert np.isfinite(loss.item())
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(logits.grad.data, z_t.grad.numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.exercise("cross-entropy")
def test_cross_entropy_float32_close_to_torch(rng):
    z = (rng.normal(size=(4, 6, 9)) * 30).astype(np.float32)
    y = rng.integers(0, 9, size=(4, 6))
    logits = Tensor(z.copy(), requires_grad=True)
    loss = cross_entropy(logits, y)
    loss.backward()
    z_t, loss_t = torch_cross_entropy(z.copy(), y)
    loss_t.backward()
    assert loss.dtype == np.float32 and logits.grad.dtype == np.float32
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-5)
    np.testing.assert_allclose(logits.grad.data, z_t.grad.numpy(), atol=1e-7)


@pytest.mark.exercise("mse-loss")
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5)])
def test_mse_matches_torch(shape, rng):
    p, t = rng.normal(size=shape), rng.normal(size=shape)
    upstream = rng.normal()
    pred, target = Tensor(p.copy(), requires_grad=True), Tensor(t.copy(), requires_grad=True)
    loss = mse_loss(pred, target)
    loss.backward(np.array(upstream))
    pred_t, target_t = torch.tensor(p, requires_grad=True), torch.tensor(t, requires_grad=True)
    loss_t = F.mse_loss(pred_t, target_t)
    loss_t.backward(torch.tensor(upstream, dtype=torch.float64))
    np.testing.assert_allclose(loss.item(), loss_t.item(), rtol=1e-12)
    np.testing.assert_allclose(pred.grad.data, pred_t.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(target.grad.data, target_t.grad.numpy(), rtol=1e-10, atol=1e-14)


@pytest.mark.exercise("cross-entropy")
@pytest.mark.parametrize("ignore_index", [-100, 0, 3])
def test_cross_entropy_with_ignore_index_matches_torch(ignore_index, rng):
    z = rng.normal(size=(3, 6, 5))
    y = rng.integers(0, 5, size=(3, 6))
    y[0, 4:] = ignore_index                                  # padding at the end of sequence 0
    y[2, :2] = ignore_index
    upstream = rng.normal()
    logits = Tensor(z.copy(), requires_grad=True)
    loss = cross_entropy(logits, y, ignore_index=ignore_index)
    loss.backward(np.array(upstream))
    tz = torch.tensor(z, requires_grad=True)
    theirs = F.cross_entropy(tz.movedim(-1, 1), torch.tensor(y), ignore_index=ignore_index)
    theirs.backward(torch.tensor(upstream, dtype=torch.float64))
    np.testing.assert_allclose(loss.item(), theirs.item(), rtol=1e-12)
    np.testing.assert_allclose(logits.grad.data, tz.grad.numpy(), rtol=1e-10, atol=1e-14)
