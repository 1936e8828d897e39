"""SQL expressions whose meaning must be Flink's: BETWEEN SYMMETRIC, DOW numbering, exact intervals and
timestamp literals, truncating integer division and remainder, IN lists with negative values, NULL and
columns; ``self`` as an output name; ``isin`` comparing as ``==`` does. Each checked against plain Python
on both engines."""

import math
from datetime import datetime, timedelta

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col
from darwin.errors import DarwinTypeError, SqlError
from darwin.testing import assert_table_equal

MODES = [dw.Config(), dw.Config(mode="interpreted")]
INT64_MIN = -(2**63)


def table(**columns):
    n = len(next(iter(columns.values())))
    return dw.from_arrow(pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), **columns}), time="ts", name="t")


def rows(text, t, config):
    """The query's rows, in the input's order (each query selects ts first)."""
    return [tuple(r.values())[1:] for r in sorted(dw.sql(text, tables={"t": t}).collect(config).to_pylist(),
                                                   key=lambda r: r["ts"])]


def java_div(a, b, wrap=True):
    """Java's long division (Flink's BIGINT /): truncated toward zero; NULL for 0, as Darwin has it."""
    if a is None or b is None or b == 0:
        return None
    q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return (q + 2**63) % 2**64 - 2**63 if wrap else q  # wraps as int64: MIN / -1 is MIN


def java_mod(a, b):
    """Java's long %: a - b * (a / b), the sign of the dividend."""
    return None if a is None or b is None or b == 0 else a - b * java_div(a, b, wrap=False)


# -- BETWEEN SYMMETRIC ----------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_between_symmetric_swaps_bounds_the_wrong_way_round(config):
    values = [0, 1, 2, 3, 4, None]
    got = rows("SELECT ts, a BETWEEN SYMMETRIC 3 AND 1, a NOT BETWEEN SYMMETRIC 3 AND 1, a BETWEEN SYMMETRIC 1 AND 3, "
               "a BETWEEN 3 AND 1, a BETWEEN SYMMETRIC b AND 1 FROM t",
               table(a=values, b=[3, 3, None, None, 3, 3]), config)
    inside = [None if a is None else 1 <= a <= 3 for a in values]
    # Calcite: (a >= b AND a <= 1) OR (a >= 1 AND a <= b); a NULL bound leaves it NULL unless the other side holds
    with_null = [False, True, None, None, False, None]
    assert got == [(i, None if i is None else not i, i, None if i is None else False, n)
                   for i, n in zip(inside, with_null, strict=True)]


# -- NULLIF ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_nullif_is_null_where_its_operands_are_equal(config):
    """Flink's NULLIF(a, b), CASE WHEN a = b THEN NULL ELSE a END, in a select list and in aggregates;
    it was refused as not supported."""
    a, b = [1, 2, None, 4, 0], [1, 3, 3, None, 0]
    s = ["x", "y", None, "x", "z"]
    t = table(a=a, b=b, s=s, f=[0.5, 1.0, None, -0.0, 0.0])
    got = rows("SELECT ts, NULLIF(a, b), NULLIF(a, 0), NULLIF(s, 'x'), NULLIF(f, 0.0), NULLIF(a, NULL) FROM t",
               t, config)
    assert got == [(None, 1, None, 0.5, 1), (2, 2, "y", 1.0, 2), (None, None, None, None, None),
                   (4, 4, None, None, 4), (None, None, "z", None, 0)]
    summed = dw.sql("SELECT count(NULLIF(a, b)) AS n, sum(NULLIF(a, 4)) AS m FROM t", tables={"t": t})
    assert summed.collect(config).to_pylist() == [{"n": 2, "m": 3}]


def test_nullif_of_operands_that_do_not_compare_is_refused_at_its_position():
    with pytest.raises(SqlError, match=r"line 1, column 12: NULLIF: cannot compare s \(string\) with a \(int64\)"):
        dw.sql("SELECT ts, NULLIF(s, a) FROM t", tables={"t": table(a=[1], s=["x"])})


# -- DOW -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_dow_counts_from_sunday_and_isodow_from_monday(config):
    days = [datetime(1970, 1, 1) + timedelta(days=d) for d in range(7)]  # Thursday .. Wednesday
    t = dw.from_arrow(pa.table({"ts": pa.array(days, pa.timestamp("ms"))}), time="ts", name="t")
    got = rows("SELECT ts, EXTRACT(DOW FROM ts), EXTRACT(ISODOW FROM ts), DAYOFWEEK(ts) FROM t", t, config)
    sunday_first = [d.isoweekday() % 7 + 1 for d in days]  # Flink, Calcite, Spark: 1 = Sunday .. 7 = Saturday
    assert got == [(s, d.isoweekday(), s) for s, d in zip(sunday_first, days, strict=True)]
    assert [r[0] for r in got] == [5, 6, 7, 1, 2, 3, 4]
    fluent = t.select(iso=col("ts").dt.day_of_week()).collect(config)["iso"].to_pylist()
    assert fluent == [d.isoweekday() for d in days]  # the fluent API stays ISO, as polars' weekday()


# -- intervals and timestamp literals -------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_interval_and_timestamp_literals_are_exact_to_the_millisecond(config):
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1_000, 1_001, 2_001], pa.timestamp("ms"))}), time="ts", name="t")
    windows = rows("SELECT window_start AS ts, window_end, count(*) FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
                   "INTERVAL '1.001' SECOND)) GROUP BY window_start, window_end", t, config)
    ms = timedelta(milliseconds=1)
    assert windows == [(datetime(1970, 1, 1) + 1_001 * ms, 2), (datetime(1970, 1, 1) + 2_002 * ms, 2)]
    intervals = {"'1.001' SECOND": 1_001, "'0.5' SECOND": 500, "'1.5' MINUTE": 90_000, "'-1.25' SECOND": -1_250,
                 "'0.001' SECOND": 1, "'2.0005' HOUR": 7_201_800, "'1.00000' DAY": 86_400_000}
    got = rows("SELECT ts, " + ", ".join(f"ts + INTERVAL {i} - ts" for i in intervals) + " FROM t", t, config)
    assert got[0] == tuple(intervals.values())
    literal = rows("SELECT ts, TIMESTAMP '2020-01-01 00:00:00.123000', TIMESTAMP '2020-01-01 00:00:00.1' FROM t",
                   t, config)[0]
    assert literal == (datetime(2020, 1, 1, 0, 0, 0, 123_000), datetime(2020, 1, 1, 0, 0, 0, 100_000))
    # a CAST to TIMESTAMP(3) cuts finer digits, as Flink's cast does (the literal alone keeps them in Flink);
    # TIMESTAMP(6) and (9) hold Darwin's milliseconds as they are
    cut = rows("SELECT ts, CAST('2020-01-01 00:00:00.123999' AS TIMESTAMP(3)), CAST('1969-12-31 23:59:59.9999' AS "
               "TIMESTAMP(3)), CAST(ts AS TIMESTAMP(6)) FROM t", t, config)[1]
    assert cut == (datetime(2020, 1, 1, 0, 0, 0, 123_000), datetime(1969, 12, 31, 23, 59, 59, 999_000),
                   datetime(1970, 1, 1, 0, 0, 1))


@pytest.mark.parametrize("text, problem", [
    ("SELECT ts + INTERVAL '0.0005' SECOND FROM t", "line 1, column 22: .* is 0.5 ms: Darwin's timestamps are whole"),
    ("SELECT ts,\n  ts - INTERVAL '1.00001' MINUTE FROM t", "line 2, column 17: .* is 60000.6 ms"),
    ("SELECT TIMESTAMP '2020-01-01 00:00:00.123456' FROM t", "line 1, column 18: .*finer than a millisecond.*"
                                                            r"CAST\('2020-01-01 00:00:00.123456' AS TIMESTAMP\(3\)\)"),
    ("SELECT CAST('2020-01-01 00:00:00.123456' AS TIMESTAMP(6)) FROM t", "column 13: .*finer than a millisecond"),
    ("SELECT CAST(ts AS TIMESTAMP(0)) FROM t", r"line 1, column 13: CAST to TIMESTAMP\(0\) is not supported: .* "
                                               "Flink would cut the value to 1000 ms"),
    ("SELECT a,\n  CAST('2020-01-01 00:00:00.5' AS TIMESTAMP(2)) FROM t", r"line 2, column 8: CAST to TIMESTAMP\(2\)"),
    ("SELECT TRY_CAST(ts AS TIMESTAMP_LTZ(1)) FROM t", r"column 17: CAST to TIMESTAMP_LTZ\(1\) is not supported"),
    ("SELECT TIMESTAMP '2020-01-01 00:00:00+02:00' FROM t", "line 1, column 18: .*'\\+02:00' .* no time zone"),
    ("SELECT TIMESTAMP '2020-01-01 00:00:00.500Z' FROM t", "line 1, column 18: .*'Z' .* no time zone"),
])
def test_literals_finer_than_a_millisecond_or_with_a_zone_are_refused(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1])})


# -- integer division and remainder ---------------------------------------------------------------------

PAIRS = [(-7, 2), (7, -2), (-7, -2), (7, 2), (6, -3), (-6, 3), (0, -5), (5, 0), (None, 2), (2, None),
         (INT64_MIN, -1), (INT64_MIN, 3), (INT64_MIN, INT64_MIN), (2**63 - 1, -2), (-1, 2**63 - 1)]


@pytest.mark.parametrize("config", MODES)
def test_integer_division_and_remainder_truncate_toward_zero_as_in_flink(config):
    a, b = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    got = rows("SELECT ts, a / b, a % b, MOD(a, b), a / 2, a % -2, MOD(a, 3), -7 / b FROM t",
               table(a=pa.array(a, pa.int64()), b=pa.array(b, pa.int64())), config)
    assert got == [(java_div(x, y), java_mod(x, y), java_mod(x, y), java_div(x, 2), java_mod(x, -2), java_mod(x, 3),
                    java_div(-7, y)) for x, y in PAIRS]
    assert got[:2] == [(-3, -1, -1, -3, -1, -1, -3), (-3, 1, 1, 3, 1, 1, 3)]
    fluent = table(a=[-7, 7], b=[2, -2]).select(q=col("a") // col("b"), r=col("a") % col("b")).collect(config)
    assert fluent.to_pylist() == [{"q": -4, "r": 1}, {"q": -4, "r": -1}]  # the fluent API floors, as polars


@pytest.mark.parametrize("config", MODES)
def test_float_remainder_has_the_sign_of_the_dividend(config):
    pairs = [(-7.5, 2.0), (7.5, -2.0), (-7.5, -2.0), (7.5, 2.0), (-1e-300, 2.0), (5.0, math.inf), (-3.0, 0.0),
             (None, 1.0)]
    got = rows("SELECT ts, f % g, MOD(f, 2), i % g FROM t",
               table(f=[p[0] for p in pairs], g=[p[1] for p in pairs], i=[-7, 7, -7, 7, -1, 5, -3, None]), config)
    fmod = lambda x, y: None if x is None or y == 0 else math.fmod(x, y)  # noqa: E731
    assert got == [(fmod(x, y), fmod(x, 2.0), fmod(i, y)) for (x, y), i in
                   zip(pairs, [-7, 7, -7, 7, -1, 5, -3, None], strict=True)]


@pytest.mark.parametrize("config", MODES)
def test_a_zero_remainder_has_the_sign_of_the_dividend(config):
    got = rows("SELECT ts, f % g, MOD(f, g) FROM t", table(f=[-0.0, 0.0, -4.0, 4.0], g=[3.0, -3.0, 2.0, -2.0]), config)
    assert [tuple(math.copysign(1.0, v) for v in row) for row in got] == [(-1, -1), (1, 1), (-1, -1), (1, 1)]


# -- IN lists -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_in_lists_take_negative_and_constant_values(config):
    got = rows("SELECT ts, a IN (-1, 2), a NOT IN (-1, 2), a IN (-(3 - 2), 1 + 1, CAST(NULL AS BIGINT)), "
               "f IN (-0.5, 2) FROM t", table(a=[-1, 1, 2, None], f=[-0.5, 1.0, 2.0, None]), config)
    assert got == [(True, False, True, True), (False, True, None, False), (True, False, True, True),
                   (None, None, None, None)]


@pytest.mark.parametrize("config", MODES)
def test_in_lists_take_columns_and_expressions_of_them(config):
    t = table(a=[1, None, 3, 4, 2], b=[1, 2, None, 5, 7], c=[7, 2, 3, None, 1], f=[1.0, math.nan, 3.0, None, 2.0],
              s=["x", "y", None, "z", "q"], s2=["y", "y", "q", None, "q"])
    got = rows("SELECT ts, a IN (b, c), a NOT IN (b, c), a IN (b, 4), a IN (b + 1, NULL), f IN (a, 2.5), "
               "s IN (s2, 'z'), s NOT IN (s2) FROM t", t, config)
    assert got == [(True, False, True, None, True, False, True), (None, None, None, None, None, True, False),
                   (True, False, None, None, True, None, None), (None, None, True, None, None, True, None),
                   (False, True, False, None, True, True, False)]
    assert rows("SELECT ts, a FROM t WHERE a NOT IN (b, c)", t, config) == [(2,)]


@pytest.mark.parametrize("text, problem", [
    ("SELECT a FROM t WHERE a IN (1, s)", r"line 1, column 32: IN: cannot compare a \(int64\) with s \(string\)"),
    ("SELECT a IN (1,\n  'x') FROM t", r"line 2, column 3: IN: cannot compare a \(int64\) with 'x' \(string\)"),
])
def test_in_lists_refuse_values_of_another_type_naming_them(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})


# the values an IN list draws from: SQL text and its value in a row (b + 1 cannot overflow: b is small)
ITEMS = {"b": lambda r: r["b"], "c": lambda r: r["c"], "b + 1": lambda r: None if r["b"] is None else r["b"] + 1,
         "f": lambda r: r["f"], "a": lambda r: r["a"], "NULL": lambda r: None, "2": lambda r: 2, "-1": lambda r: -1,
         "1.5": lambda r: 1.5, "CAST(NULL AS BIGINT)": lambda r: None}


def equal(x, v):
    """SQL's = as Darwin has it: NULL beside a NULL; an int with a float in float64; NaN equals nothing."""
    return None if x is None or v is None else float(x) == float(v)


