"""Session windows on Spark as Darwin merges them: a grouped map over each key's rows in arrival order.

Spark's ``session_window`` merges all of a key's rows at once; Darwin merges them as they arrive
and fires a session once the watermark passes its end, so a row that arrives after its session
fired opens a new one, or is late. Each key's rows are replayed here in arrival order (``SEQ``),
with the watermark each was judged by (``BEFORE``): the reference interpreter's rule, row by row,
and the aggregate registry's accumulators for the values.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pyarrow as pa

from darwin.plan import nodes as pn
from darwin.plan.aggregates import function
from darwin.spark.exprs import column, to_spark
from darwin.spark.sources import BEFORE, SEQ

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

TIME = "__dw_time"


def sessions(df: DataFrame, node: pn.SessionAggregate) -> DataFrame:
    """One row per session of each key: its bounds, the keys, the aggregates and its first ``SEQ``."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = node.input.schema
    args = [(f"__dw_a{i}", call) for i, (_, call) in enumerate(node.aggs)]
    inputs = [column(k) for k in node.keys] + [column(node.window.on).alias(TIME)]
    inputs += [(to_spark(call.input, schema) if call.input is not None else column(SEQ)).alias(name)
               for name, call in args]
    rows = df.select(*inputs, column(SEQ), column(BEFORE))
    out_fields = [pa.field(f.name, pa.int64() if f.dtype.value == "timestamp" else f.dtype.arrow)
                  for f in node.schema.fields] + [pa.field(SEQ, pa.int64())]
    out = pa.schema(out_fields)
    replay = _Replay(node.window.gap_ms, list(node.keys),
                     [(name, call.func, call.input is None) for name, call in args], out)
    keys = [column(k) for k in node.keys]
    grouped = rows.groupBy(*keys) if keys else rows.groupBy()
    def each_key(table: pa.Table) -> pa.Table:  # a plain function: Spark reads its signature
        return replay(table)

    return grouped.applyInArrow(each_key, schema=from_arrow_schema(out))


class _Replay:
    """The per-key replay, picklable (it holds names and numbers only)."""

    def __init__(self, gap: int, keys: list[str], args: list[tuple[str, str, bool]], out: pa.Schema) -> None:
        self.gap, self.keys, self.args, self.out = gap, keys, args, out

    def __call__(self, table: pa.Table) -> pa.Table:
        rows = sorted(table.to_pylist(), key=lambda r: r[SEQ])
        open_: list[list[Any]] = []  # [start, end, first seq, rows]
        done: list[list[Any]] = []
        gap = self.gap
        for row in rows:
            wm = row[BEFORE]
            fired = [s for s in open_ if s[1] <= wm]
            if fired:
                done += fired
                open_ = [s for s in open_ if s[1] > wm]
            t = row[TIME]
            if t is None:
                continue
            met = [s for s in open_ if s[0] <= t + gap and t <= s[1]]
            if not met and t + gap <= wm:
                continue  # late
            if len(met) == 1:  # the common case: the row extends its session (rows come in arrival order)
                s = met[0]
                s[0], s[1] = min(s[0], t), max(s[1], t + gap)
                s[3].append(row)
                open_ = [x for x in open_ if x is not s] + [s]
                continue
            merged = [min([t, *(s[0] for s in met)]), max([t + gap, *(s[1] for s in met)]),
                      min([row[SEQ], *(s[2] for s in met)]),
                      sorted([row, *(r for s in met for r in s[3])], key=lambda r: r[SEQ])]
            open_ = [s for s in open_ if not any(s is m for m in met)] + [merged]
        done += open_
        columns: dict[str, list[Any]] = {name: [] for name in self.out.names}
        key_values = [rows[0][k] for k in self.keys] if rows else []
        for start, end, first, members in done:
            columns[pn.WINDOW_START].append(start)
            columns[pn.WINDOW_END].append(end)
            for k, v in zip(self.keys, key_values):
                columns[k].append(v)
            for (name, func, counts_rows), out_name in zip(self.args, self.out.names[2 + len(self.keys):]):
                acc = function(func).accumulator()
                for r in members:
                    v = 1 if counts_rows else r[name]
                    if v is not None:
                        acc.add(v)
                columns[out_name].append(acc.result())
            columns[SEQ].append(first)
        return pa.table([pa.array(columns[f.name], f.type) for f in self.out], schema=self.out)
