"""Pacing: a source whose rows arrive at a fixed rate in wall-clock time, as from a live producer.

``Paced(source, rate)`` releases the rows of ``source`` no faster than ``rate`` per second. Row
``i`` (counted from where the read started) is *due* at ``t0 + (i + 1) / rate``. A read waits
until at least a small chunk of rows is due (``rate`` times ``TICK_S``, at least one row) and
then takes every row that is due, up to the end of the wrapped source's batch: an engine that
falls behind gets larger batches and can catch up, one that keeps up gets a chunk per tick.

Each released batch carries the due time of its last row (``arrival``): the moment its newest
row became available, which is the ingestion time latency is measured from. A run that cannot
keep up reads rows later than they were due, and that wait counts in their latency.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

from darwin.errors import PlanError
from darwin.io.source import Source, read_from

TICK_S = 0.01  # a paced source releases rows at most this often while the engine keeps up
ARRIVAL_KEY = b"darwin.arrival"  # schema metadata of a released batch: its last row's due time


def arrival(batch: pa.RecordBatch) -> float | None:
    """When the newest row of a paced batch was due (``time.perf_counter`` seconds), or None."""
    meta = batch.schema.metadata
    if not meta or ARRIVAL_KEY not in meta:
        return None
    return float(meta[ARRIVAL_KEY])


def checked_rate(rate: Any, where: str) -> float:
    """A rate limit in events per second: a positive, finite number."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 or rate == float("inf"):
        raise PlanError(f"rate_limit of {where} must be a positive number of events per second, got {rate!r}")
    return float(rate)


class Paced:
    """``source`` released at ``rate`` rows per second of wall-clock time (see the module's docstring)."""

    def __init__(self, source: Source, rate: float, clock: Callable[[], float] = time.perf_counter,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.source, self.rate = source, checked_rate(rate, f"source {source.name!r}")
        self.name, self.schema = source.name, source.schema
        self.chunk = max(1, int(self.rate * TICK_S))
        self.clock, self.sleep = clock, sleep

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.batches_from(columns, batch_size, 0)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From row ``offset`` of the wrapped source; the pace starts with this read."""
        started: float | None = None
        released = 0  # rows released so far by this read
        for batch in read_from(self.source, columns, batch_size, offset):
            if batch.num_rows == 0:  # an idle source's empty batch: nothing to pace
                yield batch
                continue
            at = 0
            while at < batch.num_rows:
                now = self.clock()
                if started is None:
                    started = now
                due_now = int((now - started) * self.rate) - released  # rows already due
                take = min(batch.num_rows - at, max(self.chunk, due_now))
                last_due = started + (released + take) / self.rate
                if last_due > now:
                    self.sleep(last_due - now)
                released += take
                part = batch.slice(at, take)
                at += take
                yield part.replace_schema_metadata({**(part.schema.metadata or {}), ARRIVAL_KEY: repr(last_due)})

    def bounds(self, column: str) -> tuple[int, int] | None:
        bounds = getattr(self.source, "bounds", None)
        return None if bounds is None else bounds(column)

    def __repr__(self) -> str:
        return f"Paced({self.source!r}, {self.rate:g}/s)"
