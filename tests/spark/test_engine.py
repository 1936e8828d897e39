"""Config(engine='spark'): its settings, what it refuses, and every way of running a query."""

from datetime import datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin import col
from darwin.errors import ConfigError, UnsupportedError
from darwin.testing import assert_table_equal


def bids():
    return dw.from_arrow(pa.table({"ts": pa.array([0, 1500, 2500, 500, 12_000], pa.timestamp("ms")),
                                   "k": [1, 2, 1, 3, 1], "v": [5, 20, 30, None, 50]}), time="ts", name="bids")


def test_yaml_spark_section_sets_master_and_conf(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text("engine: spark\nspark:\n  master: local[2]\n  conf:\n    spark.sql.shuffle.partitions: 3\n")
    config = dw.Config.from_yaml(path)
    assert (config.engine, config.spark_master, config.spark_conf) == (
        "spark", "local[2]", {"spark.sql.shuffle.partitions": "3"})


def test_bad_engine_settings_are_config_errors():
    with pytest.raises(ConfigError, match="engine"):
        dw.Config(engine="flink")
    with pytest.raises(ConfigError, match="'spark'"):
        dw.Config.from_dict({"spark": {"masters": "local"}})


@pytest.mark.parametrize("setting, named", [({"parallelism": 2}, "parallelism"), ({"mode": "interpreted"}, "mode"),
                                            ({"idle_timeout": "1s"}, "idle_timeout")])
def test_settings_spark_cannot_honour_are_refused(spark, setting, named):
    with pytest.raises(ConfigError, match=named):
        bids().collect(dw.Config(engine="spark", **setting))


def test_checkpoints_are_refused(spark, tmp_path):
    q = bids().sink(dw.sinks.Parquet(tmp_path / "out"))
    with pytest.raises(ConfigError, match="checkpoint_dir"):
        q.run(dw.Config(engine="spark", checkpoint_dir=str(tmp_path / "ck")))


def test_a_window_over_a_union_is_refused_naming_the_node(spark):
    q = bids().union(bids()).window(dw.Tumble("1s", on="ts")).agg(n=dw.count())
    with pytest.raises(UnsupportedError, match="plan node Aggregate"):
        q.collect(dw.Config(engine="spark"))


@pytest.mark.parametrize("shape", [lambda t: t.deduplicate(on="k", state_ttl="1s"),
                                   lambda t: t.top_n(1, by="k", order="v", state_ttl="1s"),
                                   lambda t: t.group_by("k").agg(n=dw.count(), state_ttl="1s"),
                                   lambda t: t.join(t, on=[("k", "k")], state_ttl=(None, "1s"))])
def test_a_state_ttl_is_refused_naming_the_node(spark, shape):
    """Which keys expired depends on when Darwin's watermark moved, which a batch job does not have."""
    with pytest.raises(UnsupportedError, match="plan node .* with state_ttl"):
        shape(bids()).collect(dw.Config(engine="spark"))


def test_every_way_of_running_goes_through_spark(spark, tmp_path):
    q = bids().window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count(), total=dw.sum("v"))
    expected = q.collect()
    config = dw.Config(engine="spark")
    assert_table_equal(q.collect(config), expected, sort=True)
    assert_table_equal(pa.Table.from_batches(list(q.iter_batches(config))), expected, sort=True)
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    written = pa.concat_tables([pq.read_table(f) for f in result.files])
    assert_table_equal(written, expected, sort=True)
    assert result.metrics["input_rows"] == 5


def test_an_updating_result_is_its_final_table(spark):
    q = bids().filter(col("v").is_not_null()).group_by("k").agg(n=dw.count(), top=dw.max("v"))
    on_spark = q.execute(dw.Config(engine="spark"))
    assert_table_equal(on_spark.table, q.collect(), sort=True)
    assert set(on_spark.changelog.column("op").to_pylist()) == {"+I"}


def test_float_floor_division_floors_as_python_does(spark):
    """Where floor(a / b) is wrong: a quotient that underflows (-5e-324 // 3 is -1.0), an infinite
    divisor (-5.0 // inf is -1.0), the sign of a zero, NaN and infinite dividends, huge quotients."""
    import math

    from engines import assert_three_engines_agree

    values = [-5e-324, 5e-324, -5.0, 7.5, -7.5, -0.0, 1e300, -(2.0**60), -0.3, math.inf, math.nan]  # -0.0 only: a key
    divisors = [3.0, -3.0, 0.1, -2.5, math.inf, -math.inf, 5e-324, 2.0**60]
    pairs = [(a, b) for a in values for b in divisors]
    t = dw.from_arrow(pa.table({"a": [a for a, _ in pairs], "b": [b for _, b in pairs]}), name="pairs")
    spark_result = assert_three_engines_agree(t.select("a", "b", q=col("a") // col("b")))
    got = {(r["a"] if r["a"] == r["a"] else "nan", r["b"]): r["q"] for r in spark_result.table.to_pylist()}
    assert got[-5e-324, 3.0] == -1.0 and got[-5.0, math.inf] == -1.0
    assert math.copysign(1.0, got[-0.0, 3.0]) == -1.0  # a zero quotient keeps the sign of a / b



def test_a_comparison_of_null_with_nan_is_null_on_spark(spark):
    """NULL = NaN is NULL, as every comparison with a NULL: Spark's translation answered the NaN rule
    first (false, != true), so NOT (a = b) kept rows Darwin's engines leave out."""
    import math

    from engines import assert_three_engines_agree

    floats = [None, math.nan, 1.0, -0.0]
    pairs = [(a, b) for a in floats for b in floats]
    t = dw.from_arrow(pa.table({"a": [a for a, _ in pairs], "b": [b for _, b in pairs],
                                "i": pa.array([None if a is None else 1 for a, _ in pairs], pa.int64())}),
                      name="pairs")
    ops = {"eq": col("a") == col("b"), "ne": col("a") != col("b"), "lt": col("a") < col("b"),
           "ge": col("a") >= col("b"), "ieq": col("i") == col("b"), "ine": col("i") != col("b")}
    on_spark = assert_three_engines_agree(t.select("a", "b", "i", **ops)).table.to_pylist()
    with_null = [r for r in on_spark if r["a"] is None or r["b"] is None]
    assert len(with_null) == 7 and all(r[op] is None for r in with_null for op in ops)
    assert all(r["ne"] is True for r in on_spark if r["b"] is not None and math.isnan(r["b"]) and r["a"] is not None)


def test_in_lists_with_columns_keep_three_valued_logic_on_spark(spark):
    """SQL's a IN (b, c, ...) with columns is a = b OR a = c ...: NULL where nothing matches beside a
    NULL, NaN equal to nothing, ints compared with floats in float64, strings by value."""
    import math

    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({
        "ts": pa.array(range(6), pa.timestamp("ms")), "a": [1, None, 3, 4, 2, 5], "b": [1, 2, None, 5, 7, 5],
        "f": [1.0, math.nan, 3.0, None, 2.0, math.nan], "s": ["x", "y", None, "z", "q", "x"],
        "s2": ["y", "y", "q", None, "q", "x"]}), time="ts", name="t")
    q = dw.sql("SELECT ts, a IN (b, f) AS i, a NOT IN (b + 1, f, -1) AS n, f IN (b, 2) AS fi, f NOT IN (f) AS nan, "
               "s IN (s2, 'z') AS si FROM t", tables={"t": t})
    got = [(r["i"], r["n"], r["fi"], r["nan"], r["si"])
           for r in sorted(assert_three_engines_agree(q).table.to_pylist(), key=lambda r: r["ts"])]
    assert got == [(True, False, True, False, False), (None, None, False, True, True), (True, False, None, False, None),
                   (None, None, None, None, True), (True, False, True, False, True), (True, True, False, True, True)]


def test_casts_to_int_smallint_and_tinyint_narrow_on_spark(spark):
    """CAST(x AS INT/SMALLINT/TINYINT): an integer keeps its low bits (Java's narrowing, as Flink and Spark
    cast), a float truncates toward zero and is NULL where that does not fit; int64 columns everywhere."""
    import math

    from engines import assert_three_engines_agree

    ints = [3_000_000_000, -(2**31) - 1, 40_000, 300, -129, 2**63 - 1, -(2**63), None]
    floats = [3e9, 2147483647.9, -2147483648.9, 123456.78, -128.5, math.nan, -math.inf, None]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(ints)), pa.timestamp("ms")), "a": ints, "f": floats}),
                      time="ts", name="t")
    casts = ", ".join(f"CAST(a AS {n}) AS a_{n}, CAST(f AS {n}) AS f_{n}" for n in ("INT", "SMALLINT", "TINYINT"))
    on_spark = assert_three_engines_agree(dw.sql(f"SELECT ts, {casts} FROM t", tables={"t": t})).table
    got = [tuple(r.values())[1:] for r in sorted(on_spark.to_pylist(), key=lambda r: r["ts"])]
    assert got == [(-1294967296, None, 24064, None, 0, None), (2147483647, 2147483647, -1, None, -1, None),
                   (40000, -2147483648, -25536, None, 64, None), (300, 123456, 300, None, 44, None),
                   (-129, -128, -129, -128, 127, -128), (-1, None, -1, None, -1, None), (0, None, 0, None, 0, None),
                   (None, None, None, None, None, None)]

