"""GPT training speed and memory: tinytorch's plain path, its fast path (modules 07 and 08) and PyTorch eager, side by side,
each in its own process, the processes taking turns in blocks (turns.py).

1. One training step (forward, loss, backward, gradient clipping, AdamW update) at nanoGPT's CPU configuration for
   tiny Shakespeare (4 layers, 4 heads, width 128, context 64, batch 12, vocabulary 65), float32, the same number of
   threads for every library. tinytorch's step is the library's own `tinytorch.core.train.train_step` (its two
   phases, `forward_loss` and `update`, timed apart), the step `tito milestone run gpt` trains with; PyTorch's does
   the same work. The paths take turns in blocks of steps; each is reported as the median of many steps and as a
   ratio to PyTorch's (time / PyTorch time). Memory: the peak resident memory of each process while it trains,
   beyond what it held just before building the model (and after one step of a tiny model, so that what a library
   sets up once is not counted).
2. Opt-in (`--e2e`): the whole nanoGPT CPU run on a text file (2000 iterations, lr 1e-3 with warmup and cosine
   decay, evaluation every `--eval-every` steps) on each path, reporting the validation loss reached, the wall
   time and the peak memory. All use the same batches, and the runs take turns of 50 iterations (each one's wall
   time is the sum of its own turns), so the machine's drift over those minutes affects them alike.

    python benchmarks/bench_gpt.py                   # the step benchmark
    python benchmarks/bench_gpt.py --profile         # plus a cProfile of tinytorch steps: what dominates
    python benchmarks/bench_gpt.py --ops             # plus ms per step by part of the model, fast path and PyTorch
    python benchmarks/bench_gpt.py --e2e --text input.txt      # any UTF-8 text, e.g. tiny Shakespeare

`run(quick=False)` returns the results as a list of dicts. Without tinytorch.perf's switch (module 08) the fast path is
reported as not exported; without PyTorch, tinytorch is measured alone.
"""
from __future__ import annotations

import argparse
import cProfile
import functools
import io
import math
import pstats
import statistics
import time

import numpy as np

from tinytorch.core.layers import manual_seed
from tinytorch.core.optim import AdamW, lr_at
from tinytorch.core.train import forward_loss, train_step, update
from tinytorch.core.transformer import GPT, CharTokenizer, get_batch, load_text

import turns
from kernel_paths import FAST, LABELS, PLAIN, TORCH, fast_missing, tinytorch_paths
from threads import threads, torch_like_numpy

# nanoGPT: python train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20
#   --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000
#   --lr_decay_iters=2000 --dropout=0.0
CONFIG = dict(vocab_size=65, embed_dim=128, num_layers=4, num_heads=4, block_size=64, batch_size=12)
SMOKE = dict(vocab_size=11, embed_dim=16, num_layers=1, num_heads=2, block_size=8, batch_size=2)  # does it run?
E2E = dict(iters=2000, lr=1e-3, min_lr=1e-4, warmup=100, weight_decay=0.1, betas=(0.9, 0.99), grad_clip=1.0,
           eval_iters=20)
MEMORY_NOTE = ("peak: the most resident memory of the path's process while it trains, beyond what it held before "
               "building the model")
STEP_LR, GRAD_CLIP = 1e-3, E2E["grad_clip"]  # the step benchmark clips gradients as nanoGPT and the capstone do


# --- the models and their steps ------------------------------------------------------------------------------------
def tinytorch_model(cfg=CONFIG, seed=0, **adamw):
    manual_seed(seed)
    model = GPT(cfg["vocab_size"], cfg["embed_dim"], cfg["num_layers"], cfg["num_heads"], cfg["block_size"], seed=seed)
    return model, AdamW(model.parameters(), **adamw)


def torch_model(cfg=CONFIG, seed=0, **adamw):
    "A minimal GPT in PyTorch of exactly our shape (pre-LN blocks, biases, untied head), GPT-2 initialisation."
    torch = torch_like_numpy()
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.out_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, d = x.shape
            q, k, v = (t.view(B, T, self.heads, d // self.heads).transpose(1, 2)
                       for t in self.qkv(self.ln1(x)).split(d, dim=2))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out_proj(y.transpose(1, 2).reshape(B, T, d))
            return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))

    class TorchGPT(nn.Module):
        def __init__(self, vocab, d, layers, heads, block):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln_f, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
            for name, p in self.named_parameters():
                if p.dim() == 2:
                    std = 0.02 / math.sqrt(2 * layers) if name.endswith(("out_proj.weight", "proj.weight")) else 0.02
                    nn.init.normal_(p, 0.0, std)
                elif name.endswith("bias"):
                    nn.init.zeros_(p)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    torch.manual_seed(seed)
    model = TorchGPT(cfg["vocab_size"], cfg["embed_dim"], cfg["num_layers"], cfg["num_heads"], cfg["block_size"])
    return model, torch.optim.AdamW(model.parameters(), **adamw)


