"""SQL clauses whose meaning a plan could lose silently: WHERE under a window table function that is
grouped by its bounds, group keys named as input columns, the NULL ordering of window ORDER BY, the
frame of OVER, bounds of ROW_NUMBER, INSERT INTO a CSV table read back, and group-window auxiliary
functions that must name their window. Each checked against plain Python on both engines."""

import sqlite3
from datetime import datetime, timedelta

import pyarrow as pa
import pytest

import darwin as dw
from darwin.errors import SqlError

MODES = [dw.Config(), dw.Config(mode="interpreted")]


@pytest.fixture
def bids():
    return dw.from_arrow(pa.table({
        "ts": pa.array([0, 1_000, 2_000, 11_000, 12_000, 13_000], pa.timestamp("ms")),
        "k": [1, 1, 2, 1, 2, 1],
        "v": [10, 30, 20, 5, 40, None],
    }), time="ts", name="t")


ROWS = [(0, 1, 10), (1_000, 1, 30), (2_000, 2, 20), (11_000, 1, 5), (12_000, 2, 40), (13_000, 1, None)]


def rows(text, t, config):
    return sorted(tuple(r.values()) for r in dw.sql(text, tables={"t": t}).collect(config).to_pylist())


def seconds(ms):
    return datetime(1970, 1, 1) + timedelta(milliseconds=ms)


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("function, windows", [
    ("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)", lambda ms: [ms // 10_000 * 10_000]),
    ("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)",
     lambda ms: [s for s in (ms // 5_000 * 5_000 - 5_000, ms // 5_000 * 5_000) if s <= ms < s + 10_000])])
def test_where_filters_what_a_window_table_function_aggregates(bids, config, function, windows):
    got = rows(f"SELECT window_start, count(*) AS n, sum(v) AS s FROM TABLE({function}) WHERE v > 12 "
               "GROUP BY window_start, window_end", bids, config)
    want: dict[int, list[int]] = {}
    for ts, _, v in ROWS:
        if v is not None and v > 12:
            for start in windows(ts):
                want.setdefault(start, []).append(v)
    assert got == sorted((seconds(s), len(vs), sum(vs)) for s, vs in want.items())


@pytest.mark.parametrize("config", MODES)
def test_where_on_the_window_bounds_keeps_those_windows(bids, config):
    got = rows("SELECT window_start, sum(v) AS s FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) "
               "WHERE window_start >= TIMESTAMP '1970-01-01 00:00:10' AND k = 1 GROUP BY window_start, window_end",
               bids, config)
    assert got == [(seconds(10_000), 5)]


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("batch_size", [1, 2, 100])
def test_a_cascading_window_over_the_starts_of_sliding_windows_keeps_every_window(bids, config, batch_size):
    """GROUP BY the window_start alone of a HOP's counts was a tumble of the slide over the starts:
    a window's row reached it once the watermark had passed start + slide, so it was late and
    dropped (two windows of twelve were left reading a row at a time, every window at once)."""
    counts = ("SELECT k, count(*) AS n, window_start AS s FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), "
              "INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY k, window_start, window_end")
    result = dw.sql(f"SELECT s, max(n) AS m FROM ({counts}) GROUP BY s", tables={"t": bids}) \
        .execute(config.replace(batch_size=batch_size))
    per_window: dict[tuple[int, int], int] = {}
    for ts, k, _ in ROWS:
        for start in range(ts // 2_000 * 2_000 - 4_000, ts + 1, 2_000):
            per_window[start, k] = per_window.get((start, k), 0) + 1
    want: dict[int, int] = {}
    for (start, _), n in per_window.items():
        want[start] = max(want.get(start, 0), n)
    assert sorted(tuple(r.values()) for r in result.table.to_pylist()) == \
        sorted((seconds(start), m) for start, m in want.items())
    assert result.metrics["late_rows"] == 0


@pytest.mark.parametrize("config", MODES)
def test_where_filters_what_a_session_table_function_aggregates(bids, config):
    got = rows("SELECT k, window_start, count(*) AS n FROM TABLE(SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), "
               "INTERVAL '5' SECOND)) WHERE v < 25 GROUP BY k, window_start, window_end", bids, config)
    # kept rows: k=1 at 0 s and 11 s (sessions apart), k=2 at 2 s
    assert got == [(1, seconds(0), 1), (1, seconds(11_000), 1), (2, seconds(2_000), 1)]


@pytest.mark.parametrize("config", MODES)
def test_a_group_key_named_as_an_input_column_leaves_the_aggregates_their_input(bids, config):
    got = rows("SELECT k + 1 AS v, sum(v) AS s, max(v) AS m FROM t GROUP BY k + 1", bids, config)
    assert got == [(2, 45, 30), (3, 60, 40)]
    named = rows("SELECT k, sum(v) AS `$agg1`, max(v) FROM t GROUP BY k", bids, config)
    assert named == [(1, 45, 30), (2, 60, 40)]


@pytest.mark.parametrize("config", MODES)
def test_group_keys_and_aggregates_sharing_an_alias_keep_their_own_values(bids, config):
    """Two aggregates aliased alike both gave the last one's values, two computed keys aliased alike
    grouped twice by the last key, and an aggregate aliased as a group key was refused ('agg: k= is
    also a group key'); Flink takes each, naming the result's columns x and x0."""
    assert rows("SELECT k, sum(v) AS x, max(v) AS x FROM t GROUP BY k", bids, config) == [(1, 45, 30), (2, 60, 40)]
    assert rows("SELECT k + 1 AS x, k * 2 AS x, count(*) AS n FROM t GROUP BY k + 1, k * 2", bids, config) == \
        [(2, 2, 4), (3, 4, 2)]
    assert rows("SELECT k, sum(v) AS k FROM t GROUP BY k", bids, config) == [(1, 45), (2, 60)]
    assert rows("SELECT k AS v, count(*) AS k FROM t GROUP BY k", bids, config) == [(1, 4), (2, 2)]
    assert rows("SELECT k * 2 AS c, count(*) AS c FROM t GROUP BY k * 2", bids, config) == [(2, 4), (4, 2)]
    windowed = rows("SELECT window_start, count(*) AS window_end FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
                    "INTERVAL '10' SECOND)) GROUP BY window_start, window_end", bids, config)
    assert windowed == [(seconds(0), 3), (seconds(10_000), 3)]


@pytest.mark.parametrize("config", MODES)
def test_group_keys_and_aggregates_are_found_however_their_columns_are_qualified(bids, config):
    """A select item or HAVING naming a computed key's columns with another qualifier than GROUP BY
    did was refused as 'column t.k is neither in GROUP BY nor inside an aggregate', and a key given
    twice as 'a key is given twice'; Flink takes both."""
    assert rows("SELECT t.k + 1 AS g, count(*) AS n FROM t GROUP BY k + 1", bids, config) == [(2, 4), (3, 2)]
    assert rows("SELECT k + 1 AS g, count(*) AS n FROM t GROUP BY t.k + 1 HAVING sum(t.v) > 45", bids, config) == \
        [(3, 2)]
    assert rows("SELECT a.k * 2 AS g, sum(v) AS s FROM t AS a GROUP BY k * 2, a.k, k", bids, config) == \
        [(2, 45), (4, 60)]


@pytest.mark.parametrize("config", MODES)
def test_window_order_places_nulls_as_the_smallest_values(bids, config):
    def first(order):
        return rows(f"SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY {order}) AS rn "
                    "FROM t) WHERE rn <= 1", bids, config)
    assert first("v ASC") == first("v ASC NULLS FIRST") == [(1, None), (2, 20)]
    assert first("v DESC") == first("v DESC NULLS LAST") == [(1, 30), (2, 40)]
    for refused in ("v DESC NULLS FIRST", "v ASC NULLS LAST", "v NULLS LAST"):
        with pytest.raises(SqlError, match="NULLs order as the smallest values"):
            first(refused)


def test_over_frames_start_before_the_current_row(bids):
    with pytest.raises(SqlError, match="PRECEDING"):
        dw.sql("SELECT k, sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) "
               "AS s FROM t", tables={"t": bids})


@pytest.mark.parametrize("config", MODES)
def test_over_frames_exclude_nothing(bids, config):
    """EXCLUDE CURRENT ROW (TIES, GROUP) was accepted and dropped: the sums still held the current row.
    Darwin's frames exclude nothing, so only EXCLUDE NO OTHERS, which says so, is accepted."""
    frame = "PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
    plain = rows(f"SELECT ts, sum(v) OVER ({frame}) AS s FROM t", bids, config)
    assert rows(f"SELECT ts, sum(v) OVER ({frame} EXCLUDE NO OTHERS) AS s FROM t", bids, config) == plain
    assert [s for _, s in plain] == [10, 40, 20, 35, 60, 5]
    for exclude in ("CURRENT ROW", "TIES", "GROUP"):
        with pytest.raises(SqlError, match=f"line 1, column 12: OVER: EXCLUDE {exclude} is not supported"):
            dw.sql(f"SELECT ts, sum(v) OVER ({frame} EXCLUDE {exclude}) AS s FROM t", tables={"t": bids})


def test_the_over_aggregates_of_a_select_share_one_window():
    """Two OVER windows of one SELECT ran one after another, the second reading the first's changes in
    the order it emitted them, so with ties in the order a row's sum depended on where batches ended
    (b = 110 at batch size 1, 101 at 3). Refused, as Flink requires one window per SELECT; aggregates
    over the same window (named or written out twice) still run."""
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 0, 0], pa.timestamp("ms")), "k": [1, 2, 1], "v": [1, 10, 100]}),
                      time="ts", name="t")
    frame = "ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
    for other in (frame, "PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW"):
        with pytest.raises(SqlError, match="line 1, column 99: this OVER window differs from the SELECT's first"):
            dw.sql(f"SELECT v, SUM(v) OVER (PARTITION BY k {frame}) AS a, SUM(v) OVER ({other}) AS b FROM t",
                   tables={"t": t})
    same = dw.sql(f"SELECT v, SUM(v) OVER w AS a, MAX(v) OVER w AS b, COUNT(*) OVER (PARTITION BY k {frame}) AS c "
                  f"FROM t WINDOW w AS (PARTITION BY k {frame})", tables={"t": t})
    got = [sorted((r["v"], r["a"], r["b"], r["c"]) for r in same.collect(dw.Config(batch_size=b)).to_pylist())
           for b in (1, 3)]
    assert got[0] == got[1] == [(1, 1, 1, 1), (10, 10, 10, 1), (100, 101, 100, 2)]


@pytest.mark.parametrize("batch_size", [1, 3, 1000])
@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_over_aggregates_inside_expressions(bids, mode, batch_size):
    """v - AVG(v) OVER (...), an OVER aggregate inside an expression, which Flink takes, was refused as 'Window
    (...) is not supported in Darwin's SQL'. Each OVER aggregate of the SELECT is computed on its one window
    into a hidden column, then the expressions: the same values as the aggregates selected on their own."""
    config = dw.Config(mode=mode, batch_size=batch_size)
    frame = "PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
    alone = rows(f"SELECT ts, v, AVG(v) OVER w AS a, SUM(v) OVER w AS s FROM t WINDOW w AS ({frame})", bids, config)
    assert [s for _, _, _, s in alone] == [10, 40, 20, 35, 60, 5]
    got = rows(f"SELECT ts, v - AVG(v) OVER ({frame}) AS d, v * 2 + SUM(v) OVER w AS e, "
               f"CASE WHEN COUNT(v) OVER w > 1 THEN 'many' ELSE 'one' END AS c, SUM(v) OVER w AS s "
               f"FROM t WINDOW w AS ({frame})", bids, config)
    assert got == [(ts, None if v is None else v - a, None if v is None else v * 2 + s, c, s)
                   for (ts, v, a, s), c in zip(alone, ["one", "many", "one", "many", "many", "one"], strict=True)]
    star = dw.sql(f"SELECT *, v - AVG(v) OVER ({frame}) AS d FROM t", tables={"t": bids})
    assert star.columns == ["ts", "k", "v", "d"]  # the hidden column is not selected


def test_over_aggregates_inside_expressions_share_the_selects_window(bids):
    with pytest.raises(SqlError, match="line 1, column 72: this OVER window differs from the SELECT's first"):
        dw.sql("SELECT v - AVG(v) OVER (PARTITION BY k ORDER BY ts ROWS 1 PRECEDING) + MAX(v) OVER (ORDER BY ts "
               "ROWS 1 PRECEDING) AS d FROM t", tables={"t": bids})


@pytest.mark.parametrize("config", MODES)
def test_over_frames_written_short_and_of_the_current_row_alone(bids, config):
    """ROWS 1 PRECEDING (Calcite's shorthand for ... AND CURRENT ROW) and ROWS BETWEEN CURRENT ROW AND
    CURRENT ROW, which Flink takes, were refused as 'OVER needs ROWS BETWEEN n PRECEDING AND CURRENT ROW'."""
    order = "PARTITION BY k ORDER BY ts"
    full = rows(f"SELECT ts, sum(v) OVER ({order} ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM t", bids, config)
    assert rows(f"SELECT ts, sum(v) OVER ({order} ROWS 1 PRECEDING) AS s FROM t", bids, config) == full
    alone = rows(f"SELECT ts, v, sum(v) OVER ({order} ROWS BETWEEN CURRENT ROW AND CURRENT ROW) AS s FROM t",
                 bids, config)
    assert [(v, s) for _, v, s in alone] == [(10, 10), (30, 30), (20, 20), (5, 5), (40, 40), (None, None)]


@pytest.mark.parametrize("start", ["'1'", "1.5"])
def test_over_frames_start_a_whole_number_of_rows_back(bids, start):
    with pytest.raises(SqlError, match=f"OVER: {start} PRECEDING: the frame's start is a whole number of rows"):
        dw.sql(f"SELECT sum(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN {start} PRECEDING AND CURRENT ROW) "
               "AS s FROM t", tables={"t": bids})


@pytest.mark.parametrize("bound, n", [("rn <= 2.5", 2), ("rn < 2.5", 2), ("rn < 2", 1), ("rn <= 1", 1), ("rn = 1", 1)])
def test_row_number_bounds_that_are_not_whole(bids, bound, n):
    got = rows(f"SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) "
               f"WHERE {bound}", bids, dw.Config())
    by_key: dict[int, list] = {}
    for _, k, v in sorted(ROWS, key=lambda r: (r[2] is not None, r[2] or 0), reverse=True):
        by_key.setdefault(k, []).append(v)
    assert got == sorted((k, v) for k, vs in by_key.items() for v in vs[:n])


def sqlite_rows(text):
    """The same query in SQLite, over ROWS as table t (ts in milliseconds)."""
    with sqlite3.connect(":memory:") as db:
        db.execute("CREATE TABLE t (ts INTEGER, k INTEGER, v INTEGER)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", ROWS)
        return sorted(db.execute(text).fetchall())


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("selected", ["k, v", "k, v, rn"])
@pytest.mark.parametrize("bound", ["rn BETWEEN 2 AND 3", "rn >= 2 AND rn <= 3", "rn = 2", "3 >= rn", "2 > rn",
                                   "rn <= 3 AND rn <> 2", "rn <= 3 AND rn <= 1"])
def test_row_number_ranges_as_flink_reads_them(bids, config, selected, bound):
    """Flink takes the smallest upper bound on the row number as the top-N and filters the ranked rows
    by the rest. BETWEEN, N >= rn and rn = 2 were refused as 'only supported as a top-N', and a lower
    bound (rn >= 2) where the query did not select rn failed with 'unknown column rn'."""
    query = (f"SELECT {selected} FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn "
             f"FROM t) WHERE {bound}")
    for batch_size in (1, 100):
        assert rows(query, bids, config.replace(batch_size=batch_size)) == sqlite_rows(query)


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("query", [
    "SELECT k, v FROM (SELECT k, -v AS v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t) "
    "WHERE rn <= 1",
    "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM t) WHERE rn = 1",
    "SELECT v, rn FROM (SELECT v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC, ts) AS rn FROM t) WHERE rn <= 2",
    "SELECT v FROM (SELECT v, ROW_NUMBER() OVER (PARTITION BY s ORDER BY ts) AS rn FROM (SELECT ts, v, k % 2 AS s "
    "FROM t)) WHERE rn <= 1"])
def test_row_number_orders_the_rows_the_select_reads(bids, config, query):
    """ROW_NUMBER's PARTITION BY and ORDER BY name the SELECT's input columns, selected or not. A column
    the SELECT did not select failed with "unknown column 'ts' in select of '$rank0'", and one an
    alias shadowed was read after the select list: ORDER BY v DESC under -v AS v kept each k's
    smallest v (-5 and -20, where the rows of the largest, -30 and -40, are the top)."""
    assert rows(query, bids, config) == sqlite_rows(query)


RANKED = "SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM t"


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("query, same_as", [
    (f"WITH r AS ({RANKED}) SELECT k, v FROM r WHERE rn <= 1", None),
    (f"WITH r AS ({RANKED}) SELECT k, v, rn FROM r AS x WHERE x.rn BETWEEN 2 AND 3", None),
    (f"WITH r AS ({RANKED}) SELECT k FROM r WHERE rn <= 1 UNION ALL SELECT k FROM r WHERE rn <= 2", None),
    (f"CREATE VIEW r AS {RANKED};\nSELECT k, v FROM r WHERE rn <= 1", f"WITH r AS ({RANKED}) SELECT k, v FROM r "
                                                                     "WHERE rn <= 1")])
def test_a_view_selecting_row_number_is_ranked_where_it_is_read(bids, config, query, same_as):
    """Flink's top-N over a WITH table or a view: ROW_NUMBER() defined there, filtered by the query
    reading it. The view was planned where it was defined, and refused with 'ROW_NUMBER() is only
    supported as a top-N: filter it in an outer query with WHERE rn <= N', which the query does."""
    assert rows(query, bids, config) == sqlite_rows(same_as or query)


def test_a_view_selecting_row_number_read_without_a_bound_is_refused(bids):
    with pytest.raises(SqlError, match=r"line 1, column 25: ROW_NUMBER\(\) is only supported as a top-N: filter it "
                                       "with WHERE rn <= N"):
        dw.sql(f"WITH r AS ({RANKED}) SELECT k, v FROM r", tables={"t": bids})
    with pytest.raises(SqlError, match=r"line 1, column 25: ROW_NUMBER\(\) is only supported as a top-N"):
        dw.sql(f"WITH r AS ({RANKED}) SELECT r.k FROM r JOIN t ON r.k = t.k WHERE rn <= 1", tables={"t": bids})


def test_a_csv_table_written_by_insert_reads_back_the_same_rows(bids, tmp_path):
    ddl = ("CREATE TABLE s (k BIGINT, v BIGINT, note BIGINT) WITH ('connector' = 'filesystem', 'path' = '{}', "
           "'format' = 'csv');\n")
    out = tmp_path / "out"
    dw.sql_job(ddl.format(out) + "INSERT INTO s (v, k) SELECT v, k FROM t WHERE k = 2", tables={"t": bids})
    parts = sorted(out.glob("part-*"))
    assert parts and all(not p.read_text().startswith('"k"') for p in parts)  # Flink's CSV: no header row
    back = dw.sql(ddl.format(parts[0]) + "SELECT k, v, note FROM s").collect()
    assert sorted(tuple(r.values()) for r in back.to_pylist()) == [(2, 20, None), (2, 40, None)]
    with pytest.raises(SqlError, match="column w is named but the table has k, v, note"):
        dw.sql_job(ddl.format(tmp_path / "other") + "INSERT INTO s (w) SELECT v FROM t", tables={"t": bids})


@pytest.mark.parametrize("config", MODES)
def test_auxiliary_functions_of_the_group_window_give_its_bounds(bids, config):
    tumble = rows("SELECT TUMBLE_START(t.ts, INTERVAL '10000' MILLISECOND) AS s, TUMBLE_END(ts, INTERVAL '10' SECOND) "
                  "AS e, count(*) AS n FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)", bids, config)
    assert tumble == [(seconds(0), seconds(10_000), 3), (seconds(10_000), seconds(20_000), 3)]
    hop = rows("SELECT HOP_END(ts, INTERVAL '5' SECOND, INTERVAL '0.25' MINUTE) AS e, count(*) AS n FROM t "
               "GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)", bids, config)
    ends = {end: sum(end - 15_000 <= ts < end for ts, _, _ in ROWS) for end in range(5_000, 30_000, 5_000)}
    assert hop == sorted((seconds(end), n) for end, n in ends.items() if n)


@pytest.mark.parametrize("text, problem", [
    ("SELECT TUMBLE_START(ts, INTERVAL '5' SECOND) AS s, count(*) FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
     r"line 1, column 8: TUMBLE_START\(ts, INTERVAL '5' SECOND\) does not match the group window "
     r"TUMBLE\(ts, INTERVAL '10' SECOND\) of GROUP BY"),
    ("SELECT k,\n  TUMBLE_END(ts2, INTERVAL '10' SECOND) FROM t GROUP BY k, TUMBLE(ts, INTERVAL '10' SECOND)",
     r"line 2, column 3: TUMBLE_END\(ts2, .* does not match the group window TUMBLE\(ts, "),
    ("SELECT 1 + count(*), HOP_START(ts, INTERVAL '10' SECOND) FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
     r"line 1, column 22: HOP_START\(ts, INTERVAL '10' SECOND\) needs a HOP group window; GROUP BY has "
     r"TUMBLE\(ts, INTERVAL '10' SECOND\)"),
    ("SELECT SESSION_END(ts, INTERVAL '1' SECOND) FROM t GROUP BY SESSION(ts, INTERVAL '5' SECOND)",
     r"line 1, column 8: SESSION_END\(ts, INTERVAL '1' SECOND\) does not match the group window SESSION\(ts, "
     r"INTERVAL '5' SECOND\)"),
    ("SELECT HOP_END(ts, INTERVAL '15' SECOND, INTERVAL '5' SECOND) FROM t "
     "GROUP BY HOP(ts, INTERVAL '5' SECOND, INTERVAL '15' SECOND)", r"line 1, column 8: HOP_END\(.* does not match"),
    ("SELECT TUMBLE_START(ts) FROM t GROUP BY TUMBLE(ts, INTERVAL '10' SECOND)",
     r"line 1, column 8: TUMBLE_START\(ts\) does not match"),
])
def test_auxiliary_functions_that_name_another_window_are_refused(text, problem):
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "ts2": pa.array([0], pa.timestamp("ms")),
                                "k": [1]}), time="ts", name="t")
    with pytest.raises(SqlError, match=problem):
        dw.sql(text, tables={"t": t})