def test_casts_to_and_from_strings_follow_flink_on_spark(spark):
    """Spark's own casts differ from Flink's (true, 9.999999999999999E22 on Java 17, ' 1 ' and '1e3' as integers,
    NULL where Flink's CAST fails): the translation spells Flink's rules out, and a CAST of text that does not
    parse fails the Spark job with the CastError the other engines raise."""
    import math

    from engines import assert_three_engines_agree

    from darwin.errors import CastError

    texts = [" 12 ", "1.9", "-.5", "\t1", "9223372036854775808", "1e3", "NaN", " 1.5d\n", "0x1p3", "inf", " TRUE",
             "Yes", "2015-7-5 1:2:3.4567", "2015-02-30", "2015-07-15T00:00:00", "", "12\n", None]
    floats = [1e23, 1e7, 9999999.0, 1e-3, 9.99e-4, -0.0, math.nan, -math.inf, 5e-324, 2.0**63, -1.4421123051581972e18,
              1.61304845894623136e17, 0.1, 123.456, 1.7976931348623157e308, 2.0**53 + 2, 100.0, None]
    n = len(texts)
    times = pa.array([0, -1, 1436918400123, 2**45] * 4 + [-5, None], pa.timestamp("ms"))
    t = dw.from_arrow(pa.table({"s": texts, "f": floats, "i": [2**63 - 1, -(2**63), 0, -5] * 4 + [1, None],
                                "b": [True, False, None] * 6, "at": times}), name="t")
    q = t.select("s", f=col("f").cast("string"), i=col("i").cast("string"), b=col("b").cast("string"),
                 at=col("at").cast("string"), n=col("s").try_cast("int64"), d=col("s").try_cast("float64"),
                 yes=col("s").try_cast("bool"), when=col("s").try_cast("timestamp"),
                 guarded=dw.when(col("s").try_cast("int64").is_null(), -1).otherwise(col("s").cast("int64")))
    on_spark = {r["s"]: r for r in assert_three_engines_agree(q).table.to_pylist()}
    assert len(on_spark) == n
    assert [on_spark[s]["f"] for s in texts[:3]] == ["1.0E23", "1.0E7", "9999999.0"]
    sql = dw.sql("SELECT s, TRY_CAST(s AS INT) AS a, TRY_CAST(s AS TINYINT) AS b, CAST(i AS VARCHAR(3)) AS c, "
                 "CAST(b AS CHAR(6)) AS d FROM t", tables={"t": t})
    assert_three_engines_agree(sql)
    with pytest.raises(CastError, match="'inf' to DOUBLE"):
        t.filter(col("s") == "inf").select(d=col("s").cast("float64")).collect(config=dw.Config(engine="spark"))


def _exact(v):
    import math

    return v if not isinstance(v, float) else "nan" if math.isnan(v) else repr(v)


def test_float_extremes_follow_the_same_total_order_on_spark(spark):
    """min/max of doubles as Java's Double.compare orders them, on every engine: NaN above every
    number, -0.0 below 0.0. Spark holds -0.0 equal to 0.0 (its extreme zero was the first seen) and
    the append-only fold kept a NaN seen first; windows, groups and OVER frames now all agree."""
    import itertools

    from engines import assert_three_engines_agree

    nan, inf = float("nan"), float("inf")
    groups = [[1.0, nan, 5.0], [0.0, -0.0], [-inf, nan], [nan, nan], [-0.0, -0.0, -1.0], [0.0, 2.0, -0.0]]
    rows = [(k, f) for k, values in enumerate(groups) for order in itertools.permutations(values) for f in order]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(rows)), pa.timestamp("ms")), "k": [k for k, _ in rows],
                                "f": [f for _, f in rows]}), time="ts", name="floats")
    want = {0: ("1.0", "nan"), 1: ("-0.0", "0.0"), 2: ("-inf", "nan"), 3: ("nan", "nan"), 4: ("-1.0", "-0.0"),
            5: ("-0.0", "2.0")}
    extremes = dict(lo=dw.min("f"), hi=dw.max("f"))
    for q in (t.window(dw.Tumble("1h", on="ts")).group_by("k").agg(**extremes).select("k", "lo", "hi"),
              t.group_by("k").agg(**extremes)):
        on_spark = assert_three_engines_agree(q).table
        assert {r["k"]: (_exact(r["lo"]), _exact(r["hi"])) for r in on_spark.to_pylist()} == want
    # an OVER frame: every row's answer is its frame's, the sign of a zero included
    over = t.with_columns(lo=dw.min("f").over(partition_by="k", order_by="ts", rows=(2, 0)),
                          hi=dw.max("f").over(partition_by="k", order_by="ts", rows=(2, 0)))
    compiled, on_spark = over.collect(), over.collect(dw.Config(engine="spark"))
    key = lambda r: r["ts"]  # noqa: E731
    assert [tuple(map(_exact, r.values())) for r in sorted(on_spark.to_pylist(), key=key)] == \
        [tuple(map(_exact, r.values())) for r in sorted(compiled.to_pylist(), key=key)]


