"""An endless source for stop tests: 1,000-row batches of (key, ts), 10 rows per ms of event time,
the same rows on every run (a restart replays them from its checkpointed offset)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa

import darwin as dw

SCHEMA = pa.schema([("key", pa.int64()), ("ts", pa.timestamp("ms"))])
BATCH = 1_000


def batch(i: int) -> pa.RecordBatch:
    rows = np.arange(i * BATCH, (i + 1) * BATCH, dtype=np.int64)
    return pa.RecordBatch.from_arrays([pa.array(rows % 7), pa.array(rows // 10).cast(pa.timestamp("ms"))],
                                      schema=SCHEMA)


def endless(after_batch: Callable[[int], None] = lambda i: None) -> Iterator[pa.RecordBatch]:
    for i in itertools.count():
        yield batch(i)
        after_batch(i)


def counts(source: dw.Table) -> dw.Table:
    return source.window(dw.Tumble("1s", on="ts")).group_by("key").agg(n=dw.count())


def query(after_batch: Callable[[int], None] = lambda i: None) -> dw.Table:
    return counts(dw.from_batches(SCHEMA, lambda: endless(after_batch), time="ts"))


def prefix(rows: int) -> dw.Table:
    """The same query over the first ``rows`` rows only (what a stopped-and-drained job consumed)."""
    assert rows % BATCH == 0
    return counts(dw.from_batches(SCHEMA, lambda: (batch(i) for i in range(rows // BATCH)), time="ts"))