def sql_in(x, values):
    """x = v1 OR x = v2 OR ... in three-valued logic."""
    results = [equal(x, v) for v in values]
    return True if True in results else None if None in results else False


maybe = lambda values: st.one_of(st.none(), values)  # noqa: E731
NUMBERS = st.integers(-2, 3)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.lists(st.tuples(maybe(NUMBERS), maybe(NUMBERS), maybe(NUMBERS),
                               maybe(st.one_of(NUMBERS.map(float), st.just(math.nan), st.just(-0.0)))), max_size=30),
       operand=st.sampled_from(["a", "f"]), items=st.lists(st.sampled_from(sorted(ITEMS)), min_size=1, max_size=4),
       batch_size=st.integers(1, 8))
def test_in_lists_with_columns_agree_with_three_valued_logic(data, operand, items, batch_size):
    """Random lists of columns, expressions of them, constants and NULLs, over random rows with NULLs
    and NaNs: the compiled engine and the interpreter give ``x = v OR ...`` in three-valued logic,
    for IN, NOT IN and as a WHERE."""
    names = ["a", "b", "c", "f"]
    t = table(**{n: pa.array([r[i] for r in data], pa.float64() if n == "f" else pa.int64())
                 for i, n in enumerate(names)})
    listed = ", ".join(items)
    text = f"SELECT ts, {operand} IN ({listed}) AS i, {operand} NOT IN ({listed}) AS n FROM t"
    kept = f"SELECT ts FROM t WHERE {operand} IN ({listed})"
    want = [sql_in(r[operand], [ITEMS[i](r) for i in items]) for r in (dict(zip(names, d)) for d in data)]
    configs = (dw.Config(batch_size=batch_size), dw.Config(batch_size=batch_size, mode="interpreted"))
    compiled, reference = (dw.sql(text, tables={"t": t}).execute(c) for c in configs)
    assert_table_equal(compiled.table, reference.table, check_nullability=True)
    assert [(r["i"], r["n"]) for r in reference.table.to_pylist()] == [(w, None if w is None else not w) for w in want]
    for c in configs:  # WHERE keeps the rows where it is TRUE
        assert dw.sql(kept, tables={"t": t}).collect(c)["ts"].to_pylist() == \
            [datetime(1970, 1, 1) + timedelta(milliseconds=i) for i, w in enumerate(want) if w is True]


@pytest.mark.parametrize("config", MODES)
def test_in_with_null_is_null_where_nothing_matches(config):
    t = table(a=[1, 2, None])
    got = rows("SELECT ts, a IN (1, NULL), a NOT IN (1, NULL), a IN (NULL), a NOT IN (3, NULL) FROM t", t, config)
    assert got == [(True, False, None, None), (None, None, None, None), (None, None, None, None)]
    assert rows("SELECT ts, a FROM t WHERE a IN (1, NULL)", t, config) == [(1,)]
    assert rows("SELECT ts, a FROM t WHERE a NOT IN (3, NULL)", t, config) == []  # never TRUE
    assert rows("SELECT ts, a FROM t WHERE NOT (a IN (3, NULL))", t, config) == []
    fluent = t.filter(~col("a").isin([3, None])).collect(config)  # the fluent isin: the same three values
    assert fluent.num_rows == 0



# -- narrowing integer casts ----------------------------------------------------------------------------

NARROW = {"INT": 32, "SMALLINT": 16, "TINYINT": 8}
EDGES = [0, 1, -1, 127, 128, -128, -129, 255, 32767, 32768, -32769, 40000, 2**31 - 1, 2**31, -(2**31) - 1,
         3_000_000_000, 12_345_678_901, -12_345_678_901, 2**63 - 1, INT64_MIN, None]
FLOAT_EDGES = [0.0, -0.0, -2.7, 2.7, 127.9, 128.0, -128.9, -129.0, 32767.5, -32768.9, 2147483647.9, 2147483648.0,
               -2147483648.9, -2147483649.0, 3e9, 1e20, math.inf, -math.inf, math.nan, None]


def java_narrow(v, bits):
    """Java's narrowing of an integer (Flink's CAST to INT/SMALLINT/TINYINT): its low ``bits``, signed."""
    half = 2 ** (bits - 1)
    return None if v is None else (v + half) % (2 * half) - half


def float_narrow(f, bits):
    """A float truncated toward zero, NULL where that does not fit (or for NaN and infinities)."""
    if f is None or not math.isfinite(f) or not -(2 ** (bits - 1)) <= math.trunc(f) < 2 ** (bits - 1):
        return None
    return math.trunc(f)


@pytest.mark.parametrize("config", MODES)
def test_casts_to_int_smallint_and_tinyint_narrow_integers_as_java_does(config):
    t = table(a=pa.array(EDGES, pa.int64()), f=pa.array(FLOAT_EDGES + [None], pa.float64()))
    casts = ", ".join(f"CAST(a AS {n}) AS a_{n}, CAST(f AS {n}) AS f_{n}" for n in NARROW)
    out = dw.sql(f"SELECT ts, {casts}, CAST(3000000000 AS INT) AS lit, CAST(a > 0 AS TINYINT) AS b FROM t",
                 tables={"t": t}).collect(config)
    assert set(out.schema.types[1:]) == {pa.int64()}  # Darwin has one integer type: the values are the target's
    got = sorted(out.to_pylist(), key=lambda r: r["ts"])
    for n, bits in NARROW.items():
        assert [r[f"a_{n}"] for r in got] == [java_narrow(v, bits) for v in EDGES]
        assert [r[f"f_{n}"] for r in got] == [float_narrow(f, bits) for f in FLOAT_EDGES + [None]]
    assert {r["lit"] for r in got} == {-1294967296}
    assert [r["b"] for r in got] == [None if v is None else int(v > 0) for v in EDGES]
    # Flink's own cases (CastRulesTest): 1234567 -> TINYINT -121, 12345678901 -> SMALLINT 7221, -> INT -539222987
    assert java_narrow(1234567, 8) == -121 and java_narrow(12_345_678_901, 16) == 7221
    assert java_narrow(12_345_678_901, 32) == -539222987


@settings(max_examples=25, deadline=None)
@given(ints=st.lists(st.one_of(st.none(), st.integers(INT64_MIN, 2**63 - 1)), max_size=20),
       floats=st.lists(st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True)), max_size=20))
def test_narrowing_casts_agree_on_both_engines(ints, floats):
    n = max(len(ints), len(floats))
    ints, floats = ints + [None] * (n - len(ints)), floats + [None] * (n - len(floats))
    t = table(a=pa.array(ints, pa.int64()), f=pa.array(floats, pa.float64()))
    text = f"SELECT ts, {', '.join(f'CAST(a AS {n}) AS a_{n}, TRY_CAST(f AS {n}) AS f_{n}' for n in NARROW)} FROM t"
    compiled, reference = (dw.sql(text, tables={"t": t}).execute(c).table for c in MODES)
    assert_table_equal(compiled, reference, check_nullability=True)
    for n, bits in NARROW.items():
        assert reference[f"a_{n}"].to_pylist() == [java_narrow(v, bits) for v in ints]
        assert reference[f"f_{n}"].to_pylist() == [float_narrow(f, bits) for f in floats]

@pytest.mark.parametrize("text, problem", [
    ("SELECT CAST(ts AS BIGINT) FROM t", "CAST from TIMESTAMP to BIGINT is not allowed .* ts - TIMESTAMP '1970-01-01"),
    ("SELECT a,\n  TRY_CAST(ts AS DOUBLE) FROM t", "line 2, column 12: CAST from TIMESTAMP to DOUBLE"),
    ("SELECT CAST(ts AS INT) FROM t", "CAST from TIMESTAMP to INT is not allowed"),
    ("SELECT CAST(ts AS BOOLEAN) FROM t", "CAST from TIMESTAMP to BOOLEAN is not allowed"),
    ("SELECT CAST(a AS TIMESTAMP(3)) FROM t",
     "CAST from int64 to TIMESTAMP\\(3\\) is not allowed .* seconds or milliseconds.* \\+ a \\* INTERVAL '1' SECOND"),
    ("SELECT CAST(f * 2 AS TIMESTAMP) FROM t", "CAST from float64 to TIMESTAMP is not allowed"),
    ("SELECT CAST(a > 0 AS TIMESTAMP) FROM t", "CAST from bool to TIMESTAMP is not allowed"),
])
def test_casts_between_timestamps_and_numbers_are_refused_as_in_flink(text, problem):
    """Flink refuses them and Spark's count seconds, so Darwin's milliseconds would be silently 1000 times off
    for a query written for either (CAST(ts AS BIGINT) was ms, CAST(epoch_seconds AS TIMESTAMP) a 1970 date)."""
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], f=[1.0])})


@pytest.mark.parametrize("config", MODES)
def test_the_ways_out_of_a_timestamp_cast_say_the_unit(config):
    t = table(a=pa.array([1_000, -2, None], pa.int64()))
    got = rows("SELECT ts, TIMESTAMP '1970-01-01 00:00:00' + a * INTERVAL '1' SECOND, "
               "TIMESTAMP '1970-01-01 00:00:00' + a * INTERVAL '0.001' SECOND, ts - TIMESTAMP '1970-01-01 00:00:00', "
               "CAST(NULL AS TIMESTAMP), CAST(ts AS TIMESTAMP(3)) FROM t", t, config)
    epoch, ms = datetime(1970, 1, 1), timedelta(milliseconds=1)
    assert got == [(epoch + 1_000_000 * ms, epoch + 1_000 * ms, 0, None, epoch),
                   (epoch - 2_000 * ms, epoch - 2 * ms, 1, None, epoch + ms), (None, None, 2, None, epoch + 2 * ms)]


@pytest.mark.parametrize("text", ["SELECT a FROM t WHERE ts > 1600000000", "SELECT ts = 0 FROM t",
                                  "SELECT 1.5 <= ts FROM t", "SELECT ts BETWEEN 0 AND 5 FROM t",
                                  "SELECT ts IN (1, 2) FROM t", "SELECT a IN (ts) FROM t",
                                  "SELECT CASE ts WHEN 0 THEN 1 END FROM t"])
def test_a_timestamp_compared_with_a_number_is_refused_as_in_flink(text):
    """It compared the number with milliseconds since the epoch, where a query written for Spark means seconds
    (WHERE ts > 1600000000 kept every row of 2020); Flink refuses it."""
    with pytest.raises(SqlError, match="a TIMESTAMP cannot be compared with a number .* ts - TIMESTAMP '1970-01-01"):
        dw.sql(text, tables={"t": table(a=[1])})


@pytest.mark.parametrize("config", MODES)
def test_timestamps_compare_with_timestamps_and_their_milliseconds_with_numbers(config):
    got = rows("SELECT ts, ts > TIMESTAMP '1970-01-01 00:00:00', ts - TIMESTAMP '1970-01-01 00:00:00' >= 1, "
               "ts BETWEEN TIMESTAMP '1970-01-01 00:00:00' AND ts + INTERVAL '1' SECOND, "
               "CASE ts WHEN TIMESTAMP '1970-01-01 00:00:00' THEN 'epoch' END FROM t", table(a=[1, 2]), config)
    assert got == [(False, False, True, "epoch"), (True, True, True, None)]


# -- numeric literals -----------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_the_smallest_bigint_is_a_literal(config):
    """-9223372036854775808 is a BIGINT in Flink (Calcite negates the literal); it was refused as
    9223372036854775808 does not fit in int64, with no position."""
    got = rows("SELECT ts, -9223372036854775808, a IN (-9223372036854775808), a = -9223372036854775807 - 1, "
               "9223372036854775807, 1e-400 FROM t", table(a=pa.array([INT64_MIN, 0], pa.int64())), config)
    assert got == [(INT64_MIN, True, True, 2**63 - 1, 0.0), (INT64_MIN, False, False, 2**63 - 1, 0.0)]


@pytest.mark.parametrize("text, problem", [
    ("SELECT 9223372036854775808 FROM t", "line 1, column 8: integer literal 9223372036854775808 is past BIGINT"),
    ("SELECT a,\n  a + -99999999999999999999 FROM t", "line 2, column 8: integer literal 99999999999999999999 is past"),
    ("SELECT 1e400 FROM t", "line 1, column 8: numeric literal 1e400 is out of range of DOUBLE"),
    ("SELECT a FROM t WHERE a > -1.5E309", "line 1, column 28: numeric literal 1.5E309 is out of range"),
])
def test_numeric_literals_neither_bigint_nor_double_hold_are_refused_at_their_position(text, problem):
    """Flink refuses a DOUBLE literal that overflows (1e400 was infinity) and makes an integer past BIGINT a
    DECIMAL, which Darwin's DOUBLE holds inexactly (it was an error naming no position)."""
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1])})


# -- names and comparisons ------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_self_is_a_column_name_like_any_other(config):
    t = table(a=[1, 2, 2])
    assert rows("SELECT ts, a AS self FROM t", t, config) == [(1,), (2,), (2,)]
    grouped = dw.sql("SELECT a, count(*) AS self FROM t GROUP BY a", tables={"t": t}).collect(config)
    assert sorted(tuple(r.values()) for r in grouped.to_pylist()) == [(1, 1), (2, 2)]
    assert t.select(self=col("a")).collect(config)["self"].to_pylist() == [1, 2, 2]
    assert t.with_columns(self=col("a") + 1).collect(config)["self"].to_pylist() == [2, 3, 3]
    counts = t.group_by(self=col("a") * 10).agg(self_n=dw.count()).collect(config)
    assert sorted(tuple(r.values()) for r in counts.to_pylist()) == [(10, 1), (20, 2)]
    assert t.agg(self=dw.sum("a")).collect(config)["self"].to_pylist() == [5]
    windowed = t.window(dw.Tumble("1s", on="ts")).group_by("a").agg(self=dw.count()).collect(config)
    assert sorted(windowed["self"].to_pylist()) == [1, 2]


@pytest.mark.parametrize("extra", [0, 20], ids=["inline", "long list"])
def test_isin_compares_as_equality_does_on_both_engines(extra):
    big = 2**53 + 1  # float(big) == 2**53: the int compares equal to the float, as == says
    t = table(a=pa.array([big, 2**53, 3], pa.int64()))
    values = [float(2**53)] + [1000.5 + i for i in range(extra)]
    for config in MODES:  # the compiled engine compared so already; the interpreter compared ints to floats exactly
        got = t.select(isin=col("a").isin(values), eq=col("a") == float(2**53)).collect(config).to_pylist()
        assert [r["isin"] for r in got] == [r["eq"] for r in got] == [True, True, False]
        in_sql = rows("SELECT ts, a IN (9007199254740992.0), a = 9007199254740992.0 FROM t", t, config)
        assert in_sql == [(True, True), (True, True), (False, False)]

