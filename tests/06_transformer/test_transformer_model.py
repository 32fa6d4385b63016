"""The GPT's shape contract, parameter count, initialisation, causality, dtypes, dropout and errors; the tokenizer,
batches and text loading it is trained with."""
import math

import numpy as np
import pytest

from tinytorch.core.attention import create_causal_mask
from tinytorch.core.layers import manual_seed
from tinytorch.core.tensor import Tensor
from tinytorch.core.transformer import (GPT, MLP, CharTokenizer, TransformerBlock, estimate_loss, get_batch,
                                        load_text, stdlib_text)


def make(seed=0, **kwargs):
    "A small GPT whose weights (and dropout) are drawn from `seed`."
    manual_seed(seed)
    config = dict(vocab_size=11, embed_dim=16, num_layers=3, num_heads=4, max_seq_len=8, seed=seed) | kwargs
    return GPT(**config)


@pytest.mark.exercise("gpt")
def test_logits_shape_and_dtype_follow_the_parameters(seed):
    model = make(seed)
    ids = np.random.default_rng(seed).integers(0, 11, size=(2, 8))
    assert model(ids).shape == (2, 8, 11) and model(ids).dtype == np.float32
    assert model(Tensor(ids)).shape == (2, 8, 11)
    model.to(np.float64)
    assert model(ids).dtype == np.float64 and model(ids[:, :3]).shape == (2, 3, 11)


@pytest.mark.exercise("gpt")
def test_parameter_count_matches_the_formula():
    d, L, V, T = 16, 3, 11, 8
    assert make().num_parameters() == L * (12 * d * d + 13 * d) + 2 * V * d + T * d + 2 * d
    assert make(tie_weights=True).num_parameters() == L * (12 * d * d + 13 * d) + V * d + T * d + 2 * d


@pytest.mark.exercise("gpt")
def test_flops_per_token():
    d, L, V, T = 16, 3, 11, 8
    assert make().flops_per_token() == 2 * (L * 12 * d * d + d * V) + 4 * L * T * d
    assert make().flops_per_token(seq_len=4) == 2 * (L * 12 * d * d + d * V) + 4 * L * 4 * d


@pytest.mark.exercise("gpt")
def test_gpt2_initialisation(seed):
    model = make(seed, embed_dim=64, num_layers=8, vocab_size=300, max_seq_len=64)
    std = lambda p: float(np.std(p.data))
    assert std(model.token_embedding.weight) == pytest.approx(0.02, rel=0.05)
    assert std(model.position_embedding.weight) == pytest.approx(0.02, rel=0.05)
    assert std(model.lm_head.weight) == pytest.approx(0.02, rel=0.05)
    for block in model.blocks:
        assert std(block.attn.q_proj.weight) == pytest.approx(0.02, rel=0.1)
        assert std(block.mlp.fc.weight) == pytest.approx(0.02, rel=0.1)
        for residual in (block.attn.out_proj.weight, block.mlp.proj.weight):
            assert std(residual) == pytest.approx(0.02 / math.sqrt(16), rel=0.1)
        assert np.all(block.attn.k_proj.bias.data == 0) and np.all(block.mlp.fc.bias.data == 0)
        assert np.all(block.ln1.weight.data == 1) and np.all(block.ln2.bias.data == 0)
    weights = lambda: make(seed).state_dict()["lm_head.weight"]
    assert np.array_equal(weights(), weights()), "seeded"


@pytest.mark.exercise("gpt")
def test_initial_loss_is_close_to_uniform(seed):
    "GPT-2's small initialisation starts every prediction close to uniform: loss ≈ ln V."
    from tinytorch.core.losses import cross_entropy
    model = make(seed, vocab_size=50)
    ids = np.random.default_rng(seed).integers(0, 50, size=(4, 9))
    assert cross_entropy(model(ids[:, :-1]), ids[:, 1:]).item() == pytest.approx(math.log(50), abs=0.05)


@pytest.mark.exercise("gpt")
def test_causal_no_position_sees_the_future(seed):
    model = make(seed).to(np.float64)
    ids = np.random.default_rng(seed).integers(0, 11, size=(1, 8))
    base = model(ids).data
    for t in range(8):
        changed = ids.copy()
        changed[0, t] = (changed[0, t] + 1) % 11
        out = model(changed).data
        np.testing.assert_allclose(out[:, :t], base[:, :t], rtol=1e-12, atol=1e-12)
        assert not np.allclose(out[:, t], base[:, t])


@pytest.mark.exercise("gpt")
def test_tied_weights_share_one_matrix(seed):
    model = make(seed, tie_weights=True).to(np.float64)  # float64: a change is far above rounding, whatever the seed
    assert model.lm_head is None
    ids = np.array([[1, 2, 3]])
    before = model(ids).data.copy()
    bump = np.random.default_rng(seed).standard_normal(model.token_embedding.weight.shape[1])
    model.token_embedding.weight.data[5] += bump  # token 5 is not in the input: only the head reads this row
    after = model(ids).data
    np.testing.assert_allclose(np.delete(after, 5, axis=-1), np.delete(before, 5, axis=-1), rtol=1e-12,
                               err_msg="only the logit of token 5 may change")
    change = np.abs(after[..., 5] - before[..., 5]).max()
    assert change > 1e-6, f"the head must read the embedding matrix: the logit of token 5 moved by {change:g}"


