"""Each path in its own worker process, the workers taking turns in blocks.

Module 07 can change process-wide settings (glibc's allocator thresholds, `perf.reuse_freed_memory()`), and PyTorch keeps threads of
its own; in one process, each path would change how fast the others run. So every path runs in a worker of its
own, started with "spawn" (a fresh interpreter with this one's environment and sys.path), and the workers take turns:
the parent asks one worker for one block, waits for it, then asks the next; the order reverses every block. Only
one worker works at any time, and a change in the machine's speed falls on all of them alike.

A worker is built in the worker process by `factory(path)`, where `factory` is a top-level function (or a
`functools.partial` of one, for more arguments). It returns a generator, which runs one block per `next()` and
returns its result at the end, or a function, which runs one block per call. Before the factory is called, the
worker sets its path up for its whole life: the fast kernels on for "fast" (`kernel_paths.running`), PyTorch at
numpy's thread count for "torch"; "plain" touches nothing.

    done = take_turns({path: functools.partial(steps, n=100) for path in paths})
    done["plain"].result, done["plain"].peak_mib
"""
from __future__ import annotations

import inspect
import multiprocessing
import signal
import time
import traceback
from dataclasses import dataclass, field

from kernel_paths import TORCH, running
from threads import torch_like_numpy

SETTLE = 0.02  # seconds between turns, for the last worker's spinning threads (OpenMP, BLAS) to go to sleep
MEMORY_MISSING = "peak memory not measured: it needs Linux's /proc/self/clear_refs and /proc/self/status"


class WorkerError(RuntimeError):
    "A worker failed; the message carries its traceback."


@dataclass
class Turns:
    "What one worker did: each block's value, the generator's result, and its peak memory (None where unknown)."
    blocks: list = field(default_factory=list)
    result: object = None
    peak_mib: float | None = None


# --- memory, in the worker -----------------------------------------------------------------------------------------
_baseline = {"kib": None}


def _status_kib(name: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(name + ":"))


def mark():
    "Count memory from here: the resident memory now is the baseline, and the peak (VmHWM) starts again from it."
    try:
        with open("/proc/self/clear_refs", "w") as clear_refs:
            clear_refs.write("5")
        rss = _status_kib("VmRSS")
        _baseline["kib"] = rss if _status_kib("VmHWM") <= rss + 1024 else None   # None: the reset did nothing
    except (OSError, StopIteration):
        _baseline["kib"] = None


def peak_mib() -> float | None:
    "The most resident memory since `mark()`, beyond what was resident then, in MiB; None where it is unknown."
    return None if _baseline["kib"] is None else max(0, _status_kib("VmHWM") - _baseline["kib"]) / 1024


# --- the worker ----------------------------------------------------------------------------------------------------
def _calls(block):
    while True:
        yield block()


def _work(conn, path: str, factory):
    "The worker process: set `path` up, build the work, then run a block each time the parent asks."
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle: it stops every worker
    try:
        with running(path):
            if path == TORCH:
                torch_like_numpy()
            mark()
            work = factory(path)
            work = work if inspect.isgenerator(work) else _calls(work)
            conn.send(("ready", None, None))
            while conn.recv():
                try:
                    value = next(work)
                except StopIteration as finished:
                    conn.send(("done", finished.value, peak_mib()))
                    return
                conn.send(("block", value, peak_mib()))
    except EOFError:       # the parent is gone
        pass
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc(), None))
        except OSError:
            pass


class Worker:
    "One path's worker process, and the pipe to it."

    def __init__(self, path: str, factory):
        context = multiprocessing.get_context("spawn")
        self.path = path
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=_work, args=(theirs, path, factory), name=f"{path} worker", daemon=True)
        self.process.start()
        theirs.close()

    def receive(self) -> tuple:
        "The worker's next message (kind, value, peak MiB); its failure as a WorkerError."
        try:
            kind, value, peak = self.conn.recv()
        except EOFError:
            self.process.join(5)
            raise WorkerError(f"the {self.path} worker died (exit code {self.process.exitcode})") from None
        if kind == "error":
            raise WorkerError(f"the {self.path} worker failed:\n{value}")
        return kind, value, peak

    def block(self) -> tuple:
        "Run one block: ('block', value, peak) or, when the generator has finished, ('done', result, peak)."
        self.conn.send(True)
        return self.receive()

    def stop(self):
        "Ask the worker to finish; end it if it does not within a second."
        try:
            self.conn.send(False)
        except OSError:
            pass
        self.process.join(1)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def take_turns(factories: dict, blocks: int | None = None) -> dict:
    """Run each path's work (path -> factory) in a worker of its own, one block at a time, the order reversed every
    block: `blocks` blocks each, or (blocks=None) until every generator has finished. Returns path -> Turns.
    Every worker is set up before the first block; every worker is stopped at the end, also after an error."""
    workers = {}
    try:
        for path, factory in factories.items():
            workers[path] = Worker(path, factory)
        for worker in workers.values():
            worker.receive()
        done = {path: Turns() for path in workers}
        active, turn = list(workers), 0
        while active and (blocks is None or turn < blocks):
            for path in list(active if turn % 2 == 0 else reversed(active)):
                time.sleep(SETTLE)
                kind, value, done[path].peak_mib = workers[path].block()
                if kind == "done":
                    done[path].result = value
                    active.remove(path)
                else:
                    done[path].blocks.append(value)
            turn += 1
        return done
    finally:
        for worker in workers.values():
            worker.stop()