# -- string functions -----------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_a_regexp_group_the_pattern_lacks_is_null_a_negative_one_too(config):
    """Flink's REGEXP_EXTRACT gives NULL for a group the pattern does not have, below 0 as above its
    groups (Java's group(-1) throws, and Flink returns NULL). A negative group failed row by row with
    a bare IndexError (Python's m.group(-1)); SQL refused -1 as 'not an integer literal', as it did
    SPLIT_INDEX's -1, whose answer is NULL too."""
    t = table(s=["ab", "x", None])
    got = rows("SELECT ts, REGEXP_EXTRACT(s, '(a)(b)', -1), REGEXP_EXTRACT(s, '(a)(b)', 3), "
               "REGEXP_EXTRACT(s, '(a)(b)', 2), SPLIT_INDEX(s, 'a', -1), SPLIT_INDEX(s, 'a', 1) FROM t", t, config)
    assert got == [(None, None, "b", None, "b"), (None,) * 5, (None,) * 5]
    fluent = t.select(r=col("s").str.regexp_extract("(a)", -2)).collect(config)
    assert fluent["r"].to_pylist() == [None, None, None]


@pytest.mark.parametrize("config", MODES)
def test_split_index_of_the_empty_string_is_null_as_in_flink(config):
    """Flink splits with commons-lang's splitByWholeSeparatorPreserveAllTokens, which gives no pieces for
    '': SPLIT_INDEX('', ',', 0) is NULL. Python's ''.split(',') is [''], so Darwin gave ''. Empty pieces
    between, before and after separators stay."""
    t = table(s=["", ",", "a,,b", ",a,", None])
    got = rows("SELECT ts, SPLIT_INDEX(s, ',', 0), SPLIT_INDEX(s, ',', 1), SPLIT_INDEX(s, ',', 2) FROM t", t, config)
    assert got == [(None, None, None), ("", "", None), ("a", "", "b"), ("", "a", ""), (None, None, None)]
    assert t.select(p=col("s").str.split_index(",", 0)).collect(config)["p"].to_pylist() == [None, "", "a", "", None]


# -- DATE_FORMAT patterns -------------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_date_format_reads_quotes_as_java_does(config):
    """In Java's patterns (Flink's DATE_FORMAT) '' is one quote, inside quoted text or out: 'HH''mm' gave
    '0000' (the quotes dropped) and 'it''s' gave 'its'."""
    t = table(a=[0])
    got = rows("SELECT ts, DATE_FORMAT(ts, 'HH''''mm'), DATE_FORMAT(ts, '''it''''s'' yyyy'), DATE_FORMAT(ts, ''''''), "
               "DATE_FORMAT(ts, '''[%]'' HH''h''') FROM t", t, config)
    assert got == [("00'00", "it's 1970", "'", "[%] 00h")]


@pytest.mark.parametrize("pattern, problem", [
    ("yyyy'MM", r"the quote at position 5 of \"yyyy'MM\" is not closed"),
    ("HH'", "the quote at position 3"),
    ("[yyyy]", r"\[ in '\[yyyy\]': Java's patterns do not print"),
    ("yyyy#MM", "# in 'yyyy#MM'"),
])
def test_date_format_refuses_a_quote_left_open_and_what_java_does_not_print(pattern, problem):
    """A quote left open was dropped ('yyyy''MM' printed '197001'; Java fails), and [ ] { } # were printed
    where Java reads an optional section or fails."""
    text = "SELECT DATE_FORMAT(ts, '" + pattern.replace("'", "''") + "') FROM t"
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[0])})


# Flink's string functions: (SQL over the column s, the value of s, Flink's result); the documented
# examples, and the edges of BinaryStringDataUtil / SqlFunctionUtils / Calcite's INITCAP and LIKE
FLINK_STRINGS = [
    ("SUBSTRING(s FROM 2 FOR 3)", "Hello World", "ell"), ("SUBSTRING(s FROM 7)", "Hello World", "World"),
    ("SUBSTR(s, 0, 2)", "abc", "ab"), ("SUBSTR(s, -2)", "abcd", "cd"), ("SUBSTR(s, -5, 3)", "abc", ""),
    ("SUBSTR(s, 4)", "abc", ""), ("SUBSTR(s, 2, -1)", "abc", None), ("SUBSTR(s, 2, 9)", "héllo", "éllo"),
    ("TRIM(s)", "  hi \t ", "hi \t"), ("TRIM(BOTH 'xy' FROM s)", "xyhixx", "hi"),
    ("TRIM(LEADING 'x' FROM s)", "xxhixx", "hixx"), ("TRIM(TRAILING FROM s)", "  hi  ", "  hi"),
    ("LTRIM(s)", "  hi  ", "hi  "), ("RTRIM(s)", "  hi  ", "  hi"),
    ("REPLACE(s, 'world', 'flink')", "hello world", "hello flink"), ("REPLACE(s, 'abab', 'z')", "ababab", "zab"),
    ("REPLACE(s, '', '-')", "ab", "-a-b-"),
    ("LPAD(s, 4, '??')", "hi", "??hi"), ("LPAD(s, 1, '??')", "hi", "h"), ("RPAD(s, 4, '??')", "hi", "hi??"),
    ("RPAD(s, 1, '??')", "hi", "h"), ("LPAD(s, 5, 'ab')", "x", "ababx"), ("LPAD(s, -1, 'x')", "hi", None),
    ("RPAD(s, 3, '')", "hi", None), ("LPAD(s, 0, 'x')", "hi", ""),
    ("POSITION('b' IN s)", "abcb", 2), ("POSITION('z' IN s)", "abc", 0), ("POSITION('' IN s)", "abc", 1),
    ("LOCATE('b', s, 3)", "abcb", 4), ("LOCATE('b', s, -1)", "abcb", 2), ("LOCATE('b', s, 9)", "abcb", 0),
    ("LOCATE('', s, 9)", "abc", 1), ("POSITION('é' IN s)", "aéb", 2),
    ("INITCAP(s)", "hello wORLD", "Hello World"), ("INITCAP(s)", "ab-cd 3ef_gh", "Ab-Cd 3ef_Gh"),
    ("INITCAP(s)", "café bar", "Café Bar"), ("INITCAP(s)", "éa", "éA"),
    ("CONCAT(s, 'BB', s)", "AA", "AABBAA"), ("CONCAT(s, NULL)", "AA", None), ("s || '!'", "hi", "hi!"),
    ("CONCAT_WS('~', s, NULL, 'BB', '', 'CC')", "AA", "AA~BB~~CC"), ("CONCAT_WS(NULL, s)", "AA", None),
    ("s LIKE 'a_c'", "abc", True), ("s LIKE 'a_c'", "ac", False), ("s LIKE '_'", "😀", True),
    ("s LIKE '%c'", "abc", True), ("s LIKE '%c'", "abcd", False), ("s LIKE 'a%c%e'", "abcde", True),
    ("s LIKE 'a%c%e'", "abdec", False), ("s LIKE 'A%'", "abc", False), ("s LIKE 'a\\%'", "a\\bc", True),
    ("s LIKE 'a\\%' ESCAPE '\\'", "a%", True), ("s LIKE 'a\\%' ESCAPE '\\'", "ab", False),
    ("s LIKE 'a!_!!' ESCAPE '!'", "a_!", True), ("s NOT LIKE 'a!_%' ESCAPE '!'", "abc", True),
    ("s LIKE '%'", "a\nb", True), ("s LIKE ''", "", True), ("s LIKE ''", "a", False),
    # ILIKE: Flink's SQL has none; Spark's (and PostgreSQL's), LIKE of both in lower case
    ("s ILIKE 'a%'", "ABC", True), ("s ILIKE '_b_'", "ABC", True), ("s ILIKE 'é%'", "ÉTÉ", True),
    ("s NOT ILIKE 'x%'", "ABC", True), ("s ILIKE 'a!%' ESCAPE '!'", "A%", True),
    ("s ILIKE 'a!%' ESCAPE '!'", "Ab", False), ("s ILIKE ''", "", True), ("s ILIKE 'A'", "b", False),
    # SIMILAR TO, Flink's (SqlLikeUtils.sqlToRegexSimilar: a Java regular expression over the whole value)
    ("s SIMILAR TO 'a(b|c)%'", "acd", True), ("s SIMILAR TO 'a(b|c)%'", "ad", False),
    ("s SIMILAR TO '[a-c]+x?'", "abcx", True), ("s SIMILAR TO '(ab){2}'", "abab", True),
    ("s SIMILAR TO '(ab){2}'", "ab", False), ("s SIMILAR TO '[[:DIGIT:]]{3}'", "123", True),
    ("s SIMILAR TO '[[:DIGIT:]]{3}'", "12\u0663", False), ("s SIMILAR TO 'a.c'", "abc", True),
    ("s SIMILAR TO 'a_c'", "a\nc", False), ("s SIMILAR TO '%'", "a\nb", True), ("s SIMILAR TO 'a$'", "a$", True),
    ("s SIMILAR TO 'a\\b'", "a\\b", True), ("s SIMILAR TO 'a!%' ESCAPE '!'", "a%", True),
    ("s SIMILAR TO 'a!%' ESCAPE '!'", "ab", False), ("s NOT SIMILAR TO 'a%'", "ba", True),
    ("s SIMILAR TO ''", "", True), ("s SIMILAR TO 'A%'", "abc", False), ("s SIMILAR TO '[^a]_'", "bé", True),
    ("s SIMILAR TO 'é|😀'", "😀", True), ("s SIMILAR TO '[[:alpha:] ]+'", "ab Cé", False),
    ("s NOT SIMILAR TO '[a-c]+x?' ESCAPE '!'", "abx", False),
]


def test_string_functions_give_flinks_results(config):
    """Row i of s holds the value for function i: each result is read off the diagonal."""
    texts = [text for text, _, _ in FLINK_STRINGS]
    query = "SELECT ts, " + ", ".join(f"{t} AS r{i}" for i, t in enumerate(texts)) + " FROM t"
    values = [value for _, value, _ in FLINK_STRINGS]
    got = rows(query, table(s=values), config)
    assert [row[i] for i, row in enumerate(got)] == [want for _, _, want in FLINK_STRINGS]


@pytest.mark.parametrize("text, problem", [
    ("SELECT SUBSTRING(s FROM\n  n) FROM t", r"line 2, column 3: SUBSTRING's start must be an integer literal"),
    ("SELECT s LIKE 'a!b' ESCAPE '!' FROM t", r"column 15: LIKE pattern 'a!b': the escape '!' at position 2 must be"),
    ("SELECT s LIKE 'a%' ESCAPE '' FROM t", r"column 27: LIKE's escape is one character, got ''"),
    ("SELECT LPAD(s, 3000000000, 'x') FROM t", r"column 16: str.lpad\(\): a length of at most 2147483647"),
    ("SELECT CONCAT(s, n) FROM t", r"column 18: CONCAT takes strings; n is int64"),
    ("SELECT s || n FROM t", r"column 13: \|\| takes strings; n is int64"),
    ("SELECT INITCAP(s, 'x') FROM t", r"column 19: INITCAP takes one argument"),
    ("SELECT REPLACE(s, s, 'x') FROM t", r"column 19: REPLACE's search string must be a string literal"),
    ("SELECT s SIMILAR TO 'a(b' FROM t", r"column 21: SIMILAR TO pattern 'a\(b': a '\(' is left open at position 4"),
    ("SELECT s SIMILAR TO '*a' FROM t", r"column 21: .*'\*' follows nothing it could repeat"),
    ("SELECT s SIMILAR TO 'a[_]' FROM t", r"column 21: .*'_' inside brackets \(Flink refuses it\)"),
    ("SELECT s SIMILAR TO 'a{,2}' FROM t", r"column 21: .*'{' must start a count"),
    ("SELECT s SIMILAR TO 'a+?' FROM t", r"column 21: .*right after a quantifier"),
    ("SELECT s NOT SIMILAR TO 'a!b' ESCAPE '!' FROM t", r"column 25: .*the escape '!' must be followed by"),
    ("SELECT s ILIKE 'a' ESCAPE 'xy' FROM t", r"column 27: ILIKE's escape is one character, got 'xy'"),
    ("SELECT s LIKE u FROM t", r"column 15: LIKE's pattern must be a string literal: .* a pattern from a column "
                               r"or an expression \(u\) is not supported"),
    ("SELECT s SIMILAR TO s || 'x' FROM t", r"column 21: SIMILAR TO's pattern must be a string literal"),
    ("SELECT n LIKE '1' FROM t", r"column 8: LIKE takes strings; n is int64"),
    ("SELECT n NOT ILIKE '1' FROM t", r"column 8: ILIKE takes strings; n is int64"),
])
def test_string_functions_refuse_bad_arguments_at_their_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(s=["x"], n=[1], u=["y"])})


@pytest.mark.parametrize("config", MODES)
def test_pattern_matches_with_a_null_operand_are_null(config):
    """A NULL value, pattern or escape makes LIKE, ILIKE and SIMILAR TO (and their NOT forms) NULL, as in Flink;
    a NULL pattern or escape was refused as 'must be a string literal'."""
    got = rows("SELECT ts, s LIKE NULL, s NOT ILIKE NULL, s SIMILAR TO NULL, s LIKE 'a' ESCAPE NULL, "
               "s NOT SIMILAR TO 'a' ESCAPE NULL, NULL LIKE 'a', s SIMILAR TO 'a' FROM t", table(s=["a", None]),
               config)
    assert got == [(None, None, None, None, None, None, True), (None, None, None, None, None, None, None)]


