"""Shared fixtures for the module 08 suite (`tinytorch.perf`: the compiled loops and the switch).

It builds on module 07's suite: its helpers (`perf_helpers.py`, a fast kernel against the plain op) are imported
from there. Test files here have unique basenames (`test_compiled_*.py`, helpers in `compiled_helpers.py`).
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "07_performance"))  # module 07's perf_helpers

import tinytorch.perf as perf  # noqa: E402
from tinytorch.core.tensor import KERNELS  # noqa: E402

from perf_helpers import cache_bytes, pools, threads  # noqa: E402, F401 - fixtures


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
