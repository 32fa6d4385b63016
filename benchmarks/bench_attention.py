"""Attention speed and memory: tinytorch's plain path, its fast path (modules 07 and 08) and PyTorch, side by side, each in
its own process (turns.py).

1. Forward + backward of `scaled_dot_product_attention` against `torch.nn.functional.scaled_dot_product_attention`
   on the same float32 inputs (batch 4, 4 heads, head width 32, n = 64 ... 1024 queries and keys), with the same
   number of threads for numpy's BLAS and for PyTorch. At each size the processes take turns in blocks of repeats
   (at least half a second of them per path in all); each is the median of its repeats, and its ratio to PyTorch's.
2. Peak memory of forward + backward at n = 8192, d = 64 (one head, float32): plain attention on each tinytorch path,
   and `memory_efficient_attention`, measured with tracemalloc (numpy reports its allocations to it; memory that a
   compiled kernel allocates outside numpy is not seen), each in a fresh process, next to the size of the n x n score
   matrix.

    python benchmarks/bench_attention.py            # both tables
    python benchmarks/bench_attention.py --quick    # fewer sizes and repeats, memory at n = 2048

`run(quick=False)` returns the results as a list of dicts. Without tinytorch.perf's switch (module 08) the fast path is
reported as not exported; without PyTorch, tinytorch is measured alone.
"""
from __future__ import annotations

import argparse
import functools
import statistics
import time
import tracemalloc

import numpy as np

from tinytorch.core.attention import memory_efficient_attention, scaled_dot_product_attention
from tinytorch.core.tensor import Tensor

from kernel_paths import FAST, LABELS, PLAIN, TORCH, fast_missing, tinytorch_paths
from threads import threads, torch_like_numpy
from turns import take_turns

SPEED = dict(batch=4, heads=4, head_dim=32, sizes=(64, 128, 256, 512, 1024))
MEMORY = dict(n=8192, head_dim=64, block_size=512)


# --- 1. speed ----------------------------------------------------------------------------------------------------
def _ours(arrays):
    "One forward + backward of tinytorch's attention (on the path switched on) on fresh leaves; the seconds it took."
    Q, K, V = (Tensor(a, requires_grad=True) for a in arrays[:3])
    start = time.perf_counter()
    out, _ = scaled_dot_product_attention(Q, K, V)
    out.backward(arrays[3])
    return time.perf_counter() - start


def _theirs(torch, tensors):
    "One forward + backward of PyTorch's attention on fresh leaves; returns the seconds it took."
    Q, K, V = (t.detach().requires_grad_() for t in tensors[:3])
    start = time.perf_counter()
    out = torch.nn.functional.scaled_dot_product_attention(Q, K, V)
    out.backward(tensors[3])
    return time.perf_counter() - start


def _inputs(shape, seed: int) -> list:
    "Q, K, V and the upstream gradient: the same float32 numbers in every process."
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]


def _repeat(call, repeats: int, min_seconds: float = 0.5) -> list:
    "Timings of call() after one warm-up call: at least `repeats` of them, and at least `min_seconds` in all."
    call()
    times = []
    while len(times) < repeats or sum(times) < min_seconds:
        times.append(call())
    return times