def test_ilike_and_similar_to_in_the_fluent_api():
    """str.ilike and str.similar_to are the fluent ILIKE and SIMILAR TO; a pattern is checked when it is built."""
    t = table(s=["Apple", "apricot", "banana", None])
    q = t.select("ts", i=col("s").str.ilike("ap%"), m=col("s").str.similar_to("(a|b)[a-z]+"),
                 e=col("s").str.similar_to("%!%%", "!"))
    want = [(True, False, False), (True, True, False), (False, True, False), (None, None, None)]
    for config in MODES:
        assert [(r["i"], r["m"], r["e"]) for r in q.collect(config).to_pylist()] == want
    with pytest.raises(DarwinTypeError, match=r"SIMILAR TO pattern '\[a': a '\[' is left open at position 1"):
        col("s").str.similar_to("[a")
    with pytest.raises(DarwinTypeError, match="ILIKE's escape is one character"):
        col("s").str.ilike("a", "")


@pytest.mark.parametrize("config", MODES)
def test_casts_to_strings_write_values_as_flink_does(config):
    """Flink's CAST(... AS STRING): Java's Double.toString, TRUE/FALSE, TIMESTAMP(3) with its milliseconds;
    VARCHAR(n) cuts, CHAR(n) cuts or pads with spaces, CHAR alone is CHAR(1)."""
    t = table(i=pa.array([0, -42, INT64_MIN, None]), f=pa.array([1e7, -0.0, math.nan, None]),
              b=pa.array([True, False, None, None]), at=pa.array([0, -1, 1436918400123, None], pa.timestamp("ms")))
    got = rows("SELECT ts, CAST(i AS STRING), CAST(f AS VARCHAR), CAST(b AS STRING), CAST(at AS STRING), "
               "CAST(i AS VARCHAR(2)), CAST(b AS CHAR(6)), CAST(f AS CHAR), CAST(1.5 AS STRING), "
               "CAST(CAST(-1e-4 AS STRING) AS DOUBLE) FROM t", t, config)
    assert got[0] == ("0", "1.0E7", "TRUE", "1970-01-01 00:00:00.000", "0", "TRUE  ", "1", "1.5", -1e-4)
    assert got[1] == ("-42", "-0.0", "FALSE", "1969-12-31 23:59:59.999", "-4", "FALSE ", "-", "1.5", -1e-4)
    assert got[2] == (str(INT64_MIN), "NaN", None, "2015-07-15 00:00:00.123", "-9", None, "N", "1.5", -1e-4)
    assert got[3][:7] == (None,) * 7


@pytest.mark.parametrize("config", MODES)
def test_strings_parse_as_flink_parses_them_and_try_cast_gives_null(config):
    """Flink's parsing: integers trimmed of spaces, a fraction dropped, no exponent, each type's range; Java's
    Double.parseDouble; t/true/y/yes/1 in any case; yyyy-M-d[ H:m:s[.f]]. TRY_CAST is NULL where CAST fails."""
    texts = [" 12 ", "1.9", "-.5", "3000000000", "1e3", "NaN", " TRUE", "Yes", "2015-7-5 1:2:3.4567", "2015-02-30",
             "2015-07-15T00:00:00", "", None]
    t = table(s=pa.array(texts))
    got = rows("SELECT ts, TRY_CAST(s AS BIGINT), TRY_CAST(s AS INT), TRY_CAST(s AS TINYINT), TRY_CAST(s AS DOUBLE), "
               "TRY_CAST(s AS BOOLEAN), CAST(TRY_CAST(s AS TIMESTAMP) AS STRING) FROM t", t, config)
    assert dict(zip(texts, got)) == {
        " 12 ": (12, 12, 12, 12.0, None, None), "1.9": (1, 1, 1, 1.9, None, None), "-.5": (0, 0, 0, -0.5, None, None),
        "3000000000": (3000000000, None, None, 3e9, None, None), "1e3": (None, None, None, 1000.0, None, None),
        "NaN": (None, None, None, got[5][3], None, None), " TRUE": (None, None, None, None, None, None),
        "Yes": (None, None, None, None, True, None),
        "2015-7-5 1:2:3.4567": (None, None, None, None, None, "2015-07-05 01:02:03.456"),
        "2015-02-30": (None, None, None, None, None, "2015-02-28 00:00:00.000"),
        "2015-07-15T00:00:00": (None,) * 6, "": (None,) * 6, None: (None,) * 6}
    assert math.isnan(got[5][3])


@pytest.mark.parametrize("config", MODES)
def test_a_cast_of_text_that_does_not_parse_fails_naming_the_text_and_the_type(config):
    from darwin.errors import CastError

    t = table(s=pa.array(["1", "300", "x1"]))
    with pytest.raises(CastError, match="'300' to TINYINT"):
        rows("SELECT ts, CAST(s AS TINYINT) FROM t", t, config)
    with pytest.raises(CastError, match="'x1' to DOUBLE"):
        rows("SELECT ts, CAST(s AS DOUBLE) FROM t", t, config)
    # a CASE arm not taken, or the right side of an AND decided by its left, is not evaluated (as in Flink)
    assert rows("SELECT ts, CASE WHEN s LIKE 'x%' THEN -1 ELSE CAST(s AS BIGINT) END, "
                "s NOT LIKE 'x%' AND CAST(s AS BIGINT) > 100 FROM t", t, config) == \
        [(1, False), (300, True), (-1, False)]


def test_a_cast_to_a_varchar_of_length_0_is_refused_at_its_position():
    with pytest.raises(SqlError, match="line 1, column 17: VARCHAR\\(0\\)"):
        dw.sql("SELECT ts, CAST(s AS VARCHAR(0)) FROM t", tables={"t": table(s=pa.array(["a"]))})


# -- date parts: DAYOFMONTH, DAYOFYEAR, QUARTER, WEEK and EXTRACT of QUARTER, WEEK, DOY --------------------

def date_parts(ms):
    """Flink's (Calcite's) day of the month, day of the year, quarter and ISO 8601 week of a UTC timestamp."""
    moment = datetime(1970, 1, 1) + timedelta(milliseconds=ms)
    return (moment.day, moment.timetuple().tm_yday, (moment.month + 2) // 3, moment.isocalendar()[1])


@pytest.mark.parametrize("config", MODES)
def test_day_of_year_quarter_and_iso_week_are_flinks(config):
    """They were refused as not supported ('DayOfYear (DAY_OF_YEAR(ts)) is not supported'); the ISO week of
    January 1st can be the year before's 52 or 53, of December 31st the next year's 1."""
    days = ["2020-12-31", "2021-01-01", "2021-01-03", "2021-01-04", "2024-12-30", "2016-02-29", "1969-12-31",
            "2026-12-31", "2027-01-01", "2015-07-15", "1900-03-01", "2000-12-31"]
    stamps = [int((datetime.fromisoformat(d) - datetime(1970, 1, 1)) / timedelta(milliseconds=1)) + 3_600_000 * 23
              for d in days]
    t = dw.from_arrow(pa.table({"ts": pa.array(sorted(stamps), pa.timestamp("ms"))}), time="ts", name="t")
    got = rows("SELECT ts, DAYOFMONTH(ts), DAYOFYEAR(ts), QUARTER(ts), WEEK(ts) FROM t", t, config)
    extracted = rows("SELECT ts, EXTRACT(DAY FROM ts), EXTRACT(DOY FROM ts), EXTRACT(QUARTER FROM ts), "
                     "EXTRACT(WEEK FROM ts) FROM t", t, config)
    expected = [date_parts(ms) for ms in sorted(stamps)]
    assert got == extracted == expected
    by_day = dict(zip(sorted(stamps), expected, strict=True))
    first = stamps[days.index("2021-01-01")]
    assert by_day[first] == (1, 1, 1, 53)  # a Friday: the week of 2020's Thursday, Dec 31st
    assert by_day[stamps[days.index("2024-12-30")]] == (30, 365, 4, 1)  # a Monday: 2025's week 1
    assert by_day[stamps[days.index("2016-02-29")]] == (29, 60, 1, 9)


@settings(max_examples=30, deadline=None)
@given(stamps=st.lists(st.one_of(st.integers(-62135596800000, 253402300799999),
                                 st.integers(-(2**62) // 10, 2**62 // 10)), min_size=1, max_size=30))
def test_date_parts_agree_on_both_engines_for_any_timestamp(stamps):
    """Far from the epoch too, where Python's datetime stops (years past 9999 and before 1)."""
    t = dw.from_arrow(pa.table({"ts": pa.array(sorted(stamps), pa.timestamp("ms"))}), time="ts", name="t")
    query = dw.sql("SELECT DAYOFYEAR(ts) AS doy, QUARTER(ts) AS q, WEEK(ts) AS w FROM t", tables={"t": t})
    compiled, interpreted = ([tuple(r.values()) for r in query.collect(config).to_pylist()] for config in MODES)
    assert compiled == interpreted
    for ms, got in zip(sorted(stamps), compiled, strict=True):
        if -62135596800000 <= ms < 253402300800000:  # datetime's years 1 to 9999
            assert got == date_parts(ms)[1:]


def test_week_with_a_mode_is_refused_at_its_position():
    with pytest.raises(SqlError, match=r"line 1, column 17: WEEK takes one argument"):
        dw.sql("SELECT WEEK(ts, 1) FROM t", tables={"t": table(a=[1])})


# -- FLOOR(ts TO unit) and CEIL(ts TO unit) -----------------------------------------------------------------

TIME_UNITS = ["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]
FIXED = {"SECOND": timedelta(seconds=1), "MINUTE": timedelta(minutes=1), "HOUR": timedelta(hours=1),
         "DAY": timedelta(days=1)}


def time_floor(moment, unit):
    """Flink's FLOOR(ts TO unit) of a datetime: a week from its Sunday."""
    if unit in FIXED:
        return datetime(1970, 1, 1) + (moment - datetime(1970, 1, 1)) // FIXED[unit] * FIXED[unit]
    day = datetime(moment.year, moment.month, moment.day)
    if unit == "WEEK":
        return day - timedelta(days=(day.weekday() + 1) % 7)
    month = {"MONTH": day.month, "QUARTER": (day.month - 1) // 3 * 3 + 1, "YEAR": 1}[unit]
    return datetime(day.year, month, 1)


def time_ceil(moment, unit):
    """Flink's CEIL(ts TO unit): the next start of a unit at or after the value; for a week, month, quarter or year
    at or after the value's day (Flink's DateTimeUtils.timestampCeil reads the day only)."""
    value = moment if unit in FIXED else time_floor(moment, "DAY")
    start = time_floor(value, unit)
    if start == value:
        return start
    if unit in FIXED or unit == "WEEK":
        return start + (FIXED.get(unit) or timedelta(days=7))
    months = start.month - 1 + {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit]
    return datetime(start.year + months // 12, months % 12 + 1, 1)


@pytest.mark.parametrize("config", MODES)
def test_floor_and_ceil_of_a_timestamp_to_a_unit_are_flinks(config):
    """They were refused ('Floor (FLOOR(ts TO SECOND)) is not supported'). Flink's own cases (FLOOR TO WEEK of
    Saturday 2021-02-27 is Sunday the 21st; CEIL(2018-03-01 21:00:01 TO MONTH) is 2018-03-01 00:00, as Flink ceils
    the day), and times before 1970, which floor (Flink's MONTH, QUARTER, YEAR and WEEK cut them toward 1970)."""
    texts = ["2018-03-20 06:44:31", "2018-03-20 06:00:00", "2021-02-27 00:00:00", "2021-03-01 00:00:00",
             "2018-03-01 21:00:01", "2018-12-02 00:00:00", "2018-01-01 21:00:01", "2018-01-02 21:00:01",
             "2018-05-02 21:00:01", "1969-12-31 23:59:59.500", "1969-03-01 12:00:00", "1900-02-28 00:00:00.001",
             "2024-02-29 23:59:59.999", "1970-01-01 00:00:00"]
    moments = sorted(datetime.fromisoformat(text) for text in texts)
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(moments)), pa.timestamp("ms")),
                                "t": pa.array(moments, pa.timestamp("ms"))}), time="ts", name="t")
    calls = ", ".join(f"{f}(t TO {unit})" for unit in TIME_UNITS for f in ("FLOOR", "CEIL"))
    got = rows(f"SELECT ts, {calls}, FLOOR(t TO MILLISECOND), CEIL(t TO MILLISECOND) FROM t", t, config)
    assert got == [tuple(f(m, unit) for unit in TIME_UNITS for f in (time_floor, time_ceil)) + (m, m)
                   for m in moments]
    by_text = dict(zip(moments, got, strict=True))
    column = {(f, unit): 2 * i + (f == "CEIL") for i, unit in enumerate(TIME_UNITS) for f in ("FLOOR", "CEIL")}
    cases = [("FLOOR", "WEEK", "2021-02-27 00:00:00", "2021-02-21"), ("CEIL", "WEEK", "2021-03-01 00:00:00",
             "2021-03-07"), ("CEIL", "MONTH", "2018-03-01 21:00:01", "2018-03-01"),
             ("CEIL", "MONTH", "2018-12-02 00:00:00", "2019-01-01"), ("CEIL", "YEAR", "2018-01-01 21:00:01",
             "2018-01-01"), ("CEIL", "YEAR", "2018-01-02 21:00:01", "2019-01-01"),
             ("FLOOR", "QUARTER", "2018-05-02 21:00:01", "2018-04-01"), ("CEIL", "HOUR", "2018-03-20 06:00:00",
             "2018-03-20 06:00:00"), ("FLOOR", "MONTH", "1969-12-31 23:59:59.500", "1969-12-01"),
             ("FLOOR", "SECOND", "1969-12-31 23:59:59.500", "1969-12-31 23:59:59"),
             ("CEIL", "DAY", "1900-02-28 00:00:00.001", "1900-03-01")]
    for f, unit, value, expected in cases:
        assert by_text[datetime.fromisoformat(value)][column[f, unit]] == datetime.fromisoformat(expected)


@settings(max_examples=30, deadline=None)
@given(stamps=st.lists(st.one_of(st.none(), st.integers(-62135596800000, 253402300799999),
                                 st.integers(-(2**62) // 10, 2**62 // 10)), min_size=1, max_size=30))
def test_floor_and_ceil_of_timestamps_agree_on_both_engines_for_any_timestamp(stamps):
    """Far from the epoch too, where Python's datetime stops, and NULL, which stays NULL."""
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(stamps)), pa.timestamp("ms")),
                                "t": pa.array(stamps, pa.timestamp("ms"))}), time="ts", name="t")
    calls = ", ".join(f"{f}(t TO {unit})" for unit in TIME_UNITS for f in ("FLOOR", "CEIL"))
    query = dw.sql(f"SELECT ts, {calls} FROM t", tables={"t": t})
    tables = [query.collect(config).sort_by("ts").drop(["ts"]) for config in MODES]
    ints = [[tuple(r.values()) for r in tb.cast(pa.schema([(c, pa.int64()) for c in tb.column_names])).to_pylist()]
            for tb in tables]  # as integers: Python's datetime stops at the years 1 and 9999
    assert ints[0] == ints[1]
    epoch = datetime(1970, 1, 1)
    for ms, got in zip(stamps, ints[0], strict=True):
        if ms is None:
            assert set(got) == {None}
        elif -62135596800000 + 2 * 86_400_000 * 366 <= ms < 253402300800000 - 86_400_000 * 366:  # datetime's range
            moment = epoch + timedelta(milliseconds=ms)
            expected = [f(moment, unit) for unit in TIME_UNITS for f in (time_floor, time_ceil)]
            assert got == tuple((e - epoch) // timedelta(milliseconds=1) for e in expected)


@pytest.mark.parametrize("text, problem", [
    ("SELECT FLOOR(ts TO DECADE) FROM t", r"column 14: FLOOR\(\.\.\. TO DECADE\): Darwin's FLOOR takes one of "
                                          "MILLISECOND, SECOND"),
    ("SELECT CEIL(a TO DAY) FROM t", r"column 13: CEIL\(\.\.\. TO DAY\) takes a TIMESTAMP; a is int64"),
])
def test_floor_and_ceil_to_a_unit_refuse_what_they_cannot_take_at_its_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1])})


