"""Generation: the KV-cache path equals the uncached path token for token; greedy decoding; prompts longer than
the context; sampling with temperature and top-k; bad arguments."""
import numpy as np
import pytest

from tinytorch.core.layers import manual_seed
from tinytorch.core.transformer import GPT, sample_next


@pytest.fixture
def gpt():
    manual_seed(0)
    return GPT(vocab_size=13, embed_dim=16, num_layers=2, num_heads=4, max_seq_len=8, seed=4).to(np.float64)


def greedy_by_hand(model, prompt, steps):
    "Greedy decoding the slow, obvious way: the whole (cropped) sequence through forward() every step."
    seq = prompt
    for _ in range(steps):
        logits = model(seq[:, -model.max_seq_len:]).data[:, -1]
        seq = np.concatenate([seq, logits.argmax(-1)[:, None]], axis=1)
    return seq


@pytest.mark.exercise("generate")
@pytest.mark.parametrize("new_tokens", [1, 5, 20])   # 20 runs well past max_seq_len = 8
@pytest.mark.parametrize("temperature, top_k", [(1.0, None), (0.7, 3), (2.0, None)])
def test_cached_generation_equals_uncached(gpt, new_tokens, temperature, top_k):
    prompt = np.array([[1, 2, 3], [7, 7, 0]])
    fast = gpt.generate(prompt, new_tokens, temperature=temperature, top_k=top_k, seed=11)
    slow = gpt.generate(prompt, new_tokens, temperature=temperature, top_k=top_k, seed=11, use_cache=False)
    assert fast.shape == (2, 3 + new_tokens)
    np.testing.assert_array_equal(fast[:, :3], prompt)
    np.testing.assert_array_equal(fast, slow)


@pytest.mark.exercise("gpt")
def test_cached_logits_equal_full_forward(gpt, rng):
    "Feeding tokens one at a time through the caches gives the logits of one full forward pass."
    from tinytorch.core.attention import KVCache
    ids = rng.integers(0, 13, size=(2, 8))
    full = gpt(ids).data
    caches = [KVCache() for _ in gpt.blocks]
    first = gpt(ids[:, :3], caches=caches).data
    steps = [gpt(ids[:, t:t + 1], caches=caches).data for t in range(3, 8)]
    np.testing.assert_allclose(np.concatenate([first, *steps], axis=1), full, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="max_seq_len"):
        gpt(ids[:, :1], caches=caches)   # a 9th position does not exist


@pytest.mark.exercise("generate")
def test_greedy_decoding_is_top_k_1(gpt):
    prompt = np.array([[4, 2]])
    np.testing.assert_array_equal(gpt.generate(prompt, 12, top_k=1), greedy_by_hand(gpt, prompt, 12))
    np.testing.assert_array_equal(gpt.generate(prompt, 12, temperature=0.0), greedy_by_hand(gpt, prompt, 12))


@pytest.mark.exercise("generate")
def test_prompt_longer_than_context_is_cropped_not_refused(gpt, rng):
    "The prediction sees the last max_seq_len tokens; the result keeps the whole prompt in front."
    prompt = rng.integers(0, 13, size=(1, 11))
    out = gpt.generate(prompt, 4, top_k=1)
    assert out.shape == (1, 15)
    np.testing.assert_array_equal(out[:, :11], prompt)
    np.testing.assert_array_equal(out[:, 11:], greedy_by_hand(gpt, prompt[:, -8:], 4)[:, 8:])
    with pytest.raises(ValueError, match="max_seq_len"):
        gpt(prompt)                      # forward itself refuses: there is no position embedding for it


@pytest.mark.exercise("generate")
def test_same_seed_same_sample_different_seed_different_sample(gpt):
    prompt = np.array([[0]])
    a = gpt.generate(prompt, 30, seed=5)
    assert np.array_equal(a, gpt.generate(prompt, 30, seed=5))
    assert not np.array_equal(a, gpt.generate(prompt, 30, seed=6))
    assert np.array_equal(a, gpt.generate(prompt, 30, rng=np.random.default_rng(5)))


@pytest.mark.exercise("generate")
def test_generate_restores_mode_and_builds_no_graph(gpt):
    gpt.train()
    out = gpt.generate(np.array([[1]]), 3)
    assert gpt.training and out.dtype.kind == "i"
    gpt.eval()
    gpt.generate(np.array([[1]]), 3)
    assert not gpt.training
    assert all(p.grad is None for p in gpt.parameters())


@pytest.mark.exercise("generate")
def test_sample_next_distribution_temperature_and_top_k(rng):
    probs = np.array([0.1, 0.6, 0.3])
    logits = np.log(np.tile(probs, (20_000, 1)))
    freq = np.bincount(sample_next(logits, rng=rng), minlength=3) / 20_000
    np.testing.assert_allclose(freq, probs, atol=0.015)
    sharp = np.bincount(sample_next(logits, temperature=0.5, rng=rng), minlength=3) / 20_000
    np.testing.assert_allclose(sharp, probs ** 2 / (probs ** 2).sum(), atol=0.015)
    top2 = np.bincount(sample_next(logits, top_k=2, rng=rng), minlength=3) / 20_000
    np.testing.assert_allclose(top2, [0, 2 / 3, 1 / 3], atol=0.015)
    assert sample_next(logits[:2], top_k=100, rng=rng).shape == (2,)   # k larger than the vocabulary keeps all


@pytest.mark.exercise("generate")
@pytest.mark.parametrize("kwargs", [dict(temperature=-1.0), dict(top_k=0)])
def test_bad_sampling_arguments_are_clear_errors(gpt, kwargs):
    with pytest.raises(ValueError):
        gpt.generate(np.array([[1]]), 2, **kwargs)


@pytest.mark.exercise("generate")
@pytest.mark.parametrize("bad", [np.array([1, 2]), np.array([[1.0, 2.0]]), np.zeros((1, 0), dtype=np.int64)])
def test_bad_prompts_are_clear_errors(gpt, bad):
    with pytest.raises(ValueError):
        gpt.generate(bad, 2)
