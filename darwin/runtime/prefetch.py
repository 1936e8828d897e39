"""Read ahead of the compiled loop: a thread decodes the next batches while kernels run, and the
splits of a source are read side by side on threads of their own (``in_order``).

Kernels release the GIL (``nogil=True``) and so does Arrow's Parquet reader, so
reading and computing overlap on two cores. Errors in the reader surface in the
consumer; a consumer that stops early stops the reader.
"""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from darwin.runtime.workers import stall  # the test hook (inject_delays) stalls the split threads too

T = TypeVar("T")
_DONE = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetched(items: Callable[[], Iterable[T]], depth: int) -> Iterator[T]:
    """The items of ``items()``, produced up to ``depth`` ahead by a background thread."""
    if depth <= 0:
        yield from items()
        return
    buffer: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: object) -> bool:
        while not stop.is_set():
            try:
                buffer.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in items():
                if not put(item):
                    return
            put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, which re-raises it
            put(_Failure(e))

    thread = threading.Thread(target=produce, name="darwin-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = buffer.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        thread.join()


def in_order(tasks: Iterable[Callable[[], T]], threads: int, ahead: int) -> Iterator[T]:
    """The results of ``tasks``, run on ``threads`` threads up to ``ahead`` at a time, in the tasks' order.

    A result is handed on only when every task before it has been, so what comes out never depends
    on which thread finished first. Stopping early cancels the tasks not started.
    """
    def run(i: int, task: Callable[[], T]) -> T:
        stall(i % threads)
        return task()

    pool = ThreadPoolExecutor(threads, thread_name_prefix="darwin-split")
    pending: deque[Future[T]] = deque()
    try:
        for i, task in enumerate(tasks):
            pending.append(pool.submit(run, i, task))
            if len(pending) >= ahead:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        for f in pending:
            f.cancel()
        pool.shutdown(wait=True)