def torch_forward(model, x, y):
    torch = torch_like_numpy()
    logits = model(torch.from_numpy(x))
    return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), torch.from_numpy(y).view(-1))


def torch_update(optimizer, loss, max_norm=None, lr=None) -> float:
    "PyTorch's version of `tinytorch.core.train.update`: backward, clipping to `max_norm`, the AdamW update at `lr`."
    torch = torch_like_numpy()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_norm is not None:
        torch.nn.utils.clip_grad_norm_([p for group in optimizer.param_groups for p in group["params"]], max_norm)
    if lr is not None:
        for group in optimizer.param_groups:
            group["lr"] = lr
    optimizer.step()
    return loss.item()


def torch_step(model, optimizer, x, y, max_norm=None, lr=None) -> float:
    return torch_update(optimizer, torch_forward(model, x, y), max_norm, lr)


# Both tinytorch paths run the library's step; only the kernel table differs (see kernel_paths.running).
PHASES = {PLAIN: (forward_loss, update), FAST: (forward_loss, update), TORCH: (torch_forward, torch_update)}
STEPS = {PLAIN: train_step, FAST: train_step, TORCH: torch_step}


def new_model(path: str, cfg=CONFIG, seed=0, **adamw):
    "(model, optimizer) for `path`: the same GPT, at the same initial weights for the two tinytorch paths."
    return torch_model(cfg, seed, **adamw) if path == TORCH else tinytorch_model(cfg, seed, **adamw)


def measured_paths() -> list[str]:
    "tinytorch's paths (plain; fast when module 08 is exported), then PyTorch when it is installed."
    return tinytorch_paths() + ([TORCH] if torch_like_numpy() is not None else [])


# --- 1. one training step ----------------------------------------------------------------------------------------
def _time_step(path: str, model, optimizer, x, y, lr: float = STEP_LR, grad_clip: float = GRAD_CLIP) -> tuple:
    "Seconds of one training step's two phases: the forward pass with the loss, and backward + clipping + AdamW."
    forward, backward_and_update = PHASES[path]
    started = time.perf_counter()
    loss = forward(model, x, y)
    forward_done = time.perf_counter()
    backward_and_update(optimizer, loss, max_norm=grad_clip, lr=lr)
    return forward_done - started, time.perf_counter() - forward_done


def random_batches(cfg: dict, count: int) -> list:
    "`count` (x, y) batches of `cfg`'s shape from random token ids, the same ones on every path (seed 0)."
    rng = np.random.default_rng(0)
    data = rng.integers(0, cfg["vocab_size"], size=100_000)
    return [get_batch(data, cfg["batch_size"], cfg["block_size"], rng) for _ in range(count)]


def mark_memory(path: str):
    """Count memory from here (turns.mark), after one step of a GPT of width 4 on `path`: what a library sets up on
    its first step (PyTorch some 90 MiB) is not the training's memory."""
    cfg = dict(vocab_size=5, embed_dim=4, num_layers=1, num_heads=1, block_size=2, batch_size=1)
    rng = np.random.default_rng(0)
    model, optimizer = new_model(path, cfg, lr=STEP_LR)
    x, y = get_batch(rng.integers(0, cfg["vocab_size"], size=100), cfg["batch_size"], cfg["block_size"], rng)
    _time_step(path, model, optimizer, x, y)
    turns.mark()


def stepping(path: str, steps: int, warmup: int, cfg: dict, block: int, grad_clip: float):
    """In `path`'s worker: training steps on the same random batches as every path's, `block` of them per turn;
    returns the two phases' seconds of each step after the first `warmup`."""
    batches = random_batches(cfg, warmup + steps)
    mark_memory(path)
    model, optimizer = new_model(path, cfg, lr=STEP_LR)
    times = []
    for i, (x, y) in enumerate(batches, 1):
        phases = _time_step(path, model, optimizer, x, y, grad_clip=grad_clip)
        if i > warmup:
            times.append(phases)
        if i % block == 0:
            yield
    return times


