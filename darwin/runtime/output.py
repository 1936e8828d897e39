"""What an engine yields while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

T = TypeVar("T", pa.Table, pa.RecordBatch)


@dataclass(frozen=True)
class Output:
    """A batch of query results (``kind`` 'result'), of late input rows ('late'), or a barrier
    ('barrier', no batch): every input row so far is accounted for and state is consistent.
    ``ingested``: the ingestion time (``time.perf_counter()``) results' latency is measured from."""

    kind: str
    batch: pa.RecordBatch | None
    ingested: float | None = None

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
            self._changelog = with_inserts(self.table)
        return self._changelog

    def __repr__(self) -> str:
        return f"RunResult({self.table.num_rows} rows, metrics={self.metrics})"


def with_inserts(rows: T) -> T:
    """An append-only result's rows (a table or a batch) as changes: column ``op``, all +I."""
    kinds = pa.DictionaryArray.from_arrays(pa.array(np.zeros(rows.num_rows, np.int8)), ["+I"]).cast(pa.string())
    return rows.append_column(pa.field("op", pa.string(), nullable=False), kinds)


def final_table(changelog: pa.Table, op_column: str = "op") -> pa.Table:
    """The table a changelog ends in: each -U/-D removes the latest equal row still present (NaN
    equal to NaN, NULL to NULL, other floats bit for bit: a retraction repeats the row emitted,
    so -0.0 retracts -0.0 and never another row's 0.0)."""
    data = changelog.drop_columns([op_column])
    if changelog.num_rows == 0:
        return data
    ops = pc.is_in(changelog.column(op_column), pa.array(["+I", "+U"])).to_numpy(zero_copy_only=False)
    added, _ = _net(data, ops)
    return data.filter(pa.array(added, pa.bool_()))


def net_changes(changes: pa.Table, key: tuple[str, ...] | None) -> pa.Table:
    """The changes ``changes`` (with the integer column ``CHANGE_KIND``) add up to, fewest first:
    the rows they retract that they did not add, then the rows they add that they did not retract;
    where a ``key`` pairs a retracted with an added row, the pair is -U/+U, otherwise -D or +I.
    Rows keep the order of the changes that left them standing."""
    from darwin.plan.nodes import CHANGE_KIND, ChangeKind

    if changes.num_rows == 0:
        return changes
    kinds = changes.column(CHANGE_KIND).to_numpy()
    data = changes.drop_columns([CHANGE_KIND])
    added, retracted = _net(data, np.isin(kinds, (ChangeKind.INSERT, ChangeKind.UPDATE_AFTER)))
    gone, came = np.flatnonzero(retracted), np.flatnonzero(added)
    paired_gone = np.zeros(len(gone), np.bool_)
    paired_came = np.zeros(len(came), np.bool_)
    if key is not None and len(gone) and len(came):
        ids = _groups(data.select(list(key)))
        paired_gone, paired_came = np.isin(ids[gone], ids[came]), np.isin(ids[came], ids[gone])
    rows = np.concatenate([gone, came])
    out = np.concatenate([np.where(paired_gone, ChangeKind.UPDATE_BEFORE, ChangeKind.DELETE),
                          np.where(paired_came, ChangeKind.UPDATE_AFTER, ChangeKind.INSERT)]).astype(np.int64)
    result = data.take(pa.array(rows))
    return result.append_column(changes.schema.field(CHANGE_KIND), pa.array(out))


def _net(data: pa.Table, adds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a changelog (``adds``: whether each change adds its row): whether it is an
    addition no later change takes back, and whether it is a retraction of a row the changelog
    did not add.

    Equal rows are numbered into groups; within a group, in changelog order, a retraction cancels
    the latest addition before it not yet cancelled, like a closing bracket its opening one. An
    addition survives when the running count of its group (additions minus retractions) never
    falls below its own count after it; a retraction is left over when the count reaches a new low.
    """
    n = data.num_rows
    sign = np.where(adds, 1, -1).astype(np.int64)
    group = _groups(data)
    order = np.lexsort([np.arange(n), group])  # by group, then changelog order
    g, s = group[order], sign[order]
    first = np.r_[True, g[1:] != g[:-1]]
    count = np.cumsum(s)
    count -= np.repeat(count[first] - s[first], np.diff(np.r_[np.flatnonzero(first), n]))  # per group
    big = np.int64(2 * n + 2)  # above any count: groups never mix in the running minimum
    shifted = count + g * big
    later_min = np.minimum.accumulate(shifted[::-1])[::-1]  # minimum from here to the group's end
    last = np.r_[g[1:] != g[:-1], True]
    after = np.where(last, np.iinfo(np.int64).max, np.r_[later_min[1:], 0])
    down = count - g * big  # later groups lower: a running minimum never carries into a later group
    before = np.r_[np.iinfo(np.int64).max, np.minimum.accumulate(down)[:-1]]
    earlier_min = np.minimum(0, np.where(first, 0, before + g * big))  # lowest count before this change
    adds_left, retractions_left = (s > 0) & (after >= shifted), (s < 0) & (count < earlier_min)
    # a row both retracted (one that stood before) and added again cancels out: drop as many of each
    groups = int(g.max()) + 1
    both = np.minimum(np.bincount(g, adds_left, groups), np.bincount(g, retractions_left, groups)).astype(np.int64)
    added, retracted = np.zeros(n, np.bool_), np.zeros(n, np.bool_)
    added[order] = adds_left & (_nth(g, adds_left) >= both[g])
    retracted[order] = retractions_left & (_nth(g, retractions_left) >= both[g])
    return added, retracted


def _nth(g: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per position (sorted by group ``g``): how many ``mask`` positions of its group come before it."""
    ones = mask.astype(np.int64)
    total = np.cumsum(ones) - ones
    first = np.r_[True, g[1:] != g[:-1]]
    return total - np.repeat(total[first], np.diff(np.r_[np.flatnonzero(first), len(g)]))


def _groups(data: pa.Table) -> np.ndarray:
    """A number per row, equal for equal rows."""
    n = data.num_rows
    parts = [bits for column in data.columns for bits in _row_bits(column)]
    matrix = np.stack(parts, axis=1) if parts else np.zeros((n, 1), np.int64)
    return np.unique(matrix, axis=0, return_inverse=True)[1].ravel()


def _row_bits(column: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """A column as int64 components equal exactly where its values are (see ``final_table``)."""
    array = column.combine_chunks()
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    t = array.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_dictionary(t):
        codes = array.dictionary_encode().indices if not pa.types.is_dictionary(t) else array.indices
        values = codes.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    elif pa.types.is_floating(t):
        x = array.fill_null(0).to_numpy(zero_copy_only=False).astype(np.float64)
        values = np.where(np.isnan(x), np.int64(0x7FF8000000000000), x.view(np.int64))
    else:
        values = array.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False) \
            if not pa.types.is_boolean(t) else array.fill_null(False).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(valid, values, 0), valid.astype(np.int64)
