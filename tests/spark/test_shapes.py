"""Every differential shape on three engines: compiled, reference interpreter, Darwin-on-Spark.

Random streams with out-of-order and late rows, NULLs and random batch boundaries (the shapes of
``tests/streams.py`` and of the differential suites of joins, ranking, sessions, OVER and
updating aggregations). Few examples each: a Spark job takes about a second.
"""

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent.parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "differential"))

from differential.test_compiled_vs_reference import q_arrow_string_functions, q_moved_strings, q_strings  # noqa: E402
from differential.test_filtered_aggregates import q_hash, q_ring, with_distinct  # noqa: E402
from differential.test_joins import streams as two_streams  # noqa: E402
from engines import assert_three_engines_agree  # noqa: E402
from streams import JOIN_SHAPES, SHAPES, source, streams  # noqa: E402

import darwin as dw  # noqa: E402
from darwin import col  # noqa: E402

FEW = settings(max_examples=4, deadline=None, phases=[Phase.explicit, Phase.generate],  # no shrinking: slow on Spark
                # the spark fixture is function-scoped (the session as the test starts) and the same for
                # every example: nothing of it is reset between them
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])
HOW = ("inner", "left", "right", "full")


@pytest.mark.parametrize("shape", SHAPES + [q_strings, q_moved_strings, q_arrow_string_functions, q_ring, q_hash],
                         ids=lambda f: f.__name__)
@FEW
@given(data=streams())
def test_single_stream_shapes(spark, shape, data):
    table, cuts, delay, batch_size = data
    assert_three_engines_agree(shape(source(table, cuts, delay)), batch_size)


@pytest.mark.parametrize("shape", JOIN_SHAPES, ids=lambda f: f.__name__)
@FEW
@given(left=streams(), right=streams())
def test_join_shapes(spark, shape, left, right):
    lt, lc, ld, batch_size = left
    rt, rc, rd, _ = right
    assert_three_engines_agree(shape(source(lt, lc, ld, name="L"), source(rt, rc, rd, name="R")), batch_size)


@FEW
@given(left=two_streams("L"), right=two_streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8))
def test_joins(spark, left, right, how, batch):
    assert_three_engines_agree(left.join(right, on=[("k", "k")], how=how, where=col("v") < col("v_right") + 10),
                               batch)
    assert_three_engines_agree(left.join(right, on=[("k", "k")], how=how,
                                         where=col("t_right").between(col("t") - 1000, col("t") + 2000)), batch)
    assert_three_engines_agree(left.window(dw.Tumble("5s", on="t")).join(right.window(dw.Tumble("5s", on="t")),
                                                                         on=[("k", "k")], how=how), batch)


@FEW
@given(left=two_streams("L"), right=two_streams("R", time="t2"), how=st.sampled_from(HOW), batch=st.integers(1, 8))
def test_window_joins_over_time_columns_of_other_names(spark, left, right, how, batch):
    assert_three_engines_agree(left.window(dw.Slide("4s", "2s", on="t")).join(
        right.window(dw.Slide("4s", "2s", on="t2")), on=[("k", "k")], how=how), batch)


@FEW
@given(left=two_streams("L"), right=two_streams("R"), batch=st.integers(1, 8))
def test_aggregations_over_joins_and_aggregations(spark, left, right, batch):
    joined = left.join(right, on=[("k", "k")], where=col("t_right").between(col("t"), col("t") + 3000))
    assert_three_engines_agree(joined.window(dw.Tumble("5s", on="t")).group_by("k").agg(
        n=dw.count(), total=dw.sum("v_right")), batch)
    first = left.window(dw.Tumble("2s", on="t")).group_by("k").agg(n=dw.count())
    assert_three_engines_agree(first.select(end=col("window_end"), n=col("n")).window(dw.Tumble("10s", on="end"))
                               .agg(total=dw.sum("n"), windows=dw.count()), batch)


@FEW
@given(left=two_streams("L"), right=two_streams("R"), how=st.sampled_from(("inner", "left")), batch=st.integers(1, 8))
def test_lookup_joins_and_unions(spark, left, right, how, batch):
    import pyarrow as pa

    side = dw.from_arrow(pa.table({"key": [0, 1, 1, 2], "label": ["zero", "one", "uno", "two"]}), name="side")
    assert_three_engines_agree(left.join(side.lookup(), on=[(col("k") % 3, "key")], how=how), batch)
    assert_three_engines_agree(left.union(right).filter(col("v") > 0), batch)


