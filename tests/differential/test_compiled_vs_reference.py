"""Random data through the compiled engine and the reference interpreter: identical results.

Data includes out-of-order and late events, NULLs everywhere, empty batches and
random batch boundaries; results are compared row by row, in order.
"""

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streams import SHAPES, q_all_aggregates, source, streams

import darwin as dw
from darwin import col
from darwin.testing import assert_engines_agree


@pytest.mark.parametrize("shape", SHAPES, ids=lambda f: f.__name__)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams())
def test_nullable_data(shape, data):
    table, cuts, delay, batch_size = data
    assert_engines_agree(shape(source(table, cuts, delay)), dw.Config(batch_size=batch_size))


@pytest.mark.parametrize("shape", SHAPES, ids=lambda f: f.__name__)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=streams(nulls=False))
def test_non_null_data(shape, data):
    table, cuts, delay, batch_size = data
    assert_engines_agree(shape(source(table, cuts, delay, nullable=False)), dw.Config(batch_size=batch_size))


@settings(max_examples=15, deadline=None)
@given(data=streams(), other_batch_size=st.integers(1, 64))
def test_results_do_not_depend_on_batch_boundaries(data, other_batch_size):
    table, cuts, delay, batch_size = data
    q = q_all_aggregates(source(table, cuts, delay))
    a = q.execute(dw.Config(batch_size=batch_size))
    b = q.execute(dw.Config(batch_size=other_batch_size))
    assert a.table.equals(b.table)
    assert a.metrics["late_rows"] == b.metrics["late_rows"]


def q_strings(t):
    url = dw.when(col("s") == "apple", "https://a.com/x/y?channel_id=7&q=1") \
        .when(col("s") == "google", "https://g.com/p").otherwise(col("s"))
    return (t.with_columns(url=url)
            .filter(col("url").str.length() >= 0)
            .select("s", up=col("s").str.upper(), n=col("url").str.count_char("/"),
                    ch=col("url").str.regexp_extract("(&|\\?)channel_id=([^&]*)", 2),
                    part=col("url").str.split_index("/", 3), low=col("url").str.split_index("/", 2).str.lower(),
                    has=col("url").str.contains("g.com"), sw=col("s").str.starts_with("ap")))


@settings(max_examples=25, deadline=None)
@given(data=streams())
def test_string_functions(data):
    table, cuts, delay, batch_size = data
    assert_engines_agree(q_strings(source(table, cuts, delay)), dw.Config(batch_size=batch_size))


def q_arrow_string_functions(t):
    """String functions of source columns, computed by Arrow on whole batches, beside moved strings."""
    return (t.filter(col("s").str.contains("oo") | col("s").str.starts_with("ap") | col("s").is_null())
            .select("s", n=col("s").str.count_char("a"), length=col("s").str.length(), k=col("k")))


def q_moved_strings(t):
    """String columns only carried to the output (as row indices), beside inspected ones."""
    return (t.filter(col("k") != 0).with_columns(s2=col("s"), s3=col("s"))
            .filter(col("s3") != "apple").select("ts", "s", moved=col("s2"), v=col("v")))


def q_moved_through_sliding_window(t):
    return t.window(dw.Slide("1s", every="500ms", on="ts")).table().select("window_start", "s", "k")


@pytest.mark.parametrize("shape", [q_moved_strings, q_moved_through_sliding_window, q_arrow_string_functions],
                         ids=lambda f: f.__name__)
@settings(max_examples=20, deadline=None)
@given(data=streams())
def test_moved_strings(shape, data):
    table, cuts, delay, batch_size = data
    assert_engines_agree(shape(source(table, cuts, delay)), dw.Config(batch_size=batch_size))


TEXT = st.text(alphabet="ab A_%\\é😀\n0z", max_size=6)


