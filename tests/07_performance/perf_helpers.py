"""Helpers for the suites of modules 07 and 08: a fast kernel against the plain op it replaces, and the fixtures that
run the kernels on one thread or two (module 08's conftest imports them from here)."""
import numpy as np
import pytest

from tinytorch.core.attention import create_causal_mask, create_padding_mask, scaled_dot_product_attention
from tinytorch.core.layers import gelu, layer_norm, linear, manual_seed
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import AdamW
from tinytorch.core.autograd import GRADIENTS, GradcheckError, gradcheck
from tinytorch.core.tensor import Tensor
from tinytorch.core.transformer import GPT
from tinytorch.perf import numpy_kernels, threads as perf_threads

DTYPES = [np.float64, np.float32]
ROW_BLOCKED = np.array([[1, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 0, 1, 0, 1]], dtype=bool)   # (3, 5), row 1 blocked
MASKS = {
    "none": None,
    "causal n<m": create_causal_mask(3, 5),
    "causal with offset (KV cache)": create_causal_mask(3, 5, offset=2),
    "padding (B,1,1,m)": create_padding_mask([5, 2], 5),
    "a fully blocked row": ROW_BLOCKED,
    "per head (B,H,n,m)": np.random.default_rng(3).random((2, 2, 3, 5)) < 0.5,
    "0/1 numbers": create_causal_mask(3, 5).astype(np.int64),
    "additive 0 / -inf": np.where(create_causal_mask(3, 5), 0.0, -np.inf),
    "additive 0 / -1e9": np.where(create_causal_mask(3, 5), 0.0, -1e9),
    "additive shifts": np.array([[0.0, -1.0, -2.0, -0.5, 0.0]] * 3),
    "a Tensor": Tensor(ROW_BLOCKED),
}

TOLERANCE = {np.dtype(np.float32): dict(rtol=2e-4, atol=2e-5), np.dtype(np.float64): dict(rtol=1e-9, atol=1e-11)}


def leaves(rng, *shapes, dtype=np.float64, scale=1.0):
    "Random tensors of `dtype` that require grad."
    return [Tensor((scale * rng.normal(size=s)).astype(dtype), requires_grad=True) for s in shapes]