@FEW
@given(left=two_streams("L"), right=two_streams("R"), how=st.sampled_from(HOW), batch=st.integers(1, 8))
def test_null_safe_keys(spark, left, right, how, batch):
    """A null-safe pair (Spark's <=>) in regular, interval, window and lookup joins: NULL meets NULL."""
    import pyarrow as pa

    safe = [dw.null_safe("k"), (col("v") % 2, col("v") % 2)]
    assert_three_engines_agree(left.join(right, on=safe, how=how), batch)
    assert_three_engines_agree(left.join(right, on=[dw.null_safe("k")], how=how,
                                         where=col("t_right").between(col("t") - 1000, col("t") + 2000)), batch)
    assert_three_engines_agree(left.window(dw.Tumble("5s", on="t")).join(right.window(dw.Tumble("5s", on="t")),
                                                                         on=[dw.null_safe("k")], how=how), batch)
    side = dw.from_arrow(pa.table({"key": pa.array([0, None, 1, None], pa.int64()),
                                   "label": ["zero", "none", "one", "nothing"]}), name="side")
    assert_three_engines_agree(left.join(side.lookup(), on=[dw.null_safe(col("k") % 3, "key")],
                                         how="left" if how in ("left", "full") else "inner"), batch)


ORDERS = st.sampled_from([[dw.desc("v")], ["v"], [dw.desc("v"), "t"], ["s", dw.desc("t")], [dw.desc("k")]])


@FEW
@given(left=two_streams("L"), n=st.integers(1, 4), order=ORDERS, rank=st.sampled_from([None, "rank"]),
       by=st.sampled_from([["k"], ["s"], []]), batch=st.integers(1, 8))
def test_top_n(spark, left, n, order, rank, by, batch):
    assert_three_engines_agree(left.top_n(n, by=by, order=order, rank=rank), batch)
    assert_three_engines_agree(left.window(dw.Tumble("2s", on="t")).top_n(n, by="k", order=order, rank=rank), batch)


@FEW
@given(left=two_streams("L"), keep=st.sampled_from(["first", "last"]), order=st.sampled_from([None, "v", "t"]),
       batch=st.integers(1, 8))
def test_deduplicate(spark, left, keep, order, batch):
    assert_three_engines_agree(left.deduplicate(on=["k", "s"], keep=keep, order=order), batch)


@FEW
@given(left=two_streams("L"), gap=st.sampled_from(["1s", "3s", "7s"]), batch=st.integers(1, 8))
def test_sessions(spark, left, gap, batch):
    assert_three_engines_agree(left.window(dw.Session(gap, on="t")).group_by("k").agg(
        n=dw.count(), total=dw.sum("v"), last=dw.max("t")), batch)


