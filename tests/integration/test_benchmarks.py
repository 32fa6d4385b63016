"""The benchmark scripts still run, on tiny sizes, and report what they say they report: tinytorch's plain path, its
fast path (modules 07 and 08) or why it is missing, and PyTorch (never timings as pass/fail)."""
import importlib.util
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import ab  # noqa: E402
import bench_attention  # noqa: E402
import bench_gpt  # noqa: E402
import fusion_headroom  # noqa: E402
import kernel_paths  # noqa: E402
import run as run_all  # noqa: E402
import summarize  # noqa: E402
import turns  # noqa: E402
from threads import threads, torch_like_numpy  # noqa: E402

from tinytorch.core.train import train_step  # noqa: E402

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_PERF = kernel_paths.perf_spec() is not None  # module 08 has exported the switch
TINY = bench_gpt.SMOKE
SMALL = dict(TINY, embed_dim=64, block_size=64, batch_size=8)   # its training needs memory beyond a tiny model's
TINYTORCH = ["plain", "fast"] if HAS_PERF else ["plain"]
PATHS = TINYTORCH + (["torch"] if HAS_TORCH else [])
MEASURES_MEMORY = sys.platform == "linux"


def test_gpt_step_benchmark_reports_every_path_and_its_ratio():
    r = bench_gpt.bench_step(steps=3, warmup=1, cfg=SMALL, block=2)
    assert r["benchmark"] == "gpt_train_step" and r["steps"] == 3 and r["step"] == "tinytorch.core.train.train_step"
    assert r["paths"] == PATHS
    for path in r["paths"]:   # the step and its two phases, forward and backward + clipping + AdamW
        assert min(r[f"{path}_ms"], r[f"{path}_forward_ms"], r[f"{path}_backward_ms"]) > 0
        if MEASURES_MEMORY:   # the process's peak resident memory while it trained
            assert isinstance(r[f"{path}_peak_mib"], float) and r[f"{path}_peak_mib"] > 0
    assert ("memory_missing" in r) != MEASURES_MEMORY
    for path in TINYTORCH:
        if HAS_TORCH:
            assert r[f"{path}_ratio"] == pytest.approx(r[f"{path}_ms"] / r["torch_ms"])
            if MEASURES_MEMORY:
                assert r[f"{path}_memory_ratio"] == pytest.approx(r[f"{path}_peak_mib"] / r["torch_peak_mib"])
        else:
            assert f"{path}_ratio" not in r and "torch_ms" not in r and f"{path}_memory_ratio" not in r
    assert ("fast_ms" in r) == HAS_PERF and (r.get("fast_missing") == "module 08 not exported") != HAS_PERF
    report = bench_gpt.report([r])
    rows = {line.split()[0]: line for line in report.splitlines()[3:]}
    assert set(rows) >= {"plain", "fast", "pytorch"}, report
    assert ("module 08 not exported" in rows["fast"]) != HAS_PERF
    assert ("not installed" in rows["pytorch"]) != HAS_TORCH


def test_without_module_08_the_fast_columns_say_so(monkeypatch):
    monkeypatch.setattr(kernel_paths, "perf_spec", lambda: None)
    kernel_paths.fast_missing.cache_clear()
    try:
        r = bench_gpt.bench_step(steps=2, warmup=0, cfg=TINY, block=2)
        rows = bench_attention.speed([8], repeats=1, rounds=1, min_seconds=0)
        memory = bench_attention.memory(32, 8, 16)
    finally:
        kernel_paths.fast_missing.cache_clear()
    assert r["paths"][0] == "plain" and "fast" not in r["paths"] and r["fast_missing"] == "module 08 not exported"
    assert "fast_ms" not in rows[0] and "fast_mib" not in memory
    fast_rows = [line for line in (bench_gpt.report([r]) + "\n" + bench_attention.report(rows + [memory])).splitlines()
                 if "fast" in line.split()[:2] or "fast/pytorch" in line or "fast path" in line]
    assert len(fast_rows) == 3 + ("torch_ms" in rows[0]) and all("module 08 not exported" in x for x in fast_rows)