@pytest.mark.parametrize("config", MODES)
def test_min_and_max_of_strings_order_by_their_bytes(config):
    """MIN/MAX of a VARCHAR, grouped, windowed and with FILTER, as Flink orders strings (UTF-8 bytes;
    'é' and the emoji above every ASCII letter, 'a' before 'ab'). Refused before ('max needs int64 or
    float64 or timestamp, got string')."""
    t = dw.from_arrow(pa.table({
        "ts": pa.array([0, 1_000, 2_000, 3_000, 11_000, 12_000], pa.timestamp("ms")),
        "k": [1, 1, 2, 1, 2, 2],
        "s": ["ab", "é", None, "a", "\U0001F600", "Z"],
    }), time="ts", name="t")
    assert rows("SELECT k, MIN(s), MAX(s), MAX(s) FILTER (WHERE s <> 'é') FROM t GROUP BY k", t, config) == \
        [(1, "a", "é", "ab"), (2, "Z", "\U0001F600", "\U0001F600")]
    windowed = "SELECT k, window_start, MIN(s) AS lo, MAX(s) AS hi FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), " \
        "INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end"
    assert rows(windowed, t, config) == [(1, seconds(0), "a", "é"), (2, seconds(0), None, None),
                                         (2, seconds(10_000), "Z", "\U0001F600")]


