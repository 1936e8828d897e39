"""SQL translated to Darwin plans, checked on small in-memory tables against plain Python, and the
errors that name the line and column of what cannot be planned."""

from datetime import datetime, timedelta

import pyarrow as pa
import pytest

import darwin as dw
from darwin.errors import SqlError
from darwin.plan import nodes as pn

EPOCH = datetime(1970, 1, 1)


def ts(ms):
    return pa.array(ms, pa.timestamp("ms"))


@pytest.fixture
def bids():
    return dw.from_arrow(pa.table({
        "ts": ts([0, 1_000, 2_000, 11_000, 12_000, 25_000]),
        "auction": [1, 1, 2, 1, 2, 2],
        "bidder": [7, 8, 7, 7, 8, 9],
        "price": [10, 30, 20, 5, 40, 15],
        "url": ["a/b/c", "a/x/y", "q", "a/b/c", "https://h/d1/d2", "z"],
    }), time="ts", name="bids")


@pytest.fixture
def auctions():
    return dw.from_arrow(pa.table({"ts": ts([0, 0]), "id": [1, 2], "category": [10, 20]}), time="ts",
                         name="auctions")


def run(text, **tables):
    return dw.sql(text, tables=tables).collect()


def sorted_rows(table):
    return sorted(tuple(r.values()) for r in table.to_pylist())


def test_select_where_expressions(bids):
    out = run("SELECT auction, price * 2 AS p2, price / 4 AS q, CASE WHEN price > 15 THEN 'hi' ELSE 'lo' END AS c "
              "FROM bids WHERE bidder IN (7, 8) AND NOT price = 5", bids=bids)
    assert out.column_names == ["auction", "p2", "q", "c"]
    assert sorted_rows(out) == sorted([(1, 20, 2, "lo"), (1, 60, 7, "hi"), (2, 40, 5, "hi"), (2, 80, 10, "hi")])


def test_tumble_table_function_aggregates_per_window(bids):
    out = run("SELECT window_start, auction, count(*) AS n, max(price) AS top FROM TABLE(TUMBLE(TABLE bids, "
              "DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end", bids=bids)
    rows = sorted((r["window_start"] - EPOCH, r["auction"], r["n"], r["top"]) for r in out.to_pylist())
    assert rows == [(timedelta(0), 1, 2, 30), (timedelta(0), 2, 1, 20), (timedelta(seconds=10), 1, 1, 5),
                    (timedelta(seconds=10), 2, 1, 40), (timedelta(seconds=20), 2, 1, 15)]


def test_group_by_expression_with_filtered_and_distinct_counts(bids):
    out = run("SELECT auction % 2 AS parity, count(*) FILTER (WHERE price >= 20) AS big, "
              "count(DISTINCT bidder) AS bidders, sum(price) AS total FROM bids GROUP BY auction % 2 "
              "HAVING sum(price) > 0", bids=bids)
    assert sorted_rows(out) == [(0, 2, 3, 75), (1, 1, 2, 45)]


def test_regular_join_takes_equalities_from_where(bids, auctions):
    out = run("SELECT B.price, A.category FROM bids B, auctions A WHERE B.auction = A.id AND A.category = 10",
              bids=bids, auctions=auctions)
    assert sorted_rows(out) == [(5, 10), (10, 10), (30, 10)]


def test_interval_join_between_on_time_columns_is_an_interval_join(bids, auctions):
    table = dw.sql("SELECT B.price FROM auctions A JOIN bids B ON A.id = B.auction "
                   "AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '5' SECOND", tables={"bids": bids, "auctions": auctions})
    joins = [n for n in pn.walk(table.plan) if isinstance(n, pn.Join)]
    assert len(joins) == 1 and joins[0].where is not None
    assert sorted_rows(table.collect()) == [(10,), (20,), (30,)]


