"""What an engine yields while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


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


def final_table(changelog: pa.Table, op_column: str = "op") -> pa.Table:
    """The table a changelog ends in: each -U/-D removes the latest equal row still present (NaN
    equal to NaN, -0.0 to 0.0, NULL to NULL).

    Equal rows are numbered into groups; within a group, in changelog order, a retraction cancels
    the latest insert before it not yet cancelled, like a closing bracket its opening one. An
    insert survives when the running count of its group (inserts minus retractions) never falls
    below its own count after it.
    """
    data = changelog.drop_columns([op_column])
    n = changelog.num_rows
    if n == 0:
        return data
    ops = pc.is_in(changelog.column(op_column), pa.array(["+I", "+U"])).to_numpy(zero_copy_only=False)
    sign = np.where(ops, 1, -1).astype(np.int64)
    parts = [bits for column in data.columns for bits in _row_bits(column)]
    matrix = np.stack(parts, axis=1) if parts else np.zeros((n, 1), np.int64)
    group = np.unique(matrix, axis=0, return_inverse=True)[1].ravel()
    order = np.lexsort([np.arange(n), group])  # by group, then changelog order
    g, s = group[order], sign[order]
    first = np.r_[True, g[1:] != g[:-1]]
    count = np.cumsum(s)
    count -= np.repeat(count[first] - s[first], np.diff(np.r_[np.flatnonzero(first), n]))  # per group
    big = np.int64(2 * n + 2)  # above any count: groups never mix in the running minimum
    shifted = count + g * big
    later_min = np.minimum.accumulate(shifted[::-1])[::-1]  # minimum from here to the group's end
    after = np.r_[later_min[1:], np.iinfo(np.int64).max]
    last = np.r_[g[1:] != g[:-1], True]
    after = np.where(last, np.iinfo(np.int64).max, after)
    keep = np.zeros(n, np.bool_)
    keep[order] = (s > 0) & (after >= shifted)
    return data.filter(pa.array(keep, pa.bool_()))


def _row_bits(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A column as int64 components equal exactly where its values are (see ``final_table``)."""
    array = column.combine_chunks()
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_dictionary(t):
        codes = array.dictionary_encode().indices if not pa.types.is_dictionary(t) else array.indices
        values = codes.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    elif pa.types.is_floating(t):
        x = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64) + 0.0
        values = np.where(np.isnan(x), np.int64(0x7FF8000000000000), x.view(np.int64))
    else:
        values = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False) \
            if not pa.types.is_boolean(t) else array.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(valid, values, 0), valid.astype(np.int64)
