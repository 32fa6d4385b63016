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