@pytest.mark.parametrize(("bound", "prices"), [  # bids of auction 1 at 0 s (10) and 1 s (30), auction 2 at 2 s (20)
    ("B.ts BETWEEN A.ts - INTERVAL '1' SECOND AND A.ts + INTERVAL '5' SECOND", [10, 20, 30]),
    ("B.ts BETWEEN A.ts AND A.ts + INTERVAL '1' SECOND * 2", [10, 20, 30]),
    ("A.ts <= B.ts AND B.ts < A.ts + 2 * INTERVAL '1' SECOND", [10, 30]),
    ("B.ts >= A.ts AND A.ts + INTERVAL '5' MINUTE - INTERVAL '299' SECOND > B.ts", [10]),
    ("A.ts > B.ts - INTERVAL '1' SECOND AND B.ts >= A.ts", [10]),
    ("CAST(A.ts AS TIMESTAMP(3)) <= B.ts AND B.ts <= A.ts + INTERVAL '5' SECOND", [10, 20, 30]),
    ("B.ts - A.ts BETWEEN 1000 AND 5000", [20, 30]),
    ("A.ts = B.ts", [10]),
])
def test_a_condition_bounding_the_times_from_both_sides_is_an_interval_join(bids, auctions, bound, prices):
    """Flink's interval join conditions, constants written any way and times on either side, are
    interval joins (rows freed as the watermarks pass), not regular joins keeping every row."""
    table = dw.sql(f"SELECT B.price FROM auctions A JOIN bids B ON A.id = B.auction AND {bound}",
                   tables={"bids": bids, "auctions": auctions})
    assert " interval on " in table.explain()
    assert sorted_rows(table.collect()) == [(p,) for p in prices]


@pytest.fixture
def nullable_sides():
    a = dw.from_arrow(pa.table({"k": [1, 1, 2, 2], "x": pa.array([5, None, None, 6], pa.int64()),
                                "v": [1, 2, 3, 4]}), name="a")
    b = dw.from_arrow(pa.table({"k": [1, 1, 2, 3], "x": pa.array([None, 5, 6, None], pa.int64()),
                                "w": [10, 20, 30, 40]}), name="b")
    return a, b


NULL_SAFE_SPELLINGS = [
    "a.x IS NOT DISTINCT FROM b.x",
    "b.x IS NOT DISTINCT FROM a.x",
    "NOT (a.x IS DISTINCT FROM b.x)",
    "(a.x = b.x OR (a.x IS NULL AND b.x IS NULL))",
    "(b.x IS NULL AND a.x IS NULL OR b.x = a.x)",
]


@pytest.mark.parametrize("spelling", NULL_SAFE_SPELLINGS)
@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_is_not_distinct_from_is_a_join_key_whose_nulls_match(nullable_sides, spelling, mode):
    """Flink (Calcite) plans IS NOT DISTINCT FROM, and a = b OR (a IS NULL AND b IS NULL), as an
    equi-join key whose NULLs match each other. Both were refused as the only key ('IS NOT DISTINCT
    FROM as a join key ... is not supported yet', 'a join needs an equality'); beside another key
    they were a condition on the pairs. Alone, beside an equality, and in an outer join."""
    a, b = nullable_sides
    config = dw.Config(mode=mode)
    alone = dw.sql(f"SELECT a.v, b.w FROM a JOIN b ON {spelling}", tables={"a": a, "b": b})
    assert "<=>" in alone.explain()
    assert sorted_rows(alone.collect(config)) == [(1, 20), (2, 10), (2, 40), (3, 10), (3, 40), (4, 30)]
    keyed = dw.sql(f"SELECT a.v, b.w FROM a JOIN b ON a.k = b.k AND {spelling}", tables={"a": a, "b": b})
    assert "col('k') = col('k'), col('x') <=> col('x')" in keyed.explain()
    assert sorted_rows(keyed.collect(config)) == [(1, 20), (2, 10), (4, 30)]
    full = dw.sql(f"SELECT a.v, b.w FROM a FULL JOIN b ON {spelling} AND b.k = a.k", tables={"a": a, "b": b})
    assert sorted((tuple(r.values()) for r in full.collect(config).to_pylist()), key=str) == sorted(
        [(1, 20), (2, 10), (3, None), (4, 30), (None, 40)], key=str)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_null_safe_keys_of_lookup_and_window_joins(nullable_sides, mode):
    """FOR SYSTEM_TIME AS OF and a window join over TUMBLE take the null-safe key too."""
    a, b = nullable_sides
    t = ts([0, 1, 2, 3])
    stream = dw.from_arrow(pa.table({"ts": t, "x": pa.array([5, None, None, 6], pa.int64()), "v": [1, 2, 3, 4]}),
                           time="ts", name="s")
    other = dw.from_arrow(pa.table({"ts": t, "x": pa.array([None, 5, 6, None], pa.int64()), "w": [10, 20, 30, 40]}),
                          time="ts", name="o")
    config = dw.Config(mode=mode)
    looked = dw.sql("SELECT S.v, B.w FROM s S JOIN b FOR SYSTEM_TIME AS OF S.ts AS B ON S.x IS NOT DISTINCT FROM B.x",
                    tables={"s": stream, "b": b})
    assert any(isinstance(n, pn.LookupJoin) and n.null_safe for n in pn.walk(looked.plan))
    assert sorted_rows(looked.collect(config)) == [(1, 20), (2, 10), (2, 40), (3, 10), (3, 40), (4, 30)]
    windowed = dw.sql("SELECT S.v, O.w FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(ts), INTERVAL '1' SECOND)) S JOIN "
                      "TABLE(TUMBLE(TABLE o, DESCRIPTOR(ts), INTERVAL '1' SECOND)) O "
                      "ON S.window_start = O.window_start AND S.window_end = O.window_end "
                      "AND (S.x = O.x OR (S.x IS NULL AND O.x IS NULL))",
                      tables={"s": stream, "o": other})
    assert "window join" in windowed.explain()
    assert sorted_rows(windowed.collect(config)) == [(1, 20), (2, 10), (2, 40), (3, 10), (3, 40), (4, 30)]


