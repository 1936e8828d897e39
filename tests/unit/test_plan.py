"""Queries fail when they are built, naming the column and the operation."""

import pyarrow as pa
import pytest

import darwin as dw
from darwin import Expr, col, lit
from darwin.errors import DarwinTypeError, PlanError


@pytest.fixture
def t(bids):
    return dw.from_arrow(bids(), time="ts", max_delay="1s")


def test_arithmetic_on_timestamps_must_give_a_time_or_a_duration(t):
    """ts + n, n + ts, ts - n are timestamps and ts - ts milliseconds; ts + ts and n - ts were accepted as
    timestamps holding the sum (or the negation) of milliseconds since the epoch, which is no time."""
    ts = col("ts")
    typed = t.select(a=ts + 5, b=5 + ts, c=ts - 5, d=ts - ts, e=ts + lit(None))
    assert [str(f.type) for f in typed.schema] == ["timestamp[ms]"] * 3 + ["int64", "timestamp[ms]"]
    for wrong in (ts + ts, 5 - ts, col("price") - ts, lit(None) - ts, ts * 2, ts + 1.5):
        with pytest.raises(DarwinTypeError, match=r"timestamps support only ts \+ n, n \+ ts and ts - n .* ts - ts"):
            t.select(x=wrong)


def test_unknown_column_names_column_and_operation(t):
    with pytest.raises(PlanError, match=r"unknown column 'prize' in filter.*available columns"):
        t.filter(col("prize") > 3)
    with pytest.raises(PlanError, match="unknown column 'nope' in group_by"):
        t.window(dw.Tumble("1s", on="ts")).group_by("nope")


def test_type_mismatch_is_caught_at_build_time(t):
    with pytest.raises(DarwinTypeError, match="cannot compare string with int64"):
        t.filter(col("channel") == 3)
    with pytest.raises(DarwinTypeError, match="arithmetic"):
        t.select(x=col("channel") + 1)
    with pytest.raises(DarwinTypeError, match="not bool"):
        t.filter(col("price") + 1)
    with pytest.raises(DarwinTypeError, match="sum needs"):
        t.window(dw.Tumble("1s", on="ts")).agg(s=dw.sum("channel"))


def test_window_on_non_time_column(t):
    with pytest.raises(DarwinTypeError, match="window: column 'price' is int64; a window needs a timestamp"):
        t.window(dw.Tumble("1s", on="price"))


def test_time_column_must_be_a_timestamp(bids):
    with pytest.raises(DarwinTypeError, match="time column 'price'"):
        dw.from_arrow(bids(), time="price")


def test_bad_window_specs():
    with pytest.raises(PlanError, match="multiple of its slide"):
        dw.Slide("10s", every="3s", on="ts")
    with pytest.raises(PlanError, match="positive"):
        dw.Tumble(0, on="ts")


def test_tables_are_immutable_values(t):
    f = t.filter(col("price") > 10)
    assert t.columns == ["ts", "auction", "bidder", "price", "channel"]
    assert f is not t and f.plan.input == t.plan
    assert t.filter(col("price") > 10).plan == f.plan  # plans compare by value
    assert hash(t.filter(col("price") > 10).plan) == hash(f.plan)


def test_expressions_have_no_truth_value():
    with pytest.raises(DarwinTypeError, match="no truth value"):
        bool(col("a") > 1)


def test_schema_inference(t):
    q = t.with_columns(euro=col("price") * 0.9, h=col("ts").dt.hour(), big=col("price").between(10, 20),
                       c=dw.when(col("price") > 10, 1).otherwise(2.5), n=lit(None))
    s = {f.name: f for f in q.schema}
    assert str(s["euro"].type) == "double" and s["euro"].nullable
    assert str(s["h"].type) == "int64" and not s["h"].nullable
    assert str(s["big"].type) == "bool"
    assert str(s["c"].type) == "double" and not s["c"].nullable
    agg = t.window(dw.Slide("2s", every="1s", on="ts")).group_by("auction").agg(
        n=dw.count(), m=dw.avg("price"), hi=dw.max("ts"))
    assert agg.columns == ["window_start", "window_end", "auction", "n", "m", "hi"]
    assert [str(f.type) for f in agg.schema] == ["timestamp[ms]", "timestamp[ms]", "int64", "int64", "double",
                                                  "timestamp[ms]"]


def test_select_needs_names(t):
    with pytest.raises(PlanError, match="alias"):
        t.select(col("price") + 1)
    assert t.select("price", (col("price") + 1).alias("p1"), p2=col("price")).columns == ["price", "p1", "p2"]


def test_a_name_given_a_string_is_that_column_as_in_polars(t):
    """select/with_columns/group_by(name="other") rename a column; lit("other") is the text."""
    row = t.select(p="price", c=lit("price")).collect().to_pylist()[0]
    first = t.collect().to_pylist()[0]
    assert row == {"p": first["price"], "c": "price"}
    assert t.with_columns(b="price").collect()["b"] == t.collect()["price"]
    with pytest.raises(PlanError, match="unknown column 'prize'"):
        t.select(p="prize")
    grouped = t.group_by(a="auction").agg(n=dw.count()).collect()
    assert sorted(grouped["a"].to_pylist()) == sorted(set(t.collect()["auction"].to_pylist()))


