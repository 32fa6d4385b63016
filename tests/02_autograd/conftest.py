"""Shared fixtures for the module 02 (`tinytorch.core.autograd`) suite.

Test files here have unique basenames (`test_autograd_*.py`): the module folders start with digits and have no
`__init__.py`, so pytest imports each test file by its basename.
"""
from collections import Counter

import numpy as np
import pytest

import tinytorch.core.tensor as tensor_module
from tinytorch.core.autograd import GRADIENTS, record
from tinytorch.core.tensor import set_op_recorder

@pytest.fixture
def rule_calls(monkeypatch):
    """A Counter of gradient-rule calls per op name while the test runs: every entry of `GRADIENTS` is replaced,
    through monkeypatch (undone after the test), by a wrapper that counts and then calls the real rule."""
    calls = Counter()

    def counting(op, rule):
        def counted_rule(grad, out, *inputs, **attrs):
            calls[op] += 1
            return rule(grad, out, *inputs, **attrs)
        return counted_rule

    for op, rule in list(GRADIENTS.items()):
        monkeypatch.setitem(GRADIENTS, op, counting(op, rule))
    return calls


@pytest.fixture
def recorded_nodes():
    """The op names of the graph nodes recorded while the test runs (results that require grad), seen through the
    public `set_op_recorder` hook; the recorder that was installed keeps doing its work and is put back after."""
    previous = getattr(tensor_module, "_op_recorder", None) or record
    seen = []

    def recorder(out, op, inputs, attrs):
        previous(out, op, inputs, attrs)
        if out.requires_grad:
            seen.append(op)

    set_op_recorder(recorder)
    try:
        yield seen
    finally:
        set_op_recorder(previous)


@pytest.fixture
def rng(seed):
    "A numpy Generator for random inputs, seeded from `seed` (tests/conftest.py: `--seeds N` runs N seeds)."
    return np.random.default_rng(2024 + seed)