def test_a_join_condition_that_is_no_null_safe_equality_is_not_a_key(nullable_sides):
    """Only an equality OR both operands NULL is a null-safe key: an OR testing one side for NULL is a
    condition on the pairs, and alone it leaves the join without a key, which says what it takes."""
    a, b = nullable_sides
    one_side = dw.sql("SELECT a.v, b.w FROM a JOIN b ON a.k = b.k AND (a.x = b.x OR a.x IS NULL)",
                      tables={"a": a, "b": b})
    assert "<=>" not in one_side.explain()
    assert sorted_rows(one_side.collect()) == [(1, 20), (2, 10), (2, 20), (3, 30), (4, 30)]
    with pytest.raises(SqlError, match=r"line 1, column \d+: a join needs an equality .* IS NOT DISTINCT FROM"):
        run("SELECT a.v FROM a JOIN b ON a.x = b.x OR (a.x IS NULL AND b.k IS NULL)", a=a, b=b)


def test_top_n_and_deduplication_from_row_number(bids):
    top = dw.sql("SELECT * FROM (SELECT auction, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) "
                 "AS rn FROM bids) WHERE rn <= 2", tables={"bids": bids})
    assert any(isinstance(n, pn.TopN) for n in pn.walk(top.plan))
    assert sorted_rows(top.collect()) == [(1, 10, 2), (1, 30, 1), (2, 20, 2), (2, 40, 1)]
    last = dw.sql("SELECT bidder, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DESC) "
                  "AS rn FROM bids) WHERE rn = 1", tables={"bids": bids})
    assert any(isinstance(n, pn.Deduplicate) for n in pn.walk(last.plan))
    assert sorted_rows(last.collect()) == [(7, 5), (8, 40), (9, 15)]


def test_union_all_matches_columns_by_position(bids):
    out = run("SELECT auction AS k FROM bids WHERE price > 30 UNION ALL SELECT bidder FROM bids WHERE price < 10",
              bids=bids)
    assert out.column_names == ["k"] and sorted_rows(out) == [(2,), (7,)]


@pytest.mark.parametrize("config", [dw.Config(), dw.Config(mode="interpreted")])
def test_union_all_of_a_bigint_and_a_double_column_is_a_double(bids, config):
    """Flink's UNION takes the least restrictive type of each column; a BIGINT beside a DOUBLE was
    refused as 'select the same columns ... with the same types'."""
    text = ("SELECT auction, price * 1.5 AS p FROM bids WHERE price > 30 UNION ALL SELECT auction, price FROM bids "
            "WHERE price < 10 UNION ALL SELECT 3, 7 FROM bids WHERE price = 15")
    out = dw.sql(text, tables={"bids": bids}).collect(config)
    assert out.schema.field("p").type == pa.float64()
    assert sorted_rows(out) == [(1, 5.0), (2, 60.0), (3, 7.0)]


@pytest.mark.parametrize("config", [dw.Config(), dw.Config(mode="interpreted"), dw.Config(engine="spark")],
                         ids=["compiled", "interpreted", "spark"])
