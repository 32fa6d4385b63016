"""The compiled loops of module 08 (numba): every compiled op equals the plain op it replaces, values and gradients,
in float32 and float64; AdamW's compiled update equals module 04's, step after step; inputs a loop was not written for
go to the plain op; the fast path's table takes the compiled ops only where numba is installed and says once when it
is not; the loops are compiled without fastmath and cached on disk, so a second process loads them.

CI runs this file twice: as installed, and with TINYTORCH_TEST_WITHOUT_NUMBA=1, where the same loops run as Python."""
import subprocess
import sys
import warnings

import numpy as np
import pytest

import tinytorch.perf as perf
from tinytorch.core.layers import gelu, layer_norm, softmax
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import AdamW
from tinytorch.core.tensor import KERNELS, Tensor

from perf_helpers import assert_same_as_plain, leaves

DTYPES = [np.float64, np.float32]
HAVE_NUMBA = perf.numba is not None


@pytest.mark.exercise("switch")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5), (4, 1), (6,)])
def test_softmax(rng, dtype, shape):
    assert_same_as_plain(perf.compiled_softmax, softmax.plain, leaves(rng, shape, dtype=dtype, scale=5.0))


@pytest.mark.exercise("compiled-layer-norm-loops")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5), (7, 4), (3,)])
@pytest.mark.parametrize("eps", [1e-5, 0.1])
def test_layer_norm(rng, dtype, shape, eps):
    inputs = leaves(rng, shape, shape[-1:], shape[-1:], dtype=dtype, scale=3.0)
    assert_same_as_plain(perf.compiled_layer_norm, layer_norm.plain, inputs, eps=eps)


@pytest.mark.exercise("compiled-layer-norm-loops")
def test_layer_norm_keeps_its_digits_far_from_zero(rng):
    "Rows around 1e4 with a spread of 1e-3: a one-pass variance (E[x²] - E[x]²) would lose every digit."
    x = Tensor(1e4 + 1e-3 * rng.normal(size=(3, 16)))
    w, b = leaves(rng, (16,), (16,))
    np.testing.assert_allclose(perf.compiled_layer_norm(x, w, b).data, layer_norm.plain(x, w, b).data, atol=1e-6)


@pytest.mark.exercise("compiled-gelu-loops")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5), (7,), (1, 1)])
def test_gelu(rng, dtype, shape):
    assert_same_as_plain(perf.compiled_gelu, gelu.plain, leaves(rng, shape, dtype=dtype, scale=3.0))


@pytest.mark.exercise("compiled-gelu-loops")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_far_out_in_both_tails(dtype):
    x = Tensor(np.array([-200.0, -88.0, -30.0, -12.0, 0.0, 12.0, 30.0, 88.0, 200.0], dtype=dtype), requires_grad=True)
    assert_same_as_plain(perf.compiled_gelu, gelu.plain, [x])


@pytest.mark.exercise("compiled-gelu-loops")
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_of_tiny_numbers_where_the_output_loses_its_digits(dtype):
    "The backward reads σ(2u) back as y / x: near 0 (0, -0, subnormals) y has no digits left, and σ(2u) is ½."
    smallest = np.finfo(dtype).smallest_subnormal
    v = np.array([0.0, -0.0, smallest, 3 * smallest, -5 * smallest, 1e-30, -1e-21, 1e-19], dtype=dtype)
    x = Tensor(v, requires_grad=True)
    perf.compiled_gelu(x).backward(np.ones_like(v))
    np.testing.assert_allclose(x.grad.data, 0.5, rtol=1e-6)


@pytest.mark.exercise("compiled-cross-entropy-loops")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, targets, ignore_index", [
    ((6, 4), [0, 3, 1, 1, 2, 0], None),
    ((2, 3, 5), [[4, 0, 2], [1, 1, 3]], None),
    ((5, 3), [0, -100, 2, -100, 1], -100),
    ((4,), 2, None),
])
def test_cross_entropy(rng, dtype, shape, targets, ignore_index):
    targets = np.array(targets)
    assert_same_as_plain(lambda z: perf.compiled_cross_entropy(z, targets, ignore_index),
                         lambda z: cross_entropy.plain(z, targets, ignore_index), leaves(rng, shape, dtype=dtype, scale=3.0))


