"""The worker threads of a run: compiled kernels release the GIL, so N threads use N cores.

Each batch a pipeline shares is a step: the coordinating thread hands every other worker its part,
runs the first part itself and waits for all of them, so the order results are merged in never
depends on which thread finished first. ``inject_delays`` lets tests stall workers at random to check exactly that.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from darwin.runtime.adaptive import ThreadBudget

T = TypeVar("T")
_delay: Callable[[int], float] | None = None  # seconds worker ``i`` sleeps before its part (tests only)


@contextmanager
def inject_delays(delay: Callable[[int], float]) -> Iterator[None]:
    """Make each worker sleep ``delay(worker)`` seconds before each part it runs (a test hook)."""
    global _delay
    _delay = delay
    try:
        yield
    finally:
        _delay = None


def stall(worker: int) -> None:
    """Sleep as ``inject_delays`` says for ``worker``, if a test asked (before each part a worker
    runs, and each split a reading thread reads)."""
    if _delay is not None:
        time.sleep(_delay(worker))


class WorkerPool:
    """``workers`` threads running one step's parts; the busy time of each is measured."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.busy = [0.0] * workers  # seconds each worker spent in parts
        self.steps = 0
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="darwin-worker") if workers > 1 else None
        self.lock = threading.Lock()  # for what workers share and change: the string pool's formats
        self.budget = ThreadBudget(workers)  # whether the run uses its other threads now (measured)

    def run(self, parts: Sequence[Callable[[], T]], busy: list[float] | None = None) -> list[T]:
        """Every part's result, in the parts' order (part i runs on worker i); each part's seconds are
        also added to ``busy[i]`` (a pipeline's own account), if given."""
        self.steps += 1
        if self._pool is None or len(parts) == 1:
            return [self._timed(i, part, busy) for i, part in enumerate(parts)]
        # the calling thread runs the first part itself instead of waiting idle: one hand-over fewer
        futures = [self._pool.submit(self._timed, i, part, busy) for i, part in enumerate(parts) if i]
        try:
            first = self._timed(0, parts[0], busy)
        except BaseException:
            for f in futures:  # no part outlives its step
                f.exception()
            raise
        return [first, *(f.result() for f in futures)]

    def _timed(self, worker: int, part: Callable[[], T], busy: list[float] | None) -> T:
        stall(worker)
        started = time.perf_counter()
        try:
            return part()
        finally:
            seconds = time.perf_counter() - started
            self.busy[worker % self.workers] += seconds
            if busy is not None:
                busy[worker] += seconds

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
