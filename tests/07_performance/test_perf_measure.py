"""compare() takes turns in blocks and reports medians, percentiles and ratios (with a fake clock, never wall time);
op_profile() charges each tinytorch op, gradient rule and fast kernel for its own calls."""
import numpy as np
import pytest

from tinytorch.perf import measure as perf
from tinytorch.core.tensor import KERNELS
from tinytorch.perf.numpy_kernels import NUMPY_KERNELS

from perf_helpers import tiny_training_step

pytestmark = pytest.mark.exercise("compare")


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def timed(name, durations, clock, log):
    durations = iter(durations)

    def call():
        log.append(name)
        clock.now += next(durations)
    return call


def test_blocks_alternate_and_reverse_after_the_warm_up():
    clock, log = FakeClock(), []
    a, b = [9.0, 1, 2, 3, 4, 5, 100], [9.0, 2, 4, 6, 8, 10, 12]
    t = perf.compare({"a": timed("a", a, clock, log), "b": timed("b", b, clock, log)}, blocks=3, calls=2, warmup=1,
                     clock=clock)
    assert log == ["a", "b", "a", "a", "b", "b", "b", "b", "a", "a", "a", "a", "b", "b"]
    assert t["a"] == perf.Timing(np.median(a[1:]), np.percentile(a[1:], 25), np.percentile(a[1:], 75), 1.0)
    assert t["b"].median == np.median(b[1:]) and t["b"].ratio == pytest.approx(np.median(b[1:]) / np.median(a[1:]))


@pytest.mark.parametrize("blocks, calls, warmup", [(1, 1, 0), (4, 3, 2), (5, 1, 1)])
def test_every_function_runs_warmup_plus_blocks_times_calls(blocks, calls, warmup):
    clock, log = FakeClock(), []
    names = "xyz"
    t = perf.compare({n: timed(n, [1.0] * 100, clock, log) for n in names}, blocks=blocks, calls=calls, warmup=warmup,
                     clock=clock)
    assert log[:3 * warmup] == [n for n in names for _ in range(warmup)]
    expected = [n for block in range(blocks) for n in (names if block % 2 == 0 else names[::-1]) for _ in range(calls)]
    assert log[3 * warmup:] == expected
    assert all(v == perf.Timing(1.0, 1.0, 1.0, 1.0) for v in t.values())


def test_the_default_clock_measures_real_time():
    t = perf.compare({"nothing": lambda: None, "a sum": lambda: sum(range(1000))}, blocks=2, calls=3)
    assert 0 <= t["nothing"].low <= t["nothing"].median <= t["nothing"].high and t["nothing"].ratio == 1.0


def test_op_profile_names_the_ops_of_a_step_plain_and_with_the_numpy_kernels(rng):
    step = tiny_training_step(rng)
    plain = perf.op_profile(step, steps=2)
    assert {"linear", "linear backward", "gelu", "gelu backward", "layer_norm", "layer_norm backward",
            "scaled_dot_product_attention", "attention backward", "cross_entropy", "other"} <= set(plain)
    assert any(name.endswith(".step") for name in plain)
    assert all(seconds >= 0 for seconds in plain.values()) and list(plain.values()) == sorted(plain.values(), reverse=True)
    KERNELS.update(NUMPY_KERNELS)
    fast = perf.op_profile(step, steps=2)
    assert {"fast_linear", "fast_linear backward", "fast_gelu", "fast_gelu backward", "fast_attention",
            "fast_attention backward", "fast_layer_norm", "fast_layer_norm backward"} <= set(fast)
    assert "linear" not in fast and "gelu backward" not in fast           # the plain ops did not run
