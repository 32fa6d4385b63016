"""bool() of a tensor follows numpy, and the kernel table that module 07 fills starts empty and dispatches by name."""
import subprocess
import sys

import numpy as np
import pytest

from tinytorch.core import tensor as tensor_module
from tinytorch.core.tensor import KERNELS, Tensor, kernel


@pytest.mark.parametrize("value, truth", [([1.0], True), ([0.0], False), (3, True), (0, False), ([[2.0]], True)])
def test_bool_of_one_element_is_its_truth(value, truth):
    assert bool(Tensor(value)) is truth


def test_bool_of_a_comparison_is_its_result_not_the_length():
    assert not bool(Tensor([1.0]) > 5)          # with len() as the truth this was True
    assert bool(Tensor([7.0]) > 5)


@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,)])
def test_bool_of_several_or_no_elements_is_a_clear_error(shape):
    with pytest.raises(ValueError, match=r"truth value of a tensor of shape"):
        bool(Tensor(np.ones(shape)))


def test_kernel_table_is_empty_until_module_07_fills_it():
    assert KERNELS == {}


def test_a_kernel_in_the_table_replaces_the_plain_function_and_only_while_it_is_there(monkeypatch):
    @kernel("twice")
    def twice(x, factor=2):
        return x * factor
    assert twice(3) == 6 and twice.plain(3) == 6 and twice.__name__ == "twice"
    monkeypatch.setitem(KERNELS, "twice", lambda x, factor=2: ("fast", x, factor))
    assert twice(3, factor=5) == ("fast", 3, 5)
    assert twice.plain(3) == 6                   # the textbook version stays reachable
    monkeypatch.delitem(KERNELS, "twice")
    assert twice(3) == 6
    assert tensor_module.KERNELS is KERNELS


def test_modules_01_to_06_need_neither_threadpoolctl_nor_an_environment_change():
    code = """
import os, sys
sys.modules["threadpoolctl"] = None          # importing it now raises ImportError
before = dict(os.environ)
import numpy as np
import tinytorch
from tinytorch.core.tensor import Tensor
from tinytorch.core.layers import GELU, LayerNorm, Linear
from tinytorch.core.losses import cross_entropy
from tinytorch.core.attention import MultiHeadAttention, create_causal_mask
from tinytorch.core.transformer import GPT
model = GPT(vocab_size=11, embed_dim=8, num_layers=1, num_heads=2, max_seq_len=6, seed=0)
ids = np.arange(12).reshape(2, 6) % 11
loss = cross_entropy(model(ids), ids)
loss.backward()
assert all(p.grad is not None for p in model.parameters())
assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items())
assert "threadpoolctl" not in sys.modules or sys.modules["threadpoolctl"] is None
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