def q_flink_string_functions(t, start, length, pattern, similar="%"):
    s, u = col("s"), col("u")
    return t.select(
        "s", sub=s.str.substring(start, length), tail=s.str.substring(start), trim=s.str.trim(),
        lt=s.str.ltrim("a "), rt=s.str.rtrim("\\z"), rep=s.str.replace("a", "ba").str.replace("a", "ba"),
        shrink=s.str.replace("a", ""), lp=s.str.lpad(length, "é😀"), rp=s.str.rpad(length, ""),
        loc=s.str.locate("a", start), cap=s.str.initcap(), like=s.str.like(pattern, "\\"), raw=s.str.like(pattern),
        ilike=s.str.ilike(pattern, "\\"), sim=s.str.similar_to(similar, "!"),
        sim_up=s.str.upper().str.similar_to(similar),
        cat=dw.concat("<", s, "|", u, ">"), twice=dw.concat(s, s).str.upper(), ws=dw.concat_ws("-", s, "x", u),
        lit_ws=dw.concat_ws(",", s), pipe=s.str.concat(u).str.substring(2, 3))


@settings(max_examples=20, deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), TEXT), st.one_of(st.none(), TEXT)), min_size=1, max_size=12),
       start=st.integers(-8, 8), length=st.integers(-2, 8), batch_size=st.integers(1, 5),
       pattern=st.text(alphabet="a%_\\é😀\n", max_size=5), recorded=st.sampled_from([1, 2, 3, 1 << 16]),
       similar=st.text(alphabet="aA_%.|()*+?[]^-{}2,!é😀\n", max_size=7))
def test_flink_string_functions(rows, start, length, pattern, batch_size, recorded, similar):
    """SUBSTRING, TRIM, REPLACE, LPAD/RPAD, LOCATE, INITCAP, LIKE, ILIKE, SIMILAR TO, CONCAT and CONCAT_WS over any
    text (empty, non-ASCII, outside the BMP, line ends) agree with the interpreter, nested and over new strings. The
    compiled engine makes the strings a batch lacks at once, those a scout records (``recorded`` at most before it
    stops) and, nested, those of strings the scout found missing at its next stop."""
    from unittest import mock

    import pyarrow as pa

    from darwin.errors import DarwinTypeError

    try:
        col("s").str.like(pattern, "\\")
    except DarwinTypeError:
        pattern = pattern.replace("\\", "\\\\")  # an escape before anything but % _ \ is refused
    try:
        col("s").str.similar_to(similar, "!")
        col("s").str.similar_to(similar)
    except DarwinTypeError:
        similar = "(a|%é)_%"  # a pattern Flink (or Darwin) refuses
    t = dw.from_arrow(pa.table({"s": pa.array([r[0] for r in rows], pa.string()),
                                "u": pa.array([r[1] for r in rows], pa.string())}), name="t")
    with mock.patch("darwin.runtime.pipeline.SCOUTED_MISSES", recorded):
        assert_engines_agree(q_flink_string_functions(t, start, length, pattern, similar),
                             dw.Config(batch_size=batch_size))


# any text Arrow holds (no surrogates): combining marks, astral characters, NUL, U+FFFF, prefixes of each other
ORDERED_TEXT = st.text(alphabet=st.sampled_from("aé\u0301😀\uffff\x00z") | st.characters(exclude_categories=("Cs",)),
                       max_size=4)


def utf8_less(a, b):
    """Flink's ``BinaryStringData.compareTo``: UTF-8 bytes, unsigned, a prefix first."""
    return a.encode() < b.encode()


def q_string_order(t, bound):
    s, u = col("s"), col("u")
    made = dw.concat(s, u)  # strings made as kernels meet them, compared in the same row
    return t.filter((s >= bound) | u.is_null() | (u < s) | (s.str.upper() <= bound)).select(
        "s", "u", lt=s < u, le=s <= u, gt=s > u, ge=s >= u, eq=s == u, below=s < bound, above=dw.lit(bound) <= s,
        up=s.str.upper() > bound, inside=s.between(u, bound), made=made > s, made_lit=made < bound,
        pick=dw.when(s < u, s).when(s > u, u).otherwise("="))


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), ORDERED_TEXT), st.one_of(st.none(), ORDERED_TEXT)), min_size=1,
                     max_size=12), bound=ORDERED_TEXT, batch_size=st.integers(1, 5))
