"""``col(ts).dt.strftime(fmt)``: Python's ``datetime.strftime`` in UTC, in both engines; formats
validated when the query is built; the format never written into generated code."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.codegen.generate import generate_pipeline
from darwin.errors import DarwinTypeError
from darwin.graph.translate import translate
from darwin.plan.rules import optimize
from darwin.plan.timeformat import strftime, unit_ms
from darwin.testing import assert_engines_agree

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
LOW, HIGH = -30_610_224_000_000, 253_402_300_799_999  # 1000-01-01 .. 9999-12-31 (Python pads %Y from 1000 on)
PIECES = ["%Y", "%y", "%m", "%d", "%j", "%H", "%M", "%S", "%F", "%T", "%%", "-", ":", " ", "T", "day ", "ü"]
formats = st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map("".join)


def python(fmt: str, ms: int) -> str:
    return (EPOCH + timedelta(milliseconds=ms)).strftime(fmt)


@settings(max_examples=300, deadline=None)
@given(fmt=formats, ms=st.integers(LOW, HIGH))
def test_the_formatter_is_pythons_strftime_in_utc(fmt, ms):
    assert strftime(fmt, ms) == python(fmt, ms)


@settings(max_examples=20, deadline=None)
@given(fmts=st.lists(formats, min_size=1, max_size=3),
       ms=st.lists(st.one_of(st.none(), st.integers(LOW, HIGH), st.integers(-10**9, 10**10)), max_size=40),
       batch=st.integers(1, 16))
def test_both_engines_give_pythons_strings(fmts, ms, batch):
    t = dw.from_arrow(pa.table({"ts": pa.array(ms, pa.timestamp("ms"))}))
    q = t.select("ts", **{f"f{i}": col("ts").dt.strftime(f) for i, f in enumerate(fmts)})
    out = assert_engines_agree(q, dw.Config(batch_size=batch)).table.to_pylist()
    for row, v in zip(out, ms):
        assert [row[f"f{i}"] for i in range(len(fmts))] == [None if v is None else python(f, v) for f in fmts]


def test_days_flink_style():
    """Flink's DATE_FORMAT(ts, 'yyyy-MM-dd') and 'HH:mm', around midnight, before 1970 and far out."""
    ms = [0, 86_399_999, 86_400_000, -1, 1_436_918_399_999, 1_436_918_400_000, 951_782_400_000]  # 2000-02-29
    t = dw.from_arrow(pa.table({"ts": pa.array(ms, pa.timestamp("ms"))}))
    q = t.select(day=col("ts").dt.strftime("%Y-%m-%d"), minute=col("ts").dt.strftime("%H:%M"))
    assert [(r["day"], r["minute"]) for r in assert_engines_agree(q).table.to_pylist()] == [
        ("1970-01-01", "00:00"), ("1970-01-01", "23:59"), ("1970-01-02", "00:00"), ("1969-12-31", "23:59"),
        ("2015-07-14", "23:59"), ("2015-07-15", "00:00"), ("2000-02-29", "00:00")]


def test_years_python_cannot_format():
    """Every int64 millisecond has a string: %Y has at least four digits, years before 1 a sign."""
    assert strftime("%Y-%m-%d", -62_167_219_200_000) == "0000-01-01"  # 1 BC in astronomical numbering
    assert strftime("%Y-%m-%d %j", -62_167_219_200_001) == "-0001-12-31 365"
    assert strftime("%Y", 253_402_300_800_000) == "10000"
    assert strftime("%Y", 2**63 - 1) == "292278994" and strftime("%Y", -(2**63)).startswith("-292275055")
    t = dw.from_arrow(pa.table({"ts": pa.array([2**62, -(2**62), 5_000], pa.timestamp("ms"))}))
    out = assert_engines_agree(t.select(s=col("ts").dt.strftime("%F %T"))).table["s"].to_pylist()
    assert out == [strftime("%F %T", 2**62), strftime("%F %T", -(2**62)), "1970-01-01 00:00:05"]


