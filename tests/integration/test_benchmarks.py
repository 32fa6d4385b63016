"""The benchmark scripts still run, on tiny sizes, and report what they say they report (never timings as pass/fail)."""
import importlib.util
import sys
from pathlib import Path

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
    assert r["benchmark"] == "gpt_train_step" and r["steps"] == 3 and r["tinytorch_ms"] > 0
    if HAS_TORCH:
        assert r["torch_ms"] > 0 and r["ratio"] == pytest.approx(r["tinytorch_ms"] / r["torch_ms"])
    else:
        assert "ratio" not in r
    assert "GPT training step" in bench_gpt.report([r])


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
