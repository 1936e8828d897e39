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
    """Make pipeline ``p`` run its ``b``-th batch on ``choose(p, b)`` workers (clamped to 1..its most),
    and the run's ``ThreadBudget`` use ``choose(-1, b)`` threads after its ``b``-th input batch: a test
    hook that changes the counts at random to check results do not depend on them."""
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

    def for_batch(self, allowed: int | None = None) -> int:
        """The workers the next batch runs on: at most ``allowed`` (the run's ``ThreadBudget``)."""
        if _forced is not None:
            return max(1, min(self.most, _forced(self.pipeline, self.batches)))
        return self.active if allowed is None else max(1, min(self.active, allowed))

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


# the run's probes: batches after a switch left out (the read-ahead queue refills), batches measured
# per setting, batches between probes once decided, and how much faster one thread must be to be chosen
PROBE_SETTLE = 2
PROBE_BATCHES = 6
PROBE_EVERY = 48
PROBE_FIRST = 24  # batches before the first probe: the first ones fill fresh memory and growing tables
MARGIN = 0.03


class ThreadBudget:
    """Whether a run on several workers uses its other threads now, measured end to end.

    A pipeline's own share (``WorkerShare``) sees only its kernel's work; what its other threads cost
    elsewhere it cannot see: reading threads and workers sharing the cores (a run on one worker
    already keeps its reading thread busy beside it), other processes taking them, a step waiting
    for its slowest worker, rows routed by every worker. So the run times its input batches both ways (seconds
    per input row, the loop's whole time: waiting for input, the pipelines, firing, output) and
    keeps the faster: after ``PROBE_FIRST`` batches, then every ``PROBE_EVERY``, a probe runs half of
    ``PROBE_BATCHES`` batches
    as now, ``PROBE_BATCHES`` the other way, and half as now again (so a run slowing down as its
    state grows does not favour either), each part after ``PROBE_SETTLE`` batches left out; one
    thread (every shared pipeline, its firings included, on the coordinating thread) is chosen only
    when it was faster by ``MARGIN``. Neither way changes results (see the module's docstring).
    A source's splits are still read side by side: read one at a time from their threads, YSB ran
    slower than read in order on one (a read-ahead of 2N splits also lags any switch by ~16 batches)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.threads = most
        self.one_thread_batches = 0  # batches run with the other threads given back
        self.batches = 0
        self.probes = 0
        self._plan: list[tuple[int, bool]] = []  # the probe's batches to come: (threads, measured)
        self._held = 0  # batches since the last probe ended
        self._time = {1: [0, 0.0], most: [0, 0.0]}  # rows and seconds measured per setting

    def observe(self, rows: int, seconds: float) -> None:
        """After an input batch: its rows and the seconds the run took over it."""
        if self.most <= 1:
            return
        self.one_thread_batches += self.threads == 1
        self.batches += 1
        if _forced is not None:
            self.threads = max(1, min(self.most, _forced(-1, self.batches)))
            return
        if self._plan:
            threads, measured = self._plan.pop(0)
            if measured:
                self._time[threads][0] += rows
                self._time[threads][1] += seconds
            if self._plan:
                self.threads = self._plan[0][0]
            else:
                self._decide()
            return
        self._held += 1
        if self._held >= (PROBE_EVERY if self.probes else PROBE_FIRST):
            self._probe()

    def _probe(self) -> None:
        now, other = self.threads, 1 if self.threads == self.most else self.most
        half = PROBE_BATCHES // 2

        def part(threads: int, measured: int) -> list[tuple[int, bool]]:
            return [(threads, False)] * PROBE_SETTLE + [(threads, True)] * measured
        self._plan = part(now, half) + part(other, PROBE_BATCHES) + part(now, PROBE_BATCHES - half)
        self._time = {1: [0, 0.0], self.most: [0, 0.0]}
        self.threads = now
        self.probes += 1

    def _decide(self) -> None:
        (one_rows, one_s), (most_rows, most_s) = self._time[1], self._time[self.most]
        faster = one_rows and most_rows and one_s / one_rows < most_s / most_rows * (1 - MARGIN)
        self.threads = 1 if faster else self.most
        self._held = 0
