"""Every benchmark in one run: tinytorch's plain path, its fast path (modules 07 and 08) and PyTorch side by side, each in its
own process, the processes taking turns in blocks (turns.py); reported as ratios and written to a results file.

    python benchmarks/run.py                                   # GPT step, attention speed, attention memory
    python benchmarks/run.py --quick                           # the same, shorter
    python benchmarks/run.py --e2e --text /path/to/tinyshakespeare.txt   # plus the 2000-iteration training run
    python benchmarks/run.py --allocators reuse                # one allocator setting only (kernel_paths.ALLOCATORS)

Every benchmark runs once per allocator setting: glibc's malloc as processes start, and freed memory reused in every
path's process alike (module 07's `reuse_freed_memory()`; measured only where module 08 is exported, on Linux).

Results go to `benchmarks/results/latest.json` (or `--out`), with the machine, library versions and thread counts;
every figure is keyed by its path (`plain_ms`, `fast_ms`, `torch_ms`, `fast_ratio`, `plain_peak_mib`, ...). Without tinytorch.perf the
fast columns say "module 08 not exported"; without PyTorch, tinytorch is measured alone and the report says so.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import bench_attention  # noqa: E402  (sibling scripts, not a package)
import bench_gpt  # noqa: E402
from kernel_paths import ALLOCATORS, allocator, can_reuse_freed_memory, fast_missing, tinytorch_paths  # noqa: E402
from threads import THREAD_VARIABLES, threads, torch_like_numpy  # noqa: E402

import tinytorch  # noqa: E402


def machine() -> dict:
    "What the figures were measured on, and which paths there were to measure."
    torch = torch_like_numpy()  # the thread count the benchmarks give it
    torch_version, torch_threads = (torch.__version__, torch.get_num_threads()) if torch else (None, None)
    return dict(date=time.strftime("%Y-%m-%d %H:%M %Z"), platform=platform.platform(),
                processor=processor(), cores=os.cpu_count(),
                python=platform.python_version(), numpy=np.__version__, tinytorch=tinytorch.__version__,
                torch=torch_version, numpy_blas_threads=threads(), torch_threads=torch_threads,
                thread_variables={name: os.environ[name] for name in THREAD_VARIABLES if name in os.environ},
                paths=tinytorch_paths() + (["torch"] if torch else []), fast_missing=fast_missing() or None,
                fast_threads=None if fast_missing() else _fast_threads())


VECTOR_UNITS = ("avx512f", "avx2", "avx", "neon", "asimd")  # the widest first: what a compiled loop can use


def processor() -> str:
    """The processor's model name, family and model numbers and widest vector unit (Linux's /proc/cpuinfo: "AMD EPYC
    (family 25, model 1, avx2)"; one model name covers processors with and without AVX-512), else what `platform`
    knows."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            fields = dict(line.split(":", 1) for line in cpuinfo.read().split("\n\n")[0].splitlines() if ":" in line)
    except OSError:
        fields = {}
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    name = fields.get("model name")
    if not name:
        return platform.processor() or platform.machine()
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    details = [f"family {fields['cpu family']}" if "cpu family" in fields else None,
               f"model {fields['model']}" if "model" in fields else None,
               next((unit for unit in VECTOR_UNITS if unit in flags), None)]
    return f"{name} ({', '.join(d for d in details if d)})" if any(details) else name


def compile_seconds() -> dict | None:
    """Seconds `tinytorch.perf.warm_up()` takes in a fresh process: with an empty numba cache (compiling every loop
    for float32 and float64), then again with the cache that run left on disk. None without numba or module 08."""
    if fast_missing():
        return None
    probe = "import json, tinytorch.perf as p; print(json.dumps(p.warm_up() if p.numba else None))"
    seconds = {}
    with tempfile.TemporaryDirectory() as cache:
        for when in ("first", "cached"):
            run = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, NUMBA_CACHE_DIR=cache),
                                 capture_output=True, text=True, check=True)
            by_op = json.loads(run.stdout)
            if by_op is None:
                return None
            seconds[when] = sum(by_op.values())
    return seconds


def _fast_threads():
    "How many threads the fast kernels use, when its tinytorch.perf says so."
    import tinytorch.perf as perf
    return perf.num_threads() if hasattr(perf, "num_threads") else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, sizes and repeats")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: only checks that everything runs")
    parser.add_argument("--e2e", action="store_true", help="also the end-to-end training run on --text (minutes)")
    parser.add_argument("--text", default=None, help="text for --e2e (default: Python standard-library sources)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "latest.json"))
    parser.add_argument("--allocators", default=",".join(ALLOCATORS),
                        help=f"comma-separated allocator settings to measure under: {', '.join(ALLOCATORS)}")
    args = parser.parse_args(argv)
    settings = [s for s in args.allocators.split(",") if s]
    unknown = [s for s in settings if s not in ALLOCATORS]
    if unknown or not settings:
        parser.error(f"--allocators: choose from {', '.join(ALLOCATORS)} (got {args.allocators!r})")

    info = machine()
    print(f"machine: {info['platform']}, {info['cores']} cores; python {info['python']}, numpy {info['numpy']} "
          f"({info['numpy_blas_threads']} BLAS threads), torch {info['torch'] or 'not installed'}"
          + (f" ({info['torch_threads']} threads)" if info["torch"] else ""))
    fast = info["fast_missing"] or "modules 07 and 08, tinytorch.perf.enable()" + (
        f", {info['fast_threads']} threads" if info["fast_threads"] else "")
    print(f"paths: plain (modules 01-06); fast ({fast}); "
          + ("pytorch" if info["torch"] else "pytorch not installed (pip install -e '.[course]'): tinytorch alone"))
    info["compile_seconds"] = None if args.smoke else compile_seconds()
    if info["compile_seconds"]:
        print(f"fast path's compiled loops (numba): {info['compile_seconds']['first']:.1f} s to compile, "
              f"{info['compile_seconds']['cached']:.2f} s to load from the disk cache in a new process")
    results = []
    for setting in settings:
        print(f"\nallocator: {ALLOCATORS[setting]}")
        if setting == "reuse" and not can_reuse_freed_memory():
            print("  not measured: it needs module 08 exported and glibc (Linux)")
            continue
        with allocator(setting):
            gpt = bench_gpt.run(quick=args.quick, e2e=args.e2e, text=args.text, smoke=args.smoke)
            bench_gpt.print_report(gpt)
            print()
            attention = bench_attention.run(quick=args.quick, smoke=args.smoke)
            bench_attention.print_report(attention)
        results += [dict(r, allocator=setting) for r in gpt + attention]

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(machine=info, quick=args.quick, smoke=args.smoke, results=results),
                              indent=1, default=float))
    print(f"\nresults written to {out}")


if __name__ == "__main__":
    main()
