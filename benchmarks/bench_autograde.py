"""Autograding throughput: submissions per minute for a class of generated submissions of one module, graded one
at a time and N at a time (`tito nbgrader autograde --jobs N`), each in its sandbox; the scores must not depend on N.
It drives the `tito` command as an instructor does, in a temporary copy of the course.

    python benchmarks/bench_autograde.py                          # 60 submissions of module 01, --jobs 1 and 2
    python benchmarks/bench_autograde.py --count 12 --jobs 1 2 4 --rounds 2 --no-sandbox

The class is what students hand in: complete notebooks, untouched releases and (when tests/nbgrader/bug_catalogue.py
is there) each catalogued bug in turn. The job counts take turns
(1, 2, then 2, 1 in the next round), and each figure is a whole class's wall time. The machine's load is printed: on a
shared machine, compare figures from one run only.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parents[1]
TITO = [sys.executable, "-m", "tito"]


def tito(course: Path, *args) -> str:
    "Run `tito ARGS` in `course` as an instructor would; its output, or the run's error and output as an exit."
    done = subprocess.run([*TITO, *args], cwd=course, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tito {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def _bugs(number: str) -> list:
    "The catalogued bugs of the module: (grade_id, old, new) edits of its solution cells; none without a catalogue."
    sys.path.insert(0, str(REPO / "tests" / "nbgrader"))
    try:
        from bug_catalogue import BUGS
    except ImportError:
        return []
    return [(b.grade_id, b.old, b.new) for b in BUGS.get(number, [])]


def _handed_in(solution, release, edit=None):
    "The release notebook with every solution cell filled in from `solution` (after one `edit`, a student's bug)."
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in solution.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    if edit:
        grade_id, old, new = edit
        answers[grade_id] = answers[grade_id].replace(old, new)
    nb = nbformat.from_dict(release)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("solution"):
            c.source = answers[c.metadata["nbgrader"]["grade_id"]]
    return nb


def make_class(course: Path, number: str, count: int, inbox: Path) -> list[str]:
    "Write `count` submissions of module `number` to `inbox`: complete, untouched and buggy ones in turn; collect them."
    [folder] = (course / "modules").glob(f"{number}_*")
    tito(course, "nbgrader", "generate", number)
    notebook = f"{folder.name}/{folder.name}.ipynb"
    solution, release = (nbformat.read(course / where / notebook, as_version=4) for where in ("modules", "release"))
    kinds = [("complete", None), ("untouched", "release"), *((f"bug{i}", bug) for i, bug in enumerate(_bugs(number)))]
    inbox.mkdir(parents=True)
    students = []
    for i in range(count):
        kind, edit = kinds[i % len(kinds)]
        nb = release if edit == "release" else _handed_in(solution, release, edit)
        sid = f"s{i:03d}-{kind}"
        nbformat.write(nb, inbox / f"{sid}.ipynb")
        students.append(sid)
    tito(course, "nbgrader", "collect", str(inbox), "--assignment", number)
    return students


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", default="01")
    parser.add_argument("--count", type=int, default=60, help="submissions in the class")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2], help="job counts to compare")
    parser.add_argument("--rounds", type=int, default=1, help="how many times each job count grades the class")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--no-sandbox", action="store_true", help="grade without the sandbox (trusted code only)")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="tito-bench-autograde-"))
    try:
        course = tmp / "course"
        course.mkdir()
        for name in ("settings.ini", "pyproject.toml", "modules"):
            (shutil.copytree if (REPO / name).is_dir() else shutil.copy2)(REPO / name, course / name)
        students = make_class(course, args.module, args.count, tmp / "inbox")
        print(f"{platform.node()}: {os.cpu_count()} CPUs, {platform.python_version()}, load average "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}; module {args.module}, "
              f"{len(students)} submissions, {'no sandbox' if args.no_sandbox else 'sandboxed'}", flush=True)
        seconds = {jobs: [] for jobs in args.jobs}
        results = {}
        grade = ["nbgrader", "autograde", args.module, "--timeout", str(args.timeout)]
        for r in range(args.rounds):
            for jobs in (args.jobs if r % 2 == 0 else list(reversed(args.jobs))):
                started = time.perf_counter()
                tito(course, *grade, "--jobs", str(jobs), *(["--no-sandbox"] if args.no_sandbox else []))
                seconds[jobs].append(time.perf_counter() - started)
                results[jobs] = tito(course, "nbgrader", "report", args.module, "--details")  # the scores and why
                print(f"  round {r + 1}, --jobs {jobs}: {seconds[jobs][-1]:.1f} s "
                      f"({60 * len(students) / seconds[jobs][-1]:.1f} submissions/min)", flush=True)
        base = args.jobs[0]
        same = all(results[j] == results[base] for j in args.jobs)
        print(f"\n{'jobs':>4}  {'submissions/min (each round)':<32}  vs --jobs {base}")
        for jobs in args.jobs:
            rates = [60 * len(students) / s for s in seconds[jobs]]
            ratio = min(seconds[base]) / min(seconds[jobs])
            print(f"{jobs:>4}  {', '.join(f'{x:.1f}' for x in rates):<32}  {ratio:.2f}x")
        print(f"scores identical for every job count: {same}; load average now "
              f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        return 0 if same else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