def test_a_formatted_string_is_a_string_like_any_other():
    """Equal to a literal, grouped, joined with other strings: one code per string."""
    ms = [i * 3_600_000 for i in range(60)]
    t = dw.from_arrow(pa.table({"ts": pa.array(ms, pa.timestamp("ms")), "s": ["1970-01-02"] * 60}))
    q = (t.filter(col("ts").dt.strftime("%F") == col("s"))
          .group_by(day=col("ts").dt.strftime("%F"), hour=col("ts").dt.strftime("%H").str.lower())
          .agg(n=dw.count()))
    out = assert_engines_agree(q).table.to_pylist()
    assert [(r["day"], r["hour"], r["n"]) for r in out] == [("1970-01-02", f"{h:02d}", 1) for h in range(24)]


def test_units():
    assert unit_ms("%Y-%m-%d") == unit_ms("%j") == unit_ms("plain text") == 86_400_000
    assert unit_ms("%F %H") == 3_600_000 and unit_ms("%H:%M") == 60_000 and unit_ms("%T") == unit_ms("%S") == 1000


@pytest.mark.parametrize("fmt, message", [
    ("%Y-%Q", "unknown directive '%Q'"), ("%f", "unknown directive '%f'"), ("%a", "unknown directive"),
    ("100%", "lone '%'"), ("%", "lone '%'")])
def test_bad_formats_fail_when_the_query_is_built(fmt, message):
    with pytest.raises(DarwinTypeError, match=message) as e:
        col("ts").dt.strftime(fmt)
    assert repr(fmt) in str(e.value)  # the message names the format
    if "unknown" in message:
        assert "supported: %Y %y %m %d %j %H %M %S %F %T %%" in str(e.value)


def test_strftime_needs_a_timestamp_and_a_string_format():
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "n": [1], "s": ["x"]}))
    with pytest.raises(DarwinTypeError, match="expects timestamp, got int64"):
        t.select(x=col("n").dt.strftime("%Y"))
    with pytest.raises(DarwinTypeError, match="expects timestamp, got string"):
        t.select(x=col("s").dt.strftime("%Y"))
    with pytest.raises(DarwinTypeError, match="takes a format string"):
        col("ts").dt.strftime(5)  # type: ignore[arg-type]


EVIL_FORMAT = "'); __import__('os').system('echo pwned') #\n\"\"\"%Y"


def test_the_format_stays_out_of_generated_code():
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 86_400_000], pa.timestamp("ms"))}))
    q = t.select(s=col("ts").dt.strftime(EVIL_FORMAT))
    out = assert_engines_agree(q).table["s"].to_pylist()
    assert out == [EVIL_FORMAT.replace("%Y", "1970")] * 2
    for p in translate(optimize(q.plan), dw.Config()).pipelines:
        if p.needs_kernel:
            text = generate_pipeline(p).source
            for fragment in ("pwned", "__import__", "system", "%Y"):
                assert fragment not in text
            compile(text, "<generated>", "exec")


# -- where a kernel asks for strings: before the row did anything ---------------------------------------

N = 400
TIMES = [i * 7_000 + (i * 7919) % 6000 - 3000 for i in range(N)]
BIDS = pa.table({"ts": pa.array(TIMES, pa.timestamp("ms")), "k": [i % 4 for i in range(N)],
                 "v": [(i * 31) % 10 for i in range(N)]})
SIDE = pa.table({"key": [0, 1, 1, 2], "w": [10, 11, 12, 13]})


def shapes(t: dw.Table) -> dict[str, dw.Table]:
    side = dw.from_arrow(SIDE)
    sliding = t.window(dw.Slide("2min", every="1min", on="ts"))
    return {
        "after a sliding window": sliding.table().select("k", s=col("window_start").dt.strftime("%H:%M"),
                                                         m=col("ts").dt.strftime("%M:%S")),
        "after a lookup join": t.join(side.lookup(), on=[("k", "key")]).select("k", "w", s=col("ts").dt.strftime("%T")),
        "in a lookup join's condition": t.join(side.lookup(), on=[("k", "key")],
                                               where=col("ts").dt.strftime("%S") != "07").select("k", "w"),
        "in a windowed key and argument": t.with_columns(m=col("ts").dt.strftime("%H:%M"))
        .window(dw.Slide("2min", every="1min", on="ts")).group_by("m")
        .agg(n=dw.count(), c=dw.count(col("ts").dt.strftime("%S"), filter=col("v") > 3)),
        "in an argument after a lookup join": t.join(side.lookup(), on=[("k", "key")])
        .window(dw.Tumble("1min", on="ts")).group_by("w").agg(n=dw.count(col("ts").dt.strftime("%S"))),
        "through a sliding window and a lookup join": sliding.table().join(side.lookup(), on=[("k", "key")])
        .select("w", s=col("window_start").dt.strftime("%H:%M")),
        "after a sliding window, into a window": sliding.table().select("ts", "k", s=col("window_start"))
        .window(dw.Tumble("5min", on="ts")).group_by("k").agg(n=dw.count(col("s").dt.strftime("%H:%M"))),
    }


