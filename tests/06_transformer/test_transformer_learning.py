"""A small GPT trained with the library's own optimizer learns to reverse sequences, to 100% exact-match accuracy."""
import numpy as np
import pytest

from tinytorch.core.layers import manual_seed
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import AdamW
from tinytorch.core.transformer import GPT

pytestmark = pytest.mark.exercise("gpt")

DIGITS, N = 5, 5          # sequences of 5 digits from 0..4
SEP = DIGITS              # id 5 separates the input from its reverse


def reversal_batch(rng, batch):
    "Rows `a1 .. an SEP an .. a1` (length 2n + 1)."
    digits = rng.integers(0, DIGITS, size=(batch, N))
    return np.concatenate([digits, np.full((batch, 1), SEP), digits[:, ::-1]], axis=1)


@pytest.mark.exercise("generate")
def test_gpt_learns_to_reverse_sequences():
    manual_seed(0)
    model = GPT(vocab_size=DIGITS + 1, embed_dim=32, num_layers=2, num_heads=4, max_seq_len=2 * N, seed=0)
    optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=0.0)
    rng = np.random.default_rng(0)
    for step in range(200):
        seq = reversal_batch(rng, 32)
        logits = model(seq[:, :-1])
        loss = cross_entropy(logits[:, N:], seq[:, N + 1:])   # only the reversed half is predictable
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.05, f"training did not converge: loss {loss.item():.3f}"

    test = reversal_batch(np.random.default_rng(123), 500)
    out = model.generate(test[:, :N + 1], N, top_k=1)
    accuracy = np.mean(np.all(out[:, N + 1:] == test[:, N + 1:], axis=1))
    assert accuracy == 1.0, f"exact-match accuracy {accuracy:.3f} on held-out sequences"