def test_strings_ordered_as_flink_orders_varchar(rows, bound, batch_size):
    """<, <=, >, >=, BETWEEN and CASE on strings, against a literal (a table per distinct value) and another string
    (their bytes in the pool, new strings too), agree with the interpreter and with UTF-8 bytes; NULL gives NULL."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"s": pa.array([r[0] for r in rows], pa.string()),
                                "u": pa.array([r[1] for r in rows], pa.string())}), name="t")
    compiled = assert_engines_agree(q_string_order(t, bound), dw.Config(batch_size=batch_size))
    got = [(r["s"], r["u"], r["lt"], r["ge"], r["below"]) for r in compiled.table.to_pylist()]
    assert [g for g in got if g[0] is not None and g[1] is not None] == [
        (a, b, utf8_less(a, b), not utf8_less(a, b), utf8_less(a, bound)) for a, b, *_ in got
        if a is not None and b is not None]
    assert all(g[2] is None and g[3] is None for g in got if g[0] is None or g[1] is None)


def test_a_string_function_applied_again_to_anothers_new_strings():
    """lower(upper(lower(s))) shares one table for both lowers, whose outer one reads the strings upper made
    after that table was filled: it read past its end (garbage codes, an Arrow malloc of 94 TB) before the
    tables were filled once per level of nesting."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"s": ["aB", "Cd", "xY", None]}), name="t")
    out = assert_engines_agree(t.select("s", r=col("s").str.lower().str.upper().str.lower().str.initcap()))
    assert out.table["r"].to_pylist() == ["Ab", "Cd", "Xy", None]


# text a cast may meet: numbers in Flink's and Python's spellings, words, dates, spaces and line ends
CAST_TEXT = st.one_of(
    st.text(alphabet="0129.+-eE xXpdf\tIinfNaty", max_size=8),
    st.sampled_from(["1", " 2 ", "1.9", "-.5", ".", "+", "", "1e3", "9223372036854775807", "9223372036854775808",
                     "-9223372036854775808", "3000000000", "NaN", "-Infinity", "inf", "1_000", "0x1p3", " 1.5d\n",
                     "TRUE", "yes", " t", "N", "2015-07-15", "2015-7-5 1:2:3.123456789", "2015-02-30 00:00:00",
                     "2015-07-15T00:00:00", "0000-01-01", "١٢"]))
WIDE_INTS = st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from([2**62, -2**62, 2**63 - 1, -2**63, 2**53 + 7,
                                                                      9_223_372_036_854_776, 86_400_000 * 2**36]))


def q_wrapped_arithmetic(t, k):
    """Integer arithmetic that wraps, followed by what LLVM folds where it may assume no signed overflow
    (Numba's "nsw"): a product's day or time formatted, divided back, a sum or product compared."""
    n, m = col("n"), col("m")
    ms = n * k
    return t.select("ts", "n", "m", day=ms.cast("timestamp").dt.strftime("%Y-%m-%d %H:%M:%S"), days=ms // 86_400_000,
                    back=ms // k, grew=(n + m) > n, fell=(n - m) < n, below=(n - m) < 0, scaled=ms < m * k,
                    twice=(n * m) // m, year=ms.cast("timestamp").dt.year(), sql_k=(n + k) - n)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), WIDE_INTS), st.one_of(st.none(), WIDE_INTS)), min_size=1,
                     max_size=10),
       k=st.sampled_from([1000, 3, -7, 2**32 + 1, 86_400_000, 2**62 + 1, -2**63]), batch_size=st.integers(1, 4))
