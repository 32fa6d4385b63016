"""Bad calls to `backward()` give a clear one-line error naming the problem."""
import numpy as np
import pytest

from tinytorch.core.tensor import Tensor, _result


def leaf(data):
    return Tensor(np.asarray(data, dtype=np.float64), requires_grad=True)


def one_line(excinfo):
    message = str(excinfo.value)
    assert message and "\n" not in message
    return message


@pytest.mark.exercise("backward")
@pytest.mark.parametrize("shape", [(2, 3), (3,), (2, 1)])
def test_backward_on_a_non_scalar_needs_a_gradient(shape):
    out = leaf(np.ones(shape)) * 2.0
    with pytest.raises(RuntimeError) as excinfo:
        out.backward()
    message = one_line(excinfo)
    assert str(shape) in message and "gradient" in message


@pytest.mark.exercise("backward")
@pytest.mark.parametrize("shape", [(), (1,), (1, 1)])
def test_backward_on_a_single_element_implies_a_gradient_of_one(shape):
    x = leaf(np.full(shape, 2.0))
    (x * x).backward()
    np.testing.assert_array_equal(x.grad.data, np.full(shape, 4.0))


@pytest.mark.exercise("backward")
@pytest.mark.parametrize("make", [
    lambda: Tensor(np.array(1.0)),
    lambda: Tensor(np.array([1.0, 2.0])).sum(),
    lambda: Tensor(np.array([1, 2])).sum(),
], ids=["constant", "result of constants", "integer"])
def test_backward_on_a_tensor_that_does_not_require_grad(make):
    with pytest.raises(RuntimeError) as excinfo:
        make().backward()
    assert "require" in one_line(excinfo)


@pytest.mark.exercise("backward")
@pytest.mark.parametrize("out_shape, grad_shape", [((2, 3), (3, 2)), ((2, 3), (3,)), ((2, 3), (1, 3)),
                                                   ((), (1,)), ((3,), ())])
def test_gradient_of_the_wrong_shape_names_both_shapes(out_shape, grad_shape):
    "Even a gradient that would broadcast to the output is refused: it must have the output's shape."
    out = leaf(np.ones(out_shape)) * 2.0
    with pytest.raises(ValueError) as excinfo:
        out.backward(np.ones(grad_shape))
    message = one_line(excinfo)
    assert str(out_shape) in message and str(grad_shape) in message


@pytest.mark.exercise("backward")
def test_op_without_a_gradient_rule_is_named():
    x = leaf([1.0, 2.0])
    with pytest.raises(NotImplementedError) as excinfo:
        _result(x.data * 2, "op_nobody_registered", (x,))
    assert "op_nobody_registered" in one_line(excinfo)
