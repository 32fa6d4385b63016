"""Attention speed and memory: tinytorch against PyTorch, side by side in one process.

1. Forward + backward of `scaled_dot_product_attention` against `torch.nn.functional.scaled_dot_product_attention`
   on the same float32 inputs (batch 4, 4 heads, head width 32, n = 64 ... 1024 queries and keys), with the same
   number of threads for numpy's BLAS and for PyTorch. Each size is timed as the median of repeats (at least half
   a second of them per library), one library after the other, and reported as a ratio (tinytorch / PyTorch).
2. Peak memory of forward + backward of plain attention against `memory_efficient_attention` at n = 8192, d = 64
   (one head, float32), measured with tracemalloc (numpy reports its allocations to it), next to the size of the
   n x n score matrix that the plain op must hold.

    python benchmarks/bench_attention.py            # both tables
    python benchmarks/bench_attention.py --quick    # fewer sizes and repeats, memory at n = 2048

`run(quick=False)` returns the results as a list of dicts. Without PyTorch installed, tinytorch is measured alone.
"""
from __future__ import annotations

import tinytorch  # noqa: F401  (before numpy: it shortens OpenBLAS's idle-thread spin; see its __init__)

import argparse
import statistics
import time
import tracemalloc

import numpy as np

from tinytorch.core.attention import memory_efficient_attention, scaled_dot_product_attention
from tinytorch.core.tensor import Tensor, reuse_freed_memory

from threads import threads, torch_like_numpy

SPEED = dict(batch=4, heads=4, head_dim=32, sizes=(64, 128, 256, 512, 1024))
MEMORY = dict(n=8192, head_dim=64, block_size=512)


# --- 1. speed ----------------------------------------------------------------------------------------------------
def _ours(arrays):
    "One forward + backward of our attention on fresh leaves; returns the seconds it took."
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


def _repeat(call, repeats: int, min_seconds: float = 0.5) -> list:
    "Timings of call() after one warm-up call: at least `repeats` of them, and at least `min_seconds` in all."
    call()
    times = []
    while len(times) < repeats or sum(times) < min_seconds:
        times.append(call())
    return times


def speed(sizes, repeats: int, torch=None, rounds: int = 5) -> list[dict]:
    rows = []
    for n in sizes:
        shape = (SPEED["batch"], SPEED["heads"], n, SPEED["head_dim"])
        rng = np.random.default_rng(n)
        arrays = [rng.standard_normal(shape, dtype=np.float32) for _ in range(4)]   # Q, K, V, upstream gradient
        tensors = [torch.from_numpy(a) for a in arrays] if torch else None
        # The libraries take turns in `rounds` blocks of calls, so that a change in the machine's speed during the
        # measurement affects both alike. Not call by call: PyTorch's OpenMP threads spin for a while after each
        # call, and numpy's BLAS threads starting then would compete with them.
        ours, theirs = [], []
        for _ in range(rounds):
            ours += _repeat(lambda: _ours(arrays), -(-repeats // rounds), min_seconds=0.5 / rounds)
            if torch:
                theirs += _repeat(lambda: _theirs(torch, tensors), -(-repeats // rounds), min_seconds=0.5 / rounds)
        row = dict(benchmark="attention forward+backward", dtype="float32", batch=SPEED["batch"],
                   heads=SPEED["heads"], head_dim=SPEED["head_dim"], n=n, threads=threads(),
                   tinytorch_ms=1e3 * statistics.median(ours))
        if torch:
            row["torch_ms"] = 1e3 * statistics.median(theirs)
            row["ratio"] = row["tinytorch_ms"] / row["torch_ms"]
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


def memory(n: int, head_dim: int, block_size: int) -> dict:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((1, 1, n, head_dim), dtype=np.float32) for _ in range(4)]

    def step(attention):
        def run():
            Q, K, V = (Tensor(a, requires_grad=True) for a in arrays[:3])
            attention(Q, K, V).backward(arrays[3])
        return run

    plain = _peak_bytes(step(lambda Q, K, V: scaled_dot_product_attention(Q, K, V)[0]))
    tiled = _peak_bytes(step(lambda Q, K, V: memory_efficient_attention(Q, K, V, block_size=block_size)))
    mib = 2 ** 20
    return dict(benchmark="attention peak memory (forward+backward)", dtype="float32", n=n, head_dim=head_dim,
                block_size=block_size, scores_mib=n * n * 4 / mib, plain_mib=plain / mib,
                memory_efficient_mib=tiled / mib, saving=plain / tiled)


# --- report ------------------------------------------------------------------------------------------------------
def run(quick: bool = False) -> list[dict]:
    "Both benchmarks; `quick` uses n up to 512, fewer repeats and the memory comparison at n = 2048."
    torch = torch_like_numpy()
    sizes = SPEED["sizes"][:-1] if quick else SPEED["sizes"]
    rows = speed(sizes, repeats=5 if quick else 15, torch=torch)
    rows.append(memory(2048 if quick else MEMORY["n"], MEMORY["head_dim"], MEMORY["block_size"]))
    return rows


def print_report(rows: list[dict]):
    speed_rows = [r for r in rows if r["benchmark"].startswith("attention forward")]
    first = speed_rows[0]
    print(f"scaled dot-product attention, forward + backward, float32, batch {first['batch']}, {first['heads']} heads, "
          f"head width {first['head_dim']}, {first['threads']} thread(s), median ms")
    print(f"{'n':>6} {'tinytorch':>10} {'torch':>10} {'ratio':>7}")
    for r in speed_rows:
        torch_ms = f"{r['torch_ms']:10.2f}" if "torch_ms" in r else f"{'-':>10}"
        ratio = f"{r['ratio']:7.2f}" if "ratio" in r else f"{'-':>7}"
        print(f"{r['n']:>6} {r['tinytorch_ms']:10.2f} {torch_ms} {ratio}")
    for r in rows:
        if r["benchmark"].startswith("attention peak memory"):
            print(f"\npeak memory of forward + backward at n = {r['n']}, d = {r['head_dim']} (one head, float32):")
            print(f"  n x n score matrix        {r['scores_mib']:9.1f} MiB")
            print(f"  plain attention           {r['plain_mib']:9.1f} MiB")
            print(f"  memory-efficient (block {r['block_size']}) {r['memory_efficient_mib']:6.1f} MiB"
                  f"   ({r['saving']:.0f}x less)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats; memory at n = 2048")
    args = parser.parse_args(argv)
    reuse_freed_memory()  # glibc keeps freed memory for reuse, in this process: both libraries alike
    print_report(run(quick=args.quick))


if __name__ == "__main__":
    main()
