"""Shared helpers for the module 03 (`tinytorch.core.layers`) suite.

Test files here have unique basenames (`test_layers_*.py`): module folders start with digits and have no
`__init__.py`, so pytest imports each test file by its basename.
"""
import numpy as np
import pytest

from tinytorch.core.tensor import Tensor


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def leaf(rng):
    "A float64 Tensor with random normal data that requires grad."
    def make(*shape, scale=1.0):
        return Tensor(rng.normal(size=shape) * scale, requires_grad=True)
    return make
