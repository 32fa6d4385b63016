"""Checkpoints: an exact round trip of the model, the optimizer state and the metadata; clear errors for a model
of another shape; atomic writes."""
import os

import numpy as np
import pytest

from tinytorch.core.layers import manual_seed
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import AdamW
from tinytorch.core.transformer import GPT, load_checkpoint, save_checkpoint

pytestmark = pytest.mark.exercise("gpt")


def trained(seed=0, steps=3):
    manual_seed(seed)
    model = GPT(vocab_size=9, embed_dim=8, num_layers=2, num_heads=2, max_seq_len=6, seed=seed)
    optimizer = AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        ids = rng.integers(0, 9, size=(2, 7))
        loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model, optimizer


def step_once(model, optimizer, seed=99):
    ids = np.random.default_rng(seed).integers(0, 9, size=(2, 7))
    loss = cross_entropy(model(ids[:, :-1]), ids[:, 1:])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return model.state_dict()


def test_round_trip_is_exact_for_model_optimizer_and_metadata(tmp_path):
    model, optimizer = trained()
    path = tmp_path / "ckpt.npz"
    save_checkpoint(path, model, optimizer, step=3, note="hello", history={"loss": [1.5, 1.25]})
    fresh, fresh_opt = trained(seed=1, steps=1)
    meta = load_checkpoint(path, fresh, fresh_opt)
    assert meta["step"] == 3 and meta["note"] == "hello" and meta["history"] == {"loss": [1.5, 1.25]}
    for (name, a), (_, b) in zip(model.named_parameters(), fresh.named_parameters()):
        assert a.dtype == b.dtype and np.array_equal(a.data, b.data), name
    # the optimizer state came along: one more identical step gives identical weights
    after_original, after_loaded = step_once(model, optimizer), step_once(fresh, fresh_opt)
    for name in after_original:
        assert np.array_equal(after_original[name], after_loaded[name]), name


def test_load_without_a_model_reads_only_the_metadata(tmp_path):
    model, _ = trained()
    save_checkpoint(tmp_path / "c.npz", model, step=7)
    assert load_checkpoint(tmp_path / "c.npz")["step"] == 7


def test_loading_into_a_model_of_another_shape_names_the_tensor_and_both_shapes(tmp_path):
    model, _ = trained()
    save_checkpoint(tmp_path / "c.npz", model, step=0)
    manual_seed(0)
    wider = GPT(vocab_size=9, embed_dim=12, num_layers=2, num_heads=2, max_seq_len=6)
    before = wider.state_dict()
    with pytest.raises(ValueError) as err:
        load_checkpoint(tmp_path / "c.npz", wider)
    message = str(err.value)
    assert "token_embedding.weight" in message and "(9, 8)" in message and "(9, 12)" in message
    assert all(np.array_equal(before[k], v) for k, v in wider.state_dict().items()), "nothing half-loaded"
    deeper = GPT(vocab_size=9, embed_dim=8, num_layers=3, num_heads=2, max_seq_len=6)
    with pytest.raises(KeyError, match="blocks.2"):
        load_checkpoint(tmp_path / "c.npz", deeper)


def test_float64_model_round_trips_in_float64(tmp_path):
    model, _ = trained()
    model.to(np.float64)
    save_checkpoint(tmp_path / "c.npz", model)
    manual_seed(3)
    other = GPT(vocab_size=9, embed_dim=8, num_layers=2, num_heads=2, max_seq_len=6).to(np.float64)
    load_checkpoint(tmp_path / "c.npz", other)
    assert all(p.dtype == np.float64 for p in other.parameters())
    assert all(np.array_equal(a, b) for a, b in zip(model.state_dict().values(), other.state_dict().values()))


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    model, _ = trained()
    path = tmp_path / "ckpt.npz"
    save_checkpoint(path, model, step=1)
    good = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(OSError):
        save_checkpoint(path, model, step=2)
    assert path.read_bytes() == good, "a failed write must not damage the previous checkpoint"
    assert os.listdir(tmp_path) == ["ckpt.npz"]


def test_missing_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.npz"):
        load_checkpoint(tmp_path / "nothing.npz")
