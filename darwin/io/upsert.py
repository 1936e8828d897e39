"""The latest row per key of a changelog: what an upsert sink commits with each checkpoint.

Changes apply in order: ``+I``/``+U`` write the key's row (the last write wins, as in Flink's
upsert-kafka and JDBC sinks), ``-U``/``-D`` remove it. For a key the plan guarantees unique
(an aggregation's group keys) that is exactly the result's final table, in its order. With a
key the user names, two rows of the result may share it; then a retraction removes the key's
row only if it is the row withdrawn, so withdrawing an overwritten row leaves the newer one.

Rows stay in the Arrow batches they arrived in; a dict maps each key to its row's place, in
the order of the latest writes. ``table`` gathers the rows into one batch, which then replaces
the older ones (the same compaction runs whenever the kept rows outgrow the live ones).

Examples
--------
>>> import pyarrow as pa
>>> s = Snapshot(pa.schema([("k", pa.int64()), ("n", pa.int64())]), ("k",), unique=True)
>>> s.apply(pa.record_batch({"k": [1, 1, 1], "n": [1, 1, 2]}), ["+I", "-U", "+U"])
>>> s.table().to_pylist()
[{'k': 1, 'n': 2}]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

_RETRACTIONS = ("-U", "-D")


class _NaN:
    """NaN as a dict key: every NaN is the same key (float NaN never equals itself)."""

    def __repr__(self) -> str:
        return "nan"


NAN = _NaN()


def key_tuples(batch: pa.RecordBatch | pa.Table, key: tuple[str, ...]) -> list[tuple[Any, ...]]:
    """Each row's key as a hashable tuple: timestamps as int64 milliseconds, NaN as one value."""
    columns = []
    for name in key:
        column = batch.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        values = column.to_pylist()
        if pa.types.is_floating(column.type):
            values = [NAN if v is not None and math.isnan(v) else v for v in values]
        columns.append(values)
    return list(zip(*columns)) if columns else [()] * batch.num_rows


def _row(batch: pa.RecordBatch, i: int) -> tuple[Any, ...]:
    """Row ``i`` with NaN as one value, to compare rows."""
    values = batch.slice(i, 1).to_pylist()[0].values()
    return tuple(NAN if isinstance(v, float) and math.isnan(v) else v for v in values)


class Snapshot:
    """The latest row per ``key`` of the changes applied so far; ``unique``: the plan guarantees
    that no two rows of the result share a key."""

    def __init__(self, schema: pa.Schema, key: tuple[str, ...], unique: bool) -> None:
        self.schema, self.key, self.unique = schema, key, unique
        self._rows: dict[tuple[Any, ...], tuple[int, int]] = {}  # key -> (batch, row), oldest write first
        self._batches: list[pa.RecordBatch] = []
        self._kept = 0  # rows in self._batches

    def __len__(self) -> int:
        return len(self._rows)

    def apply(self, batch: pa.RecordBatch, ops: Sequence[str] | None = None) -> None:
        """Apply the changes ``batch`` (columns of ``schema``), of kinds ``ops`` (all +I if None)."""
        b = len(self._batches)
        self._batches.append(batch)
        self._kept += batch.num_rows
        rows = self._rows
        for i, k in enumerate(key_tuples(batch, self.key)):
            if ops is not None and ops[i] in _RETRACTIONS:
                if k in rows and (self.unique or self._holds(k, batch, i)):
                    del rows[k]
            else:
                rows.pop(k, None)  # a write moves the key to the end: the order of the latest writes
                rows[k] = (b, i)
        if self._kept > 2 * len(rows) + (1 << 16):
            self.table()

    def _holds(self, k: tuple[Any, ...], batch: pa.RecordBatch, i: int) -> bool:
        b, j = self._rows[k]
        return _row(self._batches[b], j) == _row(batch, i)

    def table(self) -> pa.Table:
        """The rows, in the order of their latest writes; the kept batches become this one."""
        if not self._rows:
            self._batches, self._kept = [], 0
            return self.schema.empty_table()
        places = np.fromiter((p for place in self._rows.values() for p in place), np.int64, 2 * len(self._rows))
        starts = np.cumsum([0] + [b.num_rows for b in self._batches[:-1]], dtype=np.int64)
        rows = starts[places[0::2]] + places[1::2]
        table = pa.Table.from_batches(self._batches, self.schema).take(pa.array(rows)).combine_chunks()
        self._batches = [pa.concat_batches(table.to_batches())]  # one batch: a row's place is its index
        self._kept = table.num_rows
        self._rows = dict(zip(self._rows, ((0, i) for i in range(table.num_rows))))
        return table
