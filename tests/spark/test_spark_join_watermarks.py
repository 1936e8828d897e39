"""A window over an interval or window join's rows on Spark, the compiled engine and the interpreter:
the join holds its watermark back, so no engine finds a joined row late
(tests/differential/test_join_watermarks.py has the semantics)."""

import pyarrow as pa
from engines import assert_three_engines_agree

import darwin as dw
from darwin import col


def _side(name, times, keys):
    return dw.from_arrow(pa.table({"t": pa.array(times, pa.timestamp("ms")), "k": pa.array(keys, pa.int64())}),
                         time="t", max_delay=0, name=name)


def test_windows_over_bounded_joins_keep_every_pair_on_three_engines(spark):
    """Spark kept the pair of the left row at 0 s with the right row at 4 s; the compiled engine and the
    interpreter, reading a row at a time, dropped it as late (the join passed its sides' smaller
    watermark on, 2 s, with a row of time 0 s still to pair)."""
    joined = _side("L", [0, 3000], [1, 9]).join(_side("R", [2000, 4000], [9, 1]), on=[("k", "k")],
                                                 where=col("t_right").between(col("t") - 1000, col("t") + 5000))
    on_spark = assert_three_engines_agree(joined.window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count()),
                                          batch_size=1)
    assert sorted(on_spark.table.column("k").to_pylist()) == [1, 9]
    w = dw.Tumble("10s", on="t")
    pairs = _side("L", [0, 9000], [1, 9]).window(w).join(_side("R", [8000, 9500], [9, 1]).window(w), on=[("k", "k")])
    on_spark = assert_three_engines_agree(
        pairs.select("t", "k").window(dw.Tumble("1s", on="t")).group_by("k").agg(n=dw.count()), batch_size=1)
    assert sorted(on_spark.table.column("k").to_pylist()) == [1, 9]
