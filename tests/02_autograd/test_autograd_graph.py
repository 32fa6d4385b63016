"""The graph walk of `backward()`: shared nodes, diamonds, skip connections, deep chains, each node visited once,
accumulation into leaves, `no_grad`, `detach`, and the shapes and dtypes of gradients."""
from collections import Counter

import numpy as np
import pytest

from tinytorch.core.autograd import gradcheck, no_grad
from tinytorch.core.tensor import Tensor



def leaf(data, dtype=np.float64):
    return Tensor(np.asarray(data, dtype=dtype), requires_grad=True)


# --- shared nodes, diamonds, skip connections --------------------------------------------------------------------

@pytest.mark.exercise("backward")
def test_node_used_twice_gets_both_contributions():
    a = leaf([3.0, -1.5, 0.25])
    b = a + a
    c = b * b                                   # c = 4a², dc/da = 8a, exact in floating point
    c.backward(np.ones(3))
    np.testing.assert_array_equal(c.data, 4 * a.data ** 2)
    np.testing.assert_array_equal(a.grad.data, 8 * a.data)


@pytest.mark.exercise("backward")
def test_scalar_node_used_twice():
    a = leaf(3.0)
    c = (a + a) * (a + a)
    c.backward()
    assert c.item() == 36.0 and a.grad.item() == 24.0


@pytest.mark.exercise("backward")
def test_diamond_graph(rule_calls):
    a = leaf([0.5, -1.0, 2.0])
    left, right = a * 2.0, a.exp()              # two paths from a to d
    d = left * right                            # d = 2a·e^a, dd/da = 2e^a(1 + a)
    d.backward(np.array([1.0, -2.0, 0.5]))
    np.testing.assert_allclose(a.grad.data, np.array([1.0, -2.0, 0.5]) * 2 * np.exp(a.data) * (1 + a.data),
                               rtol=1e-14)
    assert rule_calls == Counter({"mul": 2, "exp": 1})


@pytest.mark.exercise("backward")
def test_diamond_through_a_shared_interior_node(rng):
    x, w = leaf(rng.normal(size=(2, 3))), leaf(rng.normal(size=(3, 3)))
    assert gradcheck(lambda x, w: (lambda h: h.tanh() * h.exp() - h)(x @ w), [x, w])


@pytest.mark.exercise("backward")
def test_interior_node_first_then_its_input():
    "f(x) + x: the input after the subgraph that uses it. This order works."
    x = leaf([0.5, -1.0, 2.0])
    (x.exp() + x).backward(np.ones(3))
    np.testing.assert_allclose(x.grad.data, np.exp(x.data) + 1, rtol=1e-14)


@pytest.mark.exercise("backward")
def test_skip_connection_input_first():
    "x + f(x): the input before the subgraph that uses it (every residual block, every `x - x.mean()`)."
    x = leaf([0.5, -1.0, 2.0])
    (x + x.exp()).backward(np.ones(3))
    np.testing.assert_allclose(x.grad.data, 1 + np.exp(x.data), rtol=1e-14)


@pytest.mark.exercise("backward")
def test_centering_uses_the_mean_gradient(rng):
    "x - x.mean(): its gradient is upstream minus its mean (so it sums to zero), not the upstream itself."
    x, upstream = leaf(rng.normal(size=5)), rng.normal(size=5)
    (x - x.mean()).backward(upstream)
    np.testing.assert_allclose(x.grad.data, upstream - upstream.mean(), atol=1e-14)


# --- each node once: a 12-deep residual chain has 4096 paths but 48 nodes -------------------------------------------

DEPTH = 12


def residual_chain(x, w):
    for _ in range(DEPTH):
        x = x + (x @ w).tanh() * 0.5
    return x