@pytest.mark.parametrize("config", MODES)
def test_min_and_max_of_booleans_put_false_first(config):
    """MIN/MAX of a BOOLEAN, grouped, windowed, with FILTER and OVER, as Flink orders BOOLEAN (FALSE
    before TRUE). Refused before ('min needs int64 or float64 or timestamp or string, got bool')."""
    t = dw.from_arrow(pa.table({
        "ts": pa.array([0, 1_000, 2_000, 3_000, 11_000, 12_000], pa.timestamp("ms")),
        "k": [1, 1, 2, 1, 2, 2],
        "b": [True, None, None, False, True, True],
    }), time="ts", name="t")
    assert rows("SELECT k, MIN(b), MAX(b), MIN(b) FILTER (WHERE k + 0 = 1 AND b) FROM t GROUP BY k", t, config) == \
        [(1, False, True, True), (2, True, True, None)]
    windowed = "SELECT k, window_start, MIN(b) AS lo, MAX(b) AS hi FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), " \
        "INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end"
    assert rows(windowed, t, config) == [(1, seconds(0), False, True), (2, seconds(0), None, None),
                                         (2, seconds(10_000), True, True)]
    over = "SELECT ts, MIN(b) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM t"
    assert [m for _, m in rows(over, t, config)] == [True, True, None, False, True, True]