def test_malformed_inputs_raise_darwin_errors(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not a parquet file")
    with pytest.raises(dw.errors.SourceError, match="cannot read Parquet file"):
        dw.read_parquet(bad)
    with pytest.raises(dw.errors.SourceError, match="does not exist"):
        dw.read_parquet(tmp_path / "missing.parquet")
    with pytest.raises(dw.errors.SchemaError, match="not support"):
        dw.from_arrow(pa.table({"x": pa.array([[1]])})).select("x")  # only reading it is refused


def test_an_empty_split_separator_is_refused_when_the_expression_is_built():
    """str.split_index('', i) failed row by row with a bare ValueError (Python's split) on Darwin's
    engines and gave the whole value on Spark; it is a DarwinTypeError now, before any engine runs."""
    with pytest.raises(DarwinTypeError, match="separator"):
        col("s").str.split_index("", 0)
    with pytest.raises(DarwinTypeError, match="separator"):
        dw.sql("SELECT SPLIT_INDEX(s, '', 0) AS p FROM t",
               tables={"t": dw.from_arrow(pa.table({"s": ["a,b"]}), name="t")})


def _counts_per_window(size: str, then: str, column: Expr) -> dw.Table:
    """Counts per key in ``size`` windows, summed again in ``then`` windows over ``column``."""
    times = [i * 300 + (i % 7) * 150 for i in range(140)]  # out of order by up to a second
    source = dw.from_arrow(pa.table({"k": [i % 3 for i in range(140)], "ts": pa.array(times, pa.timestamp("ms"))}),
                           time="ts", max_delay="1s", name="events")
    counts = source.window(dw.Tumble(size, on="ts")).group_by("k").agg(n=dw.count())
    return counts.select("k", "n", s=column).window(dw.Tumble(then, on="s")).agg(total=dw.sum("n"))


def test_a_window_on_a_column_its_input_watermark_does_not_bound_is_refused():
    """A window over a windowed aggregation's window_start into shorter windows found rows late or not
    by where batches ended (20 s windows' starts into 2 s windows: no row at batch size 1, every one at
    1000), while late rows were counted. Refused, as Flink refuses windows on a column that is not a
    time attribute; the window's end, Flink's window time (end - 1), and a start into windows as long
    as the first ones (each start is a window's first millisecond) are judged alike whatever the batches."""
    with pytest.raises(dw.errors.UnsupportedError, match=r"on 's' over the output of Aggregate.*20000 ms behind"):
        _counts_per_window("20s", "2s", col("window_start"))
    with pytest.raises(dw.errors.UnsupportedError, match=r"on 's' over the output of Aggregate.*20000 ms behind"):
        _counts_per_window("20s", "10s", col("window_start"))
    with pytest.raises(dw.errors.UnsupportedError, match=r"on 's' over the output of Aggregate.*any time behind"):
        _counts_per_window("20s", "2s", col("n").cast("timestamp"))
    for then, column in (("2s", col("window_end")), ("2s", col("window_end") - 1), ("20s", col("window_start")),
                         ("2s", col("window_start") + 20_000), ("10s", col("window_start") + 10_000)):
        results = [sorted(_counts_per_window("20s", then, column).collect(dw.Config(batch_size=b)).to_pylist(),
                          key=str) for b in (1, 7, 1000)]
        assert results[0] == results[1] == results[2]
        assert sum(r["total"] for r in results[0]) == 140


def test_aggregation_over_an_outer_join_is_refused_by_both_engines(t, config):
    other = dw.from_arrow(pa.table({"auction": [1], "ts": pa.array([0], pa.timestamp("ms"))}), time="ts", name="o")
    joined = t.join(other, on=[("auction", "auction")], how="left")
    with pytest.raises(dw.errors.UnsupportedError, match="over the output of a regular join"):
        joined.window(dw.Tumble("10s", on="ts")).agg(m=dw.count()).collect(config)


@pytest.mark.parametrize("window", [dw.Tumble("1s", on="t"), dw.Slide("2s", every="1s", on="t"),
                                    dw.Session(gap="1s", on="t")], ids=["tumble", "slide", "session"])
def test_event_time_windows_over_a_regular_join_are_refused_and_bounded_joins_take_them(window):
    """A regular join's rows carry no bound on their times (a kept row pairs with any later one), so
    which rows came late depended on where batches ended: rows were dropped at batch size 1 and kept at
    2. Refused, as in Flink; an interval join or a window on a side before the join still works."""
    left = dw.from_arrow(pa.table({"t": pa.array([0, 3000], pa.timestamp("ms")), "k": [1, 9]}), time="t", name="l")
    right = dw.from_arrow(pa.table({"t": pa.array([2000, 4000], pa.timestamp("ms")), "k": [9, 1]}), time="t",
                          name="r")
    with pytest.raises(dw.errors.UnsupportedError, match=r"on 't' over the output of a regular join .*interval join"):
        left.join(right, on=[("k", "k")]).window(window).group_by("k").agg(n=dw.count())
    bounded = left.join(right, on=[("k", "k")], where=col("t_right").between(col("t") - 1000, col("t") + 5000))
    assert bounded.window(window).group_by("k").agg(n=dw.count()).collect(dw.Config(batch_size=1)).num_rows > 0
    windowed_first = left.window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count())
    assert windowed_first.join(right, on=[("k", "k")]).collect().num_rows == 2