def what_runs(path):
    "A worker whose blocks say where they ran: its process, its kernels, PyTorch's threads there, and when."
    def block():
        start = time.monotonic()
        time.sleep(0.01)
        perf, torch = sys.modules.get("tinytorch.perf"), sys.modules.get("torch")
        return dict(path=path, pid=os.getpid(), fast=bool(perf and perf.is_enabled()),
                    torch_threads=torch.get_num_threads() if torch else None, start=start, end=time.monotonic())
    return block


def test_each_path_runs_in_its_own_process_with_its_own_kernels_taking_turns():
    done = turns.take_turns(dict.fromkeys(PATHS, what_runs), blocks=3)
    blocks = sorted((b for path in PATHS for b in done[path].blocks), key=lambda b: b["start"])
    assert [b["path"] for b in blocks] == PATHS + PATHS[::-1] + PATHS          # the order reverses every block
    assert all(one["end"] <= two["start"] for one, two in zip(blocks, blocks[1:]))   # one worker at a time
    pids = {path: {b["pid"] for b in done[path].blocks} for path in PATHS}
    assert all(len(p) == 1 for p in pids.values()) and len(set.union(*pids.values()) | {os.getpid()}) == len(PATHS) + 1
    for b in blocks:   # the fast kernels in the fast worker only; PyTorch in its own worker only, at numpy's threads
        assert b["fast"] == (b["path"] == "fast")
        assert b["torch_threads"] == (threads() if b["path"] == "torch" else None)
    assert multiprocessing.active_children() == []


def reports_allocator(path):
    return lambda: os.environ.get(kernel_paths.REUSE)


@pytest.mark.skipif(not kernel_paths.can_reuse_freed_memory(), reason="needs module 08 exported and glibc")
def test_workers_started_under_the_reuse_setting_have_it_and_later_ones_do_not():
    with kernel_paths.allocator("reuse"):
        done = turns.take_turns(dict.fromkeys(PATHS, reports_allocator), blocks=1)
    assert all(done[path].blocks == ["1"] for path in PATHS)
    done = turns.take_turns(dict.fromkeys(PATHS, reports_allocator), blocks=1)
    assert all(done[path].blocks == [None] for path in PATHS) and kernel_paths.REUSE not in os.environ


@pytest.mark.skipif(not HAS_PERF, reason="module 08 not exported")
def test_the_reuse_setting_calls_module_07s_reuse_freed_memory_in_every_paths_process(monkeypatch):
    import tinytorch.perf as perf
    calls = []
    monkeypatch.setattr(perf, "reuse_freed_memory", lambda reuse=True: calls.append(reuse) or True)
    monkeypatch.setattr(kernel_paths, "can_reuse_freed_memory", lambda: True)
    for path in PATHS:
        with kernel_paths.allocator("reuse"), kernel_paths.running(path):
            pass
        with kernel_paths.allocator("glibc"), kernel_paths.running(path):
            pass
    assert calls == [True] * len(PATHS)
    with pytest.raises(ValueError, match="allocator must be one of glibc, reuse"):
        with kernel_paths.allocator("jemalloc"):
            pass


def failing_factory(path):
    raise ValueError(f"no model for {path}")


def failing_block(path):
    def block():
        raise ZeroDivisionError(f"the {path} block failed")
    return block


def dying_block(path):
    return lambda: os._exit(3)


@pytest.mark.parametrize("factory, message", [(failing_factory, "ValueError: no model for other"),
                                               (failing_block, "ZeroDivisionError: the other block failed"),
                                               (dying_block, "the other worker died (exit code 3)")])
def test_a_workers_error_is_raised_in_the_parent_and_every_worker_is_stopped(factory, message):
    with pytest.raises(turns.WorkerError) as error:
        turns.take_turns({"plain": what_runs, "other": factory}, blocks=2)
    assert message in str(error.value)
    if factory is not dying_block:
        assert "Traceback (most recent call last)" in str(error.value) and __file__ in str(error.value)
    assert multiprocessing.active_children() == []


def test_the_step_benchmark_yields_once_per_block_and_returns_the_timed_steps():
    work = bench_gpt.stepping("plain", steps=4, warmup=1, cfg=TINY, block=2, grad_clip=1.0)
    blocks = 0
    with pytest.raises(StopIteration) as finished:
        while True:
            next(work)
            blocks += 1
    assert blocks == 2 and len(finished.value.value) == 4 and all(min(phases) > 0 for phases in finished.value.value)


