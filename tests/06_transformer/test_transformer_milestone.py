"""The capstone command, `tito milestone run gpt`, run as a subprocess on a tiny text in a temporary folder:
its outputs, the path it says it runs on, stopping and resuming exactly, Ctrl-C handling and clear errors."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from tinytorch.core.transformer import load_checkpoint
from tito.milestone import perf_spec


pytestmark = [pytest.mark.slow, pytest.mark.exercise("generate")]
HAS_PERF = perf_spec() is not None  # module 08 has exported the switch
TITO = [sys.executable, "-m", "tito", "milestone", "run"]

TINY = ["--steps", "8", "--batch-size", "4", "--block-size", "16", "--embed-dim", "16", "--num-layers", "1",
        "--num-heads", "2", "--warmup", "2", "--eval-interval", "4", "--eval-iters", "2", "--sample-tokens", "40"]


@pytest.fixture
def text_file(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("the quick brown fox jumps over the lazy dog.\n" * 40, encoding="utf-8")
    return path


def milestone(*args, cwd, check=True):
    "Run `tito milestone run gpt ARGS` (as `python -m tito`), returning the process."
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", COLUMNS="120")
    proc = subprocess.run([*TITO, "gpt", *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=300)
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_a_short_run_writes_checkpoint_loss_curve_and_sample(tmp_path, text_file):
    out = tmp_path / "run"
    proc = milestone("--text", text_file, "--out", out, *TINY, cwd=tmp_path)
    from tito.milestone import choose_path
    assert proc.stdout.splitlines()[0] == str(choose_path()), "the first line says which path, as tito decides it"
    assert (out / "ckpt.npz").is_file() and (out / "loss.png").stat().st_size > 1000
    sample = (out / "sample.txt").read_text(encoding="utf-8")
    assert len(sample) == 41 and set(sample) <= set("the quick brown fox jumps over the lazy dog.\n")
    meta = load_checkpoint(out / "ckpt.npz")
    assert meta["step"] == 8 and len(meta["history"]["loss"]) == 8 and meta["history"]["eval_step"] == [4, 8]
    assert "validation loss" in proc.stdout and sample.strip()[:10] in proc.stdout
    assert not [p for p in os.listdir(out) if "tmp" in p], "no temporary files left behind"


def test_stop_then_resume_equals_an_uninterrupted_run(tmp_path, text_file):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    plain = milestone("--text", text_file, "--out", whole, *TINY, "--plain", cwd=tmp_path)
    assert plain.stdout.startswith("plain path: the plain ops of modules 01-06 (--plain)\n")
    stopped = milestone("--text", text_file, "--out", parts, *TINY, "--stop-at", "5", "--plain", cwd=tmp_path)
    assert "--resume" in stopped.stdout and load_checkpoint(parts / "ckpt.npz")["step"] == 5
    assert not (parts / "sample.txt").exists() and (parts / "loss.png").is_file()
    assert "the sample comes at the last step" in " ".join(stopped.stdout.split()), "it says why there is no sample"
    resumed = milestone("--resume", "--out", parts, "--plain", cwd=tmp_path)
    assert "resuming" in resumed.stdout and "step 5" in resumed.stdout
    a, b = np.load(whole / "ckpt.npz"), np.load(parts / "ckpt.npz")
    model_keys = [k for k in a.files if k.startswith(("model/", "optimizer/"))]
    assert model_keys and sorted(model_keys) == sorted(k for k in b.files if k.startswith(("model/", "optimizer/")))
    for key in model_keys:
        assert np.array_equal(a[key], b[key]), key
    history = [load_checkpoint(folder / "ckpt.npz")["history"] for folder in (whole, parts)]
    assert history[0]["loss"] == history[1]["loss"] and history[1]["eval_step"] == [4, 5, 8]
    assert (whole / "sample.txt").read_text() == (parts / "sample.txt").read_text()


def test_ctrl_c_keeps_a_checkpoint_and_says_so(tmp_path, text_file):
    out = tmp_path / "run"
    args = ["--text", text_file, "--out", out, *TINY, "--steps", "100000", "--eval-interval", "3"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", COLUMNS="120")
    proc = subprocess.Popen([*TITO, "gpt", *map(str, args)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + 120
        while not (out / "ckpt.npz").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "no checkpoint within 120 s"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stdout and "checkpoint" in stdout and "--resume" in stdout
    meta = load_checkpoint(out / "ckpt.npz")
    assert 3 <= meta["step"] < 100000 and len(meta["history"]["loss"]) == meta["step"]
    assert (out / "loss.png").is_file()


def test_clear_errors(tmp_path, text_file):
    bad = milestone("--text", tmp_path / "missing.txt", "--out", tmp_path / "x", cwd=tmp_path, check=False)
    assert bad.returncode == 1 and "missing.txt" in bad.stderr and "Traceback" not in bad.stderr
    bad = milestone("--resume", "--out", tmp_path / "nothing", cwd=tmp_path, check=False)
    assert bad.returncode == 1 and "no checkpoint" in bad.stderr
    unknown = subprocess.run([*TITO, "bert"], cwd=tmp_path, capture_output=True, text=True)
    assert unknown.returncode == 1 and "gpt" in unknown.stderr and "Traceback" not in unknown.stderr


@pytest.mark.skipif(HAS_PERF, reason="module 08 is exported here: --fast has what it needs")
def test_fast_without_module_08_is_a_clear_error(tmp_path, text_file):
    bad = milestone("--text", text_file, "--out", tmp_path / "x", *TINY, "--fast", cwd=tmp_path, check=False)
    assert bad.returncode == 1 and "--fast needs module 08" in bad.stderr and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and not (tmp_path / "x" / "ckpt.npz").exists()


@pytest.mark.skipif(not HAS_PERF, reason="tinytorch.perf's switch (module 08) is not exported")
def test_fast_runs_on_the_kernels_of_modules_07_and_08(tmp_path, text_file):
    proc = milestone("--text", text_file, "--out", tmp_path / "fast", *TINY, "--fast", cwd=tmp_path)
    from tito.milestone import choose_path  # module 08 complete or not yet (its own `complete` runs this): the same path
    assert proc.stdout.splitlines()[0] == str(choose_path(True)), "the first line says which path, as tito decides it"
    assert proc.stdout.startswith("fast path: the fast kernels")
    assert load_checkpoint(tmp_path / "fast" / "ckpt.npz")["step"] == 8


def test_a_bad_run_is_a_one_line_error(tmp_path):
    "`tito milestone run gpt` reports a problem it knows in one line, without a traceback."
    bad = subprocess.run([*TITO, "gpt", "--resume", "--out", tmp_path / "none"], cwd=tmp_path,
                         capture_output=True, text=True)
    assert bad.returncode == 1 and "no checkpoint" in bad.stderr and "Traceback" not in bad.stderr


def test_registered_in_the_tito_command(tmp_path):
    "`tito milestone run gpt` is plugged into the course CLI, with its options."
    proc = subprocess.run([*TITO, "--help"], cwd=tmp_path, capture_output=True, text=True,
                          env=dict(os.environ, COLUMNS="200"))
    assert proc.returncode == 0, proc.stderr
    for option in ("--resume", "--stop-at", "--text", "--fast", "--plain"):
        assert option in proc.stdout, option
