"""The switch: enable() fills KERNELS from FAST_KERNELS, disable() restores the plain path exactly, is_enabled()
tells; neither touches the allocator, which changes only when reuse_freed_memory() is called; without threadpoolctl
everything runs on one thread and perf says so once."""
import warnings

import numpy as np
import pytest

import tinytorch.perf as perf
from tinytorch.core.layers import gelu, layer_norm, linear, manual_seed
from tinytorch.core.losses import cross_entropy
from tinytorch.core.tensor import KERNELS
from tinytorch.core.transformer import GPT

from compiled_helpers import ATTENTION_OP, GELU_OP, LAYER_NORM_OP
from perf_helpers import leaves, tiny_training_step

pytestmark = pytest.mark.exercise("switch")


class FakeLibc:
    "Records mallopt(param, value) calls; glibc returns 1 on success."
    def __init__(self):
        self.calls = []

    def mallopt(self, param, value):
        self.calls.append((param, value))
        return 1


@pytest.fixture
def libc(monkeypatch):
    fake = FakeLibc()
    monkeypatch.setattr(perf.memory, "_libc", lambda: fake)
    return fake


REUSE = [(-3, 32 << 20), (-1, 512 << 20)]                      # M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
DEFAULTS = [(-3, 128 * 1024), (-1, 128 * 1024)]


def test_the_table_names_the_decorated_ops_with_fast_kernels_of_the_same_signature():
    import inspect
    plain = {"linear": linear, "gelu": gelu, "layer_norm": layer_norm}
    from tinytorch.core.attention import scaled_dot_product_attention
    plain["scaled_dot_product_attention"] = scaled_dot_product_attention
    if perf.numba is not None:
        from tinytorch.core.layers import softmax
        from tinytorch.core.optim import AdamW
        plain.update(softmax=softmax, cross_entropy=cross_entropy, adamw_update=AdamW.update)
    assert set(perf.FAST_KERNELS) == set(plain)
    for op, fast in perf.FAST_KERNELS.items():
        ours = [p.name for p in inspect.signature(fast).parameters.values()]
        theirs = [p.name for p in inspect.signature(plain[op].plain).parameters.values()]
        assert len(ours) == len(theirs), (op, ours, theirs)


def test_enable_and_disable_switch_every_op_and_restore_the_plain_path_exactly(libc, rng):
    assert KERNELS == {} and not perf.is_enabled()
    x, w, b = leaves(rng, (2, 3, 4), (4, 4), (4,), dtype=np.float32)
    assert linear(x, w, b)._node.op == "linear"
    perf.enable()
    assert perf.is_enabled() and KERNELS == perf.FAST_KERNELS and KERNELS is not perf.FAST_KERNELS
    assert linear(x, w, b)._node.op == "fast_linear" and gelu(x)._node.op == GELU_OP
    assert layer_norm(x, w[0], b)._node.op == LAYER_NORM_OP
    perf.enable()                                                      # twice: no harm
    perf.disable()
    assert KERNELS == {} and not perf.is_enabled()
    assert linear(x, w, b)._node.op == "linear" and gelu(x)._node.op == "gelu"
    perf.disable()                                                     # twice: nothing more to undo
    assert KERNELS == {} and libc.calls == []                          # the switch never touched the allocator


def test_the_allocator_changes_only_when_asked(libc):
    perf.enable()
    perf.disable()
    assert libc.calls == []
    assert perf.reuse_freed_memory() is True and libc.calls == REUSE
    assert perf.reuse_freed_memory(False) is True and libc.calls == REUSE + DEFAULTS


def test_disable_without_enable_leaves_the_allocator_alone(libc):
    perf.disable()
    assert libc.calls == [] and KERNELS == {}


def test_disable_takes_out_only_the_fast_kernels(libc):
    other = KERNELS["mse_loss"] = lambda pred, target: None
    perf.enable()
    KERNELS["gelu"] = replaced = lambda x: None                       # someone replaced one of ours meanwhile
    assert not perf.is_enabled()
    perf.disable()
    assert KERNELS == {"mse_loss": other, "gelu": replaced}