@pytest.mark.exercise("switch")
@pytest.mark.parametrize("op, plain, shapes", [
    (perf.compiled_softmax, softmax.plain, [(3, 5)]),
    (perf.compiled_layer_norm, layer_norm.plain, [(3, 5), (5,), (5,)]),
    (perf.compiled_gelu, gelu.plain, [(3, 5)]),
])
def test_a_transposed_input_and_a_float64_upstream_gradient(rng, op, plain, shapes):
    "x.T is not contiguous (the op copies it into rows); a float64 upstream gradient for float32 returns float32."
    x, *rest = leaves(rng, *shapes, dtype=np.float32)
    xt = Tensor(np.ascontiguousarray(x.data.T).T, requires_grad=True)              # (3, 5), column-major
    assert not xt.data.flags.c_contiguous
    assert_same_as_plain(op, plain, [xt, *rest])
    out = op(xt, *rest)
    out.backward(rng.normal(size=out.shape))                                      # float64 upstream
    assert xt.grad.dtype == np.float32


@pytest.mark.exercise("compiled-cross-entropy-loops")
def test_cross_entropy_of_huge_logits_is_finite():
    z = Tensor(np.array([[1000.0, 0.0, -1000.0], [0.0, 0.0, 0.0]]), requires_grad=True)
    loss = perf.compiled_cross_entropy(z, np.array([1, 2]))
    np.testing.assert_allclose(loss.data, (1000 + np.log(3)) / 2, rtol=1e-12)
    loss.backward()
    assert np.isfinite(z.grad.data).all()


@pytest.mark.exercise("compiled-cross-entropy-loops")
def test_cross_entropy_errors_are_the_plain_ops(rng):
    z = leaves(rng, (3, 4))[0]
    for targets, message in [(np.array([0, 1]), "do not match"), (np.array([0, 1, 4]), "out of range"),
                             (np.array([0.0, 1.0, 2.0]), "integer class indices")]:
        with pytest.raises((ValueError, TypeError), match=message):
            perf.compiled_cross_entropy(z, targets)


def _adamw_run(update, dtype, steps, switch_at=None, **hyper):
    "Parameters and state after `steps` AdamW updates of two parameters; from step `switch_at` on, the plain update."
    rng = np.random.default_rng(11)
    params = [Tensor(rng.normal(size=s).astype(dtype), requires_grad=True) for s in [(3, 4), (5,)]]
    optimizer = AdamW(params, **hyper)
    for step in range(steps):
        use = AdamW.update.plain if switch_at is not None and step >= switch_at else update
        for p, state in zip(params, optimizer.state):
            use(optimizer, p.data, rng.normal(size=p.shape).astype(dtype), state)
    return [p.data for p in params], optimizer.state


@pytest.mark.exercise("compiled-adamw-loop")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hyper", [dict(lr=0.1), dict(lr=0.01, betas=(0.8, 0.95), eps=1e-3, weight_decay=0.5),
                                   dict(lr=0.3, weight_decay=2.0)])
@pytest.mark.parametrize("switch_at", [None, 2])
def test_adamw_update_equals_module_04s(dtype, hyper, switch_at):
    got, state = _adamw_run(perf.compiled_adamw_update, dtype, 5, switch_at, **hyper)
    expected, plain_state = _adamw_run(AdamW.update.plain, dtype, 5, **hyper)
    tol = dict(rtol=1e-6, atol=1e-9) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-15)
    for g, e, s, ps in zip(got, expected, state, plain_state):
        assert g.dtype == e.dtype == s["m"].dtype == s["v"].dtype and s["step"] == ps["step"] == 5
        for a, b in [(g, e), (s["m"], ps["m"]), (s["v"], ps["v"])]:
            np.testing.assert_allclose(a, b, **tol)


@pytest.mark.exercise("compiled-adamw-loop")
@pytest.mark.parametrize("dtype", DTYPES)
def test_adamw_can_switch_from_module_04s_update_to_the_loop(dtype, rng):
    "A run that starts on the plain path and switches at step 2 keeps its state and ends where the plain run ends."
    params = [Tensor(rng.normal(size=(4, 3)).astype(dtype), requires_grad=True) for _ in range(2)]
    copies = [Tensor(p.data.copy(), requires_grad=True) for p in params]
    mixed, plain = AdamW(params, lr=0.05, weight_decay=0.1), AdamW(copies, lr=0.05, weight_decay=0.1)
    for step in range(5):
        grads = [rng.normal(size=(4, 3)).astype(dtype) for _ in params]
        update = AdamW.update.plain if step < 2 else perf.compiled_adamw_update
        for p, c, g, state, plain_state in zip(params, copies, grads, mixed.state, plain.state):
            update(mixed, p.data, g, state)
            AdamW.update.plain(plain, c.data, g, plain_state)
    tol = dict(rtol=1e-6, atol=1e-9) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-15)
    for p, c in zip(params, copies):
        np.testing.assert_allclose(p.data, c.data, **tol)