@example(rows=[(2**62, 1), (-2**62, None)], k=1000, batch_size=1)  # FROM_UNIXTIME(2**62): '146138514283-06-19'
def test_wrapped_integer_arithmetic_is_not_folded_as_if_it_could_not_wrap(rows, k, batch_size):
    """(n * 1000) formatted showed the unwrapped product's date compiled ('146138514283-06-19' for n = 2**62, whose
    product wraps to 0: '1970-01-01' interpreted, as Flink's long): LLVM folded (n * 1000) // 86400000 into
    n // 86400, since Numba lets it assume int64 arithmetic never overflows. Compiled equals interpreted, and
    the interpreter wraps as Java's long does."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(rows)), pa.timestamp("ms")),
                                "n": pa.array([r[0] for r in rows], pa.int64()),
                                "m": pa.array([r[1] for r in rows], pa.int64())}), time="ts", name="t")
    compiled = assert_engines_agree(q_wrapped_arithmetic(t, k), dw.Config(batch_size=batch_size))
    wrap = lambda v: (v + 2**63) % 2**64 - 2**63  # noqa: E731
    for r in compiled.table.to_pylist():
        if r["n"] is not None and r["m"] is not None:
            assert r["grew"] == (wrap(r["n"] + r["m"]) > r["n"]) and r["below"] == (wrap(r["n"] - r["m"]) < 0)
            assert r["days"] == wrap(r["n"] * k) // 86_400_000 and r["sql_k"] == wrap(wrap(r["n"] + k) - r["n"])


TIME_UNITS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")


def q_floors_of_floors(t):
    """A unit's start past int64 wraps; what follows takes the wrapped value (CEIL to a calendar unit floors the
    floor of the day, plus a span)."""
    ts = col("n").cast("timestamp")
    day = ts.dt.floor("day")
    return t.select("ts", "n", **{f"floor_{u}": day.dt.floor(u) for u in TIME_UNITS},
                    **{f"ceil_{u}": ts.dt.ceil(u) for u in TIME_UNITS},
                    next_year=(day.dt.floor("year") + 366 * 86_400_000).dt.floor("year"),
                    week=day.dt.week(), year=day.dt.year(), same=day.dt.floor("year") == day)


@settings(max_examples=60, deadline=None)
@given(rows=st.lists(st.one_of(st.none(), WIDE_INTS, st.integers(-2**63, -2**63 + 10**12),
                               st.integers(2**63 - 10**12, 2**63 - 1)), min_size=1, max_size=10),
       batch_size=st.integers(1, 4))
@example(rows=[-9223372036828800001], batch_size=1)  # CEIL(ts TO YEAR): 19785600001 ms past ts, not -11750399999
def test_floors_of_wrapped_floors_are_not_folded_as_if_they_could_not_wrap(rows, batch_size):
    """FLOOR(FLOOR(ts TO DAY) TO YEAR) of a ts whose day starts before -2^63 (it wraps to year 292278994)
    was the year of ts itself compiled: the floor's milliseconds were multiplied as int64, and LLVM folded
    the next floor's day of them back into ts's day, as ae06e80 found for expressions; so CEIL(ts TO YEAR),
    MONTH, QUARTER and WEEK, which floor the floor of the day, differed from the interpreter's."""
    import pyarrow as pa

    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(rows)), pa.timestamp("ms")),
                                "n": pa.array(rows, pa.int64())}), time="ts", name="t")
    assert_engines_agree(q_floors_of_floors(t), dw.Config(batch_size=batch_size))


FLOATS = st.one_of(st.floats(), st.sampled_from([0.0, -0.0, 1e7, 9999999.0, 1e-3, 9.99e-4, 1e23, 5e-324, 2.0**63]))


def q_casts(t):
    s = col("s")
    return t.select(
        "s", i=col("i").cast("string"), f=col("f").cast("string"), b=col("b").cast("string"),
        ts=col("ts").cast("string"), n=s.try_cast("int64"), d=s.try_cast("float64"), yes=s.try_cast("bool"),
        at=s.try_cast("timestamp"), back=col("f").cast("string").try_cast("float64"),
        again=col("i").cast("string").str.length(), guarded=dw.when(s.try_cast("int64").is_null(), -1)
        .otherwise(s.cast("int64")), both=s.try_cast("float64").is_not_null() & (s.cast("float64") > 0))


@settings(max_examples=25, deadline=None)
@given(rows=st.lists(st.tuples(st.one_of(st.none(), CAST_TEXT), st.one_of(st.none(), st.integers(-2**63, 2**63 - 1)),
                               st.one_of(st.none(), FLOATS), st.one_of(st.none(), st.booleans()),
                               st.one_of(st.none(), st.integers(-2**45, 2**45))), min_size=1, max_size=12),
       batch_size=st.integers(1, 5))