def test_enabled_is_a_context_manager_that_puts_back_what_was_on(libc):
    with perf.enabled():
        assert perf.is_enabled()
    assert KERNELS == {}
    perf.enable()
    with perf.enabled():
        assert perf.is_enabled()
    assert perf.is_enabled()
    with pytest.raises(RuntimeError):
        with perf.enabled():
            raise RuntimeError("inside")
    assert perf.is_enabled()


def test_without_glibc_the_allocator_setting_does_nothing(monkeypatch):
    monkeypatch.setattr(perf.memory, "_libc", lambda: None)
    assert perf.reuse_freed_memory() is False and perf.reuse_freed_memory(False) is False


def test_the_real_allocator_setting_applies_on_linux():
    import sys
    if not sys.platform.startswith("linux") or perf.memory._libc() is None:
        pytest.skip("not glibc")
    assert perf.reuse_freed_memory(True) is True and perf.reuse_freed_memory(False) is True


def test_without_threadpoolctl_one_thread_and_one_warning(monkeypatch, libc):
    for module in (perf.threads, perf):                               # the thread count, and the switch's warning
        monkeypatch.setattr(module, "_blas", lambda: None)
    monkeypatch.setitem(perf._switch, "told", False)
    assert perf.num_threads() == 1
    with pytest.warns(UserWarning, match="not installed: .*threadpoolctl, so the numpy kernels run on one thread"):
        perf.enable()
    perf.disable()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        perf.enable()                                                  # said once is enough
        assert perf.parallel_map(lambda i: i + 1, range(4)) == [1, 2, 3, 4]
        with perf.threads._one_blas_thread():
            pass


def test_with_threadpoolctl_num_threads_follows_blas():
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl is not installed (.venv/bin/pip install -e '.[course]')")
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        assert perf.num_threads() == 1
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        assert perf.num_threads() == 2


@pytest.mark.parametrize("dtype, tol", [(np.float64, dict(rtol=1e-9, atol=1e-12)), (np.float32, dict(rtol=1e-3, atol=1e-5))])
def test_a_gpt_step_on_the_fast_path_equals_the_plain_one(recorded_ops, dtype, tol, rng):
    "Loss and every parameter's gradient, with every fast kernel taken in the model."
    x, y = rng.integers(0, 11, size=(3, 9)), rng.integers(0, 11, size=(3, 9))
    results = []
    for fast in (False, True):
        manual_seed(0)
        model = GPT(vocab_size=11, embed_dim=16, num_layers=2, num_heads=4, max_seq_len=9, seed=0).to(dtype)
        for p in model.parameters():                                   # non-trivial LayerNorms and biases
            p.data += np.random.default_rng(p.size).normal(0, 0.1, size=p.shape).astype(dtype)
        with perf.enabled() if fast else _nothing():
            recorded_ops.clear()
            loss = cross_entropy(model(x), y)
            loss.backward()
        results.append([loss.data] + [p.grad.data for p in model.parameters()])
        ops = set(recorded_ops)
        assert {"fast_linear", GELU_OP, LAYER_NORM_OP, ATTENTION_OP} <= ops if fast else \
            not any(op.startswith("fast_") for op in ops)
    for plain, fast in zip(*results):
        np.testing.assert_allclose(fast, plain, **tol)


class _nothing:
    def __enter__(self): return self
    def __exit__(self, *exc): return False


def test_op_profile_names_the_fast_kernels_and_their_gradient_rules(rng):
    "On the fast path, module 07's op_profile charges each fast kernel and its rule under its own name."
    step = tiny_training_step(rng)
    with perf.enabled():
        fast = perf.op_profile(step, steps=2)
    gelu_kernel = perf.FAST_KERNELS["gelu"].__name__                     # fast_gelu, or compiled_gelu with numba
    attention_kernel = perf.FAST_KERNELS["scaled_dot_product_attention"].__name__
    assert {"fast_linear", "fast_linear backward", gelu_kernel, attention_kernel, f"{ATTENTION_OP} backward",
            f"{LAYER_NORM_OP} backward"} <= set(fast), sorted(fast)
    assert "linear" not in fast and "gelu backward" not in fast           # the plain ops did not run