def timing(path: str, sizes, repeats: int, rounds: int, min_seconds: float):
    """In `path`'s worker: the seconds of each forward + backward at each size, in `rounds` blocks per size (one per
    turn), at least `repeats` and `min_seconds` of them in all."""
    torch = torch_like_numpy() if path == TORCH else None
    times = {}
    for n in sizes:
        arrays = _inputs((SPEED["batch"], SPEED["heads"], n, SPEED["head_dim"]), seed=n)
        if torch:
            call = functools.partial(_theirs, torch, [torch.from_numpy(a) for a in arrays])
        else:
            call = functools.partial(_ours, arrays)
        times[n] = []
        for _ in range(rounds):
            times[n] += _repeat(call, -(-repeats // rounds), min_seconds=min_seconds / rounds)
            yield
    return times


def speed(sizes, repeats: int, torch=None, rounds: int = 5, paths=None, min_seconds: float = 0.5) -> list[dict]:
    """A row per size: each path's median milliseconds and its ratio to PyTorch's. `paths`: the tinytorch paths
    (default: plain, and fast when module 08 is exported); PyTorch is measured when `torch` is given.

    Each path runs in its own process, and at each size the processes take turns in `rounds` blocks of calls, so
    that a change in the machine's speed affects all alike. Not call by call: PyTorch's OpenMP threads spin for a
    while after each call, and numpy's BLAS threads starting then would compete with them."""
    paths = list(paths or tinytorch_paths()) + ([TORCH] if torch else [])
    work = functools.partial(timing, sizes=list(sizes), repeats=repeats, rounds=rounds, min_seconds=min_seconds)
    done = take_turns(dict.fromkeys(paths, work))
    rows = []
    for n in sizes:
        row = dict(benchmark="attention forward+backward", dtype="float32", batch=SPEED["batch"],
                   heads=SPEED["heads"], head_dim=SPEED["head_dim"], n=n, threads=threads(), paths=paths)
        if FAST not in paths and fast_missing():
            row["fast_missing"] = fast_missing()
        for path in paths:
            row[f"{path}_ms"] = 1e3 * statistics.median(done[path].result[n])
        for path in paths:
            if path != TORCH and TORCH in paths:
                row[f"{path}_ratio"] = row[f"{path}_ms"] / row["torch_ms"]
        rows.append(row)
    return rows


# --- 2. memory ---------------------------------------------------------------------------------------------------
def _peak_bytes(fn) -> int:
    "The most memory numpy held at once, beyond what was held before, while fn() ran."
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def peak(path: str, n: int, head_dim: int, block_size: int, tiled: bool = False):
    """In `path`'s worker: a function giving the peak MiB of one forward + backward of attention at n x head_dim,
    memory-efficient attention when `tiled`."""
    arrays = _inputs((1, 1, n, head_dim), seed=0)

    def forward_backward():
        Q, K, V = (Tensor(a, requires_grad=True) for a in arrays[:3])
        if tiled:
            out = memory_efficient_attention(Q, K, V, block_size=block_size)
        else:
            out, _ = scaled_dot_product_attention(Q, K, V)
        out.backward(arrays[3])
    return lambda: _peak_bytes(forward_backward) / 2 ** 20


def memory(n: int, head_dim: int, block_size: int, paths=None) -> dict:
    """Peak MiB of forward + backward: plain attention on each tinytorch path, and memory-efficient attention (on
    the plain path), each in a fresh process."""
    paths = list(paths or tinytorch_paths())
    sizes = dict(n=n, head_dim=head_dim, block_size=block_size)
    whole = take_turns({path: functools.partial(peak, **sizes) for path in paths}, blocks=1)
    tiled = take_turns({PLAIN: functools.partial(peak, **sizes, tiled=True)}, blocks=1)
    row = dict(benchmark="attention peak memory (forward+backward)", dtype="float32", n=n, head_dim=head_dim,
               block_size=block_size, scores_mib=n * n * 4 / 2 ** 20, paths=paths)
    if FAST not in paths and fast_missing():
        row["fast_missing"] = fast_missing()
    for path in paths:
        row[f"{path}_mib"] = whole[path].blocks[0]
    row["memory_efficient_mib"] = tiled[PLAIN].blocks[0]
    return row


# --- report ------------------------------------------------------------------------------------------------------
def run(quick: bool = False, smoke: bool = False) -> list[dict]:
    """Both benchmarks on every path; `quick` uses n up to 512, fewer repeats and the memory comparison at n = 2048;
    `smoke` tiny sizes, only to check that it runs."""
    torch = torch_like_numpy()
    if smoke:
        rows = speed((8, 16), repeats=2, torch=torch, rounds=2, min_seconds=0)
        return rows + [memory(64, 8, 16)]
    sizes = SPEED["sizes"][:-1] if quick else SPEED["sizes"]
    rows = speed(sizes, repeats=5 if quick else 15, torch=torch)
    rows.append(memory(2048 if quick else MEMORY["n"], MEMORY["head_dim"], MEMORY["block_size"]))
    return rows


def report(rows: list[dict]) -> str:
    speed_rows = [r for r in rows if r["benchmark"].startswith("attention forward")]
    lines = []
    if speed_rows:
        first = speed_rows[0]
        lines.append(f"scaled dot-product attention, forward + backward, float32, batch {first['batch']}, "
                     f"{first['heads']} heads, head width {first['head_dim']}, {first['threads']} thread(s); "
                     "median ms, and ratios to pytorch")
        lines.append(f"  {'':14s}" + "".join(f"{'n=' + str(r['n']):>9s}" for r in speed_rows))
        rows_of = [(LABELS[path], f"{path}_ms", path) for path in (PLAIN, FAST, TORCH)]
        if "torch_ms" in first:
            rows_of += [(f"{LABELS[path]}/pytorch", f"{path}_ratio", path) for path in (PLAIN, FAST)]
        for label, key, path in rows_of:
            if key in first:
                lines.append(f"  {label:14s}" + "".join(f"{r[key]:9.2f}" for r in speed_rows))
            elif path == FAST:
                lines.append(f"  {label:14s} {first.get('fast_missing', 'not measured')}")
            else:
                lines.append(f"  {label:14s} not installed: tinytorch measured alone")
    for r in rows:
        if r["benchmark"].startswith("attention peak memory"):
            lines.append(f"\npeak memory of forward + backward at n = {r['n']}, d = {r['head_dim']} "
                         "(one head, float32; numpy's allocations):")
            lines.append(f"  {'n x n score matrix':30s}  {r['scores_mib']:9.1f} MiB")
            for path in (PLAIN, FAST):
                value = f"{r[f'{path}_mib']:9.1f} MiB" if f"{path}_mib" in r else r.get("fast_missing", "not measured")
                lines.append(f"  {'attention, ' + LABELS[path] + ' path':30s}  {value}")
            tiled = f"memory-efficient (block {r['block_size']})"
            lines.append(f"  {tiled:30s}  {r['memory_efficient_mib']:9.1f} MiB"
                         f"   ({r['plain_mib'] / r['memory_efficient_mib']:.0f}x less than plain)")
    return "\n".join(lines)


def print_report(rows: list[dict]):
    print(report(rows))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats; memory at n = 2048")
    args = parser.parse_args(argv)
    print_report(run(quick=args.quick))


if __name__ == "__main__":
    main()