def test_string_extremes_order_by_utf8_bytes_on_spark(spark):
    """min/max of strings as Flink (and Spark's UTF8String) order them, by their UTF-8 bytes: windows,
    groups, an updating input and OVER frames agree on every engine; codes of the compiled engine's
    string pool come in another order."""
    from engines import assert_three_engines_agree

    texts = ["\U0001F600", "b", "", "\uffff", None, "ab", "é", "a", "Z", "a\x00"]
    n = len(texts)
    t = dw.from_arrow(pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), "k": [i % 3 for i in range(n)],
                                "s": texts}), time="ts", name="texts")
    extremes = dict(lo=dw.min("s"), hi=dw.max("s"))
    latest = t.with_columns(id=col("k") * 10 + col("ts").dt.millisecond() % 2).group_by("id") \
        .agg(k=dw.max("k"), s=dw.min("s"))
    for q in (t.window(dw.Tumble("1h", on="ts")).group_by("k").agg(**extremes).select("k", "lo", "hi"),
              t.group_by("k").agg(**extremes), latest.group_by("k").agg(**extremes)):
        assert_three_engines_agree(q, batch_size=2)
    on_spark = assert_three_engines_agree(t.group_by("k").agg(**extremes)).table
    assert {r["k"]: (r["lo"], r["hi"]) for r in on_spark.to_pylist()} == \
        {0: ("a\x00", "\U0001F600"), 1: ("a", "b"), 2: ("", "ab")}
    over = t.with_columns(lo=dw.min("s").over(partition_by="k", order_by="ts", rows=(1, 0)))
    key = lambda r: r["ts"]  # noqa: E731
    assert sorted(over.collect(dw.Config(engine="spark")).to_pylist(), key=key) == \
        sorted(over.collect().to_pylist(), key=key)


def test_boolean_extremes_put_false_first_on_spark(spark):
    """min/max of booleans, FALSE before TRUE, as Flink and Spark order BOOLEAN: windows, groups, an
    updating input, sessions and OVER frames agree on every engine (refused before)."""
    from engines import assert_three_engines_agree

    values = [True, None, False, True, None, None, True, False, True]
    n = len(values)
    t = dw.from_arrow(pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), "k": [i % 3 for i in range(n)],
                                "b": values}), time="ts", name="flags")
    extremes = dict(lo=dw.min("b"), hi=dw.max("b"))
    latest = t.with_columns(id=col("k") * 10 + col("ts").dt.millisecond() % 2).group_by("id") \
        .agg(k=dw.max("k"), b=dw.min("b"))
    for q in (t.window(dw.Tumble("1h", on="ts")).group_by("k").agg(**extremes).select("k", "lo", "hi"),
              t.window(dw.Session("1h", on="ts")).group_by("k").agg(**extremes).select("k", "lo", "hi"),
              latest.group_by("k").agg(**extremes)):
        assert_three_engines_agree(q, batch_size=2)
    on_spark = assert_three_engines_agree(t.group_by("k").agg(**extremes)).table
    assert {r["k"]: (r["lo"], r["hi"]) for r in on_spark.to_pylist()} == \
        {0: (True, True), 1: (False, False), 2: (False, True)}
    over = t.with_columns(lo=dw.min("b").over(partition_by="k", order_by="ts", rows=(1, 0)),
                          hi=dw.max("b").over(partition_by="k", order_by="ts", rows=(1, 0)))
    key = lambda r: r["ts"]  # noqa: E731
    assert sorted(over.collect(dw.Config(engine="spark")).to_pylist(), key=key) == \
        sorted(over.collect().to_pylist(), key=key)


def test_an_integer_key_joins_a_float_key_as_a_double_on_spark(spark):
    """BIGINT = DOUBLE join keys compare as DOUBLE on every engine (2**53 + 1 meets 2**53.0, 0 meets -0.0,
    NaN meets nothing), regular and window joins, inner and outer."""
    from engines import assert_three_engines_agree

    i = dw.from_arrow(pa.table({"t": pa.array([0, 1, 2, 3, 4], pa.timestamp("ms")), "k": [1, 2**53 + 1, 0, None, 7],
                                "a": range(5)}), time="t", name="ints")
    f = dw.from_arrow(pa.table({"t": pa.array([0, 1, 2, 3, 4], pa.timestamp("ms")),
                                "f": [1.0, 2.0**53, -0.0, float("nan"), 2.5], "b": range(5)}), time="t", name="floats")
    for how in ("inner", "full"):
        on_spark = assert_three_engines_agree(i.join(f, on=[("k", "f")], how=how)).table
        assert sorted((r["a"], r["b"]) for r in on_spark.to_pylist() if None not in (r["a"], r["b"])) == \
            [(0, 0), (1, 1), (2, 2)]
    windowed = f.window(dw.Tumble("1h", on="t")).join(i.window(dw.Tumble("1h", on="t")), on=[("f", "k")])
    assert assert_three_engines_agree(windowed.select("a", "b")).table.num_rows == 3


