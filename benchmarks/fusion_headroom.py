"""What fusing two ops of the GPT step could save at most: the work a fused op would no longer do separately.

A fused op replaces two ops the model calls one after the other, so the model (module 06's block and MLP) would call
it instead. Before asking that of the course, this measures the upper bound at the GPT's sizes, on the fast path:

- bias + GELU: `fast_linear`'s pass adding the bias, and the column sum that makes the bias's gradient (one MLP,
  four a step), which one compiled loop per direction could take over;
- residual + LayerNorm: the residual addition as an op (eight a step), which a LayerNorm loop could do on its way in;
- the Python around one op, on a one-element tensor (a fused op saves one op and one gradient rule).

    python benchmarks/fusion_headroom.py

Each is timed with module 07's `perf.compare` (alternating blocks, median), with freed memory reused. The bound
leaves out what the fused loops would add (reading the bias, summing columns in the backward loop).
"""
from __future__ import annotations

import argparse

import numpy as np

from bench_gpt import CONFIG
from tinytorch.core.tensor import Tensor


def headroom(cfg=CONFIG, blocks: int = 7, calls: int = 50) -> dict:
    """{part: seconds per call} and {"per step": seconds}: the upper bound of what the two fused ops would save in one
    training step of the GPT of `cfg` (its MLP is 4 × embed_dim wide)."""
    from tinytorch import perf  # modules 07 and 08: a workspace before them has no fast path to measure
    from tinytorch.perf.numpy_kernels import _column_sum

    rng = np.random.default_rng(0)
    rows, width = cfg["batch_size"] * cfg["block_size"], cfg["embed_dim"]
    pre_activation = rng.normal(size=(rows, 4 * width)).astype(np.float32)
    bias = rng.normal(size=4 * width).astype(np.float32)
    out = np.empty_like(pre_activation)
    x, delta = (Tensor(rng.normal(size=(rows, width)).astype(np.float32), requires_grad=True) for _ in range(2))
    one, other = (Tensor(np.ones(1, np.float32), requires_grad=True) for _ in range(2))
    with perf.enabled():
        timings = perf.compare({
            "bias pass": lambda: np.add(pre_activation, bias, out=out),
            "bias gradient's column sum": lambda: _column_sum(pre_activation),
            "residual addition (op)": lambda: x + delta,
            "Python around one op": lambda: one + other,
        }, blocks=blocks, calls=calls)
    seconds = {name: t.median for name, t in timings.items()}
    layers, op = cfg["num_layers"], seconds["Python around one op"]
    bias_gelu = layers * (seconds["bias pass"] + seconds["bias gradient's column sum"] + 2 * op)
    residual_norm = 2 * layers * (seconds["residual addition (op)"] + 2 * op)
    return seconds | {"bias + GELU, per step": bias_gelu, "residual + LayerNorm, per step": residual_norm,
                      "both, per step": bias_gelu + residual_norm}


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)
    from tinytorch import perf

    perf.reuse_freed_memory()  # this process's setting, as in the benchmarks' `reuse` runs
    for name, s in headroom().items():
        print(f"  {name:34s} {s * 1e6:8.1f} us")


if __name__ == "__main__":
    main()
