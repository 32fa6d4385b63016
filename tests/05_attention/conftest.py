"""Shared helpers for the module 05 (`tinytorch.core.attention`) suite.

Test files here have unique basenames (`test_attention_*.py`): module folders start with digits and have no
`__init__.py`, so pytest imports each test file by its basename.
"""
import numpy as np
import pytest


@pytest.fixture
def reference():
    "softmax(Q Kᵀ/√d) V in plain float64 numpy, written independently of the library; blocked rows give zeros."
    def attention(Q, K, V, mask=None):
        Q, K, V = (np.asarray(getattr(a, "data", a), dtype=np.float64) for a in (Q, K, V))
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        allowed = np.broadcast_to(True if mask is None else np.asarray(mask, bool), scores.shape)
        row_max = np.where(allowed, scores, -np.inf).max(axis=-1, keepdims=True)
        exps = np.where(allowed, np.exp(scores - np.where(np.isfinite(row_max), row_max, 0)), 0)
        sums = exps.sum(axis=-1, keepdims=True)
        weights = np.divide(exps, sums, out=np.zeros_like(exps), where=sums > 0)
        return weights @ V, weights
    return attention