def test_regular_expressions_are_javas_on_spark(spark):
    r"""Spark gets the pattern as written and Darwin's engines read it as Java does, so the three agree on Java's
    ASCII \w \d \s \p{Alpha} and (?i), its line ends for '.', '$' and \Z, \Q...\E and class intersections. Spark's
    pattern had (?dU) before it, for Python's Unicode classes and '\n'-only line ends, which Flink's Java has not."""
    from engines import assert_three_engines_agree

    words = ["café au lait", "straße 12", "price ٣٤ EUR", "plain ascii 42", "a\u00a0b c", "Ωmega OMEGA", "a\r",
             "a\u0085b", "q\r\nb", "x\u2028", "a.b*", None]
    t = dw.from_arrow(pa.table({"s": words}), name="words")
    s = col("s").str
    q = t.select("s", word=s.regexp_extract(r"(\w+)", 1), digits=s.regexp_extract(r"(\d+)", 1),
                 spaced=s.regexp_extract(r"(\S+)\s", 1), alpha=s.regexp_extract(r"\p{Alpha}+", 0),
                 folded=s.regexp_extract(r"(?i)(straSSe|ωMEGA|omega)", 1), last=s.regexp_extract("(.)$", 1),
                 dot=s.regexp_extract("a.b", 0), line=s.regexp_extract(r"(?m)(.)$", 1), end=s.regexp(r"a\Z"),
                 quoted=s.regexp_replace(r"\Qa.b*\E|[a-z&&[^aeiou]]", "_"))
    got = {r["s"]: r for r in assert_three_engines_agree(q).table.to_pylist()}
    assert (got["café au lait"]["word"], got["price ٣٤ EUR"]["digits"], got["a\u00a0b c"]["spaced"]) == \
        ("caf", None, "a\u00a0b")
    assert (got["Ωmega OMEGA"]["folded"], got["a\r"]["last"], got["q\r\nb"]["line"], got["a\u0085b"]["dot"]) == \
        ("OMEGA", "a", "q", None)
    assert got["a\r"]["end"] and got["a.b*"]["quoted"] == "_" and got["plain ascii 42"]["quoted"] == "__ai_ a__ii 42"


def test_darwins_reading_of_java_patterns_is_the_jvms(spark):
    """Darwin's translation against java.util.regex itself, in Spark's JVM: the first match and its groups, and
    REGEXP_REPLACE as Java's replaceAll (which searches on a character after an empty match)."""
    from darwin.plan.javaregex import java_regex
    from darwin.plan.strings import apply

    patterns = [r"|b", r"a*?", r"\w+", r"\p{Punct}+|\h", r"[a-z&&[^m-p]]+\v?", r"(?i)[^a[\d]]+", r"(.)$",
                r"(?m)^(\S)(.)$", r"\Qa.\E(?s:.)\Z", r"(?<w>\p{Alnum})\k<w>", r"(?i)(a)\1", r"[^\s\x{e9}]+?\z",
                r"\0101{2}+"]
    texts = ["", "ab\r\n", "Mé٣a\u00a0\t!", "a.\u2028", "AA aa", "x\rAé\u0085", "zz\n1\r\n"]
    jvm = spark.sparkContext._jvm.java.util.regex.Pattern
    for pattern in patterns:
        for text in texts:
            matcher = jvm.compile(pattern).matcher(text)
            java = [matcher.group(g) for g in range(matcher.groupCount() + 1)] if matcher.find() else None
            found = java_regex(pattern).search(text)
            assert (None if found is None else [found.group(0), *found.groups()]) == java, (pattern, text)
            assert apply("regexp_replace", (pattern, "<>"), text) == jvm.compile(pattern).matcher(text).replaceAll("<>")


def test_a_negative_regexp_group_is_null_on_spark(spark):
    """A group below 0 is NULL, as one past the pattern's groups (Flink's REGEXP_EXTRACT); Spark's
    regexp_extract fails the job for it."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"s": ["ab", "x", None]}), name="t")
    on_spark = assert_three_engines_agree(t.select("s", r=col("s").str.regexp_extract("(a)", -1))).table
    assert on_spark["r"].to_pylist() == [None, None, None]


def test_split_index_of_the_empty_string_or_past_an_int_is_null_on_spark(spark):
    """'' has no pieces (Flink's SPLIT_INDEX); Spark's split gives [''], so index 0 was ''. An index past
    Java's int is NULL too: Spark's get() wrapped 2**40 to 0 and gave the first piece."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"s": ["", ",", "a.b", None]}), name="t")
    q = t.select("s", first=col("s").str.split_index(",", 0), dotted=col("s").str.split_index(".", 1),
                 far=col("s").str.split_index(".", 2**40), farther=col("s").str.split_index(".", 2**70))
    got = {r["s"]: (r["first"], r["dotted"], r["far"], r["farther"])
           for r in assert_three_engines_agree(q).table.to_pylist()}
    assert got == {"": (None,) * 4, ",": ("", None, None, None), "a.b": ("a.b", "b", None, None), None: (None,) * 4}


def test_a_float_remainder_of_zero_takes_the_divisors_sign_on_spark(spark):
    """Python's float %: a zero remainder has the divisor's sign (2.0 % -2.0 is -0.0, -3.0 % 3.0 is
    0.0); Java's has the dividend's, which Spark gave."""
    from engines import assert_three_engines_agree

    pairs = [(2.0, -2.0), (4.0, -2.0), (0.0, -1.0), (-0.0, 1.0), (-3.0, 3.0), (-0.0, -1.0), (5.0, -float("inf")),
             (-7.5, 2.0), (7.5, -2.0), (1.0, 0.0)]
    t = dw.from_arrow(pa.table({"i": list(range(len(pairs))), "a": [a for a, _ in pairs], "b": [b for _, b in pairs]}),
                      name="pairs")
    on_spark = assert_three_engines_agree(t.select("i", m=col("a") % col("b"))).table
    got = {r["i"]: _exact(r["m"]) for r in on_spark.to_pylist()}
    assert got == {i: _exact(a % b) if b else None for i, (a, b) in enumerate(pairs)}


def test_strftime_years_before_0_and_after_9999_on_spark(spark):
    """%Y of the year 10000 is '10000' and %y of the year -1 is '99' (Python's -1 % 100), as Darwin's
    engines format them; Spark's patterns gave '+10000' and '01'."""
    from engines import assert_three_engines_agree

    ms = [253_402_300_800_000, -62_167_219_200_001, -300_000_000_000_000, 951_782_400_000, None]
    t = dw.from_arrow(pa.table({"t": pa.array(ms, pa.timestamp("ms"))}), name="t")
    on_spark = assert_three_engines_agree(t.select(s=col("t").dt.strftime("%Y/%y %m-%d %H"))).table
    assert sorted(on_spark.column("s").to_pylist(), key=str) == [
        "-0001/99 12-31 23", "-7537/63 05-18 18", "10000/00 01-01 00", "2000/00 02-29 00", None]


def test_column_names_differing_only_in_case_are_two_columns_on_spark(spark):
    """Darwin's names are case-sensitive: an aggregate named WINDOW_END kept its sum on Spark (it got the
    window's end, Spark's resolution being case-insensitive) and a column `A` beside `a` was ambiguous."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1, 2000], pa.timestamp("ms")), "a": [1, 2, 3], "A": [10, 20, 30]}),
                      time="ts", name="t")
    on_spark = assert_three_engines_agree(t.window(dw.Tumble("1s", on="ts")).group_by("a").agg(WINDOW_END=dw.sum("A")))
    assert sorted(on_spark.table.column("WINDOW_END").to_pylist()) == [10, 20, 30]


def test_a_column_name_with_a_dot_reaches_the_result_on_spark(spark):
    """The result's columns were selected by bare name, which Spark reads as a field path: a group key
    named 'auction.id' failed with UNRESOLVED_COLUMN."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1, 2000], pa.timestamp("ms")), "auction.id": [1, 1, 2]}),
                      time="ts", name="t")
    on_spark = assert_three_engines_agree(t.window(dw.Tumble("1s", on="ts")).group_by("auction.id").agg(n=dw.count()))
    assert sorted(on_spark.table.column("n").to_pylist()) == [1, 2]