def bench_step(steps: int = 200, warmup: int = 5, cfg=CONFIG, block: int = 10, paths=None,
               grad_clip: float = GRAD_CLIP) -> dict:
    """Median milliseconds per training step on each path (`measured_paths()` by default), on the same random
    batches, and of its two phases (forward; backward + clipping + AdamW), so that a gap can be placed; and the
    peak resident memory of the training, beyond what the process held before the model was built.

    Each path runs in its own process, and the processes take turns in blocks of `block` steps (turns.py).
    Not step by step: PyTorch's OpenMP threads keep spinning for a while after each parallel region, and numpy's
    BLAS threads starting right then would compete with them, which slows both and distorts the ratio."""
    paths = list(paths or measured_paths())
    work = functools.partial(stepping, steps=steps, warmup=warmup, cfg=dict(cfg), block=block, grad_clip=grad_clip)
    done = turns.take_turns(dict.fromkeys(paths, work))
    parameters = tinytorch_model(cfg)[0].num_parameters() if paths != [TORCH] else None
    result = {"benchmark": "gpt_train_step", "step": "tinytorch.core.train.train_step", "config": dict(cfg),
              "dtype": "float32", "threads": threads(), "steps": steps, "grad_clip": grad_clip, "paths": paths,
              "parameters": parameters, "processes": "one per path, taking turns"}
    if FAST not in paths and fast_missing():
        result["fast_missing"] = fast_missing()
    for path in paths:
        phases = done[path].result
        result[f"{path}_ms"] = 1e3 * statistics.median(forward + rest for forward, rest in phases)
        result[f"{path}_forward_ms"] = 1e3 * statistics.median(forward for forward, _ in phases)
        result[f"{path}_backward_ms"] = 1e3 * statistics.median(rest for _, rest in phases)
        if done[path].peak_mib is not None:
            result[f"{path}_peak_mib"] = done[path].peak_mib
    if any(done[path].peak_mib is None for path in paths):
        result["memory_missing"] = turns.MEMORY_MISSING
    for path in paths:
        if path != TORCH and TORCH in paths:
            result[f"{path}_ratio"] = result[f"{path}_ms"] / result["torch_ms"]
            if "torch_peak_mib" in result and f"{path}_peak_mib" in result:
                result[f"{path}_memory_ratio"] = result[f"{path}_peak_mib"] / result["torch_peak_mib"]
    return result


def ab_step(steps: int = 100) -> dict:
    """For benchmarks/ab.py: the step of the best tinytorch path there is (fast, else plain) against PyTorch's,
    without gradient clipping."""
    path = tinytorch_paths()[-1]
    r = bench_step(steps=steps, paths=[path, TORCH], grad_clip=None)
    return {"path": path, "ratio": r[f"{path}_ratio"], "tinytorch_ms": r[f"{path}_ms"], "torch_ms": r["torch_ms"]}


def profile_step(steps: int = 20, top: int = 25, cfg=CONFIG, path: str = None) -> str:
    """cProfile of `steps` tinytorch training steps on `path` (default: fast if there is one), in a process of its
    own: the `top` functions by own time."""
    path = path or tinytorch_paths()[-1]
    work = functools.partial(profiling, steps=steps, top=top, cfg=dict(cfg))
    return turns.take_turns({path: work}, blocks=1)[path].blocks[0]


def profiling(path: str, steps: int, top: int, cfg: dict):
    "In `path`'s worker: a function that profiles the steps and returns the report."
    model, optimizer = tinytorch_model(cfg, lr=STEP_LR)
    batches = random_batches(cfg, steps + 2)

    def profile() -> str:
        profiler = cProfile.Profile()
        for x, y in batches[:2]:
            train_step(model, optimizer, x, y, max_norm=GRAD_CLIP, lr=STEP_LR)
        profiler.enable()
        for x, y in batches[2:]:
            train_step(model, optimizer, x, y, max_norm=GRAD_CLIP, lr=STEP_LR)
        profiler.disable()
        stream = io.StringIO()
        stream.write(f"cProfile of {steps} steps on the {path} path\n")
        pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
        return stream.getvalue()
    return profile


