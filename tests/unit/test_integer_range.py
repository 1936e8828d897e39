"""Integer columns wider than int64: values that fit work, others are a SourceError naming them in both engines."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin import col
from darwin.errors import SourceError


def uint64_table(values: list[int | None]) -> pa.Table:
    n = len(values)
    return pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), "id": pa.array(values, pa.uint64())})


def test_uint64_beyond_int64_is_a_source_error_naming_the_value(tmp_path, config):
    table = uint64_table([1, None, 2**64 - 1, 2**63])
    pq.write_table(table, tmp_path / "x.parquet")
    for t in (dw.read_parquet(tmp_path / "x.parquet", time="ts"), dw.from_arrow(table, time="ts", name="ids")):
        with pytest.raises(SourceError, match=rf"source '{t.plan.source.name}': column 'id' holds "
                                              r"18446744073709551615, which does not fit Darwin's int64"):
            t.select("id").collect(config)


def test_uint64_within_int64_works(config):
    values = [0, None, 2**63 - 1, 7]
    got = dw.from_arrow(uint64_table(values), time="ts").select("id", x=col("id") % 10).collect(config)
    assert got["id"].type == pa.int64()
    assert got.to_pylist() == [{"id": 0, "x": 0}, {"id": None, "x": None}, {"id": 2**63 - 1, "x": 7},
                               {"id": 7, "x": 7}]


def test_seconds_beyond_int64_milliseconds_are_a_source_error(config):
    # times 1000 would wrap around silently; the largest that fits still works
    limit = (2**63 - 1) // 1000
    ok = dw.from_arrow(pa.table({"ts": pa.array([-limit, limit], pa.timestamp("s"))}))  # no event time: past 2^62
    assert ok.select(t=col("ts").cast("int64")).collect(config)["t"].to_pylist() == [-limit * 1000, limit * 1000]
    for bad in (limit + 1, -limit - 1):
        t = dw.from_arrow(pa.table({"ts": pa.array([0, bad], pa.timestamp("s"))}), time="ts", name="secs")
        with pytest.raises(SourceError, match=rf"source 'secs': column 'ts' holds {bad} s, which does not fit "
                                              "Darwin's int64 milliseconds"):
            t.select("ts").collect(config)


def test_int96_timestamps_outside_the_nanosecond_range_read_as_written(tmp_path, config):
    """Spark (spark.sql.parquet.outputTimestampType=INT96), Hive and Impala write INT96 timestamps, which
    Arrow reads as nanoseconds by default: dates before 1677 or after 2262 (0001-01-01 is a common
    placeholder) wrapped around silently. They are read in milliseconds, floored as every timestamp is."""
    import datetime as dt

    written = [dt.datetime(1, 1, 1), dt.datetime(1500, 1, 1, 12), dt.datetime(2020, 1, 1, 0, 0, 0, 123456),
               dt.datetime(9999, 12, 31, 23, 59, 59, 999999), None, dt.datetime(1969, 12, 31, 23, 59, 59, 999500)]
    pq.write_table(pa.table({"ts": pa.array(written, pa.timestamp("us"))}), tmp_path / "x.parquet",
                   use_deprecated_int96_timestamps=True)
    got = dw.read_parquet(tmp_path / "x.parquet", time="ts").select("ts", ms=col("ts").cast("int64")).collect(config)
    assert got["ts"].to_pylist() == [None if t is None else t.replace(microsecond=t.microsecond // 1000 * 1000)
                                     for t in written]
    assert got["ms"].to_pylist()[-1] == -1  # floored, as -0.5 ms of a timestamp[us] is