def test_casts_to_and_from_strings(rows, batch_size):
    """Every type to a string and a string to every type (TRY_CAST: NULL where the text does not parse) agree with
    the interpreter, over NULLs, NaN, infinities, -0.0, extreme integers and text that parses or not; a CAST that
    would fail where a CASE or an AND does not reach it does not fail."""
    import pyarrow as pa

    columns = list(zip(*rows))
    t = dw.from_arrow(pa.table({"s": pa.array(columns[0], pa.string()), "i": pa.array(columns[1], pa.int64()),
                                "f": pa.array(columns[2], pa.float64()), "b": pa.array(columns[3], pa.bool_()),
                                "ts": pa.array(columns[4], pa.timestamp("ms"))}), name="t")
    assert_engines_agree(q_casts(t), dw.Config(batch_size=batch_size))


@settings(max_examples=30, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 6_000), st.integers(-3, 40), FLOATS, st.sampled_from(["1", "x", None])),
                     min_size=1, max_size=30),
       batch_size=st.integers(1, 8), recorded=st.integers(1, 4))
def test_numbers_texts_made_many_at_once(rows, batch_size, recorded):
    """The compiled engine makes the texts a batch lacks at once: the kernel runs on as a scout that records the
    values (``recorded`` at most before it stops) and must change nothing else: not an aggregation's state nor
    its watermark, not the rows it emits, and it must not fail for a CAST its rows reach (the kernel that runs
    after it does) nor stop for a concatenation's or a format's strings. Texts of texts, filters on texts, sliding
    windows, group keys and CASTs guarded or not agree with the interpreter."""
    from unittest import mock

    import pyarrow as pa

    from darwin.errors import CastError

    ts, k, f, s = (list(c) for c in zip(*rows))
    t = dw.from_arrow(pa.table({"ts": pa.array(ts, pa.timestamp("ms")), "k": pa.array(k, pa.int64()),
                                "f": pa.array(f, pa.float64()), "s": pa.array(s, pa.string())}),
                      name="t", time="ts", max_delay="1s")
    text = col("k").cast("string")
    windowed = (t.filter(text != "2")
                .with_columns(key=dw.concat(text, dw.lit("/"), col("f").cast("string")),
                              hour=col("ts").dt.strftime("%M:%S"), at=col("ts").cast("string"))
                .window(dw.Slide("2s", every="1s", on="ts"), late_output=True)
                .group_by("key", "hour").agg(n=dw.count(), long=dw.max(col("at").str.length() + text.str.length())))
    emitted = t.select(k=text, n=dw.when(col("s") == "x", -1).otherwise(col("s").cast("int64")),
                       again=text.cast("int64").cast("string"), f=col("f").cast("string").str.upper())
    failing = t.select(k=text, n=col("s").cast("int64"))
    config = dw.Config(batch_size=batch_size)
    with mock.patch("darwin.runtime.pipeline.SCOUTED_MISSES", recorded):
        assert_engines_agree(windowed, config)
        assert_engines_agree(emitted, config)
        if "x" in s:
            with pytest.raises(CastError, match="'x' to BIGINT"):
                failing.collect(config=config)
        else:
            assert_engines_agree(failing, config)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_cast_that_meets_text_that_does_not_parse_fails_naming_it(mode):
    """Flink's CAST fails on text that is not its type (since 1.15); it must not give NULL or garbage."""
    import pyarrow as pa

    from darwin.errors import CastError

    t = dw.from_arrow(pa.table({"s": ["1", "2", "twelve", None]}), name="t")
    with pytest.raises(CastError, match="'twelve' to BIGINT"):
        t.select(n=col("s").cast("int64")).collect(config=dw.Config(mode=mode))
    with pytest.raises(CastError, match="'2' to TIMESTAMP"):
        t.filter(col("s") != "1").select(n=col("s").cast("timestamp")).collect(config=dw.Config(mode=mode))
    rows = t.select(n=col("s").try_cast("int64")).collect(config=dw.Config(mode=mode))
    assert rows["n"].to_pylist() == [1, 2, None, None]


