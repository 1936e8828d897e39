"""Random streams and query shapes shared by the differential and the state-backend suites."""

import pyarrow as pa
from hypothesis import strategies as st

import darwin as dw
from darwin import col, lit, when

SCHEMA = pa.schema([("ts", pa.timestamp("ms")), ("k", pa.int64()), ("v", pa.int64()), ("f", pa.float64()),
                    ("s", pa.string()), ("b", pa.bool_())])


@st.composite
def streams(draw, nulls=True):
    n = draw(st.integers(0, 60))
    maybe = (lambda s: st.one_of(st.none(), s)) if nulls else (lambda s: s)
    jitter = draw(st.integers(0, 3000))
    ts = [None if (nulls and draw(st.integers(0, 15)) == 0) else max(0, i * 250 + draw(st.integers(-jitter, jitter)))
          for i in range(n)]
    cols = {
        "ts": ts,
        "k": [draw(maybe(st.integers(-2, 3))) for _ in range(n)],
        "v": [draw(maybe(st.integers(-(2**62), 2**62) | st.integers(-50, 50))) for _ in range(n)],
        "f": [draw(maybe(st.floats(-1e6, 1e6, allow_nan=False))) for _ in range(n)],
        "s": [draw(maybe(st.sampled_from(["apple", "google", "baidu", ""]))) for _ in range(n)],
        "b": [draw(maybe(st.booleans())) for _ in range(n)],
    }
    table = pa.table(cols, schema=SCHEMA)
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=4)))
    delay = draw(st.sampled_from([0, 500, 2000]))
    batch_size = draw(st.integers(1, 64))
    return table, cuts, delay, batch_size


def source(table, cuts, delay, nullable=True, name="batches"):
    """A replayable source cutting the table at ``cuts`` (repeated cuts give empty batches)."""
    def batches():
        bounds = [0, *cuts, table.num_rows]
        for a, b in zip(bounds, bounds[1:]):
            yield pa.RecordBatch.from_arrays([table.column(i).combine_chunks().slice(a, b - a)
                                              for i in range(table.num_columns)], schema=SCHEMA)
    non_null = () if nullable else SCHEMA.names
    return dw.from_batches(SCHEMA, batches, time="ts", max_delay=delay, non_null=non_null, name=name)


def q_all_aggregates(t):
    return (t.filter(col("v").is_not_null() | (col("k") > 0)).with_columns(g=col("f") * 0.5 + col("v") % 7)
            .window(dw.Tumble("1s", on="ts")).group_by("k")
            .agg(n=dw.count(), nv=dw.count("v"), sv=dw.sum("v"), sf=dw.sum("g"), lo=dw.min("f"),
                 hi=dw.max("v"), avg=dw.avg("f"), last=dw.max("ts")))


def q_sliding_string_key(t):
    return (t.filter(col("s").isin(["apple", "google", ""]) | col("b"))
            .window(dw.Slide("2s", every="500ms", on="ts")).group_by("s").agg(n=dw.count(), sv=dw.sum("v")))


def q_global_window(t):
    return t.window(dw.Tumble("750ms", on="ts")).agg(n=dw.count(), lo=dw.min("f"), hi=dw.max("f"),
                                                     m=dw.avg("v"))


def q_multi_key_having(t):
    return (t.window(dw.Tumble("1s", on="ts")).group_by("k", "s", "b").agg(n=dw.count(), sf=dw.sum("f"))
            .filter(col("n") > 1).select("window_end", "k", "s", total=col("sf") * 2, half=col("n") / 2))


def q_late_output(t):
    return t.window(dw.Tumble("500ms", on="ts"), late_output=True).group_by("k").agg(n=dw.count())


def q_float_key(t):
    return t.with_columns(fk=(col("f") / 100).cast("int64").cast("float64") * 0.0 + col("v") % 3 * 1.5) \
        .window(dw.Tumble("1s", on="ts")).group_by("fk").agg(n=dw.count())