@pytest.mark.parametrize("batch", [1, 3, 64])
@pytest.mark.parametrize("delay", ["0s", "2s"])
def test_sessions_of_keys_in_time_order_and_out_of_it(spark, batch, delay):
    """Keys whose rows arrive in time order (merged by window functions on Spark) next to keys whose
    rows do not (replayed in Python): gaps that end sessions, sessions the watermark fires before the
    next row could extend them, late rows, NULL times and values."""
    import pyarrow as pa

    rng = __import__("random").Random(7)
    rows = []
    for i in range(300):
        key = i % 5
        t = i * 150 + (i // 40) * 3000 + (rng.randrange(-3000, 3000) if key == 4 else 0)  # key 4 out of order
        if i % 67 == 0:
            t = i * 150 - 9000  # late unless the delay covers it; its key out of order then
        rows.append((key, None if i % 41 == 0 else t, None if i % 13 == 0 else i))
    table = pa.table({"k": pa.array([r[0] for r in rows], pa.int64()),
                      "t": pa.array([r[1] for r in rows], pa.timestamp("ms")),
                      "v": pa.array([r[2] for r in rows], pa.int64())})
    q = dw.from_arrow(table, time="t", max_delay=delay).window(dw.Session("1s", on="t")).group_by("k").agg(
        n=dw.count(), total=dw.sum("v"), mean=dw.avg("v"), last=dw.max("t"))
    result = assert_three_engines_agree(q, batch)
    assert result.table.num_rows > 20 and max(result.table.column("n").to_pylist()) > 3  # merged rows, and gaps


@FEW
@given(left=two_streams("L"), preceding=st.integers(0, 4), batch=st.integers(1, 8),
       order=st.sampled_from([["t"], [dw.desc("v"), "t"], ["s"]]))
def test_over(spark, left, preceding, order, batch):
    frame = dict(partition_by="k", order_by=order, rows=(preceding, 0))
    assert_three_engines_agree(left.with_columns(mean=dw.avg("v").over(**frame), n=dw.count().over(**frame),
                                                 low=dw.min("v").over(**frame)), batch)


@FEW
@given(left=two_streams("L"), right=two_streams("R"), how=st.sampled_from(HOW[1:]), batch=st.integers(1, 8))
def test_updating_aggregations(spark, left, right, how, batch):
    assert_three_engines_agree(left.group_by("k").agg(**with_distinct(col("v") > 0)), batch)
    per_key = left.group_by("k", "s").agg(total=dw.sum("v"), n=dw.count())
    assert_three_engines_agree(per_key.group_by("s").agg(d=dw.count_distinct("total"), n=dw.count()), batch)
    joined = left.join(right, on=[("k", "k")], how=how)
    assert_three_engines_agree(joined.group_by("k").agg(n=dw.count(), total=dw.sum("v_right")), batch)


@pytest.mark.parametrize("slide", [("3s", "1s"), ("2s", "500ms")])
def test_sliding_windows_around_the_epoch(spark, slide):
    """Sliding windows (Spark's own window function on Spark) over times before and after 1970, with
    NULL times, late rows and a late-row output."""
    import pyarrow as pa

    times = [None if i % 17 == 0 else (i - 40) * 321 - (2500 if i % 11 == 0 else 0) for i in range(80)]
    table = pa.table({"t": pa.array(times, pa.timestamp("ms")), "k": pa.array([i % 3 for i in range(80)], pa.int64())})
    size, every = slide
    q = dw.from_arrow(table, time="t", max_delay="1s").window(dw.Slide(size, every=every, on="t"), late_output=True) \
        .group_by("k").agg(n=dw.count(), first=dw.min("t"))
    result = assert_three_engines_agree(q, 7)
    assert min(result.table.column("window_start").cast(pa.int64()).to_pylist()) < 0


def test_late_rows_counted_where_dropped(spark, tmp_path):
    """Spark counts the late rows it drops as the other engines do, late output or not: windows, sliding
    windows, session windows (keys in time order and keys replayed), window top-N, an interval join
    beside an empty side (which Spark's optimizer would take out with its other side's count) and a
    window on a table's computed time. Each count was 0 on Spark."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    times = [0, 1000, 20_000, 1500, 800, 21_000, 19_500, 3000, 22_000, 21_500]
    table = pa.table({"t": pa.array(times, pa.timestamp("ms")), "k": pa.array([1, 2, 3, 1, 2, 2, 3, 4, 4, 4]),
                      "v": pa.array(range(len(times)))})
    events = dw.from_arrow(table, time="t", max_delay="1s", name="events")
    empty = dw.from_arrow(table.slice(0, 0), time="t", name="none").select(t2="t", k2="k")
    queries = [events.window(dw.Tumble("1s", on="t")).agg(n=dw.count()),
               events.window(dw.Slide("4s", every="2s", on="t")).group_by("k").agg(n=dw.count()),
               events.window(dw.Session("2s", on="t")).group_by("k").agg(n=dw.count(), total=dw.sum("v")),
               events.window(dw.Tumble("2s", on="t")).top_n(1, by="k", order=[dw.desc("v")]),
               events.join(empty, on=[("k", "k2")], where=col("t2").between(col("t"), col("t") + 1000))]
    for q in queries:
        assert assert_three_engines_agree(q, 3).metrics["late_rows"] > 0
    pq.write_table(pa.table({"s": [str(t) for t in times], "k": table.column("k")}), tmp_path / "text.parquet")
    computed = dw.sql(f"""CREATE TABLE e (s STRING, k BIGINT, ts AS TO_TIMESTAMP_LTZ(CAST(s AS BIGINT), 3),
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/text.parquet');
        SELECT window_start, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE e, DESCRIPTOR(ts), INTERVAL '1' SECOND))
        GROUP BY window_start, window_end""")
    assert assert_three_engines_agree(computed, 3).metrics["late_rows"] > 0


def test_late_rows_counted_under_a_false_filter(spark):
    """A filter that is FALSE (or folds to FALSE or NULL) above a window, a session, a window top-N or
    an interval join leaves no row, but the late rows the operator under it dropped are counted, as the
    compiled engine and the interpreter count them: Spark's optimizer (PruneFilters) replaced the
    filter and everything under it with an empty relation, and counted 0."""
    import pyarrow as pa

    times = [0, 1000, 20_000, 1500, 800, 21_000, 19_500, 3000, 22_000, 21_500]
    table = pa.table({"t": pa.array(times, pa.timestamp("ms")), "k": pa.array([1, 2, 3, 1, 2, 2, 3, 4, 4, 4]),
                      "v": pa.array(range(len(times)))})
    events = dw.from_arrow(table, time="t", max_delay="1s", name="events")
    other = dw.from_arrow(table, time="t", max_delay="1s", name="other").select(t2="t", k2="k")
    false, folded = dw.lit(False), dw.lit(1) > dw.lit(2)
    queries = [events.window(dw.Tumble("1s", on="t")).agg(n=dw.count()).filter(false),
               events.window(dw.Slide("4s", every="2s", on="t")).group_by("k").agg(n=dw.count())
               .filter((col("n") > 0) & folded),
               events.window(dw.Session("2s", on="t")).group_by("k").agg(n=dw.count()).filter(folded),
               events.window(dw.Tumble("2s", on="t")).top_n(1, by="k", order=[dw.desc("v")]).filter(false),
               events.join(other, on=[("k", "k2")], where=col("t2").between(col("t"), col("t") + 1000))
               .filter(false)]
    for q in queries:
        result = assert_three_engines_agree(q, 3)
        assert result.table.num_rows == 0 and result.metrics["late_rows"] > 0


@pytest.mark.parametrize("kind", ["tumble", "slide", "session", "top"])
def test_windows_on_another_time_at_and_beyond_the_ends(spark, kind):
    """A window on a timestamp column that is not the source's event time (a second one, or one computed):
    at the ends of the supported times (2^62 ms) the three engines agree, late rows too; beyond them each
    refuses the job with the same SourceError, where none refused them and the compiled engine's window
    ends wrapped around int64 (of times 2^63 - 1, 2^63 - 2 and 0, 3 rows late; the interpreter found 1)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent.parent / "unit"))
    from test_limits import other_time_windows, with_other_time

    from darwin.durations import MAX_EVENT_TIME_MS as M
    from darwin.errors import SourceError

    for computed in (False, True):
        q = other_time_windows(with_other_time([M, -M, 5, 4000, 0, M - 1, -M + 1], computed), kind)
        assert assert_three_engines_agree(q, 2).metrics["late_rows"] > 0
        beyond = other_time_windows(with_other_time([0, M + 1, 5], computed), kind)
        for config in (dw.Config(batch_size=2), dw.Config(batch_size=2, mode="interpreted"),
                       dw.Config(batch_size=2, engine="spark")):
            with pytest.raises(SourceError, match=rf"window on column 'u' meets {M + 1} ms since 1970, beyond"):
                beyond.collect(config)


@pytest.mark.parametrize("end", [2**62, -2**62])
def test_sliding_windows_at_the_ends_of_the_supported_event_times(spark, end):
    """Sliding windows of a source's event times near 2^62 ms, the supported ends: Spark's own window
    function takes timestamps in microseconds (+-2^53 ms), so Spark failed with DATETIME_OVERFLOW where the
    other engines give the windows."""
    import pyarrow as pa

    inward = -1 if end > 0 else 1
    ts = [end + inward * o for o in (0, 7000, 1500, 3000, 2999, 10, 5000)]
    table = pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": pa.array([i % 2 for i in range(len(ts))])})
    q = dw.from_arrow(table, time="ts", max_delay="1s").window(dw.Slide("3s", every="1s", on="ts"), late_output=True) \
        .group_by("k").agg(n=dw.count(), first=dw.min("ts"))
    assert assert_three_engines_agree(q, 2).metrics["late_rows"] > 0