def test_the_fluent_floor_and_ceil_of_timestamps():
    t = table(a=[1])
    got = t.select(f=col("ts").dt.floor("week"), c=col("ts").dt.ceil("hour")).collect().to_pylist()
    assert got == [{"f": datetime(1969, 12, 28), "c": datetime(1970, 1, 1)}]
    with pytest.raises(DarwinTypeError, match="floors to one of second, minute"):
        col("ts").dt.floor("decade")


# -- IS [NOT] DISTINCT FROM, IS [NOT] TRUE, IS [NOT] FALSE -------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_is_distinct_from_and_is_true_are_never_null(config):
    """They were refused ('NullSafeNEQ (a IS DISTINCT FROM b) is not supported', 'only IS NULL and IS NOT NULL are
    supported'). As Flink's: a NULL is not distinct from a NULL only; IS TRUE and IS FALSE are FALSE for NULL."""
    a, b = [1, 1, None, None, 2], [1, None, 1, None, 3]
    flags = [True, False, None, True, None]
    got = rows("SELECT ts, a IS DISTINCT FROM b, a IS NOT DISTINCT FROM b, NOT (a IS DISTINCT FROM b), f IS TRUE, "
               "f IS NOT TRUE, f IS FALSE, f IS NOT FALSE FROM t", table(a=a, b=b, f=flags), config)
    same = [x == y if x is not None and y is not None else x is None and y is None for x, y in zip(a, b, strict=True)]
    assert got == [(not e, e, e, f is True, f is not True, f is False, f is not False)
                   for e, f in zip(same, flags, strict=True)]


def test_is_true_of_a_number_is_refused_at_its_position():
    with pytest.raises(SqlError, match="line 1, column 8: a IS TRUE: a is int64, not BOOLEAN"):
        dw.sql("SELECT a IS TRUE FROM t", tables={"t": table(a=[1])})


# -- numeric functions: FLOOR, CEIL, ROUND, SIGN, POWER, SQRT, LN, LOG, LOG10, LOG2, EXP ------------------------

def same_floats(a, b):
    """Row tuples equal, NaN equal to NaN."""
    def key(row):
        return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)
    return [key(r) for r in a] == [key(r) for r in b]


@pytest.mark.parametrize("config", MODES)
def test_numeric_functions_are_flinks(config):
    """They were refused ('Round (ROUND(x, 1)) is not supported in Darwin's SQL'). ROUND is BigDecimal's HALF_UP of
    the number as Java writes it: 2.675 and 1.005 are just below their halves as doubles, yet round up, as in
    Flink; -2.5 rounds away from zero; a BIGINT rounds to tens with negative places. Java's Math gives NaN and
    infinities where Python's raises."""
    x = [2.675, 1.005, -2.5, 0.5, -0.4, 1e300, -7.25, None]
    n = [125, -125, -124, 9_223_372_036_854_775_807, 7, 0, -1, None]
    t = table(x=x, n=n)
    got = rows("SELECT ts, ROUND(x, 2), ROUND(x), FLOOR(x), CEIL(x), SIGN(x), ROUND(n, -1), FLOOR(n), SIGN(n), "
               "ROUND(x, -1) FROM t", t, config)
    assert got == [(2.68, 3.0, 2.0, 3.0, 1.0, 130, 125, 1, 0.0), (1.01, 1.0, 1.0, 2.0, 1.0, -130, -125, -1, 0.0),
                   (-2.5, -3.0, -3.0, -2.0, -1.0, -120, -124, -1, 0.0),
                   (0.5, 1.0, 0.0, 1.0, 1.0, -9_223_372_036_854_775_806, 9_223_372_036_854_775_807, 1, 0.0),
                   (-0.4, 0.0, -1.0, -0.0, -1.0, 10, 7, 1, 0.0), (1e300, 1e300, 1e300, 1e300, 1.0, 0, 0, 0, 1e300),
                   (-7.25, -7.0, -8.0, -7.0, -1.0, 0, -1, -1, -10.0), (None,) * 9]
    v = [8.0, 0.0, -1.0, 1000.0, None]
    got = rows("SELECT ts, SQRT(v), LN(v), LOG10(v), LOG2(v), LOG(v), LOG(2, v), EXP(v), POWER(v, 2), POWER(2, v), "
               "LOG(1, v) FROM t", table(v=v), config)
    nan, inf = math.nan, math.inf
    assert same_floats(got, [
        (math.sqrt(8), math.log(8), math.log10(8), 3.0, math.log(8), 3.0, math.exp(8), 64.0, 256.0, inf),
        (0.0, -inf, -inf, -inf, -inf, -inf, 1.0, 0.0, 1.0, -inf),
        (nan, nan, nan, nan, nan, nan, math.exp(-1), 1.0, 0.5, nan),
        (math.sqrt(1000), math.log(1000), 3.0, math.log(1000) / math.log(2), math.log(1000),
         math.log(1000) / math.log(2), inf, 1e6, 2.0**1000, inf), (None,) * 10])


@pytest.mark.parametrize("config", MODES)
def test_truncate_is_flinks(config):
    """TRUNCATE was refused ('Trunc (TRUNCATE(x, 2)) is not supported in Darwin's SQL'). Flink's is Calcite's
    struncate: BigDecimal.valueOf(x), the number as Java writes it, cut toward zero, so 0.29 (a double below 0.29)
    and 1.1 * 3 (3.3000000000000003) keep their digits where cutting the double's value would lose one; a BIGINT is
    cut to tens with negative places, never wrapping; -0.29 cut to 0 places is 0.0, BigDecimal having no -0."""
    x = [0.29, -0.29, 1.1 * 3, 2.675, -7.999, 123456.789, 1e300, 0.1 + 0.2, float("nan"), None]
    n = [1234, -1234, 9_223_372_036_854_775_807, -9_223_372_036_854_775_808, 5, -5, 99, 0, 1, None]
    got = rows("SELECT ts, TRUNCATE(x, 2), TRUNCATE(x), TRUNCATE(x, -2), TRUNCATE(x, 16), TRUNCATE(n, -2), "
               "TRUNCATE(n), TRUNCATE(n, -18), TRUNCATE(n, -19) FROM t", table(x=x, n=n), config)
    assert same_floats(got, [
        (0.29, 0.0, 0.0, 0.29, 1200, 1234, 0, 0), (-0.29, 0.0, 0.0, -0.29, -1200, -1234, 0, 0),
        (3.3, 3.0, 0.0, 3.3000000000000003, 9_223_372_036_854_775_800, 9_223_372_036_854_775_807,
         9_000_000_000_000_000_000, 0),
        (2.67, 2.0, 0.0, 2.675, -9_223_372_036_854_775_800, -9_223_372_036_854_775_808,
         -9_000_000_000_000_000_000, 0),
        (-7.99, -7.0, -0.0, -7.999, 0, 5, 0, 0), (123456.78, 123456.0, 123400.0, 123456.789, 0, -5, 0, 0),
        (1e300, 1e300, 1e300, 1e300, 0, 99, 0, 0), (0.3, 0.0, 0.0, 0.3, 0, 0, 0, 0),
        (math.nan, math.nan, math.nan, math.nan, 0, 1, 0, 0), (None,) * 8])
    assert str(got[1][1]) == "0.0" and str(got[4][2]) == "0.0"
    assert [r["c"] for r in table(x=[0.29]).select(c=col("x").truncate(2)).collect(config).to_pylist()] == [0.29]


FLOATS = st.one_of(st.none(), st.floats(), st.floats(-1e6, 1e6), st.decimals(-1000, 1000, places=4).map(float))


@settings(max_examples=30, deadline=None)
@given(x=st.lists(st.one_of(st.none(), st.floats(), st.decimals(-10**9, 10**9, places=8).map(float),
                            st.integers(-2**60, 2**60).map(float)), min_size=1, max_size=20),
       places=st.integers(-12, 12))
def test_truncate_cuts_the_number_as_java_writes_it_on_both_engines(x, places):
    """Compiled (no decimals below 2^48 units) and interpreted TRUNCATE against BigDecimal.valueOf's decimal (the
    shortest that reads back, Python's repr) cut toward zero: decimals of up to 8 places, whose doubles sit
    either side of them, at places either side of theirs."""
    from decimal import ROUND_DOWN, Decimal

    t = table(x=pa.array(x, pa.float64()))
    query = f"SELECT ts, TRUNCATE(x, {places}) FROM t"
    compiled, interpreted = (rows(query, t, config) for config in MODES)
    expected = [(None if v is None else v if not math.isfinite(v) else
                 float(Decimal(repr(v)).scaleb(places).to_integral_value(ROUND_DOWN).scaleb(-places)) + 0.0,)
                for v in x]
    assert same_floats(compiled, interpreted) and same_floats(compiled, expected)
    assert all(str(c) == str(e) for (c,), (e,) in zip(compiled, expected))


@settings(max_examples=40, deadline=None)
@given(x=st.lists(FLOATS, min_size=1, max_size=20), y=st.lists(FLOATS, min_size=20, max_size=20),
       n=st.lists(st.one_of(st.none(), st.integers(INT64_MIN, -INT64_MIN - 1), st.integers(-10**6, 10**6)),
                  min_size=20, max_size=20),
       places=st.integers(-22, 22), int_places=st.integers(-22, 0))
def test_numeric_functions_agree_on_both_engines(x, y, n, places, int_places):
    """ROUND's decimal rounding without decimals (compiled) against Python's Decimal (the interpreter), and Java's
    Math on NaN, infinities, zeros and negative numbers."""
    t = table(x=pa.array(x, pa.float64()), y=pa.array(y[:len(x)], pa.float64()), n=pa.array(n[:len(x)], pa.int64()))
    query = (f"SELECT ts, ROUND(x, {places}), FLOOR(x), CEIL(x), SIGN(x), SQRT(x), LN(x), LOG10(x), EXP(x), "
             f"POWER(x, y), LOG(y, x), ROUND(n, {int_places}), SIGN(n), POWER(n, 2), TRUNCATE(x, {places}), "
             f"TRUNCATE(y, {min(places, 6)}), TRUNCATE(n, {int_places}) FROM t")
    compiled, interpreted = (rows(query, t, config) for config in MODES)
    assert same_floats(compiled, interpreted)


def test_power_is_cs_pow_on_both_engines():
    """numpy's scalar power differs from C's pow (which Java's Math.pow and the compiled engine call) in the last
    bit of POWER(0.0001, 0.1); 0 to a negative power is an infinity, a negative number to a fraction NaN."""
    t = table(a=[0.0001, 0.0, -0.0, -8.0, -10.0], b=[0.1, -1.0, -3.0, 0.5, 309.0])
    compiled, interpreted = (rows("SELECT ts, POWER(a, b) FROM t", t, config) for config in MODES)
    assert same_floats(compiled, interpreted)
    assert same_floats(compiled, [(math.pow(0.0001, 0.1),), (math.inf,), (-math.inf,), (math.nan,), (-math.inf,)])


def test_power_with_a_literal_operand_is_cs_pow_on_both_engines():
    """LLVM rewrites pow with a literal operand (x to the 2 as x * x, 2 to the x as exp2, x to the 0.5 as sqrt,
    x to the -1 as 1 / x), which rounds otherwise than C's pow in the last bit of these values."""
    t = table(n=[106_323_627, 590_521_773, 367_676_152], x=[48.73012216190233, 0.0, -1.5])
    query = "SELECT ts, POWER(n, 2), POWER(2, x), POWER(n, 0.5), POWER(n, -1), POWER(x, 2) FROM t"
    compiled, interpreted = (rows(query, t, config) for config in MODES)
    assert same_floats(compiled, interpreted)
    assert compiled[0][0] == math.pow(106_323_627, 2) != 106_323_627.0 * 106_323_627.0


@pytest.mark.parametrize("text, problem", [
    ("SELECT ROUND(s, 1) FROM t", "column 14: ROUND takes numbers; s is string"),
    ("SELECT ROUND(a, 23) FROM t", "column 17: ROUND's places are from -22 to 22"),
    ("SELECT ROUND(a, a) FROM t", "column 17: ROUND's places must be an integer literal"),
    ("SELECT TRUNCATE(a, -23) FROM t", "column 21: TRUNCATE's places are from -22 to 22"),
    ("SELECT TRUNCATE(s, 1) FROM t", "column 17: TRUNCATE takes numbers; s is string"),
    ("SELECT CEIL(a, 2) FROM t", "column 16: CEIL takes one number"),
    ("SELECT POWER(a, s) FROM t", "column 17: POWER takes numbers; s is string"),
])
def test_numeric_functions_refuse_what_they_cannot_take_at_its_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})


