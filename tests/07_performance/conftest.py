"""Shared fixtures for the module 07 suite (`tinytorch.perf`: the measuring tools and the numpy kernels).

Test files here have unique basenames (`test_perf_*.py`, helpers in `perf_helpers.py`): the module folders start with
digits and have no `__init__.py`, so pytest imports each file by its basename.
"""
import pytest

from tinytorch.core.tensor import KERNELS
from tinytorch.perf.numpy_kernels import NUMPY_KERNELS

from perf_helpers import cache_bytes, pools, threads  # noqa: F401 - fixtures


@pytest.fixture(autouse=True)
def plain_path_around_every_test():
    "Every test starts and ends on the plain path, whatever it (or a test before it) put into KERNELS."
    KERNELS.clear()
    yield
    KERNELS.clear()


@pytest.fixture
def numpy_kernels_in():
    "This module's kernels in KERNELS for this test, as module 08's switch would put them."
    KERNELS.update(NUMPY_KERNELS)
    return NUMPY_KERNELS
