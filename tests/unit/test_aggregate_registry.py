"""Aggregates live in one registry: a new one defined in one place runs everywhere."""

import pyarrow as pa
import pytest

import darwin as dw
from darwin.errors import PlanError
from darwin.expr import Agg
from darwin.plan import aggregates
from darwin.plan.aggregates import Accumulator, AggregateFunction
from darwin.plan.exprs import AggCall, Column
from darwin.testing import assert_engines_agree


class _SquaresAcc(Accumulator):
    def add(self, v):
        self.n += 1
        self.value = (self.value or 0) + v * v


class SumOfSquares(AggregateFunction):
    name = "sumsq"

    def update(self, value, x, first, dtype):
        return [f"{value} += {x} * {x}"]

    def accumulator(self):
        return _SquaresAcc()


@pytest.fixture
def sumsq(monkeypatch):
    monkeypatch.setitem(aggregates.REGISTRY, "sumsq", SumOfSquares())
    return Agg(AggCall("sumsq", Column("v")))


@pytest.mark.parametrize("state", ["memory", "rocksdb"])
def test_an_aggregate_defined_once_runs_in_every_engine(sumsq, state, tmp_path):
    n = 400
    t = pa.table({"ts": pa.array([i * 10 for i in range(n)], pa.timestamp("ms")), "k": [i % 7 for i in range(n)],
                  "v": [None if i % 11 == 0 else i % 5 for i in range(n)]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1s", on="ts")).group_by("k").agg(s=sumsq, n=dw.count("v"))
    config = dw.Config(batch_size=37, state=state, state_path=str(tmp_path / "state"),
                       **({"state_delta_limit": 3} if state == "rocksdb" else {}))  # rocksdb merges constantly
    got = assert_engines_agree(q, config).table
    want: dict[tuple[int, int], int] = {}
    for i, v in enumerate(t.column("v").to_pylist()):
        if v is not None:
            key = (i * 10 // 1000, i % 7)  # (window, k)
            want[key] = want.get(key, 0) + v * v
    assert sorted(got.column("s").to_pylist()) == sorted(want.values())


def test_an_aggregate_spark_has_no_twin_for_is_refused_naming_it(sumsq, spark):
    """A registry aggregate the Spark translation does not know was a bare KeyError."""
    from darwin.errors import UnsupportedError

    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "v": [1]}), time="ts")
    with pytest.raises(UnsupportedError, match="aggregate sumsq"):
        t.window(dw.Tumble("1s", on="ts")).agg(s=sumsq).collect(dw.Config(engine="spark"))


def test_an_unknown_aggregate_is_a_plan_error():
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "v": [1]}), time="ts")
    with pytest.raises(PlanError, match="unknown aggregate function 'median'"):
        t.window(dw.Tumble("1s", on="ts")).agg(m=Agg(AggCall("median", Column("v"))))


def test_a_float_sum_of_negative_zeros_is_zero_on_every_engine():
    """The kernels' sums start at 0.0 and 0.0 + -0.0 is 0.0; the interpreter started at the first value."""
    table = pa.table({"ts": pa.array([0, 1], pa.timestamp("ms")), "k": [1, 1], "f": [-0.0, -0.0]})
    q = dw.from_arrow(table, time="ts").group_by("k").agg(s=dw.sum("f"), a=dw.avg("f"))
    for mode in ("compiled", "interpreted"):
        assert [repr(v) for v in q.collect(dw.Config(mode=mode)).to_pylist()[0].values()] == ["1", "0.0", "0.0"]
