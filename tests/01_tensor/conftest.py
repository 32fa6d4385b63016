"""Shared fixtures for the module 01 (`tinytorch.core.tensor`) suite.

Test files here have unique basenames (`test_tensor_*.py`): the module folders start with digits and have no
`__init__.py`, so pytest imports each test file by its basename.
"""
import pytest

import tinytorch.core.tensor as tensor_module
from tinytorch.core.tensor import set_op_recorder


@pytest.fixture
def recorded_ops():
    """The names of the ops whose results were built while the test runs, seen through the public
    `set_op_recorder` hook. A recorder that is already installed (module 02's autograd) keeps receiving every
    call and is put back afterwards, so this fixture never disturbs other tests."""
    previous = getattr(tensor_module, "_op_recorder", None)
    seen = []

    def recorder(out, op, inputs, attrs):
        seen.append(op)
        if previous is not None:
            previous(out, op, inputs, attrs)

    set_op_recorder(recorder)
    try:
        yield seen
    finally:
        set_op_recorder(previous)