def test_a_bare_null_in_union_all_takes_the_other_inputs_type(bids, config, request):
    """A NULL written without a type is typed by the other inputs of the UNION, as in Flink (it was a
    BIGINT, and SELECT url ... UNION ALL SELECT NULL ... was refused as 'select the same columns ...
    with the same types'): a string, a double, a boolean or a timestamp, on either side, through
    aliases and nested unions. A typed NULL (CAST(NULL AS BIGINT)) beside a string is still refused."""
    if config.engine == "spark":
        request.getfixturevalue("spark")
    text = ("SELECT auction, url, price * 0.5 AS half, price > 20 AS big, ts FROM bids WHERE price > 30 "
            "UNION ALL SELECT NULL, NULL, NULL, NULL, NULL FROM bids WHERE price = 15 "
            "UNION ALL SELECT auction, NULL AS u, NULL, NULL AS b, NULL FROM bids WHERE price < 10")
    out = dw.sql(text, tables={"bids": bids}).collect(config)
    assert out.schema.types == [pa.int64(), pa.string(), pa.float64(), pa.bool_(), pa.timestamp("ms")]
    assert sorted(map(str, out.to_pylist())) == sorted(map(str, [
        {"auction": 2, "url": "https://h/d1/d2", "half": 20.0, "big": True, "ts": datetime(1970, 1, 1, 0, 0, 12)},
        {"auction": None, "url": None, "half": None, "big": None, "ts": None},
        {"auction": 1, "url": None, "half": None, "big": None, "ts": None}]))
    first = dw.sql("SELECT NULL AS s FROM bids WHERE price = 15 UNION ALL SELECT url FROM bids WHERE price = 5",
                   tables={"bids": bids}).collect(config)
    assert first.schema.types == [pa.string()] and sorted(first.column("s").to_pylist(), key=str) == [None, "a/b/c"]
    with pytest.raises(SqlError, match="same types"):
        dw.sql("SELECT url FROM bids UNION ALL SELECT CAST(NULL AS BIGINT) FROM bids", tables={"bids": bids})


def test_string_and_time_functions(bids):
    out = run("SELECT SPLIT_INDEX(url, '/', 1) AS d, REGEXP_EXTRACT(url, '(a)/(b)', 2) AS r, "
              "DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss') AS f, HOUR(ts) AS h, UPPER(url) AS u "
              "FROM bids WHERE price = 10", bids=bids)
    assert out.to_pylist() == [{"d": "b", "r": "b", "f": "1970-01-01 00:00:00", "h": 0, "u": "A/B/C"}]


def test_views_and_with(bids):
    out = run("WITH big AS (SELECT * FROM bids WHERE price > 15) SELECT count(*) AS n FROM big", bids=bids)
    assert out.column_names == ["n"] and out["n"].to_pylist()[-1] == 3


def test_over_aggregate(bids):
    out = run("SELECT auction, price, SUM(price) OVER (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING "
              "AND CURRENT ROW) AS s FROM bids", bids=bids)
    assert sorted_rows(out) == sorted([(1, 10, 10), (1, 30, 40), (1, 5, 35), (2, 20, 20), (2, 40, 60), (2, 15, 55)])


def test_over_a_named_window(bids):
    """Flink's WINDOW w AS (...) named once for several OVER aggregates; it was refused as a frame
    that is not ROWS BETWEEN n PRECEDING AND CURRENT ROW."""
    out = run("SELECT auction, price, SUM(price) OVER w AS s, MAX(price) OVER w AS m FROM bids\n"
              "WINDOW w AS (PARTITION BY auction ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)", bids=bids)
    assert sorted_rows(out) == sorted([(1, 10, 10, 10), (1, 30, 40, 30), (1, 5, 35, 30), (2, 20, 20, 20),
                                       (2, 40, 60, 40), (2, 15, 55, 40)])
    with pytest.raises(SqlError, match=r"line 1, column 17: OVER v: this SELECT has no WINDOW v AS \(...\); it has w"):
        run("SELECT auction, SUM(price) OVER v AS s FROM bids WINDOW w AS (ORDER BY ts ROWS BETWEEN 1 PRECEDING "
            "AND CURRENT ROW)", bids=bids)


