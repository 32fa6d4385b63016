"""GPT's positions (learned or sinusoidal), batches of different lengths, and one clear line for bad input."""
import numpy as np
import pytest

from tinytorch.core.autograd import gradcheck
from tinytorch.core.losses import cross_entropy
from tinytorch.core.tensor import Tensor
from tinytorch.core.transformer import GPT, CharTokenizer, generate, sample_next, sinusoidal_positions


def small(**kwargs):
    settings = dict(vocab_size=11, embed_dim=8, num_layers=2, num_heads=2, max_seq_len=8, seed=0)
    return GPT(**{**settings, **kwargs})


@pytest.mark.exercise("gpt")
def test_sinusoidal_table_is_the_papers_formula():
    table = sinusoidal_positions(50, 6)
    pos, i = np.arange(50)[:, None], np.arange(3)[None, :]
    np.testing.assert_allclose(table[:, 0::2], np.sin(pos / 10000 ** (2 * i / 6)), atol=1e-12)
    np.testing.assert_allclose(table[:, 1::2], np.cos(pos / 10000 ** (2 * i / 6)), atol=1e-12)
    assert sinusoidal_positions(4, 5).shape == (4, 5)                    # odd widths end with a sine column


@pytest.mark.exercise("gpt")
def test_sinusoidal_positions_have_no_parameters_and_train(rng):
    learned, fixed = small(), small(positions="sinusoidal")
    assert learned.num_parameters() - fixed.num_parameters() == 8 * 8
    assert not any("position" in name for name, _ in fixed.named_parameters())
    ids = rng.integers(0, 11, size=(2, 6))
    out = fixed(ids)
    assert out.shape == (2, 6, 11) and out.dtype == np.float32
    # the positions matter: the same tokens in another order give other logits at the last position
    assert not np.allclose(fixed(ids[:, ::-1]).data[:, -1], out.data[:, -1])
    model64 = small(positions="sinusoidal").to(np.float64)
    assert model64(ids).dtype == np.float64
    assert gradcheck(lambda *p: model64(ids), model64.parameters(), max_coords=10)


@pytest.mark.exercise("gpt")
@pytest.mark.parametrize("side", ["right", "left"])
def test_a_padded_batch_gives_each_sequence_its_own_logits_and_loss(rng, side):
    model = small().to(np.float64)
    sequences = [rng.integers(1, 11, size=n) for n in (7, 3, 5)]
    T, PAD = 7, 0
    ids = np.full((3, T), PAD)
    real = np.zeros((3, T), dtype=bool)
    for b, seq in enumerate(sequences):
        where = slice(0, len(seq)) if side == "right" else slice(T - len(seq), T)
        ids[b, where], real[b, where] = seq, True
    logits = model(ids, mask=real).data
    for b, seq in enumerate(sequences):
        alone = model(seq[None]).data[0]
        np.testing.assert_allclose(logits[b][real[b]], alone, atol=1e-12)
    # next-token loss over real targets only: the padded batch's equals the loss of all sequences alone, joined
    inputs, targets = ids[:, :-1], np.where(real[:, 1:] & real[:, :-1], ids[:, 1:], -100)
    batch_loss = cross_entropy(model(inputs, mask=real[:, :-1]), targets, ignore_index=-100).item()
    alone_logits = np.concatenate([model(seq[None, :-1]).data[0] for seq in sequences])
    alone_targets = np.concatenate([seq[1:] for seq in sequences])
    np.testing.assert_allclose(batch_loss, cross_entropy(Tensor(alone_logits), alone_targets).item(), rtol=1e-10)


@pytest.mark.exercise("gpt")
def test_left_padding_without_the_mask_gives_other_logits(rng):
    model = small().to(np.float64)
    ids = np.array([[0, 0, 4, 5, 6]])
    alone = model(np.array([[4, 5, 6]])).data[0]
    assert not np.allclose(model(ids).data[0, 2:], alone, atol=1e-6)            # the mask is what makes it right
    np.testing.assert_allclose(model(ids, mask=ids != 0).data[0, 2:], alone, atol=1e-12)


@pytest.mark.exercise("gpt")
@pytest.mark.parametrize("mask", [np.ones((2, 4)), np.ones((3, 5)), np.full((3, 4), 0.5)])
def test_a_padding_mask_that_does_not_fit_is_a_clear_error(rng, mask):
    with pytest.raises(ValueError, match="padding mask"):
        small()(rng.integers(0, 11, size=(3, 4)), mask=mask)


@pytest.mark.exercise("gpt")
@pytest.mark.parametrize("kwargs, word", [(dict(vocab_size=0), "vocab_size"), (dict(embed_dim=0), "embed_dim"),
                                          (dict(num_layers=0), "num_layers"), (dict(num_heads=-2), "num_heads"),
                                          (dict(max_seq_len=0), "max_seq_len"), (dict(positions="rotary"), "positions")])
def test_a_gpt_that_cannot_exist_is_a_clear_error(kwargs, word):
    with pytest.raises(ValueError, match=word):
        small(**kwargs)


@pytest.mark.exercise("generate")
@pytest.mark.parametrize("kwargs, word", [(dict(temperature=float("nan")), "temperature"),
                                          (dict(temperature=-1.0), "temperature"), (dict(top_k=2.5), "top_k"),
                                          (dict(top_k=0), "top_k"), (dict(max_new_tokens=-3), "max_new_tokens"),
                                          (dict(max_new_tokens=2.0), "max_new_tokens")])
def test_generate_refuses_settings_that_would_silently_misbehave(kwargs, word):
    settings = dict(max_new_tokens=3, **kwargs) if "max_new_tokens" not in kwargs else kwargs
    with pytest.raises(ValueError, match=word):
        generate(small(), np.array([[1, 2]]), **settings)


@pytest.mark.exercise("generate")
def test_sample_next_refuses_nan_temperature_and_fractional_top_k():
    logits = np.zeros((1, 5))
    for kwargs in (dict(temperature=float("nan")), dict(top_k=2.5)):
        with pytest.raises(ValueError):
            sample_next(logits, **kwargs)


@pytest.mark.exercise("char-tokenizer")
def test_char_tokenizer_wants_text_not_bytes():
    with pytest.raises(TypeError, match="decode"):
        CharTokenizer(b"bytes")
