"""Module 01 forward values against PyTorch (float64), where PyTorch's semantics are the reference:
transpose/permute conventions, matmul broadcasting, reductions over several dims, masked_fill, lookups."""
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")

from tinytorch.core.tensor import Tensor  # noqa: E402

pytestmark = pytest.mark.oracle

RNG = np.random.default_rng(1234)


def same(ours, theirs):
    assert isinstance(ours, Tensor)
    expected = theirs.detach().numpy()
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.exercise("matmul")
@pytest.mark.parametrize("shape_a, shape_b", [
    ((2, 3), (3, 4)), ((5, 1, 2, 3), (4, 3, 6)), ((3,), (2, 3, 4)), ((2, 4, 3), (3,)), ((3,), (3,)),
    ((2, 3), (4, 3, 5)),
])
def test_matmul_like_torch(shape_a, shape_b):
    a, b = RNG.standard_normal(shape_a), RNG.standard_normal(shape_b)
    same(Tensor(a) @ Tensor(b), torch.from_numpy(a) @ torch.from_numpy(b))


@pytest.mark.exercise("shape-ops")
@pytest.mark.parametrize("dims", [(), (0, 2), (1, -1), (-3, -2), (3, 0)])
def test_transpose_like_torch(dims):
    x = RNG.standard_normal((2, 3, 4, 5))
    expected = torch.from_numpy(x).transpose(*dims) if dims else torch.from_numpy(x).transpose(-2, -1)
    same(Tensor(x).transpose(*dims), expected)


@pytest.mark.exercise("shape-ops")
@pytest.mark.parametrize("dims", [(0, 2, 1, 3), (3, 2, 1, 0), (-1, 0, -2, 1), (1, 3, 0, 2)])
def test_permute_like_torch(dims):
    x = RNG.standard_normal((2, 3, 4, 5))
    same(Tensor(x).permute(*dims), torch.from_numpy(x).permute(*dims))


@pytest.mark.exercise("reductions")
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (-1, 1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_like_torch(axis, keepdims):
    x = RNG.standard_normal((2, 3, 4))
    tx = torch.from_numpy(x)
    dim = {"dim": (0, 1, 2) if axis is None else axis}
    same(Tensor(x).sum(axis=axis, keepdims=keepdims), tx.sum(**dim, keepdim=keepdims))
    same(Tensor(x).mean(axis=axis, keepdims=keepdims), tx.mean(**dim, keepdim=keepdims))
    same(Tensor(x).max(axis=axis, keepdims=keepdims), tx.amax(**dim, keepdim=keepdims))


@pytest.mark.exercise("indexing")
@pytest.mark.parametrize("mask_shape", [(2, 3, 4), (4,), (3, 1), (1, 1, 4)])
def test_masked_fill_like_torch(mask_shape):
    x = RNG.standard_normal((2, 3, 4))
    mask = RNG.random(mask_shape) < 0.5
    same(Tensor(x).masked_fill(mask, -1e9), torch.from_numpy(x).masked_fill(torch.from_numpy(mask), -1e9))


@pytest.mark.exercise("indexing")
def test_embedding_lookup_like_torch():
    weight = RNG.standard_normal((10, 3))
    ids = RNG.integers(0, 10, size=(2, 5))
    same(Tensor(weight)[Tensor(ids)],
         torch.nn.functional.embedding(torch.from_numpy(ids), torch.from_numpy(weight)))


@pytest.mark.exercise("elementwise")
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


@pytest.mark.exercise("shape-ops")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("dims", [(), (1,), (1, 2), (0, 1), (-3, -2), (2, 3), (0, -1), (3, 3)])
def test_flatten_like_torch(dims, dtype):
    x = RNG.standard_normal((2, 3, 4, 5)).astype(dtype)
    out = Tensor(x).flatten(*dims)
    assert out.dtype == dtype
    same(out, torch.from_numpy(x).flatten(*dims))


@pytest.mark.exercise("shape-ops")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape, sizes", [((3, 1), (2, 3, 4)), ((3, 1), (-1, 4)), ((3, 1), (2, -1, 5)), ((4,), (3, 4)),
                                          ((), (2, 2)), ((2, 1, 3), (2, 5, 3)), ((1,), (1,))])
def test_expand_and_broadcast_to_like_torch(shape, sizes, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    same(Tensor(x).expand(*sizes), torch.from_numpy(x).expand(*sizes))
    if -1 not in sizes:
        same(Tensor(x).broadcast_to(sizes), torch.broadcast_to(torch.from_numpy(x), sizes))


@pytest.mark.exercise("shape-ops")
@pytest.mark.parametrize("shape, sizes", [((3, 1), (3, 2, 4)), ((3, 2), (3, 4)), ((2,), (-1, 2))])
def test_expand_refuses_what_torch_refuses(shape, sizes):
    with pytest.raises(RuntimeError):
        torch.zeros(shape).expand(*sizes)
    with pytest.raises(ValueError, match="broadcast_to"):
        Tensor(np.zeros(shape)).expand(*sizes)


@pytest.mark.exercise("shape-ops")
@pytest.mark.parametrize("dims", [(4, 0), (2, 1), (0, -5)])
def test_flatten_refuses_what_torch_refuses(dims):
    with pytest.raises((RuntimeError, IndexError)):
        torch.zeros((2, 3, 4)).flatten(*dims)
    with pytest.raises(ValueError, match="flatten"):
        Tensor(np.zeros((2, 3, 4))).flatten(*dims)


@pytest.mark.exercise("elementwise")
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_abs_T_and_protocols_like_torch(dtype):
    x = RNG.standard_normal((3, 4)).astype(dtype)
    x[0, 0] = 0.0
    t, tx = Tensor(x), torch.from_numpy(x)
    same(abs(t), abs(tx))
    same(t.abs(), tx.abs())
    same(t.T, tx.T)
    np.testing.assert_array_equal(np.asarray(t), np.asarray(tx))
    assert np.asarray(t).dtype == np.asarray(tx).dtype
    assert np.allclose(t, x) == np.allclose(tx, x) is True
    assert float(t[1, 2]) == float(tx[1, 2]) and int(t[1, 2] * 10) == int(tx[1, 2] * 10)
    assert float(Tensor(x[:1, :1])) == float(torch.from_numpy(x[:1, :1]))
    for convert in (float, int):
        with pytest.raises(ValueError):
            convert(tx)
        with pytest.raises(ValueError):
            convert(t)