def test_a_float_session_key_of_minus_zero_is_zero_on_spark(spark):
    """-0.0 and 0.0 are one group whose key is 0.0; the sessions of a key whose rows arrive out of time
    order are replayed per key in Python, which gave the first row's -0.0 as the key."""
    import math

    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array([1000, 0, 500, 3000, 2000], pa.timestamp("ms")),
                                "f": [-0.0, 0.0, -0.0, -0.0, 1.0]}), time="ts", max_delay="5s", name="t")
    q = t.window(dw.Session("600ms", on="ts")).group_by("f").agg(n=dw.count())
    on_spark = assert_three_engines_agree(q).table.to_pylist()
    assert sorted((math.copysign(1.0, r["f"]), r["f"], r["n"]) for r in on_spark) == [
        (1.0, 0.0, 1), (1.0, 0.0, 3), (1.0, 1.0, 1)]


def test_strftime_fields_side_by_side_stay_apart_on_spark(spark):
    """'%m%m' is the month twice and '%y%y' the short year twice; as one Spark pattern the letters ran
    together ('MMMM' is the month's name, 'yyyy' the whole year)."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"t": pa.array([1_700_000_123_456, None], pa.timestamp("ms"))}), name="t")
    on_spark = assert_three_engines_agree(t.select(s=col("t").dt.strftime("%m%m|%y%y|%Y%m%d%H%M%S"))).table
    assert sorted(on_spark.column("s").to_pylist(), key=str) == ["1111|2323|20231114221523", None]


def test_flink_string_functions_on_spark(spark):
    """Where Spark's own functions differ from Flink's, the translation spells Flink's out: SUBSTRING before
    the first character ('') and with a negative length (NULL), LPAD with an empty pad (NULL), LOCATE from
    below 1, REPLACE of '', INITCAP's ASCII words, LIKE's backslash without ESCAPE (a character), CONCAT of
    columns (NULL with a NULL) and CONCAT_WS (NULLs skipped)."""
    from engines import assert_three_engines_agree

    s, u = col("s"), col("u")
    t = dw.from_arrow(pa.table({"s": ["abc", "", "a\\%b", "héllo wörld-x", "a\nb", None],
                                "u": ["x", None, "", "y", "z", "w"]}), name="t")
    q = t.select("s", before=s.str.substring(-5, 3), neg=s.str.substring(2, -1), mid=s.str.substring(2, 2),
                 lp=s.str.lpad(4, ""), rp=s.str.rpad(5, "é!"), loc=s.str.locate("b", -3), rep=s.str.replace("", "$\\"),
                 cap=s.str.initcap(), like=s.str.like("a\\%b"), esc=s.str.like("a\\\\!%_", "!"),
                 any=s.str.like("a_b"), trim=s.str.trim("ac"), cat=dw.concat(s, "-", u), ws=dw.concat_ws("+", s, u),
                 ends=s.str.ends_with("c"), grow=s.str.replace("b", "bb"))
    got = {r["s"]: r for r in assert_three_engines_agree(q).table.to_pylist()}
    assert (got["abc"]["before"], got["abc"]["neg"], got["abc"]["lp"], got["abc"]["loc"]) == ("", None, None, 2)
    assert got["abc"]["rep"] == "$\\a$\\b$\\c$\\" and got["héllo wörld-x"]["cap"] == "HéLlo WöRld-X"
    assert got["a\\%b"]["like"] and got["a\nb"]["any"] and got[None]["ws"] == "w" and got[""]["cat"] is None


def test_over_aggregates_inside_expressions_on_spark(spark):
    """SQL's v - AVG(v) OVER (...): the aggregates in hidden columns, then the expressions, on three engines."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1, 2, 3, 4], pa.timestamp("ms")), "k": [1, 1, 2, 1, 2],
                                "v": [10, 30, 20, None, 40]}), time="ts", name="t")
    q = dw.sql("SELECT ts, v - AVG(v) OVER w AS d, CASE WHEN SUM(v) OVER w > 25 THEN 'big' END AS b FROM t "
               "WINDOW w AS (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING)", tables={"t": t})
    got = sorted((r["ts"], r["d"], r["b"]) for r in assert_three_engines_agree(q).table.to_pylist())
    assert [(d, b) for _, d, b in got] == [(0.0, None), (10.0, "big"), (0.0, None), (None, "big"), (10.0, "big")]


def test_ilike_and_similar_to_on_spark(spark):
    """Spark has no SIMILAR TO: its translation runs the regular expression Darwin makes of Flink's pattern, which
    Java reads as Python does (_ and . no line end, % any run, [:DIGIT:] ASCII, $ and \\ characters, ESCAPE).
    ILIKE is Spark's (LIKE in lower case), its escape read before the case changes."""
    from engines import assert_three_engines_agree

    s = col("s")
    t = dw.from_arrow(pa.table({"s": ["abab", "ab", "a\nb", "A.b", "12\u0663", "123", "a$\\", "a%", "ÉTÉ", "", None]}),
                      name="t")
    q = t.select("s", two=s.str.similar_to("(ab){2}|[[:DIGIT:]]{3}"), dot=s.str.similar_to("a.b|a_b"),
                 any=s.str.similar_to("a%"), sym=s.str.similar_to("a$\\"), esc=s.str.similar_to("a!%", "!"),
                 alt=s.str.similar_to("[^0-9]+|"), ci=s.str.ilike("é%"), ci_esc=s.str.ilike("aA%", "A"))
    got = {r["s"]: r for r in assert_three_engines_agree(q).table.to_pylist()}
    assert [k for k in got if got[k]["two"]] == ["abab", "123"]
    assert not got["a\nb"]["dot"] and got["A.b"]["any"] is False and got["a$\\"]["sym"] and got["a%"]["esc"]
    assert got[""]["alt"] and not got["12\u0663"]["alt"] and got["ÉTÉ"]["ci"]
    assert got["a%"]["ci_esc"] and not got["abab"]["ci_esc"]
    assert got[None]["two"] is None


