"""How many workers a shared pipeline uses, decided while the job runs.

A pipeline shared by the workers (``darwin.runtime.parallel``) measures the work of each batch it
runs: the seconds its workers were busy, added up. A pipeline whose batches carry much work holds
the whole job back (the sources wait for it: back-pressure), so it gets every worker; one whose
batches carry little idles, and handing a step to the pool and waiting for it costs more than its
share saves, so it gives workers back down to one, which runs on the coordinating thread. The
count moves by one worker at a time and only after ``PATIENCE`` batches agree, so a noisy batch
does not make it swing.

Results cannot change: a stateless pipeline's slices are joined in order, merged window rings are
merged in one thread's order, and pre-aggregated slices' partial entries merge into their owners in
slice order, whatever the number of slices a batch was cut into; rows routed to their key's owner
reach the same owner with the same progress whichever thread runs it (the owners of key groups
keep their state: moving keys between them is a rescale).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

# a batch whose work (seconds, over all workers) is below this runs on one worker: a step on the
# pool costs 80 us with nothing to do, and more while the reading threads hold the GIL between their
# compiled calls; Nexmark q12 and YSB (0.5-0.8 ms of work a batch) ran slower on two workers than on one
SPLIT_WORK_S = 0.002
PATIENCE = 4  # batches in a row that must ask for a change before it is made

_forced: Callable[[int, int], int] | None = None  # tests: (pipeline, batch) -> workers to use


@contextmanager
def force_workers(choose: Callable[[int, int], int]) -> Iterator[None]:
    """Make pipeline ``p`` run its ``b``-th batch on ``choose(p, b)`` workers (clamped to 1..its most):
    a test hook that changes the counts at random to check results do not depend on them."""
    global _forced
    _forced = choose
    try:
        yield
    finally:
        _forced = None


class WorkerShare:
    """The workers one pipeline uses now, between 1 and ``most``."""

    def __init__(self, pipeline: int, most: int) -> None:
        self.pipeline, self.most = pipeline, most
        self.active = most
        self.batches = 0
        self.changes = 0  # how often the count moved
        self._asking = 0  # batches in a row asking to move: > 0 up, < 0 down

    def for_batch(self) -> int:
        """The workers the next batch runs on."""
        if _forced is not None:
            return max(1, min(self.most, _forced(self.pipeline, self.batches)))
        return self.active

    def observe(self, work_seconds: float) -> None:
        """After a batch: its work over every worker; moves the count when enough batches agree."""
        self.batches += 1
        wanted = 1 if work_seconds < SPLIT_WORK_S else self.most
        step = (wanted > self.active) - (wanted < self.active)
        self._asking = self._asking + step if step and (self._asking * step >= 0) else step
        if abs(self._asking) >= PATIENCE:
            self.active += step
            self.changes += 1
            self._asking = 0