@pytest.mark.parametrize(("text", "match"), [
    ("SELECT nope FROM bids", r"line 1, column 8: unknown column nope"),
    ("SELECT price\nFROM missing", r"line 2, column 6: unknown table 'missing'"),
    ("SELECT price FROM bids\n  ORDER BY price", r"line 2, column \d+: ORDER is not supported"),
    ("SELECT FOO(price) FROM bids", r"line 1, column 8: function FOO"),
    ("SELECT price FROM bids B JOIN bids C ON B.price > C.price", r"line 1, column \d+: a join needs an equality"),
    ("SELECT ROW_NUMBER() OVER (ORDER BY price) AS rn FROM bids", r"line 1, column 8: ROW_NUMBER\(\) is only"),
    ("SELECT price FROM TABLE(CUMULATE(TABLE bids, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND))",
     r"line 1, column \d+: CUMULATE"),
    ("SELECT price + 'x' AS bad FROM bids", r"line 1, column 8: "),
    ("SELECT auction, price FROM bids GROUP BY auction",
     r"line 1, column 17: column price is neither in GROUP BY nor inside an aggregate"),
    ("SELECT DISTINCT auction FROM bids", r"line 1, column \d+: DISTINCT is not supported"),
    ("SELECT price, PROCTIME() + 1 AS p FROM bids", r"line 1, column 15: PROCTIME\(\): Darwin has no processing"),
    # a group window's own refusals were PlanErrors naming no place
    ("SELECT count(*) AS n FROM bids\nGROUP BY HOP(ts, INTERVAL '3' SECOND, INTERVAL '2' SECOND)",
     r"line 2, column 14: a sliding window's size \(2000ms\) must be a multiple of its slide \(3000ms\)"),
    ("SELECT count(*) AS n FROM bids GROUP BY SESSION(ts, INTERVAL '0' SECOND)",
     r"line 1, column 49: session gap must be a positive number of ms"),
    # TRUE and DATE literals carry no position of their own: the message named no place
    ("SELECT price FROM bids WHERE auction IN (TRUE)", r"line 1, column 30: IN: cannot compare auction"),
    ("SELECT price,\n  DATE '2020-01-01' AS d FROM bids", r"line 2, column \d+: type DATE is not supported"),
])
def test_errors_name_line_and_column(bids, text, match):
    with pytest.raises(SqlError, match=match):
        dw.sql(text, tables={"bids": bids})


def test_session_table_function_and_group_windows(bids):
    tvf = run("SELECT bidder, window_start, count(*) AS n FROM TABLE(SESSION(TABLE bids PARTITION BY bidder, "
              "DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY bidder, window_start, window_end", bids=bids)
    legacy = run("SELECT bidder, SESSION_START(ts, INTERVAL '5' SECOND) AS window_start, count(*) AS n FROM bids "
                 "GROUP BY bidder, SESSION(ts, INTERVAL '5' SECOND)", bids=bids)
    assert sorted_rows(tvf) == sorted_rows(legacy)
    assert sorted((r[0], r[2]) for r in sorted_rows(tvf)) == [(7, 1), (7, 2), (8, 1), (8, 1), (9, 1)]
    tumble = run("SELECT TUMBLE_END(ts, INTERVAL '10' SECOND) AS e, count(*) AS n FROM bids "
                 "GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)", bids=bids)
    assert [r["n"] for r in tumble.to_pylist()] == [3, 2, 1]


def test_outer_and_lookup_joins(bids, auctions):
    left = run("SELECT B.price, A.category FROM bids B LEFT JOIN auctions A ON B.auction = A.id AND A.category = 10 "
               "WHERE B.price > 12", bids=bids, auctions=auctions)
    assert sorted_rows(left) == [(15, None), (20, None), (30, 10), (40, None)]
    side = dw.from_arrow(pa.table({"k": [0, 1], "v": ["even", "odd"]}), name="side")
    looked = dw.sql("SELECT B.price, S.v FROM bids B JOIN side FOR SYSTEM_TIME AS OF B.ts AS S ON MOD(B.price, 2) "
                    "= S.k WHERE B.auction = 1", tables={"bids": bids, "side": side})
    assert any(isinstance(n, pn.LookupJoin) for n in pn.walk(looked.plan))
    assert sorted_rows(looked.collect()) == [(5, "odd"), (10, "even"), (30, "even")]


