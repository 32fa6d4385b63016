"""parallel_map and num_threads: results in order, real concurrency at two threads, BLAS held to one thread inside."""
import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from tinytorch.core.tensor import num_threads, parallel_map


def test_num_threads_follows_blas():
    with threadpool_limits(1, user_api="blas"):
        assert num_threads() == 1
    with threadpool_limits(2, user_api="blas"):
        assert num_threads() == 2


def test_results_come_back_in_order_on_any_thread_count():
    for threads in (1, 2):
        with threadpool_limits(threads, user_api="blas"):
            assert parallel_map(lambda x: x * x, range(7)) == [x * x for x in range(7)]
            assert parallel_map(lambda x: x, []) == []


def test_two_threads_run_at_once():
    # Each piece waits for the other at a barrier: that can only pass if both run at the same time.
    barrier = threading.Barrier(2, timeout=10)
    with threadpool_limits(2, user_api="blas"):
        names = parallel_map(lambda _: (barrier.wait(), threading.current_thread().name)[1], range(2))
    assert len(set(names)) == 2


def test_one_thread_runs_serially_in_the_caller():
    with threadpool_limits(1, user_api="blas"):
        assert parallel_map(lambda _: threading.current_thread().name, range(3)) == \
            [threading.current_thread().name] * 3


def test_blas_is_one_thread_inside_and_restored_after():
    with threadpool_limits(2, user_api="blas"):
        assert parallel_map(lambda _: num_threads(), range(2)) == [1, 1]   # so a nested parallel_map is serial
        assert num_threads() == 2


def test_an_error_in_a_piece_reaches_the_caller_and_blas_is_restored():
    def piece(i):
        if i == 1:
            raise ValueError("piece 1 failed")
        return np.ones(3) @ np.ones(3)
    with threadpool_limits(2, user_api="blas"):
        with pytest.raises(ValueError, match="piece 1 failed"):
            parallel_map(piece, range(3))
        assert num_threads() == 2


def test_a_free_thread_takes_the_next_piece_so_a_slow_piece_holds_up_no_other():
    # Piece 0 is slow; whichever thread took it, the other thread runs all the remaining pieces meanwhile
    # (with fixed round-robin shares, the slow thread would still owe pieces 2, 4 and 6 afterwards).
    started = threading.Event()

    def piece(i):
        if i == 0:
            started.set()
            threading.Event().wait(0.3)
        else:
            started.wait(10)
        return threading.current_thread().name
    with threadpool_limits(2, user_api="blas"):
        names = parallel_map(piece, range(8))
    assert len(set(names[1:])) == 1 and names[0] not in names[1:], names


def test_every_piece_runs_exactly_once_and_none_after_the_return():
    lock, calls = threading.Lock(), []

    def piece(i):
        with lock:
            calls.append(i)
        return i
    with threadpool_limits(2, user_api="blas"):
        for _ in range(200):
            calls.clear()
            assert parallel_map(piece, range(5)) == list(range(5))
            assert sorted(calls) == list(range(5))
    threading.Event().wait(0.05)
    assert sorted(calls) == list(range(5))