# The parts of a step, by words in the names the profilers give ops: tinytorch's `perf.op_profile` ("fast_linear
# backward", "compiled_layer_norm", "Optimizer.step") and PyTorch's profiler ("aten::addmm", "AddmmBackward0",
# "aten::native_layer_norm", "Optimizer.step#AdamW.step"). A PyTorch op is charged to the outermost op around it that
# has a part (an aten::mul_ inside AdamW's step is AdamW's), as op_profile charges an op called by another to the outer.
OP_GROUPS = {
    "linear layers": ("linear", "aten::mm", "addmm", "mmbackward"),
    "attention": ("attention",),
    "layer norm": ("layer_norm", "layernorm"),
    "gelu": ("gelu",),
    "cross-entropy": ("cross_entropy", "log_softmax", "logsoftmax", "nll_loss", "nllloss"),
    "AdamW": ("adam", "optimizer.step"),
}


def op_group(op: str) -> str:
    "The part of a training step (a key of OP_GROUPS, or 'other') that the op named `op` belongs to."
    name = op.lower()
    return next((group for group, words in OP_GROUPS.items() if any(word in name for word in words)), "other")


def op_breakdown(steps: int = 30, cfg=CONFIG, paths=None) -> dict:
    """Milliseconds per training step by part of the model (OP_GROUPS, and 'other': everything else, Python between
    ops included), profiled on the fast path (`perf.op_profile`) and PyTorch (`torch.profiler`), each path in its own
    process: where a gap in the step comes from. A profiler slows what it watches, so compare the parts, not the sum
    with the step benchmark. {path: {part: ms}}; the fast path needs module 08 (op_profile is module 07's tool)."""
    paths = list(paths or [path for path in (FAST, TORCH) if path in measured_paths()])
    work = functools.partial(breaking_down, steps=steps, cfg=dict(cfg))
    done = turns.take_turns(dict.fromkeys(paths, work), blocks=1)
    return {path: done[path].blocks[0] for path in paths}


def breaking_down(path: str, steps: int, cfg: dict):
    "In `path`'s worker: a function that profiles `steps` training steps after two, and returns {part: ms per step}."
    model, optimizer = new_model(path, cfg, lr=STEP_LR)
    batches = random_batches(cfg, steps + 2)

    def profile() -> dict:
        for x, y in batches[:2]:
            _time_step(path, model, optimizer, x, y)
        if path == TORCH:
            from torch.profiler import ProfilerActivity, profile as torch_profile
            with torch_profile(activities=[ProfilerActivity.CPU]) as profiler:
                for x, y in batches[2:]:
                    _time_step(path, model, optimizer, x, y)
            seconds = _torch_seconds_by_outer_op(profiler.events(), steps)
        else:
            import tinytorch.perf as perf
            rest = iter(batches[2:])
            seconds = perf.op_profile(lambda: _time_step(path, model, optimizer, *next(rest)), steps)
        parts = dict.fromkeys([*OP_GROUPS, "other"], 0.0)
        for op, s in seconds.items():
            parts[op_group(op)] += 1e3 * s
        return parts
    return profile


def _torch_seconds_by_outer_op(events, steps: int) -> dict:
    "{name: seconds per step} of PyTorch's profiled events, each event's own time under its outermost op with a part."
    seconds = {}
    for event in events:
        name, parent = event.name, event.cpu_parent
        while parent is not None:
            if op_group(parent.name) != "other":
                name = parent.name
            parent = parent.cpu_parent
        seconds[name] = seconds.get(name, 0.0) + event.self_cpu_time_total / 1e6 / steps
    return seconds


def breakdown_report(parts: dict) -> str:
    paths = list(parts)
    lines = ["ms per training step by part of the model, profiled (tinytorch: perf.op_profile; PyTorch: torch.profiler;"
             " other: everything else, Python between ops included)",
             f"  {'part':15s}" + "".join(f"{LABELS[path]:>9s}" for path in paths)
             + (f"{'ratio':>8s}" if TORCH in paths and len(paths) > 1 else "")]
    for part in [*OP_GROUPS, "other", "total"]:
        row = {path: sum(parts[path].values()) if part == "total" else parts[path][part] for path in paths}
        line = f"  {part:15s}" + "".join(f"{row[path]:9.2f}" for path in paths)
        if TORCH in paths and len(paths) > 1 and row[TORCH] > 0:
            line += f"{row[paths[0]] / row[TORCH]:8.2f}"
        lines.append(line)
    return "\n".join(lines)


