"""Shared fixtures for the module 06 (`tinytorch.core.transformer`) suite.

Test files here have unique basenames (`test_transformer_*.py`): the module folders start with digits and have no
`__init__.py`, so pytest imports each test file by its basename.
"""
import numpy as np
import pytest

from tinytorch.core.layers import manual_seed
from tinytorch.core.transformer import GPT


@pytest.fixture
def tiny_gpt64():
    "A 2-layer GPT in float64 at the sizes the gradient checks use: vocabulary 7, width 8, 2 heads, context 5."
    manual_seed(0)
    return GPT(vocab_size=7, embed_dim=8, num_layers=2, num_heads=2, max_seq_len=5, seed=1).to(np.float64)


@pytest.fixture
def perturbed():
    "Give every LayerNorm and bias non-trivial values, so a gradient check cannot pass by symmetry."
    def perturb(model, seed=0):
        rng = np.random.default_rng(seed)
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln" in name or name.startswith("ln"):
                p.data[...] += rng.normal(0, 0.3, size=p.shape)
        return model
    return perturb