def test_the_fluent_numeric_functions():
    got = table(a=[-7], x=[2.675]).select(
        r=col("x").round(2), f=col("a").floor(), s=col("a").sign(), p=col("a").pow(2), q=col("x").log(10),
        c=(col("x") * 10).ceil()).collect().to_pylist()
    assert got == [{"r": 2.68, "f": -7, "s": -1, "p": 49.0, "q": math.log(2.675) / math.log(10), "c": 27.0}]
    with pytest.raises(DarwinTypeError, match="round's places are an integer from -22 to 22"):
        col("x").round(23)


# -- TO_TIMESTAMP, UNIX_TIMESTAMP, FROM_UNIXTIME, TO_TIMESTAMP_LTZ ---------------------------------------

def at(text):
    """A UTC datetime written 'yyyy-MM-dd HH:mm:ss[.fff]'."""
    return datetime.fromisoformat(text)


TEXTS = ["2020-01-02 03:04:05", "2020-1-2", "02/01/2020", "2020-02-30 00:00:00", " 2020-01-02 ", "bad", None,
         "2020-01-02 24:00:01", "2020-13-45 25:61:61 and more", "1969-12-31 23:59:59", "20200102"]


@pytest.mark.parametrize("config", MODES)
def test_to_timestamp_reads_the_default_format_a_java_pattern_and_then_timestamp_value_of(config):
    """Flink's TO_TIMESTAMP: without a pattern the text as CAST reads it, NULL where it does not parse; with one,
    DateTimeFormatter's reading (whole text, SMART: Feb 30th is the 29th), then Timestamp.valueOf/Date.valueOf
    of the trimmed text (which roll Feb 30th over to March 1st, 24:00:01 to the next day). They were
    refused: 'function TO_TIMESTAMP(1 arguments) is not supported'."""
    got = rows("SELECT ts, TO_TIMESTAMP(s), TO_TIMESTAMP(s, 'dd/MM/yyyy'), TO_TIMESTAMP(s, 'yyyy-MM-dd HH:mm:ss'), "
               "TO_TIMESTAMP(s, 'yyyyMMdd') FROM t", table(s=TEXTS), config)
    assert got == [
        (at("2020-01-02 03:04:05"),) * 4,
        (at("2020-01-02"), at("2020-01-02"), at("2020-01-02"), at("2020-01-02")),  # Date.valueOf after the pattern
        (None, at("2020-01-02"), None, None),
        (at("2020-02-29"), at("2020-03-01"), at("2020-02-29"), at("2020-03-01")),
        (None, at("2020-01-02"), at("2020-01-02"), at("2020-01-02")),  # trimmed by the fallback only
        (None,) * 4, (None,) * 4,
        (None, at("2020-01-03 00:00:01"), at("2020-01-03 00:00:01"), at("2020-01-03 00:00:01")),
        (None,) * 4,
        (at("1969-12-31 23:59:59"),) * 4,
        (None, None, None, at("2020-01-02")),
    ]


@pytest.mark.parametrize("config", MODES)
def test_to_timestamp_patterns_take_fractions_quotes_and_two_digit_years(config):
    """A field the pattern lacks is 1970-01-01 00:00:00's; 24:00 is the next day's midnight (SMART), where the
    pattern has a date."""
    got = rows("SELECT ts, TO_TIMESTAMP(s, 'yyyy-MM-dd''T''HH:mm:ss.SSSSSS'), TO_TIMESTAMP(s, 'yy-M-d H:m'), "
               "TO_TIMESTAMP(s, 'HH:mm') FROM t",
               table(s=["2015-07-15T10:11:12.123999", "15-7-5 1:2", "12:30", "2015-07-15T10:11:12.12", "15-12-31 24:0",
                        "24:00"]), config)
    assert got == [(at("2015-07-15 10:11:12.123"), None, None), (None, at("2015-07-05 01:02"), None),
                   (None, None, at("1970-01-01 12:30")), (None, None, None), (None, at("2016-01-01"), None),
                   (None, None, at("1970-01-01"))]


@pytest.mark.parametrize("config", MODES)
def test_unix_timestamp_reads_leniently_and_gives_long_min_where_it_cannot(config):
    """Flink's UNIX_TIMESTAMP (SimpleDateFormat, lenient, UTC): a prefix of the text, any count of digits, blanks
    before numbers, every field rolled over; seconds toward zero; Long.MIN_VALUE where nothing parses."""
    got = rows("SELECT ts, UNIX_TIMESTAMP(s), UNIX_TIMESTAMP(s, 'yyyyMMdd'), UNIX_TIMESTAMP(s, 'dd/MM/yyyy') FROM t",
               table(s=TEXTS), config)
    low = -(2**63)
    assert got == [
        (1577934245, low, low), (low, low, low), (low, low, 1577923200), (1583020800, low, low), (low, low, low),
        (low, low, low), (None, None, None), (1578009601, low, low),
        (1613354521, low, low),  # 2021-02-15 02:02:01
        (-1, low, low), (low, 1577923200, low)]
    # a year so far off that the milliseconds pass a long: Java's Calendar wraps them around (Java 17's values)
    far = table(s=["823020229", "300000000", "602002295", "1/1/292278995"])
    assert rows("SELECT ts, UNIX_TIMESTAMP(s, 'yyyy') FROM t WHERE ts < TIMESTAMP '1970-01-01 00:00:00.003'", far,
                config) == [(7525203620693648,), (-8979720640928751,), (550551286316048,)]
    assert rows("SELECT ts, UNIX_TIMESTAMP(s, 'd/M/yyyy') FROM t", far, config)[3] == (-9223372025043951,)


@pytest.mark.parametrize("config", MODES)
def test_from_unixtime_and_to_timestamp_ltz_count_seconds_or_milliseconds(config):
    """FROM_UNIXTIME(n[, format]) and TO_TIMESTAMP_LTZ(n, 0 | 3) (3 by default) as Flink's: NULL outside the years
    0000 to 9999; a DOUBLE truncated toward zero as Java's (long) cast, NaN milliseconds the epoch."""
    n = [1_600_000_000, 0, None, -62_167_219_201, 253_402_300_799, -1]
    f = [1.5e12, math.nan, None, -0.5, math.inf, 1_600_000_000.9]
    got = rows("SELECT ts, FROM_UNIXTIME(n), FROM_UNIXTIME(n, 'dd.MM.yyyy HH''h'''), TO_TIMESTAMP_LTZ(n, 0), "
               "TO_TIMESTAMP_LTZ(n), TO_TIMESTAMP_LTZ(f, 3), TO_TIMESTAMP_LTZ(f, 0) FROM t", table(n=n, f=f), config)
    epoch = at("1970-01-01")
    assert got == [
        ("2020-09-13 12:26:40", "13.09.2020 12h", at("2020-09-13 12:26:40"), at("1970-01-19 12:26:40"),
         at("2017-07-14 02:40:00"), None),
        ("1970-01-01 00:00:00", "01.01.1970 00h", epoch, epoch, epoch, None),
        (None,) * 6,
        ("-0001-12-31 23:59:59", "31.12.-0001 23h", None, at("1968-01-12 11:19:40.799"), epoch,
         at("1969-12-31 23:59:59.500")),
        ("9999-12-31 23:59:59", "31.12.9999 23h", at("9999-12-31 23:59:59"), at("1978-01-11 21:31:40.799"), None,
         None),
        ("1969-12-31 23:59:59", "31.12.1969 23h", at("1969-12-31 23:59:59"), at("1969-12-31 23:59:59.999"),
         at("1970-01-19 12:26:40"), at("2020-09-13 12:26:40.900"))]


@pytest.mark.parametrize("config", MODES)
def test_timestampadd_adds_units_of_a_fixed_length(config):
    """TIMESTAMPADD(unit, n, ts) was refused ('function TIMESTAMPADD(3 arguments) is not supported'); SECOND to
    WEEK add their milliseconds (before 1970 too), NULL where n or ts is."""
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1, 2], pa.timestamp("ms")),
                                "a": pa.array([1000, None, -5], pa.timestamp("ms")), "n": [3, 1, None]}), name="t")
    got = rows("SELECT ts, TIMESTAMPADD(SECOND, n, a), TIMESTAMPADD(week, -1, a), TIMESTAMPADD(MINUTE, 2, a), "
               "TIMESTAMPADD(HOUR, n, a), TIMESTAMPADD(DAY, 1, a) FROM t", t, config)
    assert got == [
        (at("1970-01-01 00:00:04"), at("1969-12-25 00:00:01"), at("1970-01-01 00:02:01"), at("1970-01-01 03:00:01"),
         at("1970-01-02 00:00:01")),
        (None,) * 5,
        (None, at("1969-12-24 23:59:59.995"), at("1970-01-01 00:01:59.995"), None, at("1970-01-01 23:59:59.995"))]


@pytest.mark.parametrize("text, problem", [
    ("SELECT UNIX_TIMESTAMP() FROM t", "column 8: UNIX_TIMESTAMP\\(\\) reads the clock"),
    ("SELECT TIMESTAMPADD(DECADE, 1, ts) FROM t", "column 21: TIMESTAMPADD's unit: SECOND, MINUTE, HOUR, DAY, WEEK, "
                                                  "MONTH, QUARTER, YEAR, got DECADE"),
    ("SELECT TIMESTAMPADD(SECOND, 1, a) FROM t", "column 32: TIMESTAMPADD adds to a TIMESTAMP; a is int64"),
    ("SELECT TO_DATE(s) FROM t", "column 8: TO_DATE: Darwin has no DATE type"),
    ("SELECT TO_TIMESTAMP(s, 'yyyy-MM-dd hh:mm') FROM t", "column 24: TO_TIMESTAMP: pattern letters 'hh'"),
    ("SELECT TO_TIMESTAMP(s, 'yyyy-MM-dd''T') FROM t", "column 24: TO_TIMESTAMP: the quote at position 11"),
    ("SELECT TO_TIMESTAMP(s, s) FROM t", "column 24: TO_TIMESTAMP's format must be a string literal"),
    ("SELECT TO_TIMESTAMP(a) FROM t", "column 21: TO_TIMESTAMP takes strings; a is int64"),
    ("SELECT UNIX_TIMESTAMP(s, 'yy-MM-dd') FROM t", "column 26: UNIX_TIMESTAMP: pattern letters 'yy': "
                                                   "SimpleDateFormat reads a two-digit year"),
    ("SELECT TO_TIMESTAMP_LTZ(a, 6) FROM t", "column 28: TO_TIMESTAMP_LTZ's precision is 0 \\(seconds\\) or 3"),
    ("SELECT TO_TIMESTAMP_LTZ(s, 3) FROM t", "column 25: TO_TIMESTAMP_LTZ takes a BIGINT or DOUBLE; s is string"),
    ("SELECT FROM_UNIXTIME(a, 'yyyy-MM-dd x') FROM t", "column 25: FROM_UNIXTIME: pattern letter 'x'"),
    ("SELECT TO_TIMESTAMP(s, 'yyyy', 'x') FROM t", "column 8: TO_TIMESTAMP takes a string and an optional format"),
])
def test_time_functions_refuse_the_clock_dates_and_bad_patterns_at_their_position(text, problem):
    with pytest.raises(SqlError, match="line 1, " + problem):
        dw.sql(text, tables={"t": table(s=["x"], a=[1])})


PATTERNS = ["yyyy-MM-dd HH:mm:ss", "yyyyMMdd", "dd/MM/yyyy H:m:s.SSS", "yyyy-M-d", "yy-MM-dd'T'HH"]
FIELD_TEXT = st.text(alphabet="0123456789-/: .T", max_size=22)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(st.one_of(st.none(), FIELD_TEXT, st.sampled_from(TEXTS[:-5])), min_size=1, max_size=25))
def test_time_parsing_agrees_on_both_engines(texts):
    """The compiled engine's per-distinct-string tables give the interpreter's values, for any text."""
    quoted = [p.replace("'", "''") for p in PATTERNS]  # UNIX_TIMESTAMP refuses yy: it reads the clock
    columns = ", ".join(f"TO_TIMESTAMP(s, '{p}') AS t{i}, UNIX_TIMESTAMP(s, '{'yy' * p.startswith('yy-') + p}') AS u{i}"
                        for i, p in enumerate(quoted))
    compiled, interpreted = (rows(f"SELECT ts, TO_TIMESTAMP(s) AS d, {columns} FROM t", table(s=texts), config)
                             for config in MODES)
    assert compiled == interpreted


# -- GREATEST and LEAST ---------------------------------------------------------------------------------

def java_order(v):
    """A DOUBLE's place in Java's Double.compareTo: NaN above every number, -0.0 below 0.0."""
    return (1, 0.0) if math.isnan(v) else (0, v, math.copysign(1.0, v))


def java_extreme(values, greatest):
    """Flink's GREATEST / LEAST of numbers: NULL where any is NULL, else the extreme in Java's order."""
    if any(v is None for v in values):
        return None
    floats = [float(v) for v in values]
    return (max if greatest else min)(floats, key=java_order)


def same_bits(a, b):
    """Row tuples equal, NaN equal to NaN and -0.0 apart from 0.0."""
    def key(row):
        return tuple(("NaN",) if isinstance(v, float) and math.isnan(v)
                     else (v, math.copysign(1.0, v)) if isinstance(v, float) else v for v in row)
    return [key(r) for r in a] == [key(r) for r in b]


@pytest.mark.parametrize("config", MODES)
def test_greatest_and_least_are_flinks(config):
    """They were refused ('Greatest (GREATEST(a, b)) is not supported in Darwin's SQL'). NULL where any argument is;
    a BIGINT beside a DOUBLE is compared as a DOUBLE; NaN is the greatest number and -0.0 is below 0.0 (Java's
    compareTo); timestamps and booleans (FALSE first) compare too."""
    t = table(a=[1, 5, None, -3], b=[2.5, math.nan, 1.0, -0.0], c=[0.0, 2.0, 3.0, 0.0], d=[True, False, None, False],
              e=pa.array([1000, 0, 5, None], pa.timestamp("ms")))
    got = rows("SELECT ts, GREATEST(a, b, c), LEAST(a, b, c), GREATEST(b, c), LEAST(c, b), LEAST(b, b), "
               "GREATEST(d, TRUE), LEAST(d, FALSE, TRUE), GREATEST(e, ts), LEAST(ts, e), GREATEST(a, 2), "
               "LEAST(a, NULL) FROM t", t, config)
    ms = timedelta(milliseconds=1)
    assert same_bits(got, [
        (2.5, 0.0, 2.5, 0.0, 2.5, True, False, datetime(1970, 1, 1) + 1000 * ms, datetime(1970, 1, 1), 2, None),
        (math.nan, 2.0, math.nan, 2.0, math.nan, True, False, datetime(1970, 1, 1) + ms, datetime(1970, 1, 1), 5, None),
        (None, None, 3.0, 1.0, 1.0, None, None, datetime(1970, 1, 1) + 5 * ms, datetime(1970, 1, 1) + 2 * ms, None,
         None),
        (0.0, -3.0, 0.0, -0.0, -0.0, True, False, None, None, 2, None)])