def test_a_step_split_into_phases_is_the_librarys_step():
    # forward, then backward + clipping + AdamW, as _time_step runs them, leaves the same weights as train_step
    rng = np.random.default_rng(0)
    x, y = bench_gpt.get_batch(rng.integers(0, TINY["vocab_size"], size=500), 2, 8, rng)
    (one, opt_one), (two, opt_two) = bench_gpt.tinytorch_model(TINY, lr=1e-2), bench_gpt.tinytorch_model(TINY, lr=1e-2)
    loss = train_step(one, opt_one, x, y, max_norm=bench_gpt.GRAD_CLIP, lr=1e-2)
    forward_s, update_s = bench_gpt._time_step("plain", two, opt_two, x, y, lr=1e-2)
    assert forward_s > 0 and update_s > 0
    changed = False
    for a, b, start in zip(one.parameters(), two.parameters(), bench_gpt.tinytorch_model(TINY)[0].parameters()):
        np.testing.assert_array_equal(a.data, b.data)
        changed |= not np.array_equal(a.data, start.data)
    assert np.isfinite(loss) and changed, "the step trained the model"


def test_attention_speed_benchmark_takes_turns_and_reports_ratios():
    rows = bench_attention.speed([8, 16], repeats=2, torch=torch_like_numpy(), rounds=2, min_seconds=0)
    assert [row["n"] for row in rows] == [8, 16]
    for row in rows:
        assert row["paths"] == TINYTORCH + (["torch"] if HAS_TORCH else [])
        for path in TINYTORCH:
            assert row[f"{path}_ms"] > 0 and (f"{path}_ratio" in row) == HAS_TORCH
    report = bench_attention.report(rows)
    rows_by_label = {line.split()[0]: line for line in report.splitlines()[2:]}
    assert {"plain", "fast", "pytorch"} <= set(rows_by_label), report
    assert ("module 08 not exported" in rows_by_label["fast"]) != HAS_PERF


def test_attention_timing_yields_once_per_block_at_every_size():
    work = bench_attention.timing("plain", [8, 16], repeats=4, rounds=2, min_seconds=0)
    blocks = 0
    with pytest.raises(StopIteration) as finished:
        while True:
            next(work)
            blocks += 1
    times = finished.value.value
    assert blocks == 4 and list(times) == [8, 16] and all(len(t) == 4 and min(t) > 0 for t in times.values())


def test_attention_memory_reports_each_path_and_the_memory_efficient_one():
    row = bench_attention.memory(64, 8, 16)
    assert row["paths"] == TINYTORCH and row["plain_mib"] > row["memory_efficient_mib"] > 0
    assert ("fast_mib" in row) == HAS_PERF and (row.get("fast_missing") == "module 08 not exported") != HAS_PERF
    assert "attention, fast path" in bench_attention.report([row])


def test_run_writes_every_path_to_the_results_file(tmp_path, capsys):
    out = tmp_path / "results.json"
    run_all.main(["--smoke", "--out", str(out)])
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["smoke"] is True and data["machine"]["paths"] == TINYTORCH + (["torch"] if HAS_TORCH else [])
    assert (data["machine"]["fast_missing"] == "module 08 not exported") != HAS_PERF
    kinds = [r["benchmark"] for r in data["results"]]
    settings = ["glibc", "reuse"] if kernel_paths.can_reuse_freed_memory() else ["glibc"]
    assert kinds[0] == "gpt_train_step" and "peak memory" in kinds[-1]
    assert kinds.count("attention forward+backward") == 2 * len(settings)
    assert [r["allocator"] for r in data["results"] if r["benchmark"] == "gpt_train_step"] == settings
    assert ("not measured: it needs module 08" in printed) != kernel_paths.can_reuse_freed_memory()
    for r in data["results"]:
        assert r["paths"][:len(TINYTORCH)] == TINYTORCH   # every figure says which path it is
    step = data["results"][0]
    for path in step["paths"] if MEASURES_MEMORY else []:
        assert isinstance(step[f"{path}_peak_mib"], float) and step[f"{path}_peak_mib"] >= 0
        assert (f"{path}_memory_ratio" in step) == (HAS_TORCH and path != "torch")
    assert "GPT training step" in printed and "scaled dot-product attention" in printed and "peak memory" in printed
    assert ("module 08 not exported" in printed) != HAS_PERF