@pytest.mark.parametrize("name", list(shapes(dw.from_arrow(BIDS, time="ts"))))
@pytest.mark.parametrize("batch", [1, 7, 512])
def test_strings_asked_for_inside_loops_that_emit(name, batch):
    """Kernels stop for strings they lack and start the row again; inside a loop that emits (a sliding
    window's, a lookup join's) a first pass resolves them, so no row is emitted or aggregated twice.
    ``max_future`` rows are counted once, though the row that asks is read twice."""
    t = dw.from_arrow(BIDS, time="ts", max_delay="5s", max_future="1h")
    q = shapes(t)[name]
    compiled = assert_engines_agree(q, dw.Config(batch_size=batch))
    reference = q.execute(dw.Config(batch_size=batch, mode="interpreted"))
    assert compiled.metrics["future_rows"] == reference.metrics["future_rows"]
    assert compiled.table.num_rows > 0


def test_rows_beyond_max_future_are_counted_once():
    """A row far in the future both asks for a string and counts as a future row."""
    ms = [0, 10, 7_200_000, 20, 10_800_000]
    t = dw.from_arrow(pa.table({"ts": pa.array(ms, pa.timestamp("ms"))}), time="ts", max_future="1h")
    q = t.select(h=col("ts").dt.strftime("%H"))
    for batch in (1, 5):
        r = assert_engines_agree(q, dw.Config(batch_size=batch))
        assert r.metrics["future_rows"] == 2
        assert r.table["h"].to_pylist() == ["00", "00", "02", "00", "03"]


INT64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=10, deadline=None)
@given(ms=st.lists(st.one_of(INT64, st.integers(-(2**62), 2**62), st.integers(-62_198_755_200_000, 253_402_300_800_000),
                             st.sampled_from([-62_167_219_200_000 + 1, -62_167_219_200_001, 253_402_300_800_000])),
                   min_size=1, max_size=30))
def test_date_parts_are_the_same_in_every_year_on_both_engines(ms):
    """The interpreter took the year, month and day from Python's datetime, which stops at years 1 and
    9999 (a bare OverflowError for year 0); both engines now use the proleptic calendar with a year 0
    over every int64 (as Spark's year() does)."""
    parts = ("year", "month", "day", "hour", "minute", "second", "millisecond", "day_of_week")
    q = dw.from_arrow(pa.table({"ts": pa.array(ms, pa.timestamp("ms"))})).select(
        **{p: getattr(col("ts").dt, p)() for p in parts})
    got = assert_engines_agree(q).table
    for m, row in zip(ms, got.to_pylist()):
        if -62_135_596_800_000 <= m <= 253_402_300_799_999:  # where datetime holds it
            d = EPOCH + timedelta(milliseconds=m)
            assert (row["year"], row["month"], row["day"]) == (d.year, d.month, d.day)


def test_the_year_before_year_1_is_0():
    ms = [-62_167_219_200_000 + 1, -62_167_219_200_001]  # 0000-01-01 00:00:00.001 and the ms before it
    year0 = dw.from_arrow(pa.table({"ts": pa.array(ms, pa.timestamp("ms"))}))
    q = year0.select(y=col("ts").dt.year(), m=col("ts").dt.month(), d=col("ts").dt.day())
    assert assert_engines_agree(q).table.to_pylist() == [{"y": 0, "m": 1, "d": 1}, {"y": -1, "m": 12, "d": 31}]
