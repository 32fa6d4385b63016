"""GPT training speed: tinytorch against PyTorch eager, side by side in one process.

1. One training step (forward, backward, AdamW update) at nanoGPT's CPU configuration for tiny Shakespeare
   (4 layers, 4 heads, width 128, context 64, batch 12, vocabulary 65), float32, the same number of threads for
   both libraries, timed as the median of many steps and reported as a ratio (tinytorch time / PyTorch time).
2. Opt-in (`--e2e`): the whole nanoGPT CPU run on a text file (2000 iterations, lr 1e-3 with warmup and cosine
   decay, evaluation every `--eval-every` steps), reporting the validation loss reached and the wall time of each
   library. Both use the same batches, and the two runs take turns of 50 iterations (each library's wall time is the
   sum of its own turns), so the machine's drift over those minutes affects both alike.

    python benchmarks/bench_gpt.py                   # the step benchmark
    python benchmarks/bench_gpt.py --profile         # plus a cProfile of one tinytorch step: what dominates
    python benchmarks/bench_gpt.py --e2e --text /work/shared/data/tinyshakespeare.txt

`run(quick=False)` returns the results as a list of dicts. Without PyTorch installed, tinytorch is measured alone.
"""
from __future__ import annotations

import tinytorch  # noqa: F401  (before numpy: it shortens OpenBLAS's idle-thread spin; see its __init__)

import argparse
import cProfile
import io
import math
import pstats
import statistics
import time

import numpy as np

from tinytorch.core.layers import manual_seed
from tinytorch.core.tensor import reuse_freed_memory
from tinytorch.core.losses import cross_entropy
from tinytorch.core.optim import AdamW, clip_grad_norm_, lr_at
from tinytorch.core.transformer import GPT, CharTokenizer, get_batch, load_text

from threads import threads, torch_like_numpy

# nanoGPT: python train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20
#   --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 --max_iters=2000
#   --lr_decay_iters=2000 --dropout=0.0
CONFIG = dict(vocab_size=65, embed_dim=128, num_layers=4, num_heads=4, block_size=64, batch_size=12)
E2E = dict(iters=2000, lr=1e-3, min_lr=1e-4, warmup=100, weight_decay=0.1, betas=(0.9, 0.99), grad_clip=1.0,
           eval_iters=20)


# --- the two models ----------------------------------------------------------------------------------------------
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


def tinytorch_forward(model, x, y):
    return cross_entropy(model(x), y)


def tinytorch_update(model, optimizer, loss, grad_clip=None):
    "Backward from `loss`, gradient clipping if asked, and the optimizer step; returns the loss as a float."
    optimizer.zero_grad()
    loss.backward()
    if grad_clip:
        clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss.item()


def tinytorch_step(model, optimizer, x, y, grad_clip=None):
    return tinytorch_update(model, optimizer, tinytorch_forward(model, x, y), grad_clip)


def torch_forward(model, x, y):
    torch = torch_like_numpy()
    logits = model(torch.from_numpy(x))
    return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), torch.from_numpy(y).view(-1))


def torch_update(model, optimizer, loss, grad_clip=None):
    torch = torch_like_numpy()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return loss.item()


def torch_step(model, optimizer, x, y, grad_clip=None):
    return torch_update(model, optimizer, torch_forward(model, x, y), grad_clip)


# --- 1. one training step ----------------------------------------------------------------------------------------
PHASES = {"tinytorch": (tinytorch_forward, tinytorch_update), "torch": (torch_forward, torch_update)}


def _time_step(library: str, model, optimizer, x, y) -> tuple:
    "Seconds of one training step's two phases: the forward pass with the loss, and backward + optimizer step."
    forward, update = PHASES[library]
    started = time.perf_counter()
    loss = forward(model, x, y)
    forward_done = time.perf_counter()
    update(model, optimizer, loss)
    return forward_done - started, time.perf_counter() - forward_done


