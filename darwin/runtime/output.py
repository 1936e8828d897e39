"""What an engine yields while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Output:
    """A batch of query results (``kind`` 'result'), of late input rows ('late'), or a barrier
    ('barrier', no batch): every input row so far is accounted for and state is consistent."""

    kind: str
    batch: pa.RecordBatch | None

    @property
    def rows(self) -> pa.RecordBatch:
        """The batch of a result or of late rows (a barrier has none)."""
        assert self.batch is not None, "a barrier has no rows"
        return self.batch


BARRIER = Output("barrier", None)


class RunResult:
    """What one run produced: the result table, the late rows (if kept) and the run's metrics."""

    def __init__(self, table: pa.Table, late: pa.Table | None, metrics: dict[str, Any],
                 changelog: pa.Table | None = None) -> None:
        self.table, self.late, self.metrics = table, late, metrics
        self._changelog = changelog

    @property
    def changelog(self) -> pa.Table:
        """Every change of the result, with its kind in column ``op``; an append-only result's rows are all +I."""
        if self._changelog is None:
            kinds = pa.DictionaryArray.from_arrays(pa.array([0] * self.table.num_rows, pa.int8()), ["+I"])
            self._changelog = self.table.append_column(pa.field("op", pa.string(), nullable=False),
                                                       kinds.cast(pa.string()))
        return self._changelog

    def __repr__(self) -> str:
        return f"RunResult({self.table.num_rows} rows, metrics={self.metrics})"


_NAN_KEY = object()  # every NaN, as one key


def final_table(changelog: pa.Table, op_column: str = "op") -> pa.Table:
    """The table a changelog ends in: each -U/-D removes the latest equal row still present (NaN
    equal to NaN)."""
    ops = changelog.column(op_column).to_pylist()
    data = changelog.drop_columns([op_column])
    rows = data.to_pylist()
    keep = [True] * len(rows)
    present: dict[tuple, list[int]] = {}
    for i, (kind, row) in enumerate(zip(ops, rows)):
        key = tuple(_NAN_KEY if isinstance(v, float) and v != v else v for v in row.values())
        if kind in ("+I", "+U"):
            present.setdefault(key, []).append(i)
        else:
            keep[i] = False
            stack = present.get(key)
            if stack:
                keep[stack.pop()] = False
    return data.filter(pa.array(keep, pa.bool_()))
