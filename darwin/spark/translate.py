"""A logical plan as PySpark DataFrame operations: one more plan visitor (DESIGN §7).

Bounded sources run as one batch job whose answer is Darwin's *final table*: what ``collect``
returns. Updating nodes (aggregations without a window, top-N, deduplication, OVER, outer
joins) are translated into the table their changes end in; every node above an updating one
reads that table, which is all Darwin's retractions leave of it.

What Darwin decides by arrival order and watermarks comes from the hidden columns of
``darwin.spark.sources``: ties rank by ``SEQ``; a windowed aggregation or top-N drops a row whose
windows ended by ``MARK``; session and join operators judge rows by ``BEFORE``. Those columns are
exact while rows come from one source through stateless operators (``Frame.arrival``). Rows an
aggregation or a bounded join emits carry *time attributes* that no later window can find late
(they travel ahead of the watermark that released them: ``Frame.never_late``). Where neither
holds, the translation refuses the node (``UnsupportedError``) rather than guess.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, replace
from itertools import count
from typing import TYPE_CHECKING, Any

from darwin.config import Config
from darwin.durations import MAX_EVENT_TIME_MS
from darwin.errors import UnsupportedError
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.aggregates import agg_type
from darwin.plan.exprs import AggCall
from darwin.plan.ranking import Ranking, ranking_of
from darwin.plan.temporal import checks_window_times, join_timing, time_attributes
from darwin.plan.visitor import SharedNodeVisitor
from darwin.runtime.progress import window_time_message
from darwin.spark.casts import BEYOND
from darwin.spark.exprs import column, quoted, spark_type, strict_math, to_spark
from darwin.spark.sources import BEFORE, HIDDEN, MARK, SEQ, delay_of, own_reader, read_scans, time_ordered, to_dataframe
from darwin.types import DType, Schema

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, Observation, SparkSession

_observations = count()  # an Observation's name is unique in the session


@dataclass(frozen=True)
class Frame:
    """A node's rows in Spark: its visible columns (``schema``) and the hidden ones."""

    df: DataFrame
    schema: Schema
    arrival: bool  # MARK and BEFORE are exact: rows of one source through stateless operators
    never_late: frozenset[str] = frozenset()  # columns no window can find late
    # window_start columns of an aggregation's fired windows: a window join never finds them late
    # (the window had not fired at the join's last watermark, so start + size - 1 is not below it)
    fired_starts: frozenset[str] = frozenset()
    in_order: frozenset[str] = frozenset()  # columns that never decrease in arrival order (SEQ)

    def visible(self) -> list[Column]:
        return [column(n) for n in self.schema.names]