@pytest.mark.parametrize("how", ["inner", "left", "right", "full"])
def test_a_join_of_updating_results_is_the_join_of_their_final_tables_on_spark(spark, how):
    """A regular join over aggregations (and a top-N): Spark's batch job joins their final tables,
    which is what the streaming engines' retractions fold to."""
    from engines import assert_three_engines_agree

    t = bids()
    totals = t.group_by("k").agg(total=dw.sum("v"), n=dw.count())
    tops = t.top_n(1, by="k", order=[dw.desc("v")]).select("k", high="v", at="ts")
    per_count = t.group_by("k").agg(n=dw.count()).group_by("n").agg(keys=dw.count())
    q = totals.join(tops, on=[("k", "k")], how=how, where=col("total") > col("high") + 1)
    assert_three_engines_agree(q.join(per_count, on=[("n", "n")], how=how), batch_size=1)


def test_a_union_of_updating_results_is_the_union_of_their_final_tables_on_spark(spark):
    """A union of changelogs (an aggregation's, a top-N's, a source's rows), and an aggregation over it."""
    from engines import assert_three_engines_agree

    t = bids()
    totals = t.group_by("k").agg(x=dw.sum("v"))
    tops = t.top_n(1, by="k", order=[dw.desc("v")]).select("k", x="v")
    q = totals.union(tops, t.select("k", x="v"))
    assert_three_engines_agree(q, batch_size=1)
    assert_three_engines_agree(q.group_by("k").agg(n=dw.count(), high=dw.max("x")), batch_size=1)


def test_iso_weeks_days_of_the_year_and_quarters_on_spark(spark):
    """DAYOFYEAR, QUARTER, WEEK (ISO 8601) and DAYOFMONTH give on Spark what the other engines give, years before
    1970 and around new year included."""
    from engines import assert_three_engines_agree

    ms = [1_609_459_200_000, 1_609_718_399_999, 1_735_516_800_000, -1, -62_135_596_800_000, 1_456_704_000_000, None]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(ms)), pa.timestamp("ms")),
                                "t": pa.array(ms, pa.timestamp("ms"))}), time="ts", name="t")
    query = dw.sql("SELECT ts, DAYOFYEAR(t) AS doy, QUARTER(t) AS q, WEEK(t) AS w, DAYOFMONTH(t) AS d FROM t",
                   tables={"t": t})
    on_spark = assert_three_engines_agree(query).table
    got = [tuple(r.values())[1:] for r in sorted(on_spark.to_pylist(), key=lambda r: r["ts"])]
    assert got == [(1, 1, 53, 1), (3, 1, 53, 3), (365, 4, 1, 30), (365, 4, 1, 31), (1, 1, 1, 1), (60, 1, 9, 29),
                   (None, None, None, None)]


def test_to_timestamp_unix_timestamp_and_to_timestamp_ltz_follow_flink_on_spark(spark):
    """Spark's own to_timestamp/unix_timestamp read other patterns, have no Timestamp.valueOf fallback, do not roll
    fields over and give NULL where Flink's UNIX_TIMESTAMP gives Long.MIN_VALUE: the translation reads the fields
    with the other engines' regular expressions and spells the arithmetic out."""
    import math

    from engines import assert_three_engines_agree

    texts = ["2020-01-02 03:04:05", "2020-1-2", "02/01/2020 7:8:9.500", "2020-02-30 00:00:00", " 2020-01-02 ", "bad",
             None, "2020-01-02 24:00:00", "2020-13-45 25:61:61 and more", "1969-12-31 23:59:59", "20200102",
             "15-12-31T24", "0001-01-01 00:00:00", "123456789-01-01 00:00:00"]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(texts)), pa.timestamp("ms")), "s": texts,
                                "n": [1_600_000_000, -62_167_219_201, None, 253_402_300_799, 0, -1] * 2 + [1, 2],
                                "f": [1.5e12, math.nan, None, -0.5, math.inf, 1.6e9] * 2 + [-1.5, 2.5]}),
                      time="ts", name="t")
    query = dw.sql("SELECT ts, TO_TIMESTAMP(s) AS a, TO_TIMESTAMP(s, 'dd/MM/yyyy H:m:s.SSS') AS b, "
                   "TO_TIMESTAMP(s, 'yyyy-MM-dd HH:mm:ss') AS c, TO_TIMESTAMP(s, 'yy-MM-dd''T''HH') AS d, "
                   "UNIX_TIMESTAMP(s) AS e, UNIX_TIMESTAMP(s, 'yyyyMMdd') AS f, FROM_UNIXTIME(n, 'yyyy/MM/dd') AS g, "
                   "TO_TIMESTAMP_LTZ(n, 0) AS h, TO_TIMESTAMP_LTZ(f, 3) AS i, TO_TIMESTAMP_LTZ(f, 0) AS j FROM t",
                   tables={"t": t})
    on_spark = assert_three_engines_agree(query).table
    millis = pa.table([c.cast(pa.int64()) if pa.types.is_timestamp(c.type) else c for c in on_spark.columns],
                      names=on_spark.column_names)  # year 0 is past Python's datetime
    got = {r["ts"]: r for r in millis.to_pylist()}

    def ms(*fields):
        return int((datetime(*fields) - datetime(1970, 1, 1)).total_seconds() * 1000)

    assert got[2]["b"] == ms(2020, 1, 2, 7, 8, 9, 500_000) and got[3]["c"] == ms(2020, 2, 29)
    assert got[8]["e"] == 1613354521 and got[5]["e"] == -(2**63) and got[10]["f"] == 1577923200
    assert got[11]["d"] == ms(2016, 1, 1) and got[7]["c"] == ms(2020, 1, 3) and got[12]["c"] == -62135596800000
    assert got[1]["i"] == 0 and got[1]["j"] is None and got[7]["h"] is None