def q_stateless(t):
    return t.select(
        "ts", "s",
        add=col("v") + col("k"), mul=col("v") * 3, div=col("v") / col("k"), fdiv=col("v") // col("k"),
        mod=col("v") % col("k"), fmod=col("f") % 2.5, ffdiv=col("f") // col("k"), neg=-col("v"),
        ab=abs(col("k")), cmp=col("f") >= col("v"), between=col("k").between(-1, 1),
        isin=col("k").isin([1, 2, None]), many=col("v").isin(list(range(0, 40))), sne=col("s") != "apple",
        logic=(col("b") & (col("k") > 0)) | ~col("b"), nul=col("v").is_null(),
        case=when(col("k") > 1, col("f")).when(col("b"), col("v")).otherwise(lit(None)),
        case2=when(col("k") == 0, "zero").otherwise(col("s")),
        i2f=col("v").cast("float64"), f2i=(col("f") * 1e13).cast("int64"), b2i=col("b").cast("int64"),
        i2b=col("k").cast("bool"), t2i=col("ts").cast("int64"),
        year=col("ts").dt.year(), month=col("ts").dt.month(), day=col("ts").dt.day(), hour=col("ts").dt.hour(),
        minute=col("ts").dt.minute(), second=col("ts").dt.second(), ms=col("ts").dt.millisecond(),
        dow=col("ts").dt.day_of_week(), shifted=col("ts") + 86_400_000 * 400,
    )


def q_windowed_rows(t):
    return t.filter(col("k") >= 0).window(dw.Slide("1s", every="250ms", on="ts")).table() \
        .select("window_start", "window_end", "k", later=col("window_end") - col("ts"))


def q_count_distinct(t):
    """count_distinct in a tumbling window (two steps on the compiled engine), filtered and not, beside
    aggregates that combine exactly; a nullable string value, grouped by a nullable key."""
    return (t.window(dw.Tumble("1s", on="ts")).group_by("k")
            .agg(d=dw.count_distinct("s"), n=dw.count(), ds=dw.count_distinct("s", filter=col("v") > 0),
                 sv=dw.sum("v"), hi=dw.max("v"), first=dw.min("ts"), db=dw.count_distinct("s", filter=col("b"))))


def q_sliding_count_distinct(t):
    """count_distinct of a nullable key column in a sliding window, grouped by a string."""
    return (t.window(dw.Slide("2s", every="500ms", on="ts")).group_by("s")
            .agg(d=dw.count_distinct("k"), nf=dw.count("f"), dk=dw.count_distinct("k", filter=col("v") % 2 == 0)))


SHAPES = [q_all_aggregates, q_sliding_string_key, q_global_window, q_multi_key_having, q_late_output,
          q_float_key, q_stateless, q_windowed_rows, q_count_distinct, q_sliding_count_distinct]


# -- joins of two sources -----------------------------------------------------------------------------

def q_full_join(left, right):
    """A regular full outer join: padded rows, then their retractions when a match comes."""
    return left.select("ts", "k", "v", "s").join(right.select("ts", "k", w="v"), on=[("k", "k")], how="full")


def q_interval_join(left, right):
    """A left interval join: rows freed, unmatched ones padded, as the other side's watermark passes."""
    return left.select("ts", "k", "s").join(right.select("ts", "k", w="v"), on=[("k", "k")], how="left",
                                            where=col("ts_right").between(col("ts") - 500, col("ts") + 1000))


def q_window_maximum_join(left, right):
    """Nexmark q7's shape: rows at the highest value of their 1 s window, an inner interval join with
    the windows' maxima (the left side's rows wait unindexed for the rare probe, darwin.state.pending_rows)."""
    maxima = right.window(dw.Tumble("1s", on="ts")).agg(top=dw.max("k")).select("top", window_time=col("window_end"))
    return left.select("ts", "k", "s").join(maxima, on=[("k", "top")],
                                            where=col("ts").between(col("window_time") - 1000, col("window_time")))


JOIN_SHAPES = [q_full_join, q_interval_join, q_window_maximum_join]