@pytest.mark.exercise("backward")
def test_residual_chain_runs_each_rule_once_per_node(rule_calls, recorded_nodes, rng):
    x, w = leaf(rng.normal(size=(2, 3))), leaf(0.3 * rng.normal(size=(3, 3)))
    out = residual_chain(x, w)
    assert Counter(recorded_nodes) == Counter({"add": DEPTH, "matmul": DEPTH, "tanh": DEPTH, "mul": DEPTH})
    out.backward(rng.normal(size=out.shape))
    assert rule_calls == Counter(recorded_nodes)   # 12 of each, not one per path (2**12 = 4096 for the last add)


@pytest.mark.exercise("backward")
def test_residual_chain_gradient(rng):
    x, w = leaf(rng.normal(size=(2, 3))), leaf(0.3 * rng.normal(size=(3, 3)))
    assert gradcheck(residual_chain, [x, w])


@pytest.mark.exercise("backward")
def test_elementwise_residual_chain_matches_the_chain_rule(rng):
    x0, upstream = rng.normal(size=4), rng.normal(size=4)
    x = leaf(x0)
    out = x
    for _ in range(DEPTH):
        out = out + (out * 0.5).tanh()          # d(next)/d(out) = 1 + 0.5(1 - tanh²(out/2))
    out.backward(upstream)
    expected, value = upstream.copy(), x0.copy()
    for _ in range(DEPTH):
        expected *= 1 + 0.5 * (1 - np.tanh(0.5 * value) ** 2)
        value = value + np.tanh(0.5 * value)
    np.testing.assert_allclose(out.data, value, rtol=1e-14)
    np.testing.assert_allclose(x.grad.data, expected, rtol=1e-12)


@pytest.mark.exercise("arithmetic-gradients")
def test_rules_run_only_where_a_gradient_is_needed(rule_calls):
    x = leaf([1.0, 2.0])
    constant = (Tensor(np.array([3.0, 4.0])) * 2.0).exp()   # no input requires grad: no node, no rule call
    (x * constant).backward(np.ones(2))
    assert rule_calls == Counter({"mul": 1})
    np.testing.assert_allclose(x.grad.data, np.exp([6.0, 8.0]))


# --- a 10,000-op chain: no recursion, linear work ---------------------------------------------------------------------

@pytest.mark.exercise("backward")
def test_ten_thousand_op_chain(rule_calls):
    x = leaf(1.0)
    out = x
    for _ in range(5_000):
        out = out * 1.0001 + 0.5
    out.backward()                              # no RecursionError (Python's default limit is 1000)
    assert rule_calls == Counter({"mul": 5_000, "add": 5_000})
    assert sum(rule_calls.values()) == 10_000
    np.testing.assert_allclose(x.grad.item(), 1.0001 ** 5_000, rtol=1e-10)


# --- accumulation into leaves ------------------------------------------------------------------------------------

@pytest.mark.exercise("backward")
def test_two_backward_calls_accumulate_into_leaves():
    x = leaf([1.0, -2.0, 3.0])
    (x * 2.0).backward(np.ones(3))
    (x * x).backward(np.ones(3))
    np.testing.assert_array_equal(x.grad.data, 2.0 + 2 * x.data)


@pytest.mark.exercise("backward")
def test_second_backward_on_the_same_graph_adds_the_same_gradient_again(rng):
    x, w = leaf(rng.normal(size=(2, 3))), leaf(rng.normal(size=(3,)))
    loss = ((x * w).tanh() @ w).sum()
    loss.backward()
    first_x, first_w = x.grad.data.copy(), w.grad.data.copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.data, 2 * first_x, rtol=1e-15)
    np.testing.assert_allclose(w.grad.data, 2 * first_w, rtol=1e-15)


@pytest.mark.exercise("backward")
def test_clearing_grad_starts_afresh():
    x = leaf([1.0, 2.0])
    (x * 3.0).backward(np.ones(2))
    x.grad = None
    (x * 5.0).backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.data, [5.0, 5.0])


@pytest.mark.exercise("backward")
def test_grad_is_not_an_alias_of_the_gradient_argument():
    x = leaf([1.0, 2.0])
    upstream = np.array([0.5, -1.0])
    (x + 0.0).backward(upstream)
    x.backward(upstream)                        # a leaf as the root
    upstream[:] = 100.0
    np.testing.assert_array_equal(x.grad.data, [1.0, -2.0])