class SparkTranslator(SharedNodeVisitor[Frame]):
    """Builds the DataFrame of each node; ``late`` holds the late rows a window keeps, if any."""

    translation = "the Spark engine"

    def __init__(self, spark: SparkSession, config: Config, tables: dict[int, pa.Table]) -> None:
        super().__init__()
        self.spark, self.config, self.tables = spark, config, tables
        self.late: DataFrame | None = None
        self.late_counts: list[Observation] = []  # each counts the rows one operator drops as late
        self.rows: dict[int, int] = {}  # rows of each source, by id of its scan

    def counting_late(self, df: DataFrame, late: Column) -> DataFrame:
        """``df``, adding up ``late`` (whether a row is late, or how many late rows it stands for) as its
        rows pass on to the operator that drops the late ones: Spark's ``observe`` counts within the job
        computing the result (one pass over the input; a count of its own would read every source
        again, and an accumulator updated by a UDF would leave the JVM for every row)."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        observation = Observation(f"darwin_late_{next(_observations)}")
        self.late_counts.append(observation)
        return df.observe(observation, F.coalesce(F.sum(late.cast("bigint")), F.lit(0)).alias("late_rows"))

    # -- sources and stateless operators --------------------------------------------------
    def visit_Scan(self, node: pn.Scan) -> Frame:
        reader = own_reader(node)
        if reader is not None:
            df, rows = reader.spark_frame(self.spark, node.columns, self.config.batch_size, delay_of(node, self.config))
            self.rows[id(node)] = rows
            ordered = time_ordered(reader)
            return Frame(df, node.schema, arrival=True, in_order=frozenset({ordered} if ordered else ()))
        table = self.tables[id(node)]
        self.rows[id(node)] = table.num_rows
        return Frame(to_dataframe(self.spark, table), node.schema, arrival=True)

    def visit_Filter(self, node: pn.Filter) -> Frame:
        f = self.visit(node.input)
        return replace(f, df=f.df.filter(to_spark(node.predicate, node.input.schema)))

    def visit_Project(self, node: pn.Project) -> Frame:
        f = self.visit(node.input)
        out = [to_spark(e, node.input.schema).cast(spark_type(t.dtype)).alias(name)
               for (name, e), t in zip(node.exprs, node.schema.fields)]
        def renamed(names: frozenset[str]) -> frozenset[str]:
            return frozenset(name for name, e in node.exprs if isinstance(e, ex.Column) and e.name in names)
        return Frame(f.df.select(*out, *_hidden()), node.schema, f.arrival, renamed(f.never_late),
                     renamed(f.fired_starts), renamed(f.in_order))

    def visit_WindowAssign(self, node: pn.WindowAssign) -> Frame:
        f = self.visit(node.input)
        df = _assign(_checking_times(f.df, node.input, node.window.on), node.window)
        late = f.never_late | ({pn.WINDOW_START, pn.WINDOW_END} if node.window.on in f.never_late else set())
        return Frame(df.select(*[column(n) for n in node.schema.names], *_hidden()), node.schema, f.arrival,
                     frozenset(late))

    def visit_LookupJoin(self, node: pn.LookupJoin) -> Frame:
        """A broadcast join: the table is small and loaded once, the stream's rows keep their arrival."""
        f, table = self.visit(node.input), self.visit(node.table)
        df = _join(f, table, node.as_join, node.how, broadcast=True)
        return replace(f, df=df.select(*[column(n) for n in node.schema.names], *_hidden()), schema=node.schema)

    def visit_Union(self, node: pn.Union) -> Frame:
        frames = [self.visit(p) for p in node.parts]
        df = frames[0].df.select(*frames[0].visible(), *_hidden())
        for f in frames[1:]:
            df = df.unionByName(f.df.select(*f.visible(), *_hidden()))
        common = frozenset.intersection(*(f.never_late for f in frames))
        # a union judges rows by the least of its inputs' watermarks, which depends on how batches
        # of the inputs interleave: exact only for its inputs' never-late columns
        return Frame(df, node.schema, arrival=False, never_late=common)

    # -- windows and aggregations -----------------------------------------------------------
    def visit_Aggregate(self, node: pn.Aggregate) -> Frame:
        from pyspark.sql import functions as F

        assign = node.input
        w = assign.window
        f = self.visit(assign.input)
        exact = _lateness(f, w.on, node)
        t = column(w.on)
        df = _checking_times(f.df, assign.input, w.on)
        if exact:  # a row is late once its last window (the one ending last) has closed
            late = t.isNotNull() & (t - F.pmod(t, F.lit(w.slide_ms)) + w.size_ms <= column(MARK))
            if assign.late_output:
                self.late = df.filter(late).select(*f.visible())
            if w.on not in f.in_order:  # times that never decrease are never behind their own source's mark
                df = self.counting_late(df, late)
        rows = _assign(df, w)
        if exact:
            rows = rows.filter(column(pn.WINDOW_END) > column(MARK))
        # grouped by the window's start only: its end follows from it, and one key fewer hashes faster
        keys = [column(pn.WINDOW_START), *(column(k) for k in node.keys)]
        aggs = _aggregates(node.aggs, assign.input.schema)
        df = rows.groupBy(*keys).agg(*aggs, F.min(SEQ).alias(SEQ))
        df = df.withColumn(pn.WINDOW_END, column(pn.WINDOW_START) + w.size_ms)
        out = _stateful(df, node.schema, frozenset({pn.WINDOW_END}))
        return replace(out, fired_starts=frozenset({pn.WINDOW_START}))

    def visit_GroupAggregate(self, node: pn.GroupAggregate) -> Frame:
        from pyspark.sql import functions as F

        _refuse_state_ttl(node)
        f = self.visit(node.input)
        aggs = _aggregates(node.aggs, node.input.schema)
        df = f.df.groupBy(*(column(k) for k in node.keys)).agg(*aggs, F.min(SEQ).alias(SEQ),
                                                              F.count(F.lit(1)).alias("__dw_rows"))
        if not node.keys:  # a global aggregate over no rows has no group (Spark would give one row)
            df = df.filter(column("__dw_rows") > 0)
        return _stateful(df, node.schema, frozenset())

    def visit_BarrierAssign(self, node: pn.BarrierAssign) -> Frame:
        f = self._barriered(node)
        return Frame(f.df.select(*[column(n) for n in node.schema.names], *_hidden()), node.schema, f.arrival,
                     f.never_late)

    def visit_BarrierAggregate(self, node: pn.BarrierAggregate) -> Frame:
        """Rows of a window closed by a barrier (later rows are never emitted), grouped by its id and keys."""
        from pyspark.sql import functions as F

        rows = self._barriered(node, closed_only=True).df
        bounds = [pn.WINDOW_ID] + ([pn.WINDOW_START, pn.WINDOW_END] if node.window.on else [])
        keys = [column(c) for c in bounds + list(node.keys)]
        df = rows.groupBy(*keys).agg(*_aggregates(node.aggs, node.input.schema), F.min(SEQ).alias(SEQ))
        return _stateful(df, node.schema, frozenset())

    def _barriered(self, node: pn.BarrierAggregate | pn.BarrierAssign, closed_only: bool = False) -> Frame:
        """The input's rows with their barrier window, counted over the order of arrival (``SEQ``); with
        ``closed_only`` only the rows (not barriers) of windows a barrier closed, with that barrier's time."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        f = self.visit(node.input)
        if not f.arrival:
            raise UnsupportedError(f"the Spark engine cannot count the barriers of {_name(node)} over rows that "
                                   "do not come straight from one source: its windows follow the order rows arrive in")
        w = node.window
        barrier = F.coalesce(to_spark(w.when, node.input.schema), F.lit(False))
        ordered = Window.partitionBy(*(column(c) for c in w.by)).orderBy(SEQ) if w.by else Window.orderBy(SEQ)
        before = ordered.rowsBetween(Window.unboundedPreceding, -1)
        after = ordered.rowsBetween(0, Window.unboundedFollowing)
        t = column(w.on) if w.on else F.lit(None).cast("bigint")
        carried = node.carried if isinstance(node, pn.BarrierAssign) else ()
        # a struct: a barrier without a time still counts; it holds what the barrier passes to its window
        mark = F.when(barrier, F.struct(t.alias("t"), *(column(c).alias(f"c{j}") for j, (_, c) in enumerate(carried))))
        df = f.df.withColumn("__dw_barrier", barrier)
        df = df.withColumn(pn.WINDOW_ID, F.coalesce(F.sum(barrier.cast("bigint")).over(before), F.lit(0)))
        df = df.withColumn("__dw_opened", F.last(mark, ignorenulls=True).over(before))
        for j, (name, _) in enumerate(carried):
            df = df.withColumn(name, column("__dw_opened")[f"c{j}"])
        if w.on:
            df = df.withColumn(pn.WINDOW_START, column("__dw_opened")["t"])
        if closed_only:
            df = df.withColumn("__dw_closing", F.first(mark, ignorenulls=True).over(after))
            df = df.filter(~column("__dw_barrier") & column("__dw_closing").isNotNull())
            if w.on:
                df = df.withColumn(pn.WINDOW_END, column("__dw_closing")["t"])
        elif w.on:
            df = df.withColumn(pn.WINDOW_END, F.when(barrier, t))
        return replace(f, df=df)

    def visit_SessionAggregate(self, node: pn.SessionAggregate) -> Frame:
        from darwin.spark.sessions import sessions

        f = self.visit(node.input)
        if not f.arrival:
            raise UnsupportedError(f"the Spark engine cannot merge the session windows of {_name(node)} over "
                                   "rows that do not come straight from one source: which sessions a row "
                                   "merges depends on when Darwin's watermark fired them")
        df = sessions(_checking_times(f.df, node.input, node.window.on), node,
                      _aggregates(node.aggs, node.input.schema), self.counting_late,
                      node.window.on in f.in_order)
        return _stateful(df, node.schema, frozenset({pn.WINDOW_END}))

    # -- ranking ------------------------------------------------------------------------------
    def visit_TopN(self, node: pn.TopN | pn.Deduplicate) -> Frame:
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        _refuse_state_ttl(node)
        r = ranking_of(node)
        f = self.visit(node.input)
        df = f.df
        if r.windowed and _lateness(f, pn.WINDOW_END, node):  # by the watermark just after the row, as windows
            on_time = column(pn.WINDOW_END) > F.greatest(column(MARK), column(BEFORE))
            df = self.counting_late(df, ~on_time).filter(on_time)
        position = F.row_number().over(Window.partitionBy(*(column(c) for c in r.partition)).orderBy(*_order(r)))
        df = df.withColumn("__dw_position", position).filter(column("__dw_position") <= r.n)
        if r.rank is not None:
            df = df.withColumn(r.rank, column("__dw_position").cast("bigint"))
        schema = node.schema
        late = f.never_late if r.windowed else frozenset()
        return Frame(df.select(*[column(n) for n in schema.names], *_hidden()), schema, f.arrival and r.windowed
                     and not pn.updating(node.input), late)

    visit_Deduplicate = visit_TopN

    def visit_Over(self, node: pn.Over) -> Frame:
        from pyspark.sql import Window

        f = self.visit(node.input)
        order = [_sort(k) for k in node.order_by] + [column(SEQ).asc()]
        frame = Window.partitionBy(*(column(c) for c in node.partition_by)).orderBy(*order).rowsBetween(
            -node.preceding, 0)
        aggs = [raw.cast(t).alias(name) for name, raw, t in _raw_aggregates(node.aggs, node.input.schema,
                                                                            lambda c: c.over(frame))]
        df = f.df.select(*f.visible(), *aggs, *_hidden())
        return Frame(df, node.schema, arrival=False)

    # -- joins ----------------------------------------------------------------------------------
    def visit_Join(self, node: pn.Join) -> Frame:
        from pyspark.sql import functions as F

        timing = join_timing(node)
        if timing is None and node.expires:
            raise UnsupportedError(f"the Spark engine cannot translate {_name(node)} with state_ttl: which rows "
                                   "left the state depends on when Darwin's watermark moved")
        left, right = self.visit(node.left), self.visit(node.right)
        never_late: frozenset[str] = frozenset()
        if timing is not None:
            window = timing.kind == "window"
            left = _drop_late(left, timing.left.time, timing.left.time_shift, node, window, self.counting_late)
            right = _drop_late(right, timing.right.time, timing.right.time_shift, node, window, self.counting_late)
            never_late = time_attributes(node)
        # a side of one row per window is small: broadcast it, as Spark cannot tell (a Python data
        # source reports no size) and would otherwise shuffle the other side, every column of it
        small = node.how in ("inner", "left") and _one_row_per_window(node.right)
        df = _join(left, right, node, node.how, broadcast=small)
        seq = F.greatest(F.coalesce(column(SEQ), F.lit(0)), F.coalesce(column("__dw_right_seq"), F.lit(0)))
        df = df.select(*[column(n) for n in node.schema.names], seq.alias(SEQ), F.lit(0).cast("bigint").alias(MARK),
                       F.lit(0).cast("bigint").alias(BEFORE))
        return Frame(df, node.schema, arrival=False, never_late=never_late)


def _one_row_per_window(node: pn.PlanNode) -> bool:
    """Whether ``node`` is a windowed aggregation without group keys (through filters and projections):
    one row per window, however many rows its input has."""
    while isinstance(node, (pn.Filter, pn.Project)):
        node = node.input
    return isinstance(node, pn.Aggregate) and not node.keys


def _hidden() -> list[Column]:
    return [column(h) for h in HIDDEN]


def _name(node: Any) -> str:
    return f"plan node {type(node).__name__}"


def _refuse_state_ttl(node: pn.GroupAggregate | pn.TopN | pn.Deduplicate) -> None:
    """Which keys a state TTL forgot depends on when Darwin's watermark moved between batches, which
    a batch job over the whole input does not have (as for a join's ``state_ttl``)."""
    if node.state_ttl_ms is not None:
        raise UnsupportedError(f"the Spark engine cannot translate {_name(node)} with state_ttl: which keys "
                               "left the state depends on when Darwin's watermark moved")


def _lateness(f: Frame, on: str, node: Any) -> bool:
    """Whether rows of ``f`` must be judged late by their hidden columns (True), or none can be (False)."""
    if f.arrival:
        return True
    if on in f.never_late:
        return False
    raise UnsupportedError(f"the Spark engine cannot tell which rows of {_name(node)} are late: its rows on "
                           f"{on!r} do not come straight from one source (a union, an updating result or another "
                           "operator's output in between), so their lateness depends on how Darwin's batches "
                           "and watermarks interleave")


def _drop_late(f: Frame, time: str, shift: int, node: pn.Join, window: bool,
               counting_late: Callable[[DataFrame, Column], DataFrame]) -> Frame:
    """A bounded join's side without its late rows (by the side's watermark before their batch), which
    ``counting_late`` counts."""
    if not f.arrival and window and time in f.fired_starts:
        return f
    if not _lateness(f, time, node):
        return f
    t = column(time)
    late = t.isNotNull() & (t + shift < column(BEFORE))
    return replace(f, df=counting_late(f.df, late).filter(~late))


# sliding windows of at most this many windows per row are assigned by Spark's window (an Expand of
# each row per window); more would make one huge generated projection
EXPANDED_WINDOWS = 64


def _checking_times(df: DataFrame, node: pn.PlanNode, name: str) -> DataFrame:
    """``df``, whose column ``name`` a window over ``node``'s rows reads, failing the job through
    ``raise_error`` at a time beyond ``MAX_EVENT_TIME_MS`` where the column is no time attribute
    (``checks_window_times``): the engine raises the ``SourceError`` the other engines raise."""
    from pyspark.sql import functions as F

    if not checks_window_times(node, name):
        return df
    t = column(name)
    before, after = window_time_message(name, "\0").split("\0")
    message = F.concat(F.lit(f"{BEYOND}<<{before}"), t.cast("string"), F.lit(f"{after}>>"))
    within = t.isNull() | ((t >= -MAX_EVENT_TIME_MS) & (t <= MAX_EVENT_TIME_MS))
    return df.withColumn(name, F.when(within, t).otherwise(F.raise_error(message)))


def _assign(df: DataFrame, w: Any) -> DataFrame:
    """Each row with a time once per window holding it (``window_start``, ``window_end``); rows
    without a time have no window."""
    from pyspark.sql import functions as F

    t = column(w.on)
    last = t - F.pmod(t, F.lit(w.slide_ms))
    rows = df.filter(t.isNotNull())
    if w.windows_per_row == 1:
        out = rows.withColumn(pn.WINDOW_START, last)
    elif w.windows_per_row <= EXPANDED_WINDOWS:
        # Spark's own sliding window: one Expand of the row per window (code-generated), where an
        # exploded array would build and walk an array per row (swa: 2.5x slower at 10M). Its timestamps
        # are microseconds, which hold +-2^53 ms, not every supported time (+-2^62): it windows the
        # time's offset from a multiple of the slide near it, and the windows are moved back
        base = t - F.pmod(t, F.lit(_span_base(w.slide_ms)))
        span = F.window(F.timestamp_millis(t - base), f"{w.size_ms} milliseconds", f"{w.slide_ms} milliseconds")
        out = rows.withColumn("__dw_span", span)
        start = base + F.unix_millis(column("__dw_span").getField("start"))
        out = out.withColumn(pn.WINDOW_START, start).drop("__dw_span")
    else:
        first = last - (w.windows_per_row - 1) * w.slide_ms
        out = rows.withColumn(pn.WINDOW_START, F.explode(F.sequence(first, last, F.lit(w.slide_ms).cast("bigint"))))
    return out.withColumn(pn.WINDOW_END, column(pn.WINDOW_START) + w.size_ms)


def _span_base(slide_ms: int) -> int:
    """A multiple of ``slide_ms`` of at least 2^42 ms (139 years, more than any window's size) and at most
    2^43: a time's offset from the multiple of it below holds the time's windows, all within Spark's
    timestamps, and starts them where the time's own would (the offset keeps the time's place in its slide)."""
    return -(-(1 << 42) // slide_ms) * slide_ms


def _aggregates(aggs: tuple[tuple[str, AggCall], ...], schema: Schema) -> list[Column]:
    return [raw.cast(t).alias(name) for name, raw, t in _raw_aggregates(aggs, schema)]


def _raw_aggregates(aggs: tuple[tuple[str, AggCall], ...], schema: Schema,
                    over: Callable[[Column], Column] = lambda c: c) -> list[tuple[str, Column, str]]:
    """(name, Spark aggregate, Spark type of Darwin's result) of each aggregate; ``over`` makes each
    aggregate function a window function (``.over(frame)``)."""
    from pyspark.sql import functions as F

    out = []
    for name, call in aggs:
        x = None if call.input is None else to_spark(call.input, schema)
        dtype, _ = agg_type(call, schema, name)
        if x is None:  # count()
            value = over(F.count(F.lit(1)))
        elif call.func == "count":
            value = over(F.count(x))
        elif call.func == "count_distinct":
            value = over(F.count_distinct(x))
        elif call.func == "avg":
            value = over(F.avg(x.cast("double")))
        elif call.func in ("min", "max") and dtype is DType.FLOAT64:
            value = _float_extreme(x, call.func == "min", over)
        elif call.func in ("sum", "min", "max"):
            value = over({"sum": F.sum, "min": F.min, "max": F.max}[call.func](x))
        else:  # an aggregate added to the registry has no Spark twin
            raise UnsupportedError(f"the Spark engine has no translation of aggregate {call.func}() "
                                   f"(agg {name}={call})")
        out.append((name, value, spark_type(dtype)))
    return out


def _float_extreme(x: Column, smaller: bool, over: Callable[[Column], Column]) -> Column:
    """min/max of a double as Darwin orders doubles (Java's ``Double.compare``): Spark's order puts NaN
    above every number too, but holds -0.0 equal to 0.0, so its extreme zero is whichever came first.
    A second aggregate says whether a zero of the winning sign was seen: for min a -0.0, for max a
    0.0. ``pow(x, -1)`` tells the sign of a zero (-inf for -0.0; Spark's division by zero is NULL and
    its ``atan2`` adds 0.0 to its arguments). The zero is then ``abs(m)`` (0.0) times -1.0 or 1.0: a
    CASE choosing between the literals -0.0 and 0.0 is folded to 0.0 by Spark's optimizer, which
    holds them equal."""
    from pyspark.sql import functions as F

    m = over(F.min(x) if smaller else F.max(x))
    inverse = F.pow(x, F.lit(-1.0))
    seen = over(F.max(F.when(x == 0.0, (inverse < 0.0) if smaller else (inverse > 0.0))))
    sign = F.when(seen, F.lit(-1.0 if smaller else 1.0)).otherwise(F.lit(1.0 if smaller else -1.0))
    return F.when(m == 0.0, F.abs(m) * sign).otherwise(m)


def _sort(k: pn.SortKey) -> Column:
    """Ascending puts NULLs first, descending last; NaN is above every number (Spark's order)."""
    c = column(k.column)
    return c.desc_nulls_last() if k.descending else c.asc_nulls_first()


def _order(r: Ranking) -> list[Column]:
    seq = column(SEQ).desc() if r.latest_first else column(SEQ).asc()
    return [_sort(k) for k in r.order] + [seq]


def _stateful(df: DataFrame, schema: Schema, never_late: frozenset[str]) -> Frame:
    """An operator's output rows: the hidden columns other than ``SEQ`` no longer say anything."""
    from pyspark.sql import functions as F

    zero = F.lit(0).cast("bigint")
    return Frame(df.select(*[column(n) for n in schema.names], column(SEQ), zero.alias(MARK), zero.alias(BEFORE)),
                 schema, arrival=False, never_late=never_late)


def _join(left: Frame, right: Frame, node: pn.Join, how: str, broadcast: bool = False) -> DataFrame:
    """``left`` joined with ``right`` on ``node``'s keys and condition; the right side's columns take their
    output names, its ``SEQ`` becomes ``__dw_right_seq``."""
    from pyspark.sql import functions as F

    names = node.right_names
    # a key that is a column is joined on as it is (not on a copy), so Spark knows the join's output is
    # partitioned by it: a later join or ranking on the same column needs no shuffle of its own
    lnames = [k.name if isinstance(k, ex.Column) else f"__dw_lk{i}" for i, k in enumerate(node.left_keys)]
    rnames = [names[k.name] if isinstance(k, ex.Column) else f"__dw_rk{i}" for i, k in enumerate(node.right_keys)]
    lkeys = [to_spark(k, node.left.schema).alias(n) for n, k in zip(lnames, node.left_keys)
             if not isinstance(k, ex.Column)]
    rkeys = [to_spark(k, node.right.schema).alias(n) for n, k in zip(rnames, node.right_keys)
             if not isinstance(k, ex.Column)]
    ldf = left.df.select(*left.visible(), *_hidden(), *lkeys)
    rdf = right.df.select(*[column(n).alias(names[n]) for n in node.right.schema.names],
                          column(SEQ).alias("__dw_right_seq"), *rkeys)
    if broadcast:
        rdf = F.broadcast(rdf)
    cond = None
    for i, (lname, rname) in enumerate(zip(lnames, rnames)):
        lcol, rcol = ldf[quoted(lname)], rdf[quoted(rname)]
        eq = lcol.eqNullSafe(rcol) if i in node.null_safe else lcol == rcol  # Spark's <=>: NULL meets NULL
        cond = eq if cond is None else cond & eq
    if node.where is not None:
        with strict_math() if how != "inner" else nullcontext():  # Spark runs no Python UDF in an outer join's ON
            cond = cond & to_spark(node.where, node.schema)  # type: ignore[operator]
    kind = {"inner": "inner", "left": "left_outer", "right": "right_outer", "full": "full_outer"}[how]
    return ldf.join(rdf, on=cond, how=kind)


@dataclass(frozen=True)
class Translation:
    """A plan in Spark: the DataFrame of its result (hidden columns included), that of the late rows
    it keeps (if any), what counts the late rows it drops once the result is computed, and how many
    rows each source gave, by ``id`` of its scan."""

    frame: Frame
    late: DataFrame | None
    late_counts: list[Observation]
    rows: dict[int, int]

    def late_rows(self) -> int:
        """The rows the operators dropped as late, counted by the job that computed ``frame`` (none
        where Spark's optimizer proved the result empty and ran no operator)."""
        return sum(_observed(o) for o in self.late_counts)


def _observed(observation: Observation) -> int:
    """The count an observation made (read from its Java row: ``Observation.get`` fails on the empty
    row of an observed operator Spark's optimizer removed)."""
    if observation._jo is None:  # never part of a computed DataFrame
        return 0
    row = observation._jo.getRow()
    return int(row.getLong(0)) if row.length() else 0


def translate(spark: SparkSession, plan: pn.PlanNode, config: Config) -> Translation:
    """``plan`` as Spark DataFrames. Sources that read themselves in Spark (``SparkReadable``) do so on
    the executors; the others are read by the driver."""
    tables = read_scans([s for s in pn.scans(plan) if own_reader(s) is None], config)
    t = SparkTranslator(spark, config, tables)
    frame = t.visit(plan)
    return Translation(frame, t.late, t.late_counts, t.rows)
