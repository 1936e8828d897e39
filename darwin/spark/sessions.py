"""Session windows on Spark as Darwin merges them.

Spark's ``session_window`` merges all of a key's rows at once; Darwin merges them as they arrive
and fires a session once the watermark passes its end, so a row that arrives after its session
fired opens a new one, or is late. Each row is judged by its source's watermark just after it
(``JUDGED``: the greater of ``MARK`` and ``BEFORE``), as Darwin judges a source's rows.

A key whose rows arrive in time order (each row's time at least every earlier row's, in arrival
order ``SEQ``) has one open session at most, ending at the previous row's time + gap: a row opens
a new session when it is past that end, or when that end is at or below the watermark it is judged
by (``JUDGED``: the session fired), and is late when its own end is. That is window functions and an
aggregation, in the JVM. The other keys' rows (out of order) are replayed in Python in arrival
order: the reference interpreter's rule, row by row, with the aggregate registry's accumulators.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from darwin.plan import nodes as pn
from darwin.plan.aggregates import function
from darwin.spark.exprs import column, to_spark
from darwin.spark.sources import BEFORE, MARK, SEQ

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

TIME = "__dw_time"
DISORDER, SESSION = "__dw_disorder", "__dw_session"
JUDGED = "__dw_judged"  # the watermark a row is judged by: its source's just after it
LATE = "__dw_late"  # the replay's count of a key's late rows, on a row of its own (NULL on a session's)


def sessions(df: DataFrame, node: pn.SessionAggregate, aggs: list[Column],
             counting_late: Callable[[DataFrame, Column], DataFrame], in_order: bool = False) -> DataFrame:
    """One row per session of each key: its bounds, the keys, the aggregates (``aggs``, Spark's
    aggregates of ``node.aggs``) and its first ``SEQ``; ``counting_late`` counts the rows dropped as
    late. ``in_order``: the source says its times never decrease in arrival order, so no key needs the
    replay (nor the check for it)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    keys = [column(k) for k in node.keys]
    t, gap = column(node.window.on), node.window.gap_ms
    by_key = Window.partitionBy(*keys) if keys else Window.partitionBy()
    arrival = by_key.orderBy(column(SEQ))
    timed = df.filter(t.isNotNull())  # a row without a time is in no session (Darwin skips it)
    timed = timed.withColumn(JUDGED, F.greatest(column(MARK), column(BEFORE)))
    late = t + gap <= column(JUDGED)  # in time order, a row meets no open session once its own end closed
    if in_order:
        ordered = counting_late(timed, late).filter(~late)
    else:
        earlier = F.max(t).over(arrival.rowsBetween(Window.unboundedPreceding, -1))
        timed = timed.withColumn(DISORDER, F.coalesce((t < earlier).cast("int"), F.lit(0)))
        timed = timed.withColumn(DISORDER, F.max(column(DISORDER)).over(by_key))
        in_time_order = column(DISORDER) == 0
        ordered = counting_late(timed.filter(in_time_order), late).filter(~late)
    previous = F.lag(t).over(arrival)
    opens = previous.isNull() | (t > previous + gap) | (previous + gap <= column(JUDGED))
    ordered = ordered.withColumn(SESSION, F.sum(opens.cast("bigint")).over(
        arrival.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    native = ordered.groupBy(*keys, column(SESSION)).agg(
        F.min(t).alias(pn.WINDOW_START), (F.max(t) + gap).alias(pn.WINDOW_END), *aggs, F.min(SEQ).alias(SEQ))
    native = native.select(*[column(f.name) for f in node.schema.fields], column(SEQ))
    if in_order:
        return native
    replayed = _replayed(timed.filter(column(DISORDER) == 1), node)
    # a key's late rows come as a row of their count (no session): counted, then left out
    replayed = counting_late(replayed, column(LATE))
    return native.unionByName(replayed.filter(column(LATE).isNull()).drop(LATE))


def _replayed(df: DataFrame, node: pn.SessionAggregate) -> DataFrame:
    """The sessions of keys whose rows arrive out of time order, by a grouped map replaying each key's
    rows in arrival order."""
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = node.input.schema
    args = [(f"__dw_a{i}", call) for i, (_, call) in enumerate(node.aggs)]
    inputs = [column(k) for k in node.keys] + [column(node.window.on).alias(TIME)]
    inputs += [(to_spark(call.input, schema) if call.input is not None else column(SEQ)).alias(name)
               for name, call in args]
    rows = df.select(*inputs, column(SEQ), column(JUDGED))
    out_fields = [pa.field(f.name, pa.int64() if f.dtype.value == "timestamp" else f.dtype.arrow)
                  for f in node.schema.fields] + [pa.field(SEQ, pa.int64()), pa.field(LATE, pa.int64())]
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
        gap, late = self.gap, 0
        for row in rows:
            wm = row[JUDGED]
            fired = [s for s in open_ if s[1] <= wm]
            if fired:
                done += fired
                open_ = [s for s in open_ if s[1] > wm]
            t = row[TIME]
            if t is None:
                continue
            met = [s for s in open_ if s[0] <= t + gap and t <= s[1]]
            if not met and t + gap <= wm:
                late += 1
                continue
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
        # a float key as Spark's and Darwin's grouping give it: -0.0 and 0.0 are one group, 0.0 (the grouped
        # map hands the rows over as they are, so the first row's -0.0 was the key)
        key_values = [_grouped(rows[0][k]) for k in self.keys] if rows else []
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
            columns[LATE].append(None)
        if late:
            for name in self.out.names:
                columns[name].append(late if name == LATE else None)
        return pa.table([pa.array(columns[f.name], f.type) for f in self.out], schema=self.out)


def _grouped(value: Any) -> Any:
    """A group key's value as grouping gives it: a float zero is 0.0 (-0.0 + 0.0 is 0.0)."""
    return value + 0.0 if isinstance(value, float) else value