# Java patterns (Flink's REGEXP functions) and a Python pattern meaning the same, spelled out from Pattern's docs
JAVA_ATOMS = st.sampled_from([
    ("a", "a"), ("é", "é"), ("٣", "٣"), ("\\.", "\\."), ("\\d", "[0-9]"), ("\\D", "[^0-9]"), ("\\w", "[a-zA-Z0-9_]"),
    ("\\W", "[^a-zA-Z0-9_]"), ("\\s", "[ \\t\\n\\x0b\\f\\r]"), ("\\S", "[^ \\t\\n\\x0b\\f\\r]"),
    ("\\p{Alpha}", "[a-zA-Z]"),
    ("\\P{Alpha}", "[^a-zA-Z]"), ("\\p{Alnum}", "[a-zA-Z0-9]"), ("\\p{Punct}", "[!-/:-@\\[-`{-~]"),
    ("\\p{Space}", "[ \\t\\n\\x0b\\f\\r]"), ("\\h", "[ \\t\\xa0\\u1680\\u180e\\u2000-\\u200a\\u202f\\u205f\\u3000]"),
    ("\\v", "[\\n\\x0b\\f\\r\\x85\\u2028\\u2029]"), (".", "[^\\n\\r\\x85\\u2028\\u2029]"), ("(?s:.)", "(?s:.)"),
    ("\\Qa.\\E", "a\\."), ("[a-z&&[^e]]", "[a-df-z]"), ("[\\w&&[^\\d]]", "[a-zA-Z_]"), ("[^a[\\d]]", "[^a0-9]"),
    ("[a-d[x-z]]", "[a-dx-z]"), ("\\x{e9}", "é"), ("\\u0663", "٣"), ("\\t", "\\t"), ("\\x0A", "\\n"),
])
JAVA_TEXT = st.text(alphabet="aAeEé٣1_ .!\t\n\r\x85\u2028\xa0\x0bz", max_size=6)


@st.composite
def java_patterns(draw, depth=0):
    """(Java pattern, the Python pattern of the same meaning under re.ASCII): atoms, repetitions, (?i:...), groups
    (capturing ones never repeated: Java and Python set a repeated group differently), alternatives, \\A and \\z."""
    items = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["atom", "atom", "repeat", "group", "fold", "anchor"] if depth < 2 else ["atom"]))
        if kind == "anchor":
            items.append(draw(st.sampled_from([("\\A", "\\A"), ("\\z", "\\Z"), ("^", "\\A")])))
            continue
        java, python = draw(JAVA_ATOMS) if kind in ("atom", "repeat") else draw(java_patterns(depth + 1))
        if kind == "repeat":
            q = draw(st.sampled_from(["*", "+", "?", "{1,2}", "*?", "+?", "{2}", "*+"]))
            java, python = java + q, python + q
        elif kind == "group":
            java, python = f"({java})", f"({python})"
        elif kind == "fold":
            java, python = f"(?i:{java})", f"(?i:{python})"
        items.append((java, python))
    java, python = "".join(j for j, _ in items), "".join(p for _, p in items)
    if depth == 0 and draw(st.booleans()):
        other_java, other_python = draw(JAVA_ATOMS)
        java, python = f"{java}|{other_java}", f"{python}|{other_python}"
    return java, python


@settings(max_examples=150, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), JAVA_TEXT), min_size=1, max_size=8), pattern=java_patterns(),
       batch_size=st.integers(1, 4))
def test_java_regular_expressions(texts, pattern, batch_size):
    """A pattern is read as Java reads it (ASCII classes and case folding, Java's line ends for '.') by the compiled
    engine and the interpreter alike, over text with Unicode digits and letters and every line end: each matches
    what the Python pattern spelled out from Java's documentation matches."""
    import re

    import pyarrow as pa

    java, python = pattern
    expected = re.compile(python, re.ASCII)
    t = dw.from_arrow(pa.table({"s": pa.array(texts, pa.string())}), name="t")
    s = col("s").str
    query = t.select("s", m=s.regexp(java), whole=s.regexp_extract(java, 0), first=s.regexp_extract(java, 1))
    result = assert_engines_agree(query, dw.Config(batch_size=batch_size))
    for row in result.table.to_pylist():
        found = None if row["s"] is None else expected.search(row["s"])
        assert row["m"] == (None if row["s"] is None else found is not None and java != "")
        assert row["whole"] == (found and found.group(0))
        assert row["first"] == (found.group(1) if found and expected.groups else None)