# --- 2. end to end -----------------------------------------------------------------------------------------------
def say(line: str):
    print(line, flush=True)   # at once, also from a worker whose output is a pipe


def training(path: str, text_path: str, iters: int = E2E["iters"], eval_every: int = 250, seed: int = 0,
             log=say, turn: int = 50):
    """nanoGPT's CPU run on `path` ('plain', 'fast' or 'torch'), as a generator that pauses every `turn` iterations
    (so runs can take turns; `side_by_side` runs each in its own worker); it returns the validation loss reached
    and the wall time spent while running."""
    text = load_text(text_path)
    tokenizer = CharTokenizer(text)
    ids = np.array(tokenizer.encode(text), dtype=np.int64)
    split = int(0.9 * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]
    cfg = dict(CONFIG, vocab_size=tokenizer.vocab_size)
    mark_memory(path)
    model, optimizer = new_model(path, cfg, seed, lr=E2E["lr"], betas=E2E["betas"], weight_decay=E2E["weight_decay"])
    step = STEPS[path]
    if path == TORCH:
        torch = torch_like_numpy()

        def evaluate(data):
            model.eval()
            rng = np.random.default_rng(seed + 1)
            with torch.no_grad():
                losses = []
                for _ in range(E2E["eval_iters"]):
                    x, y = get_batch(data, cfg["batch_size"], cfg["block_size"], rng)
                    logits = model(torch.from_numpy(x))
                    losses.append(torch.nn.functional.cross_entropy(
                        logits.view(-1, logits.shape[-1]), torch.from_numpy(y).view(-1)).item())
            model.train()
            return float(np.mean(losses))
    else:
        from tinytorch.core.transformer import estimate_loss

        def evaluate(data):
            return estimate_loss(model, {"x": data}, cfg["batch_size"], cfg["block_size"], E2E["eval_iters"],
                                 seed=seed + 1)["x"]

    rng = np.random.default_rng(seed)
    curve, seconds, resumed = [], 0.0, time.perf_counter()
    for it in range(iters + 1):
        if it > 0 and it % turn == 0:  # another run's turn; our clock stops meanwhile
            seconds += time.perf_counter() - resumed
            yield
            resumed = time.perf_counter()
        if it % eval_every == 0 or it == iters:
            val = evaluate(val_ids)
            curve.append((it, val))
            log(f"{LABELS[path]:9s} iter {it:5d}: val loss {val:.4f}  ({seconds + time.perf_counter() - resumed:.0f} s)")
        if it == iters:
            break
        x, y = get_batch(train_ids, cfg["batch_size"], cfg["block_size"], rng)
        step(model, optimizer, x, y, max_norm=E2E["grad_clip"], lr=lr_at(it, E2E["lr"], E2E["warmup"], iters, E2E["min_lr"]))
    return {"benchmark": "gpt_tiny_shakespeare", "path": path, "iters": iters, "val_loss": curve[-1][1],
            "seconds": seconds + time.perf_counter() - resumed, "curve": curve}


def side_by_side(paths, text_path: str, **kwargs) -> dict:
    """The nanoGPT run (`training`, with `kwargs`) on each path, each in its own worker, taking turns, so that a
    change in the machine's speed during the minutes they take affects them alike. Returns path -> result, with
    the run's peak resident memory beyond what its process held before the model was built (`peak_mib`)."""
    done = turns.take_turns(dict.fromkeys(paths, functools.partial(training, text_path=text_path, **kwargs)))
    return {path: dict(done[path].result, peak_mib=done[path].peak_mib) for path in paths}


def train_text(path: str, text_path: str, **kwargs) -> dict:
    "The whole nanoGPT CPU run on one path, in a worker: the validation loss reached, the wall time, the memory."
    return side_by_side([path], text_path, **kwargs)[path]


def run(quick: bool = False, e2e: bool = False, text: str = None, iters: int = E2E["iters"],
        eval_every: int = 250, smoke: bool = False) -> list[dict]:
    """The step benchmark on every path (few steps when `quick`; a tiny model when `smoke`, which only checks that
    it runs); with `e2e`, also the end-to-end run on `text` for each path, taking turns of 50 iterations."""
    if smoke:
        results = [bench_step(steps=3, warmup=1, cfg=SMOKE, block=2)]
    else:
        results = [bench_step(steps=10, warmup=2) if quick else bench_step()]
    if e2e:
        paths = measured_paths()
        done = side_by_side(paths, text, iters=iters, eval_every=eval_every)
        results += [done[path] for path in paths]
    return results