@pytest.mark.exercise("gpt")
def test_dropout_acts_only_in_training_mode():
    model = make(dropout=0.5)
    ids = np.array([[1, 2, 3, 4]])
    assert not np.allclose(model(ids).data, model(ids).data)
    model.eval()
    np.testing.assert_array_equal(model(ids).data, model(ids).data)


@pytest.mark.exercise("gpt")
def test_clear_errors():
    model = make()
    with pytest.raises(ValueError, match=r"sequence length 9 exceeds max_seq_len=8"):
        model(np.zeros((1, 9), dtype=np.int64))
    with pytest.raises(ValueError, match=r"shape \(5,\)"):
        model(np.arange(5))
    with pytest.raises(ValueError, match="float"):
        model(np.zeros((1, 3)))
    with pytest.raises(IndexError, match="11"):
        model(np.array([[0, 11]]))
    with pytest.raises(ValueError, match="divisible"):
        make(embed_dim=10, num_heads=4)


@pytest.mark.exercise("transformer-block")
def test_block_and_mlp_shapes(seed):
    manual_seed(seed)
    block = TransformerBlock(12, 3, mlp_ratio=2)
    assert block.mlp.fc.weight.shape == (12, 24) and block.mlp.proj.weight.shape == (24, 12)
    x = Tensor(np.random.default_rng(seed).normal(size=(2, 5, 12)).astype(np.float32))
    assert block(x, mask=create_causal_mask(5)).shape == (2, 5, 12)
    assert MLP(12)(x).shape == (2, 5, 12) and MLP(12).fc.weight.shape == (12, 48)


# --- tokenizer, batches, text ------------------------------------------------------------------------------------
@pytest.mark.exercise("char-tokenizer")
def test_tokenizer_round_trip_and_errors():
    text = "Zürich, 42 €!\nnew line\ttab"
    tok = CharTokenizer(text)
    assert tok.vocab_size == len(set(text)) and tok.chars == sorted(set(text))
    assert tok.decode(tok.encode(text)) == text
    assert tok.decode(np.array(tok.encode("42"))) == "42"
    with pytest.raises(ValueError, match="'x'"):
        tok.encode("xyz")
    with pytest.raises(ValueError, match="outside the vocabulary"):
        tok.decode([tok.vocab_size])
    with pytest.raises(ValueError, match="1-D"):
        tok.decode(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError):
        CharTokenizer("")


@pytest.mark.exercise("get-batch")
def test_get_batch_windows_and_targets():
    data = np.arange(1000)
    x, y = get_batch(data, 8, 16, np.random.default_rng(0))
    assert x.shape == y.shape == (8, 16)
    np.testing.assert_array_equal(y, x + 1)
    starts = np.concatenate([get_batch(data[:20], 64, 18, s)[0][:, 0] for s in range(5)])
    assert set(starts) == {0, 1}, "every start position whose window fits, and no other"
    with pytest.raises(ValueError):
        get_batch(np.arange(10), 2, 10, 0)


@pytest.mark.exercise("gpt")
def test_estimate_loss_is_deterministic_and_restores_mode(seed):
    model = make(seed, dropout=0.3)
    data = np.random.default_rng(seed).integers(0, 11, size=500)
    a = estimate_loss(model, {"val": data}, 4, 8, iters=3)
    assert a == estimate_loss(model, {"val": data}, 4, 8, iters=3) and model.training
    assert a["val"] == pytest.approx(math.log(11), abs=0.1)


@pytest.mark.exercise("gpt")
def test_default_text_is_deterministic_python_source(tmp_path):
    text = stdlib_text(50_000)
    assert len(text) == 50_000 and text == load_text(None, 50_000) and text.isascii()
    assert "def " in text and "import " in text
    path = tmp_path / "t.txt"
    path.write_text("héllo wörld", encoding="utf-8")
    assert load_text(path) == "héllo wörld" and load_text(str(path), max_chars=3) == "hél"


@pytest.mark.exercise("gpt")
def test_a_training_step_is_float32_everywhere(monkeypatch, seed):
    "Every tensor in the graph, every gradient an op hands back, every .grad and Adam buffer: float32, no upcasts."
    from tinytorch.core.autograd import GRADIENTS, topological_order
    from tinytorch.core.losses import cross_entropy
    from tinytorch.core.optim import AdamW
    model = make(seed, dropout=0.1)
    ids = np.random.default_rng(seed).integers(0, 11, size=(3, 9))
    handed_back = []

    def recording(op, rule):
        def wrapped(*args, **kwargs):
            grads = rule(*args, **kwargs)
            handed_back.extend((op, np.asarray(g).dtype) for g in grads if g is not None)
            return grads
        return wrapped

    for op, rule in list(GRADIENTS.items()):
        monkeypatch.setitem(GRADIENTS, op, recording(op, rule))
    loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
    floats = [t for t in topological_order(loss) if t.dtype.kind == "f"]
    assert len(floats) > 50 and {t.dtype for t in floats} == {np.dtype(np.float32)}
    loss.backward()
    assert len(handed_back) > 50 and {dtype for _, dtype in handed_back} == {np.dtype(np.float32)}, \
        sorted({(op, str(dtype)) for op, dtype in handed_back if dtype != np.float32})
    optimizer = AdamW(model.parameters(), lr=1e-3)
    optimizer.step()
    assert all(p.grad.dtype == np.float32 and p.dtype == np.float32 for p in model.parameters())
    assert {buf.dtype for state in optimizer.state for buf in state.values() if isinstance(buf, np.ndarray)} \
        == {np.dtype(np.float32)}
