"""The textbook path (modules 01-06) needs numpy alone and leaves the process environment as it found it."""
import subprocess
import sys


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