def report(results: list[dict]) -> str:
    lines = []
    torch_run = next((r for r in results if r.get("path") == TORCH), None)
    for r in results:
        if r["benchmark"] == "gpt_train_step":
            lines += _step_report(r)
            continue
        line = (f"{LABELS[r['path']]:9s} {r['iters']} iterations: validation loss {r['val_loss']:.4f} "
                f"in {r['seconds']:.0f} s")
        if torch_run and r["path"] != TORCH:
            line += f" ({r['seconds'] / torch_run['seconds']:.2f}x pytorch's time)"
        if r.get("peak_mib") is not None:
            line += f", peak memory {r['peak_mib']:.0f} MiB"
            if torch_run and r["path"] != TORCH and torch_run.get("peak_mib"):
                line += f" ({r['peak_mib'] / torch_run['peak_mib']:.2f}x pytorch's)"
        lines.append(line)
    return "\n".join(lines)


def _step_report(r: dict) -> list[str]:
    c = r["config"]
    clip = f"gradients clipped at {r['grad_clip']:g}" if r["grad_clip"] else "no gradient clipping"
    lines = [f"GPT training step, {r['step']} ({c['num_layers']} layers, {c['num_heads']} heads, width "
             f"{c['embed_dim']}, context {c['block_size']}, batch {c['batch_size']}, vocab {c['vocab_size']}; "
             f"{r['parameters']:,} parameters; {r['dtype']}, {r['threads']} threads, {clip}, median of {r['steps']}; "
             "each path in its own process)",
             f"  {'path':9s} {'step':>8s} {'forward':>8s} {'backward+AdamW':>15s} | {'step':>6s} {'forward':>8s} "
             f"{'backward':>9s} | {'peak':>7s} {'memory':>7s}",
             f"  {'':9s} {'ms':>8s} {'ms':>8s} {'ms':>15s} | {'ratios to pytorch':>25s} | {'MiB':>7s} {'ratio':>7s}"]
    for path in (PLAIN, FAST, TORCH):
        if f"{path}_ms" not in r:
            why = r.get("fast_missing", "not measured") if path == FAST else "not installed: tinytorch measured alone"
            lines.append(f"  {LABELS[path]:9s} {why}")
            continue
        row = f"  {LABELS[path]:9s} {r[f'{path}_ms']:8.1f} {r[f'{path}_forward_ms']:8.1f} {r[f'{path}_backward_ms']:15.1f}"
        if f"{path}_ratio" in r:
            phases = [r[f"{path}_{phase}_ms"] / r[f"torch_{phase}_ms"] for phase in ("forward", "backward")]
            row += f" | {r[f'{path}_ratio']:6.2f} {phases[0]:8.2f} {phases[1]:9.2f}"
        else:
            row += f" | {'':25s}"
        if f"{path}_peak_mib" in r:
            memory_ratio = f"{r[f'{path}_memory_ratio']:7.2f}" if f"{path}_memory_ratio" in r else ""
            row += f" | {r[f'{path}_peak_mib']:7.1f} {memory_ratio}"
        lines.append(row.rstrip(" |"))
    if f"{PLAIN}_ms" in r and f"{FAST}_ms" in r:
        lines.append(f"  the fast path's step takes {r['fast_ms'] / r['plain_ms']:.2f}x the plain path's")
    lines.append(f"  {r.get('memory_missing') or MEMORY_NOTE}")
    return lines


def print_report(results: list[dict]):
    print(report(results))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed steps")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of tinytorch steps")
    parser.add_argument("--ops", action="store_true", help="print ms per step by part of the model, fast path and PyTorch")
    parser.add_argument("--e2e", action="store_true", help="also train end to end on --text (minutes)")
    parser.add_argument("--text", default=None, help="text file for --e2e (default: Python stdlib sources)")
    parser.add_argument("--iters", type=int, default=E2E["iters"])
    parser.add_argument("--eval-every", type=int, default=250)
    args = parser.parse_args(argv)
    print_report(run(args.quick, args.e2e, args.text, args.iters, args.eval_every))
    if args.profile:
        print(profile_step())
    if args.ops:
        print(breakdown_report(op_breakdown()))


if __name__ == "__main__":
    main()
