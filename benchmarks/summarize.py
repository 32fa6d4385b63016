"""Several runs of `run.py` as one table: each figure's median over the runs, with the lowest and highest.

    python benchmarks/summarize.py benchmarks/results/run*.json          # a markdown table
    python benchmarks/summarize.py --json OUT benchmarks/results/run*.json

A figure to quote is the median of at least five runs, with its spread (docs/PERFORMANCE.md).
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

FIGURES = ("_ms", "ratio", "_mib", "seconds", "val_loss")  # the endings of the names of numbers to summarise


def _key(result: dict) -> str:
    """A name for one benchmark of a run, the same in every run: 'gpt_train_step', 'attention n=256', 'e2e plain',
    followed by its allocator setting when the run says it: 'gpt_train_step, reuse'."""
    if "n" in result and result["benchmark"].startswith("attention forward"):
        name = f"attention n={result['n']}"
    elif result["benchmark"] == "gpt_tiny_shakespeare":
        name = f"e2e {result['path']}"
    else:
        name = result["benchmark"]
    return f"{name}, {result['allocator']}" if "allocator" in result else name


def collect(paths: list[Path]) -> dict:
    "{benchmark: {figure: [value of each run]}} over the result files, plus the machine of the first."
    series, machine = {}, None
    for path in paths:
        run = json.loads(path.read_text())
        machine = machine or run["machine"]
        for result in run["results"]:
            figures = series.setdefault(_key(result), {})
            for name, value in result.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and name.endswith(FIGURES):
                    figures.setdefault(name, []).append(float(value))
    return {"machine": machine, "runs": len(paths), "figures": series}


def summary(collected: dict) -> dict:
    "Each figure as {median, low, high, runs}."
    return {bench: {name: dict(median=statistics.median(v), low=min(v), high=max(v), runs=len(v))
                    for name, v in figures.items()} for bench, figures in collected["figures"].items()}


def table(summarised: dict) -> str:
    lines = ["| benchmark | figure | median | lowest–highest | runs |", "|---|---|---|---|---|"]
    for bench, figures in summarised.items():
        for name, s in figures.items():
            lines.append(f"| {bench} | {name} | {s['median']:.3g} | {s['low']:.3g}–{s['high']:.3g} | {s['runs']} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="also write the summary, with the machine, to this file")
    args = parser.parse_args(argv)
    collected = collect(args.files)
    summarised = summary(collected)
    print(table(summarised))
    if args.json:
        args.json.write_text(json.dumps(dict(machine=collected["machine"], runs=collected["runs"],
                                             figures=summarised), indent=1))


if __name__ == "__main__":
    main()
