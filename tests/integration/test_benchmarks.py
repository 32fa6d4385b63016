"""The benchmark scripts still run, on tiny sizes, and report what they say they report (never timings as pass/fail)."""
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import ab  # noqa: E402
import bench_attention  # noqa: E402
import bench_gpt  # noqa: E402
from threads import torch_like_numpy  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None
TINY = dict(vocab_size=11, embed_dim=16, num_layers=1, num_heads=2, block_size=8, batch_size=2)


def test_gpt_step_benchmark_reports_both_libraries_and_their_ratio():
    r = bench_gpt.bench_step(steps=3, warmup=1, cfg=TINY, block=2)
    assert r["benchmark"] == "gpt_train_step" and r["steps"] == 3
    libraries = ("tinytorch", "torch") if HAS_TORCH else ("tinytorch",)
    for name in libraries:   # the step and its two phases, forward and backward + AdamW
        assert min(r[f"{name}_ms"], r[f"{name}_forward_ms"], r[f"{name}_backward_ms"]) > 0
    if HAS_TORCH:
        assert r["ratio"] == pytest.approx(r["tinytorch_ms"] / r["torch_ms"])
    else:
        assert "ratio" not in r and "torch_forward_ms" not in r
    report = bench_gpt.report([r])
    assert "GPT training step" in report and "forward" in report and ("not installed" in report) != HAS_TORCH


def test_a_step_split_into_phases_is_the_same_step():
    # forward, then backward + AdamW, as _time_step runs them, leaves the same weights as one tinytorch_step
    rng = np.random.default_rng(0)
    x, y = bench_gpt.get_batch(rng.integers(0, TINY["vocab_size"], size=500), 2, 8, rng)
    (one, opt_one), (two, opt_two) = bench_gpt.tinytorch_model(TINY, lr=1e-2), bench_gpt.tinytorch_model(TINY, lr=1e-2)
    loss = bench_gpt.tinytorch_step(one, opt_one, x, y)
    forward_s, update_s = bench_gpt._time_step("tinytorch", two, opt_two, x, y)
    assert forward_s > 0 and update_s > 0
    for a, b in zip(one.parameters(), two.parameters()):
        np.testing.assert_array_equal(a.data, b.data)
    assert np.isfinite(loss)


def test_attention_speed_benchmark_takes_turns_and_reports_ratios():
    rows = bench_attention.speed([8, 16], repeats=2, torch=torch_like_numpy(), rounds=2)
    assert [row["n"] for row in rows] == [8, 16]
    for row in rows:
        assert row["tinytorch_ms"] > 0
        assert ("ratio" in row) == HAS_TORCH


def test_ab_alternates_which_version_runs_first_and_collects_every_run(monkeypatch):
    calls = []

    def fake_run(tree, steps):
        calls.append(tree)
        return {"ratio": 1.0 + len(calls) / 100, "tinytorch_ms": 10.0, "torch_ms": 9.0}
    monkeypatch.setattr(ab, "run_once", fake_run)
    results = ab.compare({"old": "/a", "new": "/b"}, runs=3, steps=5, log=lambda *_: None)
    assert calls == ["/a", "/b", "/b", "/a", "/a", "/b"]
    assert [len(results["old"]), len(results["new"])] == [3, 3]


def test_end_to_end_runs_take_turns_and_turns_change_no_result(tmp_path):
    text = tmp_path / "text.txt"
    text.write_text("To be, or not to be, that is the question.\n" * 200)
    lines = []
    libraries = ("tinytorch", "torch") if HAS_TORCH else ("tinytorch",)
    runs = {name: bench_gpt.training(name, str(text), iters=4, eval_every=2, log=lines.append, turn=2)
            for name in libraries}
    results = bench_gpt.side_by_side(runs)
    expected = [f"{name:9s} iter {it:5d}" for it in (0, 2, 4) for name in libraries]
    assert [line[:len(expected[0])] for line in lines] == expected      # two iterations each, in turns
    for name in libraries:
        r = results[name]
        assert r["library"] == name and [it for it, _ in r["curve"]] == [0, 2, 4] and r["seconds"] > 0
        assert r["val_loss"] == r["curve"][-1][1]
    alone = bench_gpt.train_text("tinytorch", str(text), iters=4, eval_every=2, log=lines.append, turn=1)
    assert alone["curve"] == results["tinytorch"]["curve"]             # the same run, however it is cut into turns