def test_computed_group_keys_of_windowed_aggregations_on_spark(spark):
    """LOWER(name) beside a window in GROUP BY is computed below the window, so Spark's translation runs it as it
    runs any projection under a window."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1000, 2000, 11000, 12000, 25000], pa.timestamp("ms")),
                                "name": ["A", "a", "b", "A", None, "a"], "v": [1, 2, 3, 4, 5, 6]}), time="ts", name="t")
    tables = {"t": t}
    tumble = dw.sql("SELECT window_start, LOWER(name) AS ln, COUNT(*) AS n, SUM(v) AS s FROM TABLE(TUMBLE(TABLE t, "
                    "DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY window_start, window_end, LOWER(name)", tables)
    got = assert_three_engines_agree(tumble).table.to_pylist()
    assert sorted((r["window_start"].second, r["ln"] or "", r["n"], r["s"]) for r in got) == [
        (0, "a", 2, 3), (0, "b", 1, 3), (10, "", 1, 5), (10, "a", 1, 4), (20, "a", 1, 6)]
    assert_three_engines_agree(dw.sql("SELECT TUMBLE_END(ts, INTERVAL '10' SECOND) AS w, v % 2 AS p, COUNT(*) AS n "
                                      "FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), v % 2", tables))


def test_floor_and_ceil_of_timestamps_to_units_on_spark(spark):
    """FLOOR/CEIL(ts TO unit) give on Spark what the other engines give: the week from Sunday (Spark's date_trunc
    starts it on Monday), the month, quarter and year by date_trunc, times before 1970 floored."""
    from engines import assert_three_engines_agree

    ms = [1_614_384_000_000, 1_519_938_001_000, -500, -26_000_000_000, 1_709_251_199_999, None]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(ms)), pa.timestamp("ms")),
                                "t": pa.array(ms, pa.timestamp("ms"))}), time="ts", name="t")
    units = ["SECOND", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"]
    calls = ", ".join(f"{f}(t TO {unit}) AS {f}_{unit}" for unit in units for f in ("FLOOR", "CEIL"))
    query = dw.sql(f"SELECT ts, {calls} FROM t", tables={"t": t})
    on_spark = assert_three_engines_agree(query).table
    week = [r["FLOOR_WEEK"] for r in sorted(on_spark.to_pylist(), key=lambda r: r["ts"])]
    assert week[:3] == [datetime(2021, 2, 21), datetime(2018, 2, 25), datetime(1969, 12, 28)]


def test_numeric_functions_on_spark(spark):
    """ROUND, FLOOR, CEIL, SIGN, POWER, SQRT and the logarithms give on Spark what the other engines give, to the
    bit: Spark's round is Flink's HALF_UP of the number as Java writes it, its floor and ceil (a BIGINT there,
    whose zero has no sign: CEIL(-0.5) is -0.0) and logarithms (NULL at and below 0 there) are spelled out as
    Java's Math."""
    from engines import assert_three_engines_agree

    x = [2.675, -2.5, 0.0, -1.0, 1e300, 178942.51050890994, float("nan"), None, -0.0, -0.5, 0.5, -0.99,
         # where Spark's StrictMath differs from C's in the last bit: EXP, LN, LOG10 and POWER(x, 2.5) of these
         2.268075, 11.954004, 1.667921, 6.647906,
         # Java 17 writes these as their longs (182043037459735648), not the shortest decimal: ROUND(x, -2) differs
         1.8204303745973565e17, -4.238860640356445e16]
    n = [125, -125, 9_223_372_036_854_775_807, 0, -7, 3, 1, None, 0, -1, 2, 15, 4, 5, 6, 7, 8, 9]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(x)), pa.timestamp("ms")), "x": x, "n": n}), time="ts",
                      name="t")
    query = dw.sql("SELECT ts, ROUND(x, 2) AS r, ROUND(x, 10) AS r10, ROUND(x, -2) AS rm2, ROUND(n, -1) AS rn, "
                   "FLOOR(x) AS f, "
                   "CEIL(x) AS c, SIGN(x) AS s, SIGN(n) AS sn, POWER(x, 2.5) AS p, POWER(n, x) AS pn, SQRT(x) AS q, "
                   "LN(x) AS l, EXP(x) AS e, LOG10(x) AS l10, LOG(2, x) AS l2, LOG(1, x) AS l1, LOG(n, x) AS ln, "
                   "TRUNCATE(x, 2) AS t2, TRUNCATE(x, -2) AS tm2, TRUNCATE(x) AS t0, TRUNCATE(n, -1) AS tn, "
                   "TRUNCATE(n, -19) AS tn19 FROM t", tables={"t": t})
    on_spark = assert_three_engines_agree(query, exact=True).table
    first = min(on_spark.to_pylist(), key=lambda r: r["ts"])
    assert (first["r"], first["rn"], first["f"], first["c"]) == (2.68, 130, 2.0, 3.0)
    assert (first["t2"], first["tn"]) == (2.67, 120)
    # an outer join's condition, where Spark runs no Python UDF: Spark's own functions
    small = t.filter(col("n") > 4).select(k=col("n") % 2, y="x")
    assert_three_engines_agree(t.join(small, on=[("n", "k")], how="left", where=col("x").pow(col("y")).ln() > 1))


def test_greatest_and_least_on_spark(spark):
    """GREATEST and LEAST give on Spark what the other engines give (built from comparisons and when): NULL where any
    argument is (Spark's skip NULLs), NaN the greatest number, -0.0 below 0.0, a BIGINT beside a DOUBLE as a DOUBLE."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array(range(5), pa.timestamp("ms")), "a": [1, 5, None, -3, 0],
                                "b": [2.5, float("nan"), 1.0, -0.0, 0.0], "c": [0.0, 2.0, 3.0, 0.0, -0.0]}),
                      time="ts", name="t")
    query = dw.sql("SELECT ts, GREATEST(a, b, c) AS g, LEAST(a, b, c) AS l, GREATEST(b, c) AS gf, LEAST(c, b) AS lf, "
                   "GREATEST(ts, ts) AS gt FROM t", tables={"t": t})
    got = sorted(assert_three_engines_agree(query).table.to_pylist(), key=lambda r: r["ts"])
    assert [(r["g"], r["l"]) for r in got][2:] == [(None, None), (0.0, -3.0), (0.0, -0.0)]
    assert str(got[3]["lf"]) == "-0.0" and str(got[4]["gf"]) == "0.0" and str(got[1]["g"]) == "nan"


def test_strings_ordered_on_spark(spark):
    """<, <=, >, >=, BETWEEN, GREATEST/LEAST and CASE order strings on Spark as on the other engines: by UTF-8 bytes
    (Spark's UTF8String.binaryCompare, Flink's BinaryStringData.compareTo), so '😀' is above U+FFFF (UTF-16 units
    would put it below), a prefix first, '' the least, NULL gives NULL."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array(range(7), pa.timestamp("ms")),
                                "s": ["2024-01-01", "😀", "", None, "ab", "é", "Z"],
                                "u": ["2023-12-31", "\uffff", "", "x", "a", None, "a"]}), time="ts", name="t")
    query = dw.sql("SELECT ts, s < u AS lt, s >= u AS ge, s > '2024' AS late, 'b' <= s AS b, "
                   "s BETWEEN 'a' AND u AS btw, GREATEST(s, u) AS g, LEAST(s, u, 'b') AS l, "
                   "CASE WHEN s < u THEN s ELSE u END AS c FROM t WHERE s IS NULL OR s <> 'zz'", tables={"t": t})
    got = sorted(assert_three_engines_agree(query).table.to_pylist(), key=lambda r: r["ts"])
    assert [(r["lt"], r["g"]) for r in got] == [
        (False, "2024-01-01"), (False, "😀"), (False, ""), (None, None), (False, "ab"), (None, None), (True, "a")]


