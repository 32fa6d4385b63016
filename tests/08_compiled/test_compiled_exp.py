"""The branch-free float32 exp of module 08 (`vexp`, `fast_exp`) against numpy's, over the whole float32 range in ulps,
and its special cases exactly. Without numba the formula runs in Python, so the sweep is sparser there."""
import numpy as np
import pytest

import tinytorch.perf as perf

# vexp is given code; the exercise whose loop calls it is the cross-entropy's
pytestmark = pytest.mark.exercise("compiled-cross-entropy-loops")

HAVE_NUMBA = perf.numba is not None
TINY = np.finfo(np.float32).tiny  # the smallest normal float32
MAX_ULPS = 3


def bit_patterns(step: int, start: int = 0) -> np.ndarray:
    "Every `step`-th float32 bit pattern from `start`: the whole range, NaNs, infinities and denormals included."
    return np.arange(start, 2 ** 32, step, dtype=np.int64).astype(np.uint32).view(np.float32)


def ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    "How many float32 numbers apart a and b are (both finite and of one sign)."
    return np.abs(a.view(np.int32).astype(np.int64) - b.view(np.int32))


def assert_matches_numpy(x: np.ndarray):
    with np.errstate(over="ignore", under="ignore"):
        ours, theirs = perf.fast_exp(x), np.exp(x)
    assert ours.dtype == np.float32 and ours.shape == x.shape
    nan = np.isnan(x)
    assert np.isnan(ours[nan]).all(), "NaN in must give NaN out"
    assert not np.isnan(ours[~nan]).any(), x[~nan][np.isnan(ours[~nan])][:5]
    normal = ~nan & (theirs >= TINY)
    off = ulps(ours[normal], theirs[normal])
    worst = np.argmax(off) if off.size else None
    assert off.size == 0 or off.max() <= MAX_ULPS, (x[normal][worst], ours[normal][worst], theirs[normal][worst])
    below = ~nan & (theirs < TINY)  # numpy gives 0 or a denormal; ours gives 0 there, or at most the smallest normal
    assert (ours[below] >= 0).all() and (ours[below] <= TINY).all(), x[below][ours[below] > TINY][:5]
    return off


@pytest.mark.parametrize("start", [0, 1, 96])
def test_fast_exp_is_within_3_ulps_of_numpy_over_the_whole_float32_range(start):
    "Every 97th bit pattern with numba (about 44 million numbers, three offsets); a sparse sweep in Python without."
    step = 97 if HAVE_NUMBA else 100_003
    x = bit_patterns(step, start)
    for part in np.array_split(x, max(1, x.size // 2 ** 22)):
        assert_matches_numpy(part)


def test_fast_exp_is_exact_to_rounding_on_a_dense_sweep_of_the_range_softmax_uses(rng):
    "Every float32 in [-20, 0) at a step of one ulp near 0 is too many; 2**20 random ones plus the interval's ends."
    x = np.concatenate([rng.uniform(-20, 0, size=2 ** 20 if HAVE_NUMBA else 2 ** 10), [-20.0, -1e-30, 0.0]])
    off = assert_matches_numpy(x.astype(np.float32))
    assert off.max() <= MAX_ULPS


def test_special_cases_are_exact():
    specials = np.array([-np.inf, -1e30, -1000, -104, -87.34, 0.0, -0.0, 88.7229, 1000, np.inf, np.nan], np.float32)
    got = perf.fast_exp(specials)
    assert got[:5].tolist() == [0.0] * 5 and got[:5].view(np.int32).tolist() == [0] * 5  # +0, never a denormal
    assert got[5] == 1.0 and got[6] == 1.0
    assert np.isposinf(got[7:10]).all() and np.isnan(got[10])
    largest = np.float32(88.72283)                                   # the largest float32 whose exp is finite
    assert np.isfinite(perf.fast_exp(np.array([largest]))[0]) and ulps(perf.fast_exp(np.array([largest])),
                                                                        np.exp(np.array([largest]))).max() <= MAX_ULPS


def test_vexp_picks_numpy_for_float64_and_fast_exp_keeps_the_dtype_and_shape(rng):
    x64 = rng.normal(size=(3, 4)) * 30
    assert perf.fast_exp(x64).dtype == np.float64
    np.testing.assert_array_max_ulp(perf.fast_exp(x64), np.exp(x64), maxulp=1)  # the C library's exp in a loop
    assert perf.vexp(1.0) == np.exp(1.0) and isinstance(perf.vexp(np.float32(1.0)), np.float32)
    x32 = (rng.normal(size=(2, 3, 5)) * 5).astype(np.float32)
    out = np.empty_like(x32)
    assert perf.fast_exp(x32, out=out) is out
    np.testing.assert_allclose(out, np.exp(x32), rtol=4e-7)
    np.testing.assert_allclose(perf.fast_exp(x32.T), np.exp(x32.T), rtol=4e-7)  # a non-contiguous input


def test_a_wrong_constant_is_caught(monkeypatch):
    "The sweep above can fail: the float32 formula with a polynomial coefficient off by 1% is many ulps away."
    x = np.linspace(-80, 80, 201, dtype=np.float32)
    monkeypatch.setattr(perf.compiled_kernels, "_P5", np.float32(0.505))                # the Python formula reads it on every call
    got = np.array([perf.compiled_kernels._expf(v) for v in x])
    assert got.dtype == np.float32 and ulps(got, np.exp(x)).max() > MAX_ULPS
