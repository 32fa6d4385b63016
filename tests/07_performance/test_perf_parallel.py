"""parallel_map: results in order, every piece exactly once, real concurrency at two threads, BLAS held to one thread
inside and restored after, errors reach the caller; chunk_slices cover a range."""
import threading

import numpy as np
import pytest

from tinytorch.perf import threads as perf_threads

pytestmark = pytest.mark.exercise("drain")


@pytest.fixture
def two_threads(monkeypatch):
    monkeypatch.setattr(perf_threads, "num_threads", lambda: 2)


def test_results_come_back_in_order_on_any_thread_count(monkeypatch):
    for threads in (1, 2, 3):
        monkeypatch.setattr(perf_threads, "num_threads", lambda: threads)
        assert perf_threads.parallel_map(lambda x: x * x, range(7)) == [x * x for x in range(7)]
        assert perf_threads.parallel_map(lambda x: x, []) == []


def test_every_piece_runs_exactly_once_and_none_after_the_return(two_threads):
    lock, calls = threading.Lock(), []

    def piece(i):
        with lock:
            calls.append(i)
        return i
    for _ in range(200):
        calls.clear()
        assert perf_threads.parallel_map(piece, range(5)) == list(range(5))
        assert sorted(calls) == list(range(5))
    threading.Event().wait(0.05)
    assert sorted(calls) == list(range(5))


def test_two_threads_run_at_once(two_threads):
    barrier = threading.Barrier(2, timeout=10)           # passes only if both pieces run at the same time
    names = perf_threads.parallel_map(lambda _: (barrier.wait(), threading.current_thread().name)[1], range(2))
    assert len(set(names)) == 2


def test_one_thread_runs_serially_in_the_caller(monkeypatch):
    monkeypatch.setattr(perf_threads, "num_threads", lambda: 1)
    assert perf_threads.parallel_map(lambda _: threading.current_thread().name, range(3)) == \
        [threading.current_thread().name] * 3


def test_a_free_thread_takes_the_next_piece_so_a_slow_piece_holds_up_no_other(two_threads):
    started = threading.Event()

    def piece(i):
        if i == 0:
            started.set()
            threading.Event().wait(0.3)
        else:
            started.wait(10)
        return threading.current_thread().name
    names = perf_threads.parallel_map(piece, range(8))
    assert len(set(names[1:])) == 1 and names[0] not in names[1:], names


def test_an_error_in_a_piece_reaches_the_caller_and_the_rest_stop(two_threads):
    def piece(i):
        if i == 1:
            raise ValueError("piece 1 failed")
        return i
    with pytest.raises(ValueError, match="piece 1 failed"):
        perf_threads.parallel_map(piece, range(50))


def test_blas_is_one_thread_inside_and_restored_after(two_threads):
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl is not installed (.venv/bin/pip install -e '.[course]')")
    blas = perf_threads._blas()
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        inside = perf_threads.parallel_map(lambda _: max(lib.num_threads for lib in blas.lib_controllers), range(2))
        assert inside == [1, 1]
        assert max(lib.num_threads for lib in blas.lib_controllers) == 2
        with pytest.raises(ZeroDivisionError):
            perf_threads.parallel_map(lambda i: 1 / i, range(3))
        assert max(lib.num_threads for lib in blas.lib_controllers) == 2


@pytest.mark.parametrize("size, chunk", [(0, 4), (3, 4), (8, 4), (10, 4), (2 ** 18 + 1, 2 ** 18)])
def test_chunk_slices_cover_the_range_in_order(size, chunk):
    pieces = perf_threads.chunk_slices(size, chunk)
    covered = np.concatenate([np.arange(size)[s] for s in pieces]) if pieces else np.array([], int)
    assert np.array_equal(covered, np.arange(size)) and all(s.stop - s.start <= chunk for s in pieces)