def _outputs(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def run(fn, inputs, which: int, upstream, **kwargs):
    "fn on fresh copies of `inputs`: (output `which`, the copies' gradients after backward(upstream))."
    copies = [Tensor(t.data.copy(), requires_grad=t.requires_grad) for t in inputs]
    out = _outputs(fn(*copies, **kwargs))[which]
    out.backward(upstream)
    return out, [None if t.grad is None else t.grad.data for t in copies]


def assert_same_as_plain(fast, plain, inputs, seed=0, **kwargs):
    """For every output of `fast(*inputs, **kwargs)`: the fast kernel ran (its result is recorded as 'fast_...'), and
    its value and the gradient of every input under one random upstream gradient equal the plain op's (same dtype,
    same shape, equal to rounding). In float64, also gradcheck the fast kernel against central differences."""
    dtype = inputs[0].dtype
    count = len(_outputs(fast(*inputs, **kwargs)))
    for which in range(count):
        shape = _outputs(fast(*inputs, **kwargs))[which].shape
        upstream = np.random.default_rng(seed + which).normal(size=shape).astype(dtype)
        out, grads = run(fast, inputs, which, upstream, **kwargs)
        assert out._node.op.startswith("fast_"), f"the fast kernel did not run: the output was recorded as {out._node.op}"
        expected_out, expected_grads = run(plain, inputs, which, upstream, **kwargs)
        pairs = [("output", out.data, expected_out.data)] + [(f"gradient of input {i}", g, e)
                                                            for i, (g, e) in enumerate(zip(grads, expected_grads))]
        for what, got, expected in pairs:
            assert (got is None) == (expected is None), f"output {which}, {what}: only one path gave one"
            if got is not None:
                assert got.dtype == expected.dtype and got.shape == expected.shape, (what, got.dtype, expected.dtype,
                                                                                    got.shape, expected.shape)
                np.testing.assert_allclose(got, expected, **TOLERANCE[np.dtype(dtype)], err_msg=f"output {which}, {what}")
        if dtype == np.float64:
            assert gradcheck(lambda *a: _outputs(fast(*a, **kwargs))[which], inputs), \
                f"gradcheck of output {which} of {getattr(fast, '__name__', fast)} failed"


# --- what the kernels leave to the plain ops ---------------------------------------------------------------------
def floats(*shapes, dtype=np.float64):
    return [Tensor(np.random.default_rng(len(s)).normal(size=s).astype(dtype), requires_grad=True) for s in shapes]


HANDED_OVER = {  # inputs a kernel does not take: (op, arguments)
    "mixed dtypes": ("linear", lambda: [*floats((2, 4), dtype=np.float32), *floats((4, 3))]),
    "wrong width": ("linear", lambda: floats((2, 5), (4, 3))),
    "1-D weight": ("linear", lambda: floats((2, 4), (4,))),
    "integers": ("gelu", lambda: [Tensor(np.arange(-3, 4))]),
    "wrong normalized shape": ("layer_norm", lambda: floats((2, 3), (4,), (4,))),
    "mask of other values": ("scaled_dot_product_attention",
                             lambda: [*floats((3, 2), (4, 2), (4, 2)), np.full((3, 4), 0.5)]),
    "no keys": ("scaled_dot_product_attention", lambda: floats((3, 2), (0, 2), (0, 2))),
    "V widens the batch": ("scaled_dot_product_attention", lambda: floats((1, 3, 2), (1, 4, 2), (2, 4, 2))),
    "d_k differs": ("scaled_dot_product_attention", lambda: floats((3, 2), (4, 3), (4, 2))),
    "mask of the wrong shape": ("scaled_dot_product_attention",
                                lambda: [*floats((3, 2), (4, 2), (4, 2)), np.ones((3, 5), bool)]),
}
PLAIN = {"linear": linear.plain, "gelu": gelu.plain, "layer_norm": layer_norm.plain,
         "scaled_dot_product_attention": scaled_dot_product_attention.plain}


def outcome(fn, args):
    "(values of the outputs, None) or (None, the error's type and message)."
    try:
        result = fn(*args)
    except Exception as e:
        return None, (type(e), str(e))
    return [o.data for o in (result if isinstance(result, tuple) else (result,))], None


def assert_a_broken_rule_is_caught(monkeypatch, op, fn, inputs):
    "fn passes gradcheck; with the gradient rule of `op` scaled by 1.1, gradcheck fails and names `op`."
    assert gradcheck(fn, inputs), f"gradcheck of {op} failed before its rule was broken"
    good = GRADIENTS[op]
    monkeypatch.setitem(GRADIENTS, op, lambda grad, out, *ins, **attrs: tuple(
        None if g is None else 1.1 * g for g in good(grad, out, *ins, **attrs)))
    with pytest.raises(GradcheckError, match=op):
        gradcheck(fn, inputs)


def tiny_training_step(rng):
    "One training step of a one-layer GPT on a random batch of 11 token ids, as a function of no arguments."
    manual_seed(0)
    model = GPT(vocab_size=11, embed_dim=16, num_layers=1, num_heads=2, max_seq_len=8, seed=0)
    optimizer = AdamW(model.parameters(), lr=1e-3)
    x = rng.integers(0, 11, size=(2, 8))

    def step():
        loss = cross_entropy(model(x), x)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return step


def assert_handed_over_to_the_plain_op(kernels: dict, case: str, recorded_ops):
    """kernels[op] on the inputs HANDED_OVER[case]: the same values, or the same error (for a bad mask: module 05's
    own), as the plain op, and no fast op recorded."""
    op, make = HANDED_OVER[case]
    (got, got_error), (expected, expected_error) = outcome(kernels[op], make()), outcome(PLAIN[op], make())
    assert got_error == expected_error, (got_error, expected_error)
    if expected is not None:
        assert len(got) == len(expected) and all(np.array_equal(g, e) for g, e in zip(got, expected)), case
        assert recorded_ops, "the plain op recorded its result"
    assert not any(name.startswith("fast_") for name in recorded_ops), recorded_ops


# --- attention kernels (module 07's blocks; module 08's with the compiled softmax) ---------------------------------
def check_inputs_that_need_no_gradient(attention, rng):
    "An input without requires_grad gets no gradient, and the others the plain op's."
    Q, K, V = leaves(rng, (3, 4), (5, 4), (5, 2))
    K.requires_grad = False
    assert_same_as_plain(attention, scaled_dot_product_attention.plain, [Q, K, V], mask=ROW_BLOCKED)
    Q.requires_grad, K.requires_grad = False, True
    assert_same_as_plain(attention, scaled_dot_product_attention.plain, [Q, K, V])


def check_split_heads_keep_their_layout(attention, rng):
    "Heads split off as a transposed view: the output and the gradients come back in that layout (no copy to merge)."
    x = rng.normal(size=(2, 6, 3, 4)).astype(np.float32)            # (B, n, H, d)
    Q, K, V = (Tensor(x.copy().transpose(0, 2, 1, 3), requires_grad=True) for _ in range(3))
    out, _ = attention(Q, K, V, create_causal_mask(6))
    assert out.data.strides == Q.data.strides, (out.data.strides, Q.data.strides)
    out.backward(np.ones(out.shape, np.float32))
    assert Q.grad.shape == Q.shape, (Q.grad.shape, Q.shape)
    assert_same_as_plain(attention, scaled_dot_product_attention.plain, [Q, K, V], mask=create_causal_mask(6))


def check_a_fully_blocked_row_gives_zeros(attention, rng):
    "A query row whose keys are all blocked: zeros forward, finite gradients, and none for that row of Q."
    Q, K, V = leaves(rng, (2, 3, 4), (2, 5, 4), (2, 5, 3))
    out, weights = attention(Q, K, V, ROW_BLOCKED)
    assert np.all(out.data[:, 1] == 0) and np.all(weights.data[:, 1] == 0), "the blocked row is not zero"
    (out.sum() + (weights * weights).sum()).backward()
    assert all(np.all(np.isfinite(t.grad.data)) for t in (Q, K, V)), "a gradient is not finite"
    assert np.all(Q.grad.data[:, 1] == 0), "the blocked row of Q has a gradient"


@pytest.fixture
def pools(monkeypatch):
    "Every thread count parallel_map hands work to helper threads with (a list that grows as the test runs)."
    started, pool = [], perf_threads._pool
    monkeypatch.setattr(perf_threads, "_pool", lambda helpers: started.append(helpers + 1) or pool(helpers))
    return started


@pytest.fixture(params=[1, 2], ids=["one thread", "two threads"])
def threads(request, monkeypatch, pools):
    """The kernels on one thread, or on two even for tiny inputs: BLAS's thread count is not consulted, and the size
    thresholds are lowered, so every threaded path is taken. `pools` shows whether it was. (The count is read where
    parallel_map runs the pieces, and where attention cuts its blocks.)"""
    for module in (perf_threads, numpy_kernels):
        monkeypatch.setattr(module, "num_threads", lambda: request.param)
    monkeypatch.setattr(numpy_kernels, "_THREAD_NUMBERS", 1)
    monkeypatch.setattr(numpy_kernels, "_THREAD_BYTES", 1)
    return request.param


@pytest.fixture(params=[2 ** 22, 100], ids=["one block", "row blocks"])
def cache_bytes(request, monkeypatch):
    "Attention's scores in one block, or cut into blocks of rows."
    monkeypatch.setattr(numpy_kernels, "_CACHE_BYTES", request.param)
    return request.param
