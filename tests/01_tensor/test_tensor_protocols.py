"""bool() of a tensor follows numpy, and the kernel table that module 08's switch fills starts empty and dispatches by name."""
import numpy as np
import pytest

from tinytorch.core import tensor as tensor_module
from tinytorch.core.tensor import KERNELS, Tensor, kernel


@pytest.mark.exercise("as-array")
@pytest.mark.parametrize("value, truth", [([1.0], True), ([0.0], False), (3, True), (0, False), ([[2.0]], True)])
def test_bool_of_one_element_is_its_truth(value, truth):
    assert bool(Tensor(value)) is truth


@pytest.mark.exercise("as-array")
def test_bool_of_a_comparison_is_its_result_not_the_length():
    assert not bool(Tensor([1.0]) > 5)          # with len() as the truth this was True
    assert bool(Tensor([7.0]) > 5)


@pytest.mark.exercise("as-array")
@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,)])
def test_bool_of_several_or_no_elements_is_a_clear_error(shape):
    with pytest.raises(ValueError, match=r"truth value of a tensor of shape"):
        bool(Tensor(np.ones(shape)))


@pytest.mark.exercise("as-array")
def test_kernel_table_is_empty_until_module_08_fills_it():
    assert KERNELS == {}


@pytest.mark.exercise("as-array")
def test_a_kernel_in_the_table_replaces_the_plain_function_and_only_while_it_is_there(monkeypatch):
    @kernel("twice")
    def twice(x, factor=2):
        return x * factor
    assert twice(3) == 6 and twice.plain(3) == 6 and twice.__name__ == "twice"
    monkeypatch.setitem(KERNELS, "twice", lambda x, factor=2: ("fast", x, factor))
    assert twice(3, factor=5) == ("fast", 3, 5)
    assert twice.plain(3) == 6                   # the textbook version stays reachable
    monkeypatch.delitem(KERNELS, "twice")
    assert twice(3) == 6
    assert tensor_module.KERNELS is KERNELS


# --- numpy and Python protocols, as on a torch tensor ------------------------------------------------------------

@pytest.mark.exercise("as-array")
def test_numpy_sees_the_numbers_not_an_object_array():
    t = Tensor(np.array([[1.5, -2.0], [0.0, 4.0]]))
    arr = np.asarray(t)
    assert arr.dtype == np.float64 and arr.shape == (2, 2) and np.shares_memory(arr, t.data)
    np.testing.assert_array_equal(arr, t.data)
    assert np.asarray(Tensor([1.0, 2.0])).dtype == np.float32
    assert np.asarray(t, dtype=np.float32).dtype == np.float32
    assert not np.shares_memory(np.array(t, copy=True), t.data)
    assert np.allclose(t, [[1.5, -2.0], [0.0, 4.0]]) and not np.allclose(t, np.zeros((2, 2)))
    np.testing.assert_array_equal(np.abs(t), [[1.5, 2.0], [0.0, 4.0]])
    assert np.array([Tensor(1.0), Tensor(2.0)]).dtype == np.float32    # numbers, not 0-d Tensors
    stacked = Tensor([Tensor([1.0, 2.0]), Tensor([3.0, 4.0])])
    assert stacked.shape == (2, 2) and stacked.dtype == np.float32


@pytest.mark.exercise("indexing")
@pytest.mark.parametrize("value", [[2.5], [[2.5]], 2.5])
def test_float_and_int_of_one_element(value):
    t = Tensor(value)
    assert float(t) == 2.5 and isinstance(float(t), float)
    assert int(t) == 2 and int(Tensor(-3.7)) == -3          # int() truncates toward zero, as torch and Python do
    assert float(Tensor(np.array([[1.0, 2.0]]))[0, 1]) == 2.0


@pytest.mark.exercise("as-array")
@pytest.mark.parametrize("convert", [float, int])
@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,)])
def test_float_and_int_of_several_elements_is_a_clear_error(convert, shape):
    with pytest.raises(ValueError, match="only one-element tensors"):
        convert(Tensor(np.ones(shape)))


@pytest.mark.exercise("as-array")
def test_index_only_for_one_element_integer_tensors():
    import operator
    items = list(range(10))
    assert operator.index(Tensor(np.array(3))) == 3 and items[Tensor(np.array([4]))] == 4
    assert list(range(Tensor(np.array(3)))) == [0, 1, 2]
    for bad in (Tensor(3.0), Tensor(np.array([1, 2]))):
        with pytest.raises(TypeError, match="integer tensors"):
            operator.index(bad)


@pytest.mark.exercise("elementwise")
def test_abs_is_an_op_that_keeps_the_dtype():
    t = Tensor([-1.5, 0.0, 2.0])
    for result in (abs(t), t.abs()):
        assert isinstance(result, Tensor) and result.dtype == np.float32
        np.testing.assert_array_equal(result.data, [1.5, 0.0, 2.0])
    assert abs(Tensor(np.array([-3, 4]))).dtype == np.int64


@pytest.mark.exercise("shape-ops")
def test_T_transposes_a_matrix_and_leaves_vectors_and_scalars():
    m = Tensor(np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(m.T.data, m.data.T)
    v, s = Tensor([1.0, 2.0]), Tensor(3.0)
    assert v.T is v and s.T is s
    with pytest.raises(ValueError, match=r"transpose\(-2, -1\)"):
        Tensor(np.ones((2, 3, 4))).T


# --- .grad assignment --------------------------------------------------------------------------------------------

@pytest.mark.exercise("as-array")
def test_grad_accepts_a_tensor_of_the_same_shape_and_dtype_or_none():
    p = Tensor(np.zeros((2, 3)), requires_grad=True)
    g = Tensor(np.ones((2, 3)))
    p.grad = g
    assert p.grad is g
    p.grad = None
    assert p.grad is None


@pytest.mark.exercise("as-array")
@pytest.mark.parametrize("value, error", [
    (np.ones((2, 3)), TypeError), ([[1.0] * 3] * 2, TypeError), (1.0, TypeError),
    (Tensor(np.ones((3, 2))), ValueError), (Tensor(np.ones((2, 3), dtype=np.float32)), ValueError),
])
def test_grad_refuses_anything_else_naming_grad(value, error):
    p = Tensor(np.zeros((2, 3)), requires_grad=True)
    with pytest.raises(error, match=r"\.grad"):
        p.grad = value
    assert p.grad is None