def test_both_libraries_get_numpys_thread_count():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    numpy_blas = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()
                  if lib["user_api"] == "blas" and "numpy" in lib["filepath"]]
    assert numpy_blas and threads() == max(numpy_blas)
    torch = torch_like_numpy()
    if torch is not None:
        assert torch.get_num_threads() == threads()


@pytest.mark.parametrize("op, part", [("fast_linear backward", "linear layers"), ("aten::addmm", "linear layers"),
                                      ("aten::mm", "linear layers"), ("fast_attention", "attention"),
                                      ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "attention"),
                                      ("fast_compiled_layer_norm backward", "layer norm"),
                                      ("aten::native_layer_norm", "layer norm"), ("aten::gelu_backward", "gelu"),
                                      ("compiled_cross_entropy", "cross-entropy"), ("Optimizer.step", "AdamW"),
                                      ("Optimizer.step#AdamW.step", "AdamW"), ("AddmmBackward0", "linear layers"),
                                      ("autograd::engine::evaluate_function: NativeLayerNormBackward0", "layer norm"),
                                      ("compiled_adamw_update", "AdamW"), ("aten::mul_", "other"), ("add", "other"),
                                      ("embedding backward", "other"), ("other", "other")])
def test_each_op_is_charged_to_its_part_of_the_step(op, part):
    assert bench_gpt.op_group(op) == part


def test_a_pytorch_op_is_charged_to_the_outermost_op_around_it_that_has_a_part():
    from types import SimpleNamespace as Event
    adamw = Event(name="Optimizer.step#AdamW.step", cpu_parent=None, self_cpu_time_total=2e6)
    backward = Event(name="autograd::engine::evaluate_function: AddmmBackward0", cpu_parent=None, self_cpu_time_total=0)
    events = [adamw, Event(name="aten::mul_", cpu_parent=adamw, self_cpu_time_total=4e6),
              Event(name="aten::mul_", cpu_parent=None, self_cpu_time_total=6e6), backward,
              Event(name="aten::mm", cpu_parent=backward, self_cpu_time_total=8e6)]
    seconds = bench_gpt._torch_seconds_by_outer_op(events, steps=2)
    assert seconds == {"Optimizer.step#AdamW.step": 3.0, "aten::mul_": 3.0, backward.name: 4.0}


@pytest.mark.skipif(not HAS_PERF, reason="measures the fast path (modules 07 and 08)")
def test_the_fusion_headroom_adds_up_what_each_fused_op_would_save():
    seconds = fusion_headroom.headroom(TINY, blocks=1, calls=2)
    parts = ["bias pass", "bias gradient's column sum", "residual addition (op)", "Python around one op"]
    assert all(seconds[part] > 0 for part in parts), seconds
    layers, op = TINY["num_layers"], seconds["Python around one op"]
    assert seconds["bias + GELU, per step"] == pytest.approx(
        layers * (seconds["bias pass"] + seconds["bias gradient's column sum"] + 2 * op))
    assert seconds["both, per step"] == pytest.approx(seconds["bias + GELU, per step"]
                                                      + seconds["residual + LayerNorm, per step"])


def test_the_results_name_the_processor():
    assert run_all.machine()["processor"] not in ("", "x86_64") or not os.path.exists("/proc/cpuinfo")


def test_the_processor_names_its_widest_vector_unit(tmp_path, monkeypatch):
    "One model name ('AMD EPYC') covers processors with and without AVX-512: ratios differ between them."
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC\ncpu family\t: 25\nmodel\t\t: 1\n"
                       "flags\t\t: fpu sse2 avx avx2 fma\n\nprocessor\t: 1\nmodel name\t: AMD EPYC\n")
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: real_open(cpuinfo if path == "/proc/cpuinfo" else path,
                                                                         *a, **k))
    assert run_all.processor() == "AMD EPYC (family 25, model 1, avx2)"


@pytest.mark.skipif(not HAS_PERF, reason="the fast path needs module 08 (op_profile is module 07's tool)")
def test_the_op_breakdown_profiles_each_path_in_its_own_process_and_reports_every_part():
    parts = bench_gpt.op_breakdown(steps=2, cfg=TINY)
    assert list(parts) == ["fast"] + (["torch"] if HAS_TORCH else [])
    for path, ms in parts.items():
        assert list(ms) == [*bench_gpt.OP_GROUPS, "other"] and all(v >= 0 for v in ms.values())
        assert ms["linear layers"] > 0 and ms["attention"] > 0 and ms["AdamW"] > 0, (path, ms)
    report = bench_gpt.breakdown_report(parts)
    assert "linear layers" in report and report.splitlines()[-1].lstrip().startswith("total")