@pytest.mark.exercise("backward")
def test_backward_accepts_a_tensor_gradient():
    x = leaf([1.0, 2.0])
    (x * 3.0).backward(Tensor(np.array([1.0, -1.0])))
    np.testing.assert_array_equal(x.grad.data, [3.0, -3.0])


# --- no_grad --------------------------------------------------------------------------------------------------------

@pytest.mark.exercise("arithmetic-gradients")
def test_no_grad_records_no_graph():
    w = leaf([1.0, 2.0])
    with no_grad():
        y = w * 2.0
        z = (y @ w).exp()
    assert not y.requires_grad and not z.requires_grad
    with pytest.raises(RuntimeError):
        z.backward()
    x = leaf([3.0, 4.0])
    (y * x).backward(np.ones(2))                # y is a constant now: nothing flows back to w
    assert w.grad is None
    np.testing.assert_array_equal(x.grad.data, y.data)


@pytest.mark.exercise("arithmetic-gradients")
def test_no_grad_leaves_leaves_alone():
    w = leaf([1.0])
    with no_grad():
        pass
    assert w.requires_grad
    assert (w * 2.0).requires_grad


@pytest.mark.exercise("arithmetic-gradients")
def test_no_grad_nesting_restores_state():
    w = leaf([1.0, 2.0])
    with no_grad():
        with no_grad():
            assert not (w * 2.0).requires_grad
        assert not (w * 2.0).requires_grad     # leaving the inner block must not turn gradients back on
    assert (w * 2.0).requires_grad


@pytest.mark.exercise("arithmetic-gradients")
def test_no_grad_restores_state_after_an_exception():
    w = leaf([1.0, 2.0])
    with pytest.raises(ZeroDivisionError):
        with no_grad():
            1 / 0
    out = w * 2.0
    assert out.requires_grad
    out.backward(np.ones(2))
    np.testing.assert_array_equal(w.grad.data, [2.0, 2.0])


# --- detach -------------------------------------------------------------------------------------------------------

@pytest.mark.exercise("arithmetic-gradients")
def test_detach_shares_data_and_has_no_grad():
    x = leaf([1.0, 2.0, 3.0])
    x.grad = Tensor(np.ones(3))
    d = x.detach()
    assert np.shares_memory(d.data, x.data)
    assert d.dtype == x.dtype and d.shape == x.shape
    assert not d.requires_grad and d.grad is None
    d.data[0] = 10.0
    assert x.data[0] == 10.0


@pytest.mark.exercise("arithmetic-gradients")
def test_detach_stops_the_gradient():
    x = leaf([1.0, 2.0, 3.0])
    (x.detach() * x).backward(np.ones(3))      # d/dx (c · x) with c = x held constant
    np.testing.assert_array_equal(x.grad.data, x.data)
    y = x * 2.0
    assert not y.detach().requires_grad and y.requires_grad


# --- shapes and dtypes of gradients --------------------------------------------------------------------------------

BROADCAST_PAIRS = [((3, 1), (1, 4)), ((4,), (2, 3, 4)), ((), (2, 3)), ((2, 3), ()), ((1, 1), (3,)),
                   ((2, 1, 4), (3, 1)), ((1,), ())]


@pytest.mark.exercise("unbroadcast")
@pytest.mark.parametrize("shape_a, shape_b", BROADCAST_PAIRS)
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "pow"])
def test_grad_shape_equals_data_shape_after_broadcasting(op, shape_a, shape_b, rng):
    a, b = leaf(rng.uniform(0.5, 2.0, size=shape_a)), leaf(rng.uniform(0.5, 2.0, size=shape_b))
    out = {"add": a + b, "sub": a - b, "mul": a * b, "div": a / b, "pow": a ** b}[op]
    upstream = rng.normal(size=out.shape)
    out.backward(upstream)
    assert a.grad.shape == a.shape and b.grad.shape == b.shape
    if op == "add":                             # the broadcast axes are summed, exactly
        np.testing.assert_allclose(a.grad.data, _sum_to(upstream, shape_a), rtol=1e-14)
        np.testing.assert_allclose(b.grad.data, _sum_to(upstream, shape_b), rtol=1e-14)