@pytest.mark.exercise("compiled-adamw-loop")
def test_adamw_with_a_state_of_another_shape_fails_like_module_04s():
    "A state that does not fit the parameter (another model's) must not reach the loop, which checks no bounds."
    optimizer = AdamW([Tensor(np.zeros(3))], lr=0.1)
    state = {"step": 1, "m": np.zeros(2), "v": np.zeros(2)}
    with pytest.raises(ValueError, match="broadcast"):
        perf.compiled_adamw_update(optimizer, np.zeros(3), np.ones(3), state)


@pytest.mark.exercise("compiled-adamw-loop")
def test_adamw_update_of_a_strided_parameter_goes_to_the_plain_update():
    base = np.arange(12.0).reshape(3, 4)
    param = base[:, ::2]                                             # not contiguous: the loop would need a copy
    optimizer = AdamW([Tensor(np.zeros(2))], lr=0.1)
    state = {}
    perf.compiled_adamw_update(optimizer, param, np.ones_like(param), state)
    expected = np.arange(12.0).reshape(3, 4)[:, ::2].copy()
    AdamW.update.plain(optimizer, expected, np.ones_like(expected), {})
    np.testing.assert_array_equal(base[:, ::2], expected)            # updated in place, through the plain update


@pytest.mark.exercise("compiled-adamw-loop")
def test_adamw_hook_runs_the_installed_kernel(rng, fast):
    p = Tensor(rng.normal(size=4), requires_grad=True)
    p.grad = Tensor(rng.normal(size=4))
    optimizer = AdamW([p])
    calls = []
    KERNELS["adamw_update"] = lambda *args: calls.append(args)
    optimizer.step()
    assert len(calls) == 1 and calls[0][0] is optimizer and calls[0][1] is p.data


@pytest.mark.exercise("switch")
def test_inputs_a_loop_was_not_written_for_go_to_the_plain_op(rng, recorded_ops):
    x = leaves(rng, (2, 3))[0]
    w32, b32 = leaves(rng, (3,), (3,), dtype=np.float32)
    empty, ints = Tensor(np.zeros((2, 0))), Tensor(np.arange(6).reshape(2, 3))
    half = Tensor(np.linspace(-3, 3, 6, dtype=np.float16).reshape(2, 3))          # not a type the loops are built for
    cases = [(perf.compiled_layer_norm, layer_norm.plain, (x, w32, b32), {}),      # mixed dtypes
             (perf.compiled_softmax, softmax.plain, (x,), dict(dim=0)),           # not the last axis
             (perf.compiled_gelu, gelu.plain, (empty,), {}),
             (perf.compiled_layer_norm, layer_norm.plain, (empty, *leaves(rng, (0,), (0,))), {}),
             (perf.compiled_gelu, gelu.plain, (ints,), {}),                       # not floating point
             (perf.compiled_gelu, gelu.plain, (half,), {}),
             (perf.compiled_softmax, softmax.plain, (half,), {}),
             (perf.compiled_layer_norm, layer_norm.plain, (half, Tensor(np.ones(3, np.float16)),
                                                            Tensor(np.zeros(3, np.float16))), {})]
    for op, plain, args, kwargs in cases:
        recorded_ops.clear()
        expected = plain(*args, **kwargs)
        plain_ops = list(recorded_ops)
        recorded_ops.clear()
        got = op(*args, **kwargs)
        assert recorded_ops == plain_ops, (op.__name__, args, kwargs)   # the plain op's own records, no fast_...
        np.testing.assert_array_equal(got.data, expected.data)
    with pytest.raises(ValueError, match="zero-size array"):                   # the plain op's own error
        perf.compiled_softmax(empty)


@pytest.mark.exercise("compiled-layer-norm-loops")
def test_layer_norm_rejects_a_wrong_shape_like_the_plain_op(rng):
    x, w, b = leaves(rng, (2, 3), (4,), (4,))
    with pytest.raises(ValueError, match="normalized shape"):
        perf.compiled_layer_norm(x, w, b)


@pytest.mark.exercise("switch")
def test_the_table_takes_the_compiled_ops_only_with_numba():
    if HAVE_NUMBA:
        assert perf.FAST_KERNELS == perf.NUMPY_KERNELS | perf.COMPILED_KERNELS
        assert perf.FAST_KERNELS["layer_norm"] is perf.compiled_layer_norm
    else:
        assert perf.FAST_KERNELS == perf.NUMPY_KERNELS
    assert set(perf.COMPILED_KERNELS) == {"softmax", "layer_norm", "gelu", "cross_entropy", "adamw_update",
                                          "scaled_dot_product_attention"}


