"""Shared fixtures for the module 07 (`tinytorch.perf`) suite.

Test files here have unique basenames (`test_perf_*.py`, helpers in `perf_helpers.py`): the module folders start with
digits and have no `__init__.py`, so pytest imports each file by its basename.
"""
import pytest

import tinytorch.perf as perf
from tinytorch.core.tensor import KERNELS


@pytest.fixture(autouse=True)
def plain_path_around_every_test():
    "Every test starts and ends on the plain path, whatever it (or a test before it) switched on."
    perf.disable()
    KERNELS.clear()
    yield
    perf.disable()
    KERNELS.clear()


@pytest.fixture
def fast():
    "The fast path on for this test."
    perf.enable()
    assert perf.is_enabled()
    return perf


@pytest.fixture
def pools(monkeypatch):
    "Every thread count parallel_map hands work to helper threads with (a list that grows as the test runs)."
    started, pool = [], perf.threads._pool
    monkeypatch.setattr(perf.threads, "_pool", lambda helpers: started.append(helpers + 1) or pool(helpers))
    return started


@pytest.fixture(params=[1, 2], ids=["one thread", "two threads"])
def threads(request, monkeypatch, pools):
    """The kernels on one thread, or on two even for tiny inputs: BLAS's thread count is not consulted, and the size
    thresholds are lowered, so every threaded path is taken. `pools` shows whether it was. (The count is read where
    parallel_map runs the pieces, and where attention cuts its blocks.)"""
    for module in (perf.threads, perf.numpy_kernels):
        monkeypatch.setattr(module, "num_threads", lambda: request.param)
    monkeypatch.setattr(perf.numpy_kernels, "_THREAD_NUMBERS", 1)
    monkeypatch.setattr(perf.numpy_kernels, "_THREAD_BYTES", 1)
    return request.param
