"""Module 01: sum, mean and max over all axes, one axis (possibly negative) or several, with keepdims."""
import hypothesis.extra.numpy as hnp
import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings

from tinytorch.core.tensor import Tensor, reduce_max, reduce_mean, reduce_sum

pytestmark = pytest.mark.exercise("reductions")

REDUCTIONS = [("sum", reduce_sum, np.sum), ("mean", reduce_mean, np.mean), ("max", reduce_max, np.max)]
REDUCTION_IDS = [r[0] for r in REDUCTIONS]


@st.composite
def array_and_axis(draw):
    "A float array (no empty axes) and an axis argument: None, an int (possibly negative) or a tuple."
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    x = draw(hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4),
                        elements=st.floats(-100, 100, width=32)))
    choices = [st.none(), hnp.valid_tuple_axes(x.ndim)]
    if x.ndim:
        choices.append(st.integers(-x.ndim, x.ndim - 1))
    return x, draw(st.one_of(*choices))


@pytest.mark.parametrize("name, fn, ref", REDUCTIONS, ids=REDUCTION_IDS)
def test_reductions_match_numpy(name, fn, ref):
    @settings(max_examples=35, deadline=None)
    @given(case=array_and_axis(), keepdims=st.booleans())
    def check(case, keepdims):
        x, axis = case
        expected = np.asarray(ref(x, axis=axis, keepdims=keepdims))
        before = x.copy()
        t = Tensor(x)
        tol = 1e-5 if x.dtype == np.float32 else 1e-12
        for out in (getattr(t, name)(axis=axis, keepdims=keepdims), getattr(t, name)(axis, keepdims),
                    fn(t, axis=axis, keepdims=keepdims)):
            assert isinstance(out, Tensor)
            assert out.shape == expected.shape
            assert out.dtype == expected.dtype
            np.testing.assert_allclose(out.numpy(), expected, rtol=tol, atol=tol)
        np.testing.assert_array_equal(t.numpy(), before)
    check()


X = np.array([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])


@pytest.mark.parametrize("name, kwargs, expected", [
    ("sum", {}, 21.0),
    ("sum", {"axis": 0}, [5.0, 7.0, 9.0]),
    ("sum", {"axis": 1}, [9.0, 12.0]),
    ("sum", {"axis": -1, "keepdims": True}, [[9.0], [12.0]]),
    ("sum", {"axis": (0, 1)}, 21.0),
    ("sum", {"axis": (0, 1), "keepdims": True}, [[21.0]]),
    ("mean", {}, 3.5),
    ("mean", {"axis": 0}, [2.5, 3.5, 4.5]),
    ("mean", {"axis": -1}, [3.0, 4.0]),
    ("mean", {"axis": 1, "keepdims": True}, [[3.0], [4.0]]),
    ("max", {}, 6.0),
    ("max", {"axis": 0}, [4.0, 5.0, 6.0]),
    ("max", {"axis": -1}, [5.0, 6.0]),
    ("max", {"axis": (1, 0), "keepdims": True}, [[6.0]]),
])
def test_reduction_known_values(name, kwargs, expected):
    out = getattr(Tensor(X), name)(**kwargs)
    assert isinstance(out, Tensor)
    np.testing.assert_array_equal(out.numpy(), np.asarray(expected))
    assert out.shape == np.asarray(expected).shape


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_full_reduction_is_a_scalar_tensor(name):
    out = getattr(Tensor([[1.0, 2.0], [3.0, 4.0]]), name)()
    assert isinstance(out, Tensor)
    assert out.shape == ()
    assert out.dtype == np.float32
    assert isinstance(out.item(), float)


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_reductions_keep_float64(name):
    x = np.array([0.1, 0.2, 0.7])
    out = getattr(Tensor(x), name)()
    assert out.dtype == np.float64
    assert out.item() == pytest.approx(getattr(np, name)(x), rel=1e-14)


def test_sum_and_max_of_integer_tensors_stay_integer():
    ids = np.array([[1, 2], [3, 4]], dtype=np.int64)
    assert Tensor(ids).sum().dtype.kind == "i" and Tensor(ids).sum().item() == 10
    assert Tensor(ids).max(axis=0).dtype == np.int64
    np.testing.assert_array_equal(Tensor(ids).max(axis=0).numpy(), [3, 4])


@pytest.mark.parametrize("name, fn, ref", REDUCTIONS, ids=REDUCTION_IDS)
@pytest.mark.parametrize("shape, axis", [
    ((2, 3), 2),
    ((2, 3), -3),
    ((2, 3), (0, 2)),
    ((2, 3), (-3,)),
    ((4,), 1),
    ((), 0),
    ((), (0,)),
    ((2, 3, 4), 3),
])
def test_out_of_range_axis_is_a_value_error(name, fn, ref, shape, axis):
    t = Tensor(np.ones(shape))
    with pytest.raises(ValueError):
        getattr(t, name)(axis=axis)
    with pytest.raises(ValueError):
        fn(t, axis=axis)


@pytest.mark.parametrize("name", ["sum", "mean", "max"])
def test_repeated_axis_is_a_value_error(name):
    with pytest.raises(ValueError):
        getattr(Tensor(np.ones((2, 3))), name)(axis=(1, -1))