def test_an_aggregate_refused_for_its_argument_is_named_as_written_at_its_position(bids):
    """SUM of a VARCHAR is refused at the call, named as the query writes it, not by the internal
    name the aggregate's column has ('agg $agg1=sum(col('s'))')."""
    t = dw.from_arrow(pa.table({"k": [1], "s": ["a"]}), name="t")
    with pytest.raises(SqlError, match=r"^line 1, column 15: SUM\(s\): sum needs int64 or float64, got string$"):
        dw.sql("SELECT k, 1 + SUM(s) FROM t GROUP BY k", tables={"t": t})


@pytest.mark.parametrize("config", MODES)
@pytest.mark.parametrize("query", [
    "SELECT window_start, k % 2 + v AS key, count(*) AS n, sum(v) AS s FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), "
    "INTERVAL '10' SECOND)) GROUP BY window_start, window_end, k % 2 + v",
    "SELECT TUMBLE_START(ts, INTERVAL '10' SECOND) AS w, k % 2 + v AS key, count(*) AS n, sum(v) AS s FROM t "
    "GROUP BY TUMBLE(ts, INTERVAL '10' SECOND), k % 2 + v"])
def test_computed_group_keys_in_a_windowed_aggregation_are_computed_below_the_window(bids, config, query):
    """GROUP BY TUMBLE(...) (or a window table function's bounds) beside an expression, as Flink takes it; it was
    refused with 'computed group keys in a windowed aggregation are not supported'. A NULL key is a group."""
    want: dict[tuple, list] = {}
    for ts, k, v in ROWS:
        want.setdefault((ts // 10_000 * 10_000, None if v is None else k % 2 + v), []).append(v)
    expected = sorted(((seconds(w), key, len(vs), sum(x for x in vs if x is not None) if any(
        x is not None for x in vs) else None) for (w, key), vs in want.items()), key=str)
    got = [tuple(r.values()) for r in dw.sql(query, tables={"t": bids}).collect(config).to_pylist()]
    assert sorted(got, key=str) == expected


@pytest.mark.parametrize("config", MODES)
def test_computed_group_keys_beside_hop_and_session_windows(bids, config):
    hop = rows("SELECT window_end, v > 15 AS big, sum(v) AS s FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '5' "
               "SECOND, INTERVAL '10' SECOND)) WHERE v IS NOT NULL GROUP BY window_start, window_end, v > 15",
               bids, config)
    assert hop == [(seconds(5_000), False, 10), (seconds(5_000), True, 50), (seconds(10_000), False, 10),
                   (seconds(10_000), True, 50), (seconds(15_000), False, 5), (seconds(15_000), True, 40),
                   (seconds(20_000), False, 5), (seconds(20_000), True, 40)]
    session = rows("SELECT SESSION_START(ts, INTERVAL '5' SECOND) AS w, k * 10 AS key, count(*) AS n FROM t "
                   "GROUP BY SESSION(ts, INTERVAL '5' SECOND), k * 10", bids, config)
    assert session == [(seconds(0), 10, 2), (seconds(2_000), 20, 1), (seconds(11_000), 10, 2),
                       (seconds(12_000), 20, 1)]
