"""Event time in every Arrow timestamp unit and with a time zone: both engines see the same milliseconds.

Darwin's TIMESTAMP is int64 UTC milliseconds; a finer value is floored (so -1 µs is -1 ms, in the
window [-1000, 0)), and a zoned timestamp keeps its instant. The oracle is the same events given
directly as ``timestamp[ms]``, with the milliseconds computed here by Python's floor division.
"""

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin.testing import assert_engines_agree, assert_table_equal

NS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
UNITS = list(NS_PER_UNIT)
ZONES = [None, "Europe/Berlin"]


def query(t: dw.Table) -> dw.Table:
    return t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count(), lo=dw.min("ts"), hi=dw.max("ts"))


def events(values: list[int | None], keys: list[int], ts_type: pa.DataType) -> pa.Table:
    return pa.table({"ts": pa.array(values, ts_type), "k": pa.array(keys, pa.int64())})


def oracle(values: list[int | None], unit: str) -> list[int | None]:
    """Milliseconds of values in ``unit``, floored, in plain Python integers."""
    return [None if v is None else v * NS_PER_UNIT[unit] // 1_000_000 for v in values]


@st.composite
def instants(draw):
    """Nanosecond instants around the epoch, negative ones with sub-millisecond parts included."""
    n = draw(st.integers(0, 40))
    base = st.integers(-4_000_000_000, 4_000_000_000)
    near_zero = st.integers(-2_000_000, 2_000_000)  # within ±2 ms: where floor and truncation differ
    ns = [None if draw(st.integers(0, 12)) == 0 else draw(st.one_of(base, near_zero)) for _ in range(n)]
    keys = [draw(st.integers(0, 2)) for _ in range(n)]
    return ns, keys, draw(st.sampled_from([0, 700, 3000])), draw(st.integers(1, 16))


@pytest.mark.parametrize("tz", ZONES)
@pytest.mark.parametrize("unit", UNITS)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=instants())
def test_every_unit_and_zone_gives_the_floored_milliseconds(unit, tz, data):
    ns, keys, delay, batch_size = data
    values = [None if v is None else v // NS_PER_UNIT[unit] for v in ns]  # the events at this unit's precision
    config = dw.Config(batch_size=batch_size)
    got = assert_engines_agree(
        query(dw.from_arrow(events(values, keys, pa.timestamp(unit, tz)), time="ts", max_delay=delay)), config)
    expected = query(dw.from_arrow(events(oracle(values, unit), keys, pa.timestamp("ms")),
                                   time="ts", max_delay=delay)).execute(config.replace(mode="interpreted"))
    assert_table_equal(got.table, expected.table, check_nullability=True)
    assert got.metrics["late_rows"] == expected.metrics["late_rows"]


def at(millis: int) -> datetime:
    return datetime.fromtimestamp(millis / 1000, UTC).replace(tzinfo=None)


@pytest.mark.parametrize("tz", ZONES)
def test_negative_microseconds_floor(config, tz):
    # -1 µs is in [-1000, 0) at -1 ms; -1500 µs is -2 ms; 1500 µs is 1 ms. Truncation would give 0 and -1.
    t = dw.from_arrow(events([-1, -1500, 1500], [1, 1, 1], pa.timestamp("us", tz)), time="ts")
    assert query(t).collect(config).to_pylist() == [
        {"window_start": at(-1000), "window_end": at(0), "k": 1, "n": 2, "lo": at(-2), "hi": at(-1)},
        {"window_start": at(0), "window_end": at(1000), "k": 1, "n": 1, "lo": at(1), "hi": at(1)},
    ]


def test_zoned_timestamps_keep_their_instant(config):
    # 00:30 in Berlin (UTC+1 in January) is 23:30 UTC the day before: the window is the UTC one
    berlin = pa.array([datetime(2024, 1, 2, 0, 30)], pa.timestamp("s")).cast(pa.int64()).to_pylist()[0] - 3600
    t = dw.from_arrow(events([berlin], [1], pa.timestamp("s", "Europe/Berlin")), time="ts")
    out = t.window(dw.Tumble("1h", on="ts")).agg(n=dw.count()).collect(config)
    assert out["window_start"].to_pylist() == [datetime(2024, 1, 1, 23, 0)]
    assert out.schema.field("window_start").type == pa.timestamp("ms")


def test_parquet_microseconds_round_trip(tmp_path):
    """A µs column as Spark writes it: both engines agree with the same events in milliseconds."""
    values = [-1_500, 2_000_999, 999, -1, 3_500_000, 1_000_000, None, 2_999_999]
    keys = [0, 1, 0, 1, 0, 1, 0, 1]
    path = tmp_path / "us.parquet"
    pq.write_table(events(values, keys, pa.timestamp("us")), path)
    assert pq.read_schema(path).field("ts").type == pa.timestamp("us")
    got = assert_engines_agree(query(dw.read_parquet(path, time="ts", max_delay="3s")))
    expected = query(dw.from_arrow(events(oracle(values, "us"), keys, pa.timestamp("ms")), time="ts",
                                   max_delay="3s")).execute(dw.Config(mode="interpreted"))
    assert_table_equal(got.table, expected.table)
    assert [(r["window_start"], r["k"]) for r in got.table.to_pylist()][:2] == [(at(-1000), 0), (at(-1000), 1)]
