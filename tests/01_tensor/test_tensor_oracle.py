"""Module 01 forward values against PyTorch (float64), where PyTorch's semantics are the reference:
transpose/permute conventions, matmul broadcasting, reductions over several dims, masked_fill, lookups."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (the `oracle` extra)")

from tinytorch.core.tensor import Tensor  # noqa: E402

pytestmark = pytest.mark.oracle

RNG = np.random.default_rng(1234)


def same(ours, theirs):
    assert isinstance(ours, Tensor)
    expected = theirs.detach().numpy()
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape_a, shape_b", [
    ((2, 3), (3, 4)), ((5, 1, 2, 3), (4, 3, 6)), ((3,), (2, 3, 4)), ((2, 4, 3), (3,)), ((3,), (3,)),
    ((2, 3), (4, 3, 5)),
])
def test_matmul_like_torch(shape_a, shape_b):
    a, b = RNG.standard_normal(shape_a), RNG.standard_normal(shape_b)
    same(Tensor(a) @ Tensor(b), torch.from_numpy(a) @ torch.from_numpy(b))


@pytest.mark.parametrize("dims", [(), (0, 2), (1, -1), (-3, -2), (3, 0)])
def test_transpose_like_torch(dims):
    x = RNG.standard_normal((2, 3, 4, 5))
    expected = torch.from_numpy(x).transpose(*dims) if dims else torch.from_numpy(x).transpose(-2, -1)
    same(Tensor(x).transpose(*dims), expected)


@pytest.mark.parametrize("dims", [(0, 2, 1, 3), (3, 2, 1, 0), (-1, 0, -2, 1), (1, 3, 0, 2)])
def test_permute_like_torch(dims):
    x = RNG.standard_normal((2, 3, 4, 5))
    same(Tensor(x).permute(*dims), torch.from_numpy(x).permute(*dims))


@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (-1, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_like_torch(axis, keepdims):
    x = RNG.standard_normal((2, 3, 4))
    tx = torch.from_numpy(x)
    dim = {"dim": (0, 1, 2) if axis is None else axis}
    same(Tensor(x).sum(axis=axis, keepdims=keepdims), tx.sum(**dim, keepdim=keepdims))
    same(Tensor(x).mean(axis=axis, keepdims=keepdims), tx.mean(**dim, keepdim=keepdims))
    same(Tensor(x).max(axis=axis, keepdims=keepdims), tx.amax(**dim, keepdim=keepdims))


@pytest.mark.parametrize("mask_shape", [(2, 3, 4), (4,), (3, 1), (1, 1, 4)])
def test_masked_fill_like_torch(mask_shape):
    x = RNG.standard_normal((2, 3, 4))
    mask = RNG.random(mask_shape) < 0.5
    same(Tensor(x).masked_fill(mask, -1e9), torch.from_numpy(x).masked_fill(torch.from_numpy(mask), -1e9))


def test_embedding_lookup_like_torch():
    weight = RNG.standard_normal((10, 3))
    ids = RNG.integers(0, 10, size=(2, 5))
    same(Tensor(weight)[Tensor(ids)],
         torch.nn.functional.embedding(torch.from_numpy(ids), torch.from_numpy(weight)))


def test_elementwise_and_reflected_ops_like_torch():
    x = RNG.random((3, 4)) + 0.5
    t, tx = Tensor(x), torch.from_numpy(x)
    same(2 - t, 2 - tx)
    same(2 / t, 2 / tx)
    same(2 ** t, 2 ** tx)
    same(t ** -1.5, tx ** -1.5)
    same(-t, -tx)
    same(t.exp(), tx.exp())
    same(t.log(), tx.log())
    same(t.sqrt(), tx.sqrt())
    same(t.tanh(), tx.tanh())
