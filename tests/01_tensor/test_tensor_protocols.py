"""bool() of a tensor follows numpy, and the kernel table that module 07 fills starts empty and dispatches by name."""
import numpy as np
import pytest

from tinytorch.core import tensor as tensor_module
from tinytorch.core.tensor import KERNELS, Tensor, kernel


@pytest.mark.parametrize("value, truth", [([1.0], True), ([0.0], False), (3, True), (0, False), ([[2.0]], True)])
def test_bool_of_one_element_is_its_truth(value, truth):
    assert bool(Tensor(value)) is truth


def test_bool_of_a_comparison_is_its_result_not_the_length():
    assert not bool(Tensor([1.0]) > 5)          # with len() as the truth this was True
    assert bool(Tensor([7.0]) > 5)


@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,)])
def test_bool_of_several_or_no_elements_is_a_clear_error(shape):
    with pytest.raises(ValueError, match=r"truth value of a tensor of shape"):
        bool(Tensor(np.ones(shape)))


def test_kernel_table_is_empty_until_module_07_fills_it():
    assert KERNELS == {}


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