def bench_step(steps: int = 200, warmup: int = 5, cfg=CONFIG, block: int = 10) -> dict:
    """Median milliseconds per training step of each library on the same random batches, and of its two phases
    (forward; backward + AdamW), so that a gap can be placed.

    The libraries take turns in blocks of `block` steps, so a change in the machine's load affects both alike.
    Not step by step: PyTorch's OpenMP threads keep spinning for a while after each parallel region, and numpy's
    BLAS threads starting right then would compete with them, which slows both and distorts the ratio."""
    rng = np.random.default_rng(0)
    data = rng.integers(0, cfg["vocab_size"], size=100_000)
    batches = [get_batch(data, cfg["batch_size"], cfg["block_size"], rng) for _ in range(warmup + steps)]
    models = {"tinytorch": tinytorch_model(cfg, lr=1e-3)}
    if torch_like_numpy() is not None:
        models["torch"] = torch_model(cfg, lr=1e-3)
    times = {name: [] for name in models}
    for start in range(0, len(batches), block):
        for name, (model, optimizer) in models.items():
            for i in range(start, min(start + block, len(batches))):
                phases = _time_step(name, model, optimizer, *batches[i])
                if i >= warmup:
                    times[name].append(phases)
    result = {"benchmark": "gpt_train_step", "config": dict(cfg), "dtype": "float32", "threads": threads(),
              "steps": steps, "parameters": models["tinytorch"][0].num_parameters()}
    for name, phases in times.items():
        result[f"{name}_ms"] = 1e3 * statistics.median(forward + update for forward, update in phases)
        result[f"{name}_forward_ms"] = 1e3 * statistics.median(forward for forward, _ in phases)
        result[f"{name}_backward_ms"] = 1e3 * statistics.median(update for _, update in phases)
    if "torch" in times:
        result["ratio"] = result["tinytorch_ms"] / result["torch_ms"]
    return result


def profile_step(steps: int = 20, top: int = 25, cfg=CONFIG) -> str:
    "cProfile of `steps` tinytorch training steps, the `top` functions by their own time."
    rng = np.random.default_rng(0)
    data = rng.integers(0, cfg["vocab_size"], size=100_000)
    model, optimizer = tinytorch_model(cfg, lr=1e-3)
    batches = [get_batch(data, cfg["batch_size"], cfg["block_size"], rng) for _ in range(steps + 2)]
    for x, y in batches[:2]:
        tinytorch_step(model, optimizer, x, y)
    profiler = cProfile.Profile()
    profiler.enable()
    for x, y in batches[2:]:
        tinytorch_step(model, optimizer, x, y)
    profiler.disable()
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("tottime").print_stats(top)
    return stream.getvalue()


# --- 2. end to end -----------------------------------------------------------------------------------------------
def training(library: str, text_path: str, iters: int = E2E["iters"], eval_every: int = 250, seed: int = 0,
             log=print, turn: int = 50):
    """nanoGPT's CPU run with `library` ('tinytorch' or 'torch'), as a generator that pauses every `turn` iterations
    (so two runs can take turns); it returns the validation loss reached and the wall time spent while running."""
    text = load_text(text_path)
    tokenizer = CharTokenizer(text)
    ids = np.array(tokenizer.encode(text), dtype=np.int64)
    split = int(0.9 * len(ids))
    train_ids, val_ids = ids[:split], ids[split:]
    cfg = dict(CONFIG, vocab_size=tokenizer.vocab_size)
    adamw = dict(lr=E2E["lr"], betas=E2E["betas"], weight_decay=E2E["weight_decay"])
    if library == "torch":
        torch = torch_like_numpy()
        model, optimizer = torch_model(cfg, seed, **adamw)
        step = torch_step

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
        model, optimizer = tinytorch_model(cfg, seed, **adamw)
        step = tinytorch_step

        def evaluate(data):
            return estimate_loss(model, {"x": data}, cfg["batch_size"], cfg["block_size"], E2E["eval_iters"],
                                 seed=seed + 1)["x"]

    rng = np.random.default_rng(seed)
    curve, seconds, resumed = [], 0.0, time.perf_counter()
    for it in range(iters + 1):
        if it > 0 and it % turn == 0:  # the other run's turn; our clock stops meanwhile
            seconds += time.perf_counter() - resumed
            yield
            resumed = time.perf_counter()
        if it % eval_every == 0 or it == iters:
            val = evaluate(val_ids)
            curve.append((it, val))
            log(f"{library:9s} iter {it:5d}: val loss {val:.4f}  ({seconds + time.perf_counter() - resumed:.0f} s)")
        if it == iters:
            break
        lr = lr_at(it, E2E["lr"], E2E["warmup"], iters, E2E["min_lr"])
        if library == "torch":
            for group in optimizer.param_groups:
                group["lr"] = lr
        else:
            optimizer.lr = lr
        x, y = get_batch(train_ids, cfg["batch_size"], cfg["block_size"], rng)
        step(model, optimizer, x, y, grad_clip=E2E["grad_clip"])
    return {"benchmark": "gpt_tiny_shakespeare", "library": library, "iters": iters, "val_loss": curve[-1][1],
            "seconds": seconds + time.perf_counter() - resumed, "curve": curve}


