"""Barrier windows on Spark: the same final table as the compiled engine and the reference interpreter."""

import pyarrow as pa
import pytest
from engines import assert_three_engines_agree

import darwin as dw
from darwin import col
from darwin.errors import UnsupportedError


def test_barrier_windows_agree_on_three_engines(spark):
    n = 200
    table = pa.table({"t": pa.array([i * 10 for i in range(n)], pa.timestamp("ms")),
                      "k": [None if i % 17 == 0 else i % 5 for i in range(n)],
                      "v": [float((i * 7) % 13) for i in range(n)],
                      "kind": ["rule" if i % 23 == 22 else "tx" for i in range(n)]})
    t = dw.from_arrow(table, time="t")
    windows = t.window(dw.Barrier(col("kind") == "rule", on="t"))
    assert_three_engines_agree(windows.group_by("k").agg(n=dw.count(), s=dw.sum("v"), hi=dw.max("v")), batch_size=16)
    assert_three_engines_agree(windows.agg(n=dw.count()), batch_size=16)
    assert_three_engines_agree(windows.table(), batch_size=16)
    per_key = t.window(dw.Barrier(col("kind") == "rule", on="t", by="k")).table(rule_v="v", rule_kind="kind")
    assert_three_engines_agree(per_key, batch_size=16)


def test_barriers_over_a_union_are_refused_naming_the_node(spark):
    """Over a union the order rows arrive in is not known on Spark: the translation refuses."""
    a = dw.from_arrow(pa.table({"t": pa.array([1, 2], pa.timestamp("ms")), "kind": ["tx", "rule"]}), time="t")
    b = dw.from_arrow(pa.table({"t": pa.array([3], pa.timestamp("ms")), "kind": ["tx"]}), time="t")
    query = a.union(b).window(dw.Barrier(col("kind") == "rule")).agg(n=dw.count())
    with pytest.raises(UnsupportedError, match="plan node BarrierAggregate"):
        query.execute(dw.Config(engine="spark"))