@settings(max_examples=25, deadline=None)
@given(data=st.lists(st.tuples(*[st.one_of(st.none(), st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf]),
                                           st.floats(-5, 5).map(round)) for _ in range(3)],
                               st.one_of(st.none(), st.integers(-3, 3))), min_size=1, max_size=30))
def test_greatest_and_least_agree_with_javas_order_on_both_engines(data):
    x, y, z, n = (list(c) for c in zip(*data))
    t = table(x=pa.array(x, pa.float64()), y=pa.array(y, pa.float64()), z=pa.array(z, pa.float64()),
              n=pa.array(n, pa.int64()))
    query = "SELECT ts, GREATEST(x, y, z), LEAST(x, y, z), GREATEST(n, x), LEAST(y, n, z, x) FROM t"
    expected = [(java_extreme([a, b, c], True), java_extreme([a, b, c], False), java_extreme([k, a], True),
                 java_extreme([b, k, c, a], False)) for a, b, c, k in data]
    for config in MODES:
        assert same_bits(rows(query, t, config), expected)


@pytest.mark.parametrize("config", MODES)
def test_strings_compare_by_order_as_flinks_varchar(config):
    """s < 'n' was refused ('string values support only == and !=, not <'), and GREATEST/LEAST of strings. Flink
    compares by UTF-8 bytes (BinaryStringData.compareTo), the order of code points: 'Z' < 'a' < 'é' < '😀' (Java's
    String.compareTo of UTF-16 units would put '😀' before U+FFFF); a prefix first, '' the least; NULL gives NULL.
    Text dates compare as dates do."""
    t = table(s=["2024-01-01", "2023-12-31", "", None, "a", "é", "😀", "\uffff", "Z", "ab"],
              u=["2024-01-01", "2024", "", "x", None, "e\u0301", "\uffff", "😀", "a", "a"])
    got = rows("SELECT ts, s >= '2024-01-01', s < u, s <= u, u > s, s <> u, 'b' > s, s BETWEEN 'a' AND 'é', "
               "s NOT BETWEEN u AND 'z', GREATEST(s, u), LEAST(s, u, 'b'), CASE WHEN s > u THEN 'gt' WHEN s < u "
               "THEN 'lt' ELSE 'eq or NULL' END, s < NULL FROM t WHERE s IS NULL OR s <> 'zz'", t, config)
    assert got == [
        (True, False, True, False, False, True, False, False, "2024-01-01", "2024-01-01", "eq or NULL", None),
        (False, True, True, True, True, True, False, True, "2024", "2023-12-31", "lt", None),
        (False, False, True, False, False, True, False, False, "", "", "eq or NULL", None),
        (None, None, None, None, None, None, None, None, None, None, "eq or NULL", None),
        (True, None, None, None, None, True, True, None, None, None, "eq or NULL", None),
        (True, False, False, False, True, False, True, True, "é", "b", "gt", None),
        (True, False, False, False, True, False, False, True, "😀", "b", "gt", None),
        (True, True, True, True, True, False, False, True, "😀", "b", "lt", None),
        (True, True, True, True, True, True, False, True, "a", "Z", "lt", None),
        (True, False, False, False, True, True, True, False, "ab", "a", "gt", None)]


def _sql_order(a, op, b):
    """``a op b`` in SQL's three values: NULL where either is NULL, else Python's order, where False < True."""
    return None if a is None or b is None else op(a, b)


@pytest.mark.parametrize("config", MODES)
def test_booleans_compare_by_order_false_first_as_flinks_boolean(config):
    """b < TRUE was refused ('bool values support only == and !=, not <'). Flink orders BOOLEAN with FALSE first
    (BooleanComparator, as Java's Boolean.compareTo) in <, <=, >, >=, BETWEEN and CASE; NULL gives NULL. Every pair
    of TRUE, FALSE and NULL, column against column, against literals, and the fluent API's."""
    import operator as o

    pairs = [(a, b) for a in (True, False, None) for b in (True, False, None)]
    t = table(b=[a for a, _ in pairs], c=[b for _, b in pairs])
    got = rows("SELECT ts, b < c, b <= c, b > c, b >= c, b < TRUE, FALSE < b, b >= FALSE, b BETWEEN FALSE AND c, "
               "b NOT BETWEEN c AND TRUE, CASE WHEN b > c THEN 'gt' WHEN b < c THEN 'lt' ELSE 'eq or NULL' END, "
               "b < NULL FROM t WHERE b IS NULL OR b <= TRUE", t, config)
    expected = []
    for a, b in pairs:  # a >= FALSE holds for any a not NULL, so BETWEEN FALSE AND c is a <= c; a <= TRUE likewise
        case = "gt" if _sql_order(a, o.gt, b) else "lt" if _sql_order(a, o.lt, b) else "eq or NULL"
        outside = None if a is None or b is None else not a >= b
        expected.append((_sql_order(a, o.lt, b), _sql_order(a, o.le, b), _sql_order(a, o.gt, b),
                         _sql_order(a, o.ge, b), _sql_order(a, o.lt, True), _sql_order(False, o.lt, a),
                         _sql_order(a, o.ge, False), _sql_order(a, o.le, b), outside, case, None))
    assert got == expected
    fluent = t.select("ts", lt=col("b") < col("c"), ge=col("b") >= False, btw=col("b").between(False, col("c")))
    assert [(r["lt"], r["ge"], r["btw"]) for r in sorted(fluent.collect(config).to_pylist(), key=lambda r: r["ts"])] \
        == [(e[0], e[6], e[7]) for e in expected]


@pytest.mark.parametrize("text, problem", [
    ("SELECT GREATEST(a, s) FROM t", "column 8: GREATEST takes arguments of one type .*a \\(int64\\), s \\(string\\)"),
    ("SELECT LEAST(a, ts) FROM t", "column 8: LEAST takes arguments of one type .*a \\(int64\\), ts \\(timestamp\\)"),
])
def test_greatest_and_least_refuse_what_they_cannot_compare_at_its_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})


# -- REGEXP_REPLACE and REGEXP --------------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_regexp_replace_and_regexp_are_flinks(config):
    """They were refused ('function REGEXP(2 arguments) is not supported', 'RegexpReplace ... is not supported').
    REGEXP_REPLACE replaces every match, empty ones between characters as Java's replaceAll, by the replacement as
    written: Flink quotes it (Matcher.quoteReplacement), so '$1' and a backslash are plain characters. REGEXP is a
    match anywhere, never for the empty pattern; a NULL argument gives NULL."""
    t = table(s=["foobar", "abc", "", None, "a.b.c", "x1y22"])
    got = rows(r"SELECT ts, REGEXP_REPLACE(s, 'oo|ar', ''), REGEXP_REPLACE(s, 'b*', '-'), "
               r"REGEXP_REPLACE(s, '(\d+)', '<$1\>'), REGEXP_REPLACE(s, '\.', 'xyz'), REGEXP(s, 'b.'), REGEXP(s, ''), "
               "REGEXP(s, NULL), REGEXP_REPLACE(s, 'a', NULL) FROM t", t, config)
    assert got == [("fb", "-f-o-o--a-r-", "foobar", "foobar", True, False, None, None),
                   ("abc", "-a--c-", "abc", "abc", True, False, None, None),
                   ("", "-", "", "", False, False, None, None), (None,) * 8,
                   ("a.b.c", "-a-.--.-c-", "a.b.c", "axyzbxyzc", True, False, None, None),
                   ("x1y22", "-x-1-y-2-2-", "x<$1\\>y<$1\\>", "x1y22", False, False, None, None)]


@pytest.mark.parametrize("config", MODES)
def test_regexp_replace_searches_on_a_character_after_an_empty_match(config):
    """Java's replaceAll searches again one character after an empty match, so a longer match starting there is not
    taken: '|b' of 'abc' is '-a-b-c-' in Flink; Python's re.sub gave '-a--c-', 'a*?' of 'aa' '-----' (Java: '-a-a-')."""
    t = table(s=["abc", "aa", ""])
    got = rows("SELECT ts, REGEXP_REPLACE(s, '|b', '-'), REGEXP_REPLACE(s, 'a*?', '-'), "
               "REGEXP_REPLACE(s, '(?=b)|b', '-') FROM t", t, config)
    assert got == [("-a-b-c-", "-a-b-c-", "a-bc"), ("-a-a-", "-a-a-", "aa"), ("-", "-", "")]


def test_regexp_replace_of_its_own_results_does_not_grow_without_end():
    """A replacement longer than its match lengthens strings: applied again to its own results it would grow them
    batch after batch, so it is computed for the values kernels meet (as an expanding REPLACE is)."""
    t = table(s=["ab", "b", "ab", None])
    query = "SELECT ts, REGEXP_REPLACE(REGEXP_REPLACE(s, 'b', 'bb'), 'b+', 'bcb') FROM t"
    compiled, interpreted = (rows(query, t, config) for config in MODES)
    assert compiled == interpreted == [("abcb",), ("bcb",), ("abcb",), (None,)]


@pytest.mark.parametrize("text, problem", [
    ("SELECT REGEXP_REPLACE(s, s, 'x') FROM t", "column 26: REGEXP_REPLACE's pattern must be a string literal"),
    ("SELECT REGEXP_REPLACE(s, '(', 'x') FROM t",
     "column 26: str.regexp_replace\\(\\): the Java pattern '\\(' is refused: an unclosed group"),
    ("SELECT REGEXP_REPLACE(s, 'a', s) FROM t", "column 31: REGEXP_REPLACE's replacement must be a string literal"),
    ("SELECT REGEXP_REPLACE(a, 'a', 'b') FROM t", "column 23: REGEXP_REPLACE takes strings; a is int64"),
    ("SELECT REGEXP(s, '[') FROM t", "column 18: str.regexp\\(\\): the Java pattern '\\[' is refused: an unclosed"),
    ("SELECT REGEXP(s) FROM t", "column 8: REGEXP takes a string and a pattern"),
])
def test_regexp_replace_and_regexp_refuse_what_they_cannot_take_at_its_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})


# -- Java's regular expressions -------------------------------------------------------------------------

# (pattern, text, Java's first match, None for none), from java.util.regex.Pattern's documentation: Flink compiles
# the patterns of REGEXP, REGEXP_REPLACE and REGEXP_EXTRACT with no flags
JAVA_REGEX_CASES = [
    (r"\d+", "٣4", "4"), (r"\w+", "café", "caf"), (r"\s", "a\u00a0b c", " "), (r"\s+", "\x0b\f", "\x0b\f"),
    (r"\p{Alpha}+", "éab", "ab"), (r"\p{Punct}+", "a!\"#b", "!\"#"), (r"\P{Digit}+", "12ab3", "ab"),
    (r"\p{XDigit}+", "xyzBEEF", "BEEF"), (r"\p{Space}", "\u2028 ", " "), (r"\h+", "a\t\u2003b", "\t\u2003"),
    (r"\v", "a\u2028", "\u2028"), (r"[a-d[m-p]]+", "xamz", "am"), (r"[a-z&&[def]]+", "abcdef", "def"),
    (r"[a-z&&[^bc]]+", "bcad", "ad"), (r"[a-z&&[^m-p]]+", "mnoplq", "lq"), (r"[^a[b]]", "abc", "c"),
    (r"\Qa.b*\E", "axb a.b*", "a.b*"), (r"\Qa.b", "a.b", "a.b"), (r"(?i)straße", "STRAßE", "STRAßE"),
    (r"(?i)é", "É", None), (r"(?i)[^a]", "Ab", "b"), (r"a.b", "a\rb", None), (r"a.b", "a\u0085b", None),
    (r"(?s)a.b", "a\rb", "a\rb"), (r"(.)$", "ab\r\n", "b"), (r"(.)$", "ab\u2028", "b"), (r"(?m)^b", "a\rb", "b"),
    (r"(?m).$", "a\r\nb", "a"), (r"a\Z", "a\r\n", "a"), (r"a\z", "a\n", None), (r"(a)(?i)b|B", "xB", "B"),
    (r"(?<year>\d{4})-\k<year>", "2020-2020", "2020-2020"), (r"\x{1F600}|\u00e9", "é", "é"),
    (r"\0101\cA\e", "A\x01\x1b", "A\x01\x1b"), (r"\ud83d\ude00", "😀", "😀"),
]


@pytest.mark.parametrize("config", MODES)
def test_regular_expressions_are_read_as_java_reads_them(config):
    r"""Darwin's engines read a pattern as Flink's Java does, not as Python's re: \d \w \s and the POSIX classes are
    ASCII, (?i) folds ASCII letters only, '.', '^' and '$' end lines at \r, \r\n, U+0085, U+2028 and U+2029 too,
    \Z is the end before a last line end; \p{Alpha}, \h, \Q...\E, class unions and intersections, (?<name>...) and
    \k<name> are Java's (before, Python's re refused some and read \d, \w, (?i), '.' and '$' otherwise)."""
    t = table(s=[text for _, text, _ in JAVA_REGEX_CASES])
    query = t.select("ts", **{f"m{i}": col("s").str.regexp_extract(p, 0)
                              for i, (p, _, _) in enumerate(JAVA_REGEX_CASES)})
    got = sorted(query.collect(config).to_pylist(), key=lambda r: r["ts"])
    assert [(p, got[i][f"m{i}"]) for i, (p, _, _) in enumerate(JAVA_REGEX_CASES)] == \
        [(p, want) for p, _, want in JAVA_REGEX_CASES]