def test_ab_alternates_which_version_runs_first_and_collects_every_run(monkeypatch):
    calls = []

    def fake_run(tree, steps):
        calls.append(tree)
        return {"ratio": 1.0 + len(calls) / 100, "tinytorch_ms": 10.0, "torch_ms": 9.0, "path": "plain"}
    monkeypatch.setattr(ab, "run_once", fake_run)
    results = ab.compare({"old": "/a", "new": "/b"}, runs=3, steps=5, log=lambda *_: None)
    assert calls == ["/a", "/b", "/b", "/a", "/a", "/b"]
    assert [len(results["old"]), len(results["new"])] == [3, 3]


def test_end_to_end_runs_take_turns_and_turns_change_no_result(tmp_path, capfd):
    text = tmp_path / "text.txt"
    text.write_text("To be, or not to be, that is the question.\n" * 200)
    paths = ["plain"] + (["torch"] if HAS_TORCH else [])
    results = bench_gpt.side_by_side(paths, str(text), iters=4, eval_every=2, turn=2)
    labels = {"plain": "plain", "torch": "pytorch"}
    expected = [f"{labels[path]:9s} iter {it:5d}" for it in (0, 2, 4) for path in (paths, paths[::-1], paths)[it // 2]]
    printed = [line for line in capfd.readouterr().out.splitlines() if " iter " in line]
    assert [line[:len(expected[0])] for line in printed] == expected      # two iterations each, in turns
    for path in paths:
        r = results[path]
        assert r["path"] == path and [it for it, _ in r["curve"]] == [0, 2, 4] and r["seconds"] > 0
        assert r["val_loss"] == r["curve"][-1][1]
        assert r["peak_mib"] > 0 if MEASURES_MEMORY else r["peak_mib"] is None
    plain_line = bench_gpt.report([results[path] for path in paths]).splitlines()[0]
    assert plain_line.startswith("plain     4 iterations") and ("x pytorch's time" in plain_line) == HAS_TORCH
    assert ("MiB" in plain_line) == MEASURES_MEMORY
    alone = bench_gpt.train_text("plain", str(text), iters=4, eval_every=2, turn=1)
    assert alone["curve"] == results["plain"]["curve"]             # the same run, however it is cut into turns


def test_summarize_gives_each_figures_median_and_spread_over_runs(tmp_path):
    files = []
    for i, (step, attention, loss) in enumerate([(1.5, 2.0, 1.9), (1.7, 2.4, 1.8), (1.6, 9.0, 1.85)]):
        results = [{"benchmark": "gpt_train_step", "fast_ratio": step, "paths": ["fast"], "config": {"a": 1}},
                   {"benchmark": "gpt_train_step", "allocator": "reuse", "fast_ratio": step / 2},
                   {"benchmark": "attention forward+backward", "n": 64, "fast_ratio": attention},
                   {"benchmark": "gpt_tiny_shakespeare", "path": "fast", "val_loss": loss, "seconds": 100.0 + i}]
        files.append(tmp_path / f"run{i}.json")
        files[-1].write_text(json.dumps({"machine": {"cores": 2}, "results": results}))
    out = tmp_path / "summary.json"
    summarize.main([*map(str, files), "--json", str(out)])
    summary = json.loads(out.read_text())
    assert summary["runs"] == 3 and summary["machine"] == {"cores": 2}
    figures = summary["figures"]
    assert figures["gpt_train_step"]["fast_ratio"] == dict(median=1.6, low=1.5, high=1.7, runs=3)
    assert figures["attention n=64"]["fast_ratio"]["median"] == 2.4
    assert figures["e2e fast"]["val_loss"]["median"] == 1.85 and figures["e2e fast"]["seconds"]["high"] == 102.0
    assert "paths" not in figures["gpt_train_step"]
    assert figures["gpt_train_step, reuse"]["fast_ratio"] == dict(median=0.8, low=0.75, high=0.85, runs=3)