def _sum_to(grad, shape):
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    return grad.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True).reshape(shape)


@pytest.mark.exercise("matmul-gradient")
def test_grad_shape_after_batch_matmul_broadcast(rng):
    a, b = leaf(rng.normal(size=(5, 1, 2, 3))), leaf(rng.normal(size=(4, 3, 2)))
    out = a @ b
    out.backward(rng.normal(size=out.shape))
    assert out.shape == (5, 4, 2, 2) and a.grad.shape == (5, 1, 2, 3) and b.grad.shape == (4, 3, 2)


@pytest.mark.exercise("reduction-gradients")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_grad_dtype_equals_leaf_dtype(dtype, rng):
    x, w = leaf(rng.normal(size=(2, 3)), dtype), leaf(rng.normal(size=(3, 2)), dtype)
    loss = ((x @ w).tanh() * 2.0 + 1.0).mean()
    assert loss.dtype == dtype
    loss.backward()
    assert x.grad.dtype == dtype and w.grad.dtype == dtype


@pytest.mark.exercise("backward")
def test_float32_leaf_keeps_float32_grad_when_mixed_with_float64(rng):
    x32 = leaf(rng.normal(size=3), np.float32)
    y64 = leaf(rng.normal(size=3), np.float64)
    out = x32 * y64
    out.backward(np.ones(3))
    assert x32.grad.dtype == np.float32 and y64.grad.dtype == np.float64


@pytest.mark.exercise("backward")
def test_float32_root_with_a_float64_gradient_argument_keeps_float32(rng):
    x = leaf(rng.normal(size=3), np.float32)
    (x * 2.0).backward(rng.normal(size=3))      # float64 upstream
    assert x.grad.dtype == np.float32


# --- integer tensors never require grad ------------------------------------------------------------------------------

@pytest.mark.exercise("arithmetic-gradients")
@pytest.mark.parametrize("data", [np.arange(3), np.arange(3, dtype=np.int32), np.array([True, False]),
                                  np.arange(3, dtype=np.uint8)])
def test_integer_and_bool_tensors_cannot_require_grad(data):
    with pytest.raises(TypeError):
        Tensor(data, requires_grad=True)
    assert not Tensor(data).requires_grad


@pytest.mark.exercise("arithmetic-gradients")
def test_integer_results_do_not_require_grad():
    i = Tensor(np.array([1, 2, 3]))
    assert not (i + i).requires_grad and not (i * 2).requires_grad and not i.sum().requires_grad


@pytest.mark.exercise("arithmetic-gradients")
def test_integer_operand_gets_no_grad_and_the_float_one_does():
    i = Tensor(np.array([1, 2, 3]))
    x = leaf([0.5, -1.0, 2.0])
    out = x * i
    assert out.requires_grad
    out.backward(np.array([1.0, 1.0, -1.0]))
    assert i.grad is None
    np.testing.assert_array_equal(x.grad.data, [1.0, 2.0, -3.0])


@pytest.mark.exercise("shape-gradients")
def test_index_tensor_gets_no_grad():
    idx = Tensor(np.array([2, 2, 0]))
    table = leaf(np.arange(6.0).reshape(3, 2))
    table[idx].backward(np.ones((3, 2)))
    assert idx.grad is None and not idx.requires_grad
    np.testing.assert_array_equal(table.grad.data, [[1, 1], [0, 0], [2, 2]])


@pytest.mark.exercise("arithmetic-gradients")
def test_comparisons_do_not_require_grad():
    x = leaf([1.0, -1.0])
    assert not (x > 0).requires_grad and not (x == x).requires_grad and not (x <= 0.5).requires_grad