def test_window_top_n_ranks_each_window_once(bids):
    table = dw.sql("SELECT window_start, auction, price, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
                   "window_start, window_end ORDER BY price DESC) AS rn FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), "
                   "INTERVAL '10' SECOND))) WHERE rn <= 1", tables={"bids": bids})
    assert not pn.updating(table.plan)  # the window top-N appends, once per window
    fluent = bids.window(dw.Tumble("10s", on="ts")).top_n(1, order=dw.desc("price"), rank="rn") \
        .select("window_start", "auction", "price", "rn")
    assert sorted_rows(table.collect()) == sorted_rows(fluent.collect())
    assert [r[1:] for r in sorted_rows(table.collect())] == [(1, 30, 1), (2, 40, 1), (2, 15, 1)]
    unranked = dw.sql("SELECT auction, price FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
                      "window_end, auction ORDER BY price) AS rn FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), "
                      "INTERVAL '10' SECOND))) WHERE rn = 1", tables={"bids": bids})
    assert not pn.updating(unranked.plan)
    assert sorted_rows(unranked.collect()) == [(1, 5), (1, 10), (2, 15), (2, 20), (2, 40)]


def test_hostile_identifiers_and_literals_are_data_not_code():
    name = "x\"); __import__('os').system('exit 3') #"
    t = dw.from_arrow(pa.table({name: [1, 2, 3], "s": ["a'b", "c", "a'b"]}))
    out = dw.sql(f"SELECT `{name}` * 2 AS `{name}!`, s FROM t WHERE s = 'a''b' AND `{name}` > 1",
                 tables={"t": t}).collect()
    assert out.column_names == [f"{name}!", "s"]
    assert out.to_pylist() == [{f"{name}!": 6, "s": "a'b"}]


def test_like_coalesce_extract(bids):
    out = run("SELECT url, url LIKE 'a/%' AS pre, url LIKE '%d1%' AS mid, url NOT LIKE 'q' AS notq, "
              "EXTRACT(SECOND FROM ts) AS s, COALESCE(REGEXP_EXTRACT(url, 'b/(.)', 1), 'none') AS c "
              "FROM bids WHERE auction = 2", bids=bids)
    assert sorted_rows(out) == [("https://h/d1/d2", False, True, True, 12, "none"),
                                ("q", False, False, False, 2, "none"), ("z", False, False, True, 25, "none")]
    first = run("SELECT COALESCE(REGEXP_EXTRACT(url, 'b/(.)', 1), url) AS c FROM bids WHERE price = 10", bids=bids)
    assert first["c"].to_pylist() == ["c"]


def test_proctime_is_only_a_lookup_time(bids):
    side = dw.from_arrow(pa.table({"k": [0, 1], "v": ["even", "odd"]}), name="side")
    tables = {"bids": bids, "side": side}
    looked = dw.sql("SELECT B.price, S.v FROM (SELECT *, PROCTIME() AS pt FROM bids) B JOIN side FOR SYSTEM_TIME "
                    "AS OF B.pt AS S ON MOD(B.price, 2) = S.k WHERE B.auction = 1", tables=tables)
    assert sorted_rows(looked.collect()) == [(5, "odd"), (10, "even"), (30, "even")]
    with pytest.raises(SqlError, match=r"line 1, column 8: pt is PROCTIME\(\): Darwin has no processing time"):
        dw.sql("SELECT pt FROM (SELECT *, PROCTIME() AS pt FROM bids)", tables=tables)
    with pytest.raises(SqlError, match=r"line 1, column 56: FOR SYSTEM_TIME AS OF B.price: not a time column"):
        dw.sql("SELECT S.v FROM bids B JOIN side FOR SYSTEM_TIME AS OF B.price AS S ON B.price = S.k", tables=tables)


def test_timestamp_literals_compare_with_time_columns(bids):
    out = run("SELECT price FROM bids WHERE ts >= TIMESTAMP '1970-01-01 00:00:11' AND ts < TIMESTAMP "
              "'1970-01-01 00:00:12.5'", bids=bids)
    assert out["price"].to_pylist() == [5, 40]
    with pytest.raises(SqlError, match=r"line 1, column 45: TIMESTAMP 'yesterday'"):
        run("SELECT price FROM bids WHERE ts > TIMESTAMP 'yesterday'", bids=bids)


def test_tables_must_be_tables(bids):
    with pytest.raises(SqlError, match=r"tables=\{'w': ...\}: a table is a dw.Table"):
        dw.sql("SELECT 1 FROM w", tables={"w": bids.window(dw.Tumble("1s", on="ts"))})
