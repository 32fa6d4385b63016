"""Module 04 end to end: the library trains real models. Two interleaved spirals to >= 95% held-out accuracy with a fixed
seed (as in the notebook), and a tiny sequence model trained on (B, T, C) logits."""
import numpy as np
import pytest

from tinytorch.core.autograd import no_grad
from tinytorch.core.layers import Embedding, Linear, ReLU, Sequential, manual_seed
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import AdamW, CosineWarmup, clip_grad_norm_
from tinytorch.core.tensor import Tensor

pytestmark = pytest.mark.exercise("adamw")


def make_spirals(n_per_class, noise=0.3, turns=2.0, seed=0):
    "Points (2·n, 2) on two interleaved spiral arms, and their labels 0/1 (the notebook's data)."
    rng = np.random.default_rng(seed)
    t = np.sqrt(rng.uniform(0.02, 1.0, size=2 * n_per_class)) * turns * 2 * np.pi
    labels = np.repeat([0, 1], n_per_class)
    angle = t + np.pi * labels
    points = np.stack([t * np.cos(angle), t * np.sin(angle)], axis=1) / (turns * 2 * np.pi)
    points += rng.normal(scale=noise / (turns * 2 * np.pi) * 2, size=points.shape)
    return points.astype(np.float32), labels


def accuracy(model, x, y):
    with no_grad():
        return float((model(Tensor(x)).data.argmax(axis=-1) == y).mean())


@pytest.mark.exercise("lr-schedule")
def test_spirals_reach_95_percent():
    x, y = make_spirals(300, seed=0)
    x_test, y_test = make_spirals(300, seed=1)
    manual_seed(0)
    model = Sequential(Linear(2, 64), ReLU(), Linear(64, 64), ReLU(), Linear(64, 2))
    optimizer = AdamW(model.parameters(), lr=0.02, weight_decay=1e-4)
    scheduler = CosineWarmup(optimizer, warmup_steps=20, total_steps=400, min_lr=1e-3)
    assert accuracy(model, x_test, y_test) < 0.75          # the task is not solved before training
    first = None
    for _ in range(400):
        loss = cross_entropy(model(Tensor(x)), y)
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    assert loss.item() < 0.1 * first
    assert accuracy(model, x, y) >= 0.95
    assert accuracy(model, x_test, y_test) >= 0.95
    assert all(p.dtype == np.float32 for p in model.parameters())


@pytest.mark.exercise("clip-grad-norm")
def test_a_sequence_model_learns_a_deterministic_next_token_rule():
    "Tokens follow t -> (3t + 1) mod 7: a per-position model trained on (B, T, C) logits must learn it exactly."
    rng = np.random.default_rng(0)
    starts = rng.integers(0, 7, size=16)
    seqs = np.empty((16, 9), dtype=np.int64)
    seqs[:, 0] = starts
    for t in range(1, 9):
        seqs[:, t] = (3 * seqs[:, t - 1] + 1) % 7
    inputs, targets = seqs[:, :-1], seqs[:, 1:]
    manual_seed(1)
    embed, head = Embedding(7, 8), Linear(8, 7)
    params = embed.parameters() + head.parameters()
    optimizer = AdamW(params, lr=0.05)
    for _ in range(150):
        logits = head(embed(inputs))                       # (B, T, C)
        loss = cross_entropy(logits, targets)
        optimizer.zero_grad()
        loss.backward()
        clip_grad_norm_(params, 5.0)
        optimizer.step()
    assert logits.shape == (16, 8, 7) and loss.item() < 0.05
    with no_grad():
        assert (head(embed(inputs)).data.argmax(axis=-1) == targets).all()