@pytest.mark.parametrize("text, problem", [
    (r"SELECT REGEXP(s, '(?P<n>a)') FROM t", r"column 18: .*\(\?P\.\.\.\) \(Python's named groups.* at position 1"),
    (r"SELECT REGEXP(s, 'x\p{L}') FROM t", r"\\p\{L\} \(a Unicode property.* at position 2"),
    (r"SELECT REGEXP_EXTRACT(s, '\bx', 0) FROM t", r"column 26: .*\\b \(a word boundary.* at position 1"),
    (r"SELECT REGEXP_REPLACE(s, '(?U)\w', '') FROM t", r"column 26: .*\(\?U\) \(UNICODE_CHARACTER_CLASS\)"),
    (r"SELECT REGEXP(s, '(a?)*') FROM t", r"a capturing group in a repetition that may match nothing .* position 5"),
    (r"SELECT REGEXP(s, '(?>(a))') FROM t", r"a capturing group in an atomic group"),
    (r"SELECT REGEXP(s, '[a&&]') FROM t", r"'&&' with nothing after it at position 5"),
    (r"SELECT REGEXP(s, 'a{,2}') FROM t", r"a repetition that is not \{n\}"),
    (r"SELECT REGEXP(s, '(?<=a+)b') FROM t", r"a look-behind without a greatest length"),
    (r"SELECT REGEXP(s, '\y') FROM t", r"\\y, an escape Java does not have"),
])
def test_java_patterns_darwin_cannot_read_alike_are_refused_at_their_position(text, problem):
    r"""Python-only syntax, Java's Unicode properties and flags, \b (whose word characters depend on the JVM's version)
    and groups Java and Python set differently are refused, never read two ways; so is what Java refuses."""
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(s=["x"])})


# -- LEFT, RIGHT, REPEAT, REVERSE -----------------------------------------------------------------------

@pytest.mark.parametrize("config", MODES)
def test_left_right_repeat_and_reverse_are_flinks(config):
    """They were refused ('Left (LEFT(s, 2)) is not supported in Darwin's SQL'). Characters are code points (an
    emoji is one); LEFT and RIGHT give '' for a length below 1 and the whole of a shorter value, REPEAT '' for a
    count below 1; NULL gives NULL."""
    t = table(s=["héllo", "ab", "", None, "x😀y"])
    got = rows("SELECT ts, LEFT(s, 2), LEFT(s, -1), LEFT(s, 9), RIGHT(s, 2), RIGHT(s, 0), RIGHT(s, 9), REPEAT(s, 3), "
               "REPEAT(s, -2), REVERSE(s), REPEAT(REPEAT(s, 2), 2) FROM t", t, config)
    assert got == [("hé", "", "héllo", "lo", "", "héllo", "héllo" * 3, "", "olléh", "héllo" * 4),
                   ("ab", "", "ab", "ab", "", "ab", "ababab", "", "ba", "abababab"), ("",) * 10, (None,) * 10,
                   ("x😀", "", "x😀y", "😀y", "", "x😀y", "x😀y" * 3, "", "y😀x", "x😀y" * 4)]


@pytest.mark.parametrize("text, problem", [
    ("SELECT LEFT(s, a) FROM t", "column 16: LEFT's length must be an integer literal"),
    ("SELECT RIGHT(a, 1) FROM t", "column 14: RIGHT takes strings; a is int64"),
    ("SELECT REPEAT(s, 3000000000) FROM t", "column 18: str.repeat\\(\\): a count of at most 2147483647"),
    ("SELECT REVERSE(a) FROM t", "column 16: REVERSE takes strings; a is int64"),
])
def test_left_right_repeat_and_reverse_refuse_what_they_cannot_take_at_its_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})


# -- TIMESTAMPDIFF ----------------------------------------------------------------------------------------

DAY_MS = 86_400_000


def calcite_add_months(days, m):
    """Calcite's DateTimeUtils.addMonths(int date, int m), written out: the day cut to the month's last."""
    day = datetime(1970, 1, 1) + timedelta(days=days)
    total = day.year * 12 + day.month - 1 + m
    year, month = total // 12, total % 12 + 1
    last = ((datetime(year + month // 12, month % 12 + 1, 1)) - timedelta(days=1)).day
    return (datetime(year, month, min(day.day, last)) - datetime(1970, 1, 1)).days


def calcite_subtract_months(t0, t1):
    """Calcite's DateTimeUtils.subtractMonths(long t0, long t1), its loop written out as Calcite has it."""
    def by_days(date0, date1):
        if date0 < date1:
            return -by_days(date1, date0)
        m = (date0 - date1) // 31
        while True:
            if calcite_add_months(date1, m) >= date0 or calcite_add_months(date1, m + 1) > date0:
                return m
            m += 1
    millis0, millis1 = t0 % DAY_MS, t1 % DAY_MS
    d0, d1 = t0 // DAY_MS, t1 // DAY_MS
    x = by_days(d0, d1)
    return x - 1 if calcite_add_months(d1, x) == d0 and millis0 < millis1 else x


def java_int(n):
    return (n + 2**31) % 2**32 - 2**31


def flink_timestampdiff(unit, t1, t2):
    """Calcite's TIMESTAMPDIFF convertlet: (t2 - t1) in the unit, truncated toward zero, cast to INT."""
    if t1 is None or t2 is None:
        return None
    if unit in ("MONTH", "QUARTER", "YEAR"):
        months = calcite_subtract_months(t2, t1)
        return java_div(months, {"MONTH": 1, "QUARTER": 3, "YEAR": 12}[unit])
    ms = {"SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": DAY_MS, "WEEK": 7 * DAY_MS}[unit]
    return java_int(java_div(t2 - t1, ms))


@pytest.mark.parametrize("config", MODES)
def test_timestampdiff_counts_whole_units_as_flink(config):
    """TIMESTAMPDIFF was refused (sqlglot read its arguments as (t2, t1, unit) under the Flink dialect). Whole units
    from t1 to t2 truncated toward zero; MONTH, QUARTER and YEAR by the calendar, Calcite's way: Jan 31 to Feb 29
    is a month, Feb 29 10:00 to Feb 28 09:00 a year later eleven (the time of day is earlier), and backwards the
    same days are -12; NULL where either is NULL."""
    a = [at("2003-01-02 10:00:00"), at("2016-01-31 00:00:00"), at("2016-03-31 12:00:00"), at("1969-12-31 23:59:59"),
         None, at("2016-02-29 10:00:00")]
    b = [at("2003-01-03 09:59:59"), at("2016-02-29 00:00:00"), at("2016-02-29 11:00:00"), at("1970-01-01 00:00:00"),
         at("2000-01-01 00:00:00"), at("2017-02-28 09:00:00")]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(a)), pa.timestamp("ms")), "a": pa.array(a, pa.timestamp("ms")),
                                "b": pa.array(b, pa.timestamp("ms"))}), name="t")
    got = rows("SELECT ts, TIMESTAMPDIFF(DAY, a, b), TIMESTAMPDIFF(SECOND, b, a), TIMESTAMPDIFF(month, a, b), "
               "TIMESTAMPDIFF(MONTH, b, a), TIMESTAMPDIFF(YEAR, a, b), TIMESTAMPDIFF(QUARTER, b, a), "
               "TIMESTAMPDIFF(WEEK, a, b) FROM t", t, config)
    assert got == [(0, -86399, 0, 0, 0, 0, 0), (29, -2505600, 1, -1, 0, 0, 4), (-31, 2682000, -2, 1, 0, 0, -4),
                   (0, -1, 0, 0, 0, 0, 0), (None,) * 7, (364, -31532400, 11, -12, 0, -4, 52)]


STAMPS_MS = st.one_of(st.integers(-10**12, 10**12),  # 1938 to 2001
                      st.integers(-3 * 10**10, 3 * 10**10).map(lambda d: 951_782_400_000 + d))  # around 2000-02-29


@settings(max_examples=40, deadline=None)
@given(pairs=st.lists(st.tuples(STAMPS_MS, STAMPS_MS), min_size=1, max_size=30))
def test_timestampdiff_agrees_with_calcite_on_both_engines(pairs):
    starts, ends = (list(c) for c in zip(*pairs))
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(pairs)), pa.timestamp("ms")),
                                "a": pa.array(starts, pa.timestamp("ms")), "b": pa.array(ends, pa.timestamp("ms"))}),
                      name="t")
    units = ("SECOND", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR")
    query = "SELECT ts, " + ", ".join(f"TIMESTAMPDIFF({u}, a, b)" for u in units) + " FROM t"
    expected = [tuple(flink_timestampdiff(u, s, e) for u in units) for s, e in pairs]
    for config in MODES:
        assert rows(query, t, config) == expected


@pytest.mark.parametrize("text, problem", [
    ("SELECT TIMESTAMPDIFF(DECADE, ts, ts) FROM t", "column 22: TIMESTAMPDIFF's unit: SECOND, MINUTE, HOUR, DAY, "
                                                   "WEEK, MONTH, QUARTER, YEAR"),
    ("SELECT TIMESTAMPDIFF(DAY, a, ts) FROM t", "column 27: TIMESTAMPDIFF takes TIMESTAMPs; a is int64"),
])
def test_timestampdiff_refuses_what_it_cannot_take_at_its_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})


# -- calendar months: + INTERVAL 'n' MONTH / YEAR, TIMESTAMPADD(MONTH | QUARTER | YEAR, ...) -------------------

def calcite_plus_months(ms, m):
    """Calcite's addMonths(long timestamp, int m): the day's months added, its time of day kept."""
    return None if ms is None or m is None else calcite_add_months(ms // DAY_MS, m) * DAY_MS + ms % DAY_MS


@pytest.mark.parametrize("config", MODES)
def test_intervals_of_months_and_timestampadd_of_months_are_calendar_months(config):
    """ts + INTERVAL '1' MONTH was refused ('interval ... give a number and one of DAY, HOUR...') and TIMESTAMPADD of
    MONTH, QUARTER and YEAR too; now they add calendar months as Flink does, the day cut to the month's last:
    Jan 31 plus a month is Feb 29 in 2016, Feb 29 minus a year Feb 28; the time of day stays."""
    a = [at("2016-01-31 10:30:00"), at("2016-02-29 00:00:00"), at("1969-12-31 23:59:59"), None,
         at("2015-03-31 01:00:00")]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(a)), pa.timestamp("ms")), "a": pa.array(a, pa.timestamp("ms")),
                                "n": [1, 12, -2, 3, None]}), name="t")
    got = rows("SELECT ts, a + INTERVAL '1' MONTH, a - INTERVAL '1' YEAR, INTERVAL '13' MONTH + a, "
               "TIMESTAMPADD(MONTH, n, a), TIMESTAMPADD(QUARTER, 1, a), TIMESTAMPADD(YEAR, n, a) FROM t", t, config)
    assert got == [
        (at("2016-02-29 10:30:00"), at("2015-01-31 10:30:00"), at("2017-02-28 10:30:00"), at("2016-02-29 10:30:00"),
         at("2016-04-30 10:30:00"), at("2017-01-31 10:30:00")),
        (at("2016-03-29 00:00:00"), at("2015-02-28 00:00:00"), at("2017-03-29 00:00:00"), at("2017-02-28 00:00:00"),
         at("2016-05-29 00:00:00"), at("2028-02-29 00:00:00")),
        (at("1970-01-31 23:59:59"), at("1968-12-31 23:59:59"), at("1971-01-31 23:59:59"), at("1969-10-31 23:59:59"),
         at("1970-03-31 23:59:59"), at("1967-12-31 23:59:59")),
        (None,) * 6,
        (at("2015-04-30 01:00:00"), at("2014-03-31 01:00:00"), at("2016-04-30 01:00:00"), None,
         at("2015-06-30 01:00:00"), None)]


@settings(max_examples=40, deadline=None)
@given(data=st.lists(st.tuples(st.one_of(st.none(), STAMPS_MS), st.one_of(st.none(), st.integers(-2000, 2000))),
                     min_size=1, max_size=30))
def test_calendar_months_agree_with_calcite_on_both_engines(data):
    stamps, counts = (list(c) for c in zip(*data))
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(data)), pa.timestamp("ms")),
                                "a": pa.array(stamps, pa.timestamp("ms")), "n": pa.array(counts, pa.int64())}),
                      name="t")
    query = "SELECT ts, TIMESTAMPADD(MONTH, n, a) - a, a + INTERVAL '7' MONTH - a, a - INTERVAL '3' YEAR - a FROM t"
    expected = [tuple(None if s is None or v is None else v - s for v in
                      (calcite_plus_months(s, n), calcite_plus_months(s, 7), calcite_plus_months(s, -36)))
                for s, n in data]
    for config in MODES:
        assert rows(query, t, config) == expected


ANY_LONG = st.one_of(st.integers(INT64_MIN, 2**63 - 1), st.sampled_from([INT64_MIN, 2**63 - 1, 2**62, -(2**62)]),
                    st.integers(2**63 - 10**6, 2**63 - 1), st.integers(INT64_MIN, INT64_MIN + 10**6))


@settings(max_examples=60, deadline=None)
@given(data=st.lists(st.tuples(st.one_of(STAMPS_MS, ANY_LONG), ANY_LONG), min_size=1, max_size=10))
def test_calendar_months_past_bigint_wrap_alike_on_both_engines(data):
    """A count of months whose total (the timestamp's year * 12 + month + n) passes BIGINT wrapped in the
    compiled code and not in the interpreter: TIMESTAMPADD(MONTH, 9223372036854752168, TIMESTAMP '1970-01-01')
    was -62167295232000 ms compiled and -62167229568000 interpreted. Both now count the months in a BIGINT,
    wrapping as Java's long (Calcite's own count is an int, so Flink has no such months to compare with)."""
    stamps, counts = (list(c) for c in zip(*data))
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(data)), pa.timestamp("ms")),
                                "a": pa.array(stamps, pa.timestamp("ms")), "n": pa.array(counts, pa.int64())}),
                      name="t")
    query = "SELECT ts, TIMESTAMPADD(MONTH, n, a) - a, TIMESTAMPADD(YEAR, n, a) - a FROM t"
    compiled, interpreted = (rows(query, t, config) for config in MODES)
    assert compiled == interpreted


@pytest.mark.parametrize("text, problem", [
    ("SELECT ts + INTERVAL '1.5' MONTH FROM t", "column 22: interval INTERVAL '1.5' MONTH: give a whole number of "
                                                "months"),
    ("SELECT a + INTERVAL '1' YEAR FROM t", "column 8: .*an interval of months is added to a TIMESTAMP; a is int64"),
])
def test_intervals_of_months_refuse_what_they_cannot_take_at_their_position(text, problem):
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": table(a=[1], s=["x"])})
