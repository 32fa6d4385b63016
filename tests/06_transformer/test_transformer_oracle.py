"""The GPT against a minimal GPT written in PyTorch, weights copied in: logits, loss and every gradient, in float64.

Layouts: our Linear.weight is (in, out), torch's is (out, in), so weights are transposed on the way over.
"""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (.venv/bin/pip install -e '.[course]')")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tinytorch.core.layers import manual_seed  # noqa: E402
from tinytorch.core.losses import cross_entropy  # noqa: E402
from tinytorch.core.transformer import GPT  # noqa: E402


pytestmark = [pytest.mark.oracle, pytest.mark.exercise("gpt")]


class TorchBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        B, T, d = x.shape
        hd = d // self.heads
        a = self.ln1(x)
        q, k, v = (f(a).view(B, T, self.heads, hd).transpose(1, 2) for f in (self.q, self.k, self.v))
        scores = q @ k.transpose(-2, -1) / math.sqrt(hd)
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
        att = scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v
        x = x + self.o(att.transpose(1, 2).reshape(B, T, d))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class TorchGPT(nn.Module):
    def __init__(self, vocab, d, layers, heads, max_len, tied=False):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(TorchBlock(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = None if tied else nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.tok.weight.T if self.head is None else self.head(x)


def pairs(ours, theirs):
    "(our parameter, torch parameter, transpose?) for every parameter."
    out = [(ours.token_embedding.weight, theirs.tok.weight, False),
           (ours.position_embedding.weight, theirs.pos.weight, False),
           (ours.ln_f.weight, theirs.ln_f.weight, False), (ours.ln_f.bias, theirs.ln_f.bias, False)]
    if ours.lm_head is not None:
        out.append((ours.lm_head.weight, theirs.head.weight, True))
    for b, t in zip(ours.blocks, theirs.blocks):
        for our_ln, their_ln in ((b.ln1, t.ln1), (b.ln2, t.ln2)):
            out += [(our_ln.weight, their_ln.weight, False), (our_ln.bias, their_ln.bias, False)]
        for our_lin, their_lin in ((b.attn.q_proj, t.q), (b.attn.k_proj, t.k), (b.attn.v_proj, t.v),
                                   (b.attn.out_proj, t.o), (b.mlp.fc, t.fc), (b.mlp.proj, t.proj)):
            out += [(our_lin.weight, their_lin.weight, True), (our_lin.bias, their_lin.bias, False)]
    return out


def build_pair(tied=False, seed=0):
    manual_seed(seed)
    ours = GPT(vocab_size=11, embed_dim=16, num_layers=2, num_heads=4, max_seq_len=9, tie_weights=tied,
               seed=seed).to(np.float64)
    rng = np.random.default_rng(seed)
    for name, p in ours.named_parameters():  # non-trivial LayerNorms and biases
        if "ln" in name or name.endswith("bias"):
            p.data[...] += rng.normal(0, 0.2, size=p.shape)
    theirs = TorchGPT(11, 16, 2, 4, 9, tied=tied).double()
    matched = pairs(ours, theirs)
    assert len(matched) == len(ours.parameters()) == len(list(theirs.parameters()))
    with torch.no_grad():
        for p, q, transpose in matched:
            q.copy_(torch.from_numpy(p.data.T.copy() if transpose else p.data))
    return ours, theirs, matched


@pytest.mark.parametrize("tied", [False, True])
def test_logits_loss_and_gradients_match_pytorch(tied, rng):
    ours, theirs, matched = build_pair(tied)
    idx, targets = rng.integers(0, 11, size=(3, 9)), rng.integers(0, 11, size=(3, 9))

    logits = ours(idx)
    loss = cross_entropy(logits, targets)
    loss.backward()
    t_logits = theirs(torch.from_numpy(idx))
    t_loss = F.cross_entropy(t_logits.reshape(-1, 11), torch.from_numpy(targets).reshape(-1))
    t_loss.backward()

    np.testing.assert_allclose(logits.data, t_logits.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert loss.item() == pytest.approx(t_loss.item(), rel=1e-12)
    for p, q, transpose in matched:
        expected = q.grad.numpy().T if transpose else q.grad.numpy()
        np.testing.assert_allclose(p.grad.data, expected, rtol=1e-8, atol=1e-12)


def test_shorter_sequences_use_the_first_positions(rng):
    ours, theirs, _ = build_pair(seed=3)
    idx = rng.integers(0, 11, size=(2, 4))
    np.testing.assert_allclose(ours(idx).data, theirs(torch.from_numpy(idx)).detach().numpy(), rtol=1e-10, atol=1e-12)
