"""A source's rows with an event-time column computed from each row's own values: Flink's
``ts AS TO_TIMESTAMP(s)`` with ``WATERMARK FOR ts``, the commonest DDL of a Flink job reading text or
epoch numbers.

Darwin keeps event time and the watermark where a source's rows are read (a reader's clock, the
kernel's progress, the interpreter's marks, Spark's hidden columns, checkpoints), from a column the
source has. So the column is computed there: ``ComputedTime`` wraps the connector's source and adds
it to every batch, by the reference evaluator (``darwin.plan.evaluate``: the semantics every engine
follows), once per distinct combination of the values it reads in a batch. Everything else a reader
asks of a source (its position for checkpoints, its lag, its splits) is the wrapped source's, whose
rows these are one for one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from darwin.io.source import Source, Split, SplitSource, read_from
from darwin.plan.evaluate import compile_expr
from darwin.plan.exprs import ExprNode, columns_of
from darwin.reference.interpreter import rows_of
from darwin.types import DType, Field, Schema

# what a reader may ask of a source beyond its batches; the rows are the wrapped source's, one for one
FORWARDED = frozenset({"position_at", "resume", "lag", "close", "checkpointed", "bounded", "splittable", "splits"})


class ComputedTime:
    """``source`` with a TIMESTAMP column ``column`` computed from each row by ``expr``."""

    def __init__(self, source: Source, column: str, expr: ExprNode) -> None:
        self.source, self.column = source, column
        self.name = source.name
        self.schema = Schema(source.schema.fields + (Field(column, DType.TIMESTAMP, True),))
        self.reads = tuple(c for c in source.schema.names if c in columns_of(expr))
        self.evaluate = compile_expr(expr, source.schema)

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        for batch in self.source.batches(self._read(columns), batch_size):
            yield self._with_time(batch, columns)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        for batch in read_from(self.source, self._read(columns), batch_size, offset):
            yield self._with_time(batch, columns)

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        source = self.source
        assert isinstance(source, SplitSource)  # only asked where the source has splits (``FORWARDED``)
        return [self._with_time(b, columns) for b in source.read_split(split, self._read(columns), batch_size)]

    def bounds(self, column: str) -> tuple[int, int] | None:
        bounds = getattr(self.source, "bounds", None)
        return None if bounds is None or column == self.column else bounds(column)

    def __getattr__(self, name: str) -> Any:
        if name in FORWARDED:
            return getattr(self.__dict__["source"], name)
        raise AttributeError(name)

    def _read(self, columns: tuple[str, ...]) -> tuple[str, ...]:
        """The wrapped source's columns a read of ``columns`` needs: those asked for and what the time reads."""
        wanted = set(columns) - {self.column} | set(self.reads) if self.column in columns else set(columns)
        return tuple(c for c in self.source.schema.names if c in wanted)

    def _with_time(self, batch: pa.RecordBatch, columns: tuple[str, ...]) -> pa.RecordBatch:
        """``batch`` as ``columns``, the time computed once per distinct value of what it reads."""
        if self.column not in columns:
            return batch
        inputs = pa.RecordBatch.from_arrays([batch.column(c) for c in self.reads], names=list(self.reads))
        rows = rows_of(inputs, self.source.schema.select(self.reads), self.name)
        seen: dict[tuple, Any] = {}
        times = []
        for row in rows:
            key = tuple(row.values())
            if key not in seen:
                seen[key] = self.evaluate(row)
            times.append(seen[key])
        arrays = {name: batch.column(name) for name in batch.schema.names}
        arrays[self.column] = pa.array(times, pa.int64()).cast(pa.timestamp("ms"))
        return pa.RecordBatch.from_arrays([arrays[c] for c in columns], names=list(columns))

    def __repr__(self) -> str:
        return f"ComputedTime({self.source!r}, {self.column!r})"
