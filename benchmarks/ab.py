"""Is version B's GPT step faster than version A's? Runs alternate between the two, one process each, on this machine.

A machine's speed drifts between processes, so one run per version, or a few runs of one version followed by a
few of the other, cannot tell a 5% change from noise. Here each run measures one version's step as a ratio to
PyTorch's over the same minutes (the two in processes of their own, taking turns in blocks of steps), and the
versions take turns run by run; the medians of the ratios are compared.
Each version runs its best path (`bench_gpt.ab_step`): the fast path (`tinytorch.perf`, modules 07 and 08) when it has one,
else its plain ops. The report says which path each version ran.

    python benchmarks/ab.py HEAD~1 HEAD                  # two commits, six runs each
    python benchmarks/ab.py main WORKTREE --runs 8       # WORKTREE: the working tree as it is, uncommitted changes too

A commit is checked out into a temporary git worktree; the package and the benchmarks are imported from there (they
must not import anything the commit does not ship). Environment variables of the runs can be set as usual, for both versions alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_ONE = """
import json, sys
sys.path[:0] = [{tree!r}, {tree!r} + "/benchmarks"]
import tinytorch
assert tinytorch.__file__.startswith({tree!r}), tinytorch.__file__
import bench_gpt
print(json.dumps(bench_gpt.ab_step(steps={steps})))
"""


def run_once(tree: str, steps: int) -> dict:
    "One bench_step run of the package in `tree`, in a fresh process: its ratio and times."
    code = RUN_ONE.format(tree=tree, steps=steps)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tree)
    if done.returncode != 0:
        raise SystemExit(f"ab: the run in {tree} failed:\n{done.stderr.strip()}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def compare(trees: dict, runs: int, steps: int, log=print) -> dict:
    "Alternate runs of each version (name -> source tree), `runs` each; returns name -> list of results."
    results = {name: [] for name in trees}
    for i in range(runs):
        order = list(trees) if i % 2 == 0 else list(reversed(trees))   # neither version always goes first
        for name in order:
            r = run_once(trees[name], steps)
            results[name].append(r)
            log(f"run {i + 1} {name:>10}: {r['tinytorch_ms']:6.1f} ms, ratio {r['ratio']:.3f} ({r['path']} path)")
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a", help="a commit, or WORKTREE for the working tree")
    parser.add_argument("b", help="a commit, or WORKTREE for the working tree")
    parser.add_argument("--runs", type=int, default=6, help="runs of each version (default 6)")
    parser.add_argument("--steps", type=int, default=100, help="timed steps per run (default 100)")
    args = parser.parse_args(argv)
    if args.a == args.b:
        raise SystemExit("ab: give two different versions")
    try:
        import torch  # noqa: F401
    except ImportError:
        raise SystemExit("ab: compares ratios to PyTorch, which is not installed (pip install -e '.[course]')")
    with tempfile.TemporaryDirectory(prefix="tinytorch-ab-") as tmp:
        trees, worktrees = {}, []
        for rev in (args.a, args.b):
            if rev == "WORKTREE":
                trees[rev] = str(REPO)
                continue
            path = os.path.join(tmp, f"{len(worktrees)}")
            subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", path, rev], check=True)
            worktrees.append(path)
            trees[rev] = path
        try:
            results = compare(trees, args.runs, args.steps)
        finally:
            for path in worktrees:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", path], check=False)
    print()
    for name, rs in results.items():
        ratios = [r["ratio"] for r in rs]
        paths = sorted({r["path"] for r in rs})
        print(f"{name:>10}: median ratio {statistics.median(ratios):.3f}  ({', '.join(paths)} path; "
              f"runs: {', '.join(f'{x:.2f}' for x in ratios)})")


if __name__ == "__main__":
    main()