def side_by_side(runs: dict) -> dict:
    """Drive several `training` generators (name -> generator) in turns, so that a change in the machine's speed
    during the minutes they take affects them alike. Returns name -> result."""
    results, active = {}, dict(runs)
    while active:
        for name, run_ in list(active.items()):
            try:
                next(run_)
            except StopIteration as done:
                results[name] = done.value
                del active[name]
    return results


def train_text(library: str, text_path: str, **kwargs) -> dict:
    "The whole nanoGPT CPU run with one library: the validation loss reached and the wall time."
    return side_by_side({library: training(library, text_path, **kwargs)})[library]


def run(quick: bool = False, e2e: bool = False, text: str = None, iters: int = E2E["iters"],
        eval_every: int = 250) -> list[dict]:
    "The step benchmark (few steps when `quick`); with `e2e`, also the end-to-end run on `text` for each library."
    results = [bench_step(steps=10, warmup=2) if quick else bench_step()]
    if e2e:  # the two runs take turns, 50 iterations each
        libraries = ("tinytorch", "torch") if torch_like_numpy() is not None else ("tinytorch",)
        done = side_by_side({name: training(name, text, iters=iters, eval_every=eval_every) for name in libraries})
        results += [done[name] for name in libraries]
    return results


def report(results: list[dict]) -> str:
    lines = []
    for r in results:
        if r["benchmark"] == "gpt_train_step":
            c = r["config"]
            lines.append(f"GPT training step ({c['num_layers']} layers, {c['num_heads']} heads, "
                         f"width {c['embed_dim']}, context {c['block_size']}, batch {c['batch_size']}, "
                         f"vocab {c['vocab_size']}; {r['parameters']:,} parameters; {r['dtype']}, "
                         f"{r['threads']} threads, median of {r['steps']})")
            libraries = [name for name in ("tinytorch", "torch") if f"{name}_ms" in r]
            lines.append(f"  {'':9s} {'step':>8s}  {'forward':>8s}  {'backward + AdamW':>16s}   (medians, ms)")
            for name in libraries:
                lines.append(f"  {'pytorch' if name == 'torch' else name:9s} {r[f'{name}_ms']:8.1f}  "
                             f"{r[f'{name}_forward_ms']:8.1f}  {r[f'{name}_backward_ms']:16.1f}")
            if "ratio" in r:
                phase_ratios = [r[f"tinytorch_{phase}_ms"] / r[f"torch_{phase}_ms"] for phase in ("forward", "backward")]
                lines.append(f"  ratio     {r['ratio']:8.2f}  {phase_ratios[0]:8.2f}  {phase_ratios[1]:16.2f}   "
                             "(tinytorch / pytorch; step target <= 1.25)")
            else:
                lines.append("  pytorch   not installed: tinytorch measured alone")
        else:
            lines.append(f"{r['library']:9s} {r['iters']} iterations: validation loss {r['val_loss']:.4f} "
                         f"in {r['seconds']:.0f} s")
    return "\n".join(lines)


def print_report(results: list[dict]):
    print(report(results))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer timed steps")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of tinytorch steps")
    parser.add_argument("--e2e", action="store_true", help="also train end to end on --text (minutes)")
    parser.add_argument("--text", default=None, help="text file for --e2e (default: Python stdlib sources)")
    parser.add_argument("--iters", type=int, default=E2E["iters"])
    parser.add_argument("--eval-every", type=int, default=250)
    args = parser.parse_args(argv)
    reuse_freed_memory()  # glibc keeps freed memory for reuse, in this process: both libraries alike
    print_report(run(args.quick, args.e2e, args.text, args.iters, args.eval_every))
    if args.profile:
        print(profile_step())


if __name__ == "__main__":
    main()
