"""Every benchmark in one run, tinytorch beside PyTorch, reported as ratios and written to a results file.

    python benchmarks/run.py                                   # GPT step, attention speed, attention memory
    python benchmarks/run.py --quick                           # the same, shorter
    python benchmarks/run.py --e2e --text /path/to/tinyshakespeare.txt   # plus the 2000-iteration training run

Results go to `benchmarks/results/latest.json` (or `--out`), with the machine, library versions and thread counts.
Without PyTorch installed, tinytorch is measured alone and the report says so.
"""
from __future__ import annotations

import tinytorch  # noqa: F401  (before numpy: it shortens OpenBLAS's idle-thread spin; see its __init__)

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import bench_attention  # noqa: E402  (sibling scripts, not a package)
import bench_gpt  # noqa: E402
from threads import threads, torch_like_numpy  # noqa: E402

import tinytorch  # noqa: E402
from tinytorch.core.tensor import reuse_freed_memory  # noqa: E402


def machine() -> dict:
    "What the figures were measured on."
    torch = torch_like_numpy()  # the thread count the benchmarks give it
    torch_version, torch_threads = (torch.__version__, torch.get_num_threads()) if torch else (None, None)
    return dict(date=time.strftime("%Y-%m-%d %H:%M %Z"), platform=platform.platform(),
                processor=platform.processor() or platform.machine(), cores=os.cpu_count(),
                python=platform.python_version(), numpy=np.__version__, tinytorch=tinytorch.__version__,
                torch=torch_version, numpy_blas_threads=threads(), torch_threads=torch_threads,
                openblas_thread_timeout=os.environ.get("OPENBLAS_THREAD_TIMEOUT"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, sizes and repeats")
    parser.add_argument("--e2e", action="store_true", help="also the end-to-end training run on --text (minutes)")
    parser.add_argument("--text", default=None, help="text for --e2e (default: Python standard-library sources)")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "latest.json"))
    args = parser.parse_args(argv)

    info = dict(machine(), reuse_freed_memory=reuse_freed_memory())  # the allocator setting, for both libraries
    print(f"machine: {info['platform']}, {info['cores']} cores; python {info['python']}, numpy {info['numpy']} "
          f"({info['numpy_blas_threads']} BLAS threads), torch {info['torch'] or 'not installed'}"
          + (f" ({info['torch_threads']} threads)" if info["torch"] else ""))
    if info["torch"] is None:
        print("PyTorch is not installed (pip install -e '.[oracle]'): tinytorch is measured alone.")
    print()
    gpt = bench_gpt.run(quick=args.quick, e2e=args.e2e, text=args.text)
    bench_gpt.print_report(gpt)
    print()
    attention = bench_attention.run(quick=args.quick)
    bench_attention.print_report(attention)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(dict(machine=info, quick=args.quick, results=gpt + attention), indent=1, default=float))
    print(f"\nresults written to {out}")


if __name__ == "__main__":
    main()