def test_booleans_ordered_on_spark(spark):
    """<, <=, >, >=, BETWEEN and CASE order booleans on Spark as on the other engines: FALSE first, NULL gives NULL."""
    from engines import assert_three_engines_agree

    pairs = [(a, b) for a in (True, False, None) for b in (True, False, None)]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(pairs)), pa.timestamp("ms")), "b": [a for a, _ in pairs],
                                "c": [b for _, b in pairs]}), time="ts", name="t")
    query = dw.sql("SELECT ts, b < c AS lt, b >= c AS ge, b > FALSE AS t, TRUE <= b AS tt, "
                   "b BETWEEN FALSE AND c AS btw, CASE WHEN b > c THEN 'gt' ELSE 'no' END AS gt FROM t "
                   "WHERE b IS NULL OR b <= TRUE", tables={"t": t})
    got = sorted(assert_three_engines_agree(query).table.to_pylist(), key=lambda r: r["ts"])
    assert [(r["lt"], r["ge"]) for r in got] == [
        (None if a is None or b is None else a < b, None if a is None or b is None else a >= b) for a, b in pairs]


def test_regexp_replace_and_regexp_on_spark(spark):
    """REGEXP_REPLACE takes its replacement as written on Spark too (Spark's reads $1 as a group and a backslash as an
    escape; Flink quotes them), replaces empty matches between characters, and REGEXP never matches ''."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array(range(6), pa.timestamp("ms")),
                                "s": ["foobar", "abc", "", None, "a.b.c", "x1y22"]}), time="ts", name="t")
    query = dw.sql(r"SELECT ts, s, REGEXP_REPLACE(s, 'oo|ar', '') AS r, REGEXP_REPLACE(s, 'b*', '-') AS e, "
                   r"REGEXP_REPLACE(s, '(\d+)', '<$1\>') AS g, REGEXP(s, 'b.') AS m, REGEXP(s, '') AS n FROM t",
                   tables={"t": t})
    got = {r["s"]: r for r in assert_three_engines_agree(query).table.to_pylist()}
    assert (got["x1y22"]["g"], got["abc"]["e"], got["foobar"]["r"]) == ("x<$1\\>y<$1\\>", "-a--c-", "fb")
    assert got["abc"]["m"] and got["abc"]["n"] is False and got[None]["m"] is None


def test_left_right_repeat_and_reverse_on_spark(spark):
    """LEFT, RIGHT (from SUBSTRING and CHAR_LENGTH), REPEAT and REVERSE count code points on Spark too, and give ''
    for a length or count below 1."""
    from engines import assert_three_engines_agree

    t = dw.from_arrow(pa.table({"ts": pa.array(range(5), pa.timestamp("ms")), "s": ["héllo", "ab", "", None, "x😀y"]}),
                      time="ts", name="t")
    query = dw.sql("SELECT ts, s, LEFT(s, 2) AS l, LEFT(s, -1) AS ln, RIGHT(s, 2) AS r, RIGHT(s, 9) AS r9, "
                   "REPEAT(s, 2) AS p, REPEAT(s, -1) AS pn, REVERSE(s) AS v FROM t", tables={"t": t})
    got = {r["s"]: r for r in assert_three_engines_agree(query).table.to_pylist()}
    assert (got["x😀y"]["r"], got["x😀y"]["v"], got["ab"]["r9"], got["ab"]["pn"]) == ("😀y", "y😀x", "ab", "")


def test_timestampdiff_on_spark(spark):
    """TIMESTAMPDIFF on Spark is what the other engines give: fixed units truncated toward zero, calendar months as
    Calcite counts them (by Spark's add_months, which cuts the day to the month's last as Calcite's does)."""
    from engines import assert_three_engines_agree

    a = [datetime(2016, 1, 31), datetime(2016, 3, 31, 12), datetime(1969, 12, 31, 23, 59, 59), None,
         datetime(2016, 2, 29, 10), datetime(1900, 3, 1)]
    b = [datetime(2016, 2, 29), datetime(2016, 2, 29, 11), datetime(1970, 1, 1), datetime(2000, 1, 1),
         datetime(2017, 2, 28, 9), datetime(2100, 2, 28, 23)]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(a)), pa.timestamp("ms")), "a": pa.array(a, pa.timestamp("ms")),
                                "b": pa.array(b, pa.timestamp("ms"))}), name="t")
    query = dw.sql("SELECT ts, TIMESTAMPDIFF(DAY, a, b) AS d, TIMESTAMPDIFF(SECOND, b, a) AS s, "
                   "TIMESTAMPDIFF(MONTH, a, b) AS m, TIMESTAMPDIFF(MONTH, b, a) AS mb, TIMESTAMPDIFF(YEAR, a, b) AS y, "
                   "TIMESTAMPDIFF(QUARTER, b, a) AS q FROM t", tables={"t": t})
    got = sorted(assert_three_engines_agree(query).table.to_pylist(), key=lambda r: r["ts"])
    assert [(r["m"], r["mb"]) for r in got] == [(1, -1), (-2, 1), (0, 0), (None, None), (11, -12), (2399, -2399)]


def test_intervals_of_months_and_timestampadd_of_months_on_spark(spark):
    """ts + INTERVAL 'n' MONTH / YEAR and TIMESTAMPADD of MONTH, QUARTER, YEAR on Spark: the day cut to the month's
    last, the time of day kept, before 1970 too."""
    from engines import assert_three_engines_agree

    a = [datetime(2016, 1, 31, 10, 30), datetime(2016, 2, 29), datetime(1969, 12, 31, 23, 59, 59), None,
         datetime(1900, 3, 31, 1)]
    t = dw.from_arrow(pa.table({"ts": pa.array(range(len(a)), pa.timestamp("ms")), "a": pa.array(a, pa.timestamp("ms")),
                                "n": [1, 12, -2, 3, None]}), name="t")
    query = dw.sql("SELECT ts, a + INTERVAL '1' MONTH AS m, a - INTERVAL '1' YEAR AS y, TIMESTAMPADD(MONTH, n, a) AS "
                   "n1, TIMESTAMPADD(QUARTER, -1, a) AS q FROM t", tables={"t": t})
    got = sorted(assert_three_engines_agree(query).table.to_pylist(), key=lambda r: r["ts"])
    assert [r["m"] for r in got] == [datetime(2016, 2, 29, 10, 30), datetime(2016, 3, 29),
                                     datetime(1970, 1, 31, 23, 59, 59), None, datetime(1900, 4, 30, 1)]