@pytest.mark.exercise("switch")
def test_without_numba_the_switch_says_so_once(monkeypatch):
    monkeypatch.setattr(perf, "numba", None)
    monkeypatch.setitem(perf._switch, "told", False)
    with pytest.warns(UserWarning, match="not installed: numba, so the numpy kernels run"):
        perf.enable()
    perf.disable()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        perf.enable()


@pytest.mark.exercise("switch")
@pytest.mark.skipif(HAVE_NUMBA, reason="numba is installed (CI runs this file again without it)")
def test_without_numba_the_loops_are_python_functions_and_warm_up_has_nothing_to_do():
    assert perf.compiled(lambda: 1)() == 1 and perf.prange is range
    loop = perf.compiled_kernels._layer_norm_rows
    assert loop.__module__ == "tinytorch.perf.compiled_kernels" and not hasattr(loop, "py_func")
    assert perf.warm_up() == {}


@pytest.mark.exercise("switch")
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (.venv/bin/pip install -e '.[course]')")
def test_the_loops_are_compiled_without_fastmath_without_the_gil_and_cached_on_disk():
    loops = [getattr(perf.compiled_kernels, name) for name in (
        "_vexp_loop", "_softmax_rows", "_softmax_rows_backward", "_masked_softmax_rows", "_layer_norm_rows",
        "_layer_norm_rows_backward", "_gelu_loop", "_gelu_backward_loop", "_cross_entropy_rows",
        "_cross_entropy_rows_backward", "_adamw_loop")]
    sums = [perf.compiled_kernels._total, perf.compiled_kernels._dot]  # the only ones that may reorder: they only add
    for loop in loops + sums:
        options = loop.targetoptions
        fastmath = {"reassoc"} if loop in sums else False
        assert options["fastmath"] == fastmath and options["nogil"] is True and options["parallel"] is False, loop
        assert options["error_model"] == "numpy", f"{loop.py_func.__name__}: a division would test for zero and stay scalar"
        assert type(loop._cache).__name__ != "NullCache", f"{loop.py_func.__name__} is not cached on disk"


@pytest.mark.exercise("switch")
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (.venv/bin/pip install -e '.[course]')")
def test_after_warm_up_a_training_step_compiles_nothing():
    "In a fresh process (signatures pile up in one): warm_up, then a GPT step of batch 3 on the fast path."
    probe = """
import numpy as np
import tinytorch.perf as perf
from tinytorch.core.layers import manual_seed
from tinytorch.core.optim import AdamW
from tinytorch.core.train import train_step
from tinytorch.core.transformer import GPT
perf.warm_up()
loops = {name: f for name, f in vars(perf.compiled_kernels).items() if hasattr(f, "signatures")}
before = {name: set(f.signatures) for name, f in loops.items()}
manual_seed(0)
model = GPT(vocab_size=7, embed_dim=8, num_layers=1, num_heads=2, max_seq_len=6)
optimizer = AdamW(model.parameters(), lr=1e-3)
ids = np.random.default_rng(0).integers(0, 7, size=(3, 7))
with perf.enabled():
    train_step(model, optimizer, ids[:, :-1], ids[:, 1:], max_norm=1.0)
print({name: sorted(map(str, set(f.signatures) - before[name])) for name, f in loops.items()
       if set(f.signatures) - before[name]})
"""
    new = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=600).stdout
    assert new.strip() == "{}", f"compiled during the step, not in warm_up: {new}"


@pytest.mark.exercise("switch")
@pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not installed (.venv/bin/pip install -e '.[course]')")
def test_warm_up_reports_every_compiled_op_and_a_new_process_loads_them_from_the_disk_cache():
    seconds = perf.warm_up()
    assert set(seconds) == set(perf.COMPILED_KERNELS) | {"exp"}
    assert perf.warm_up() == seconds                                  # measured once per process
    probe = ("import tinytorch.perf as perf; perf.warm_up(); "
             "loops = [f for f in vars(perf.compiled_kernels).values() if hasattr(f, 'stats')]; "
             "print(sum(sum(f.stats.cache_hits.values()) for f in loops), "
             "sum(sum(f.stats.cache_misses.values()) for f in loops))")
    hits, misses = map(int, subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                                           timeout=600).stdout.split())
    assert hits >= len(seconds) and misses == 0, (hits, misses)
