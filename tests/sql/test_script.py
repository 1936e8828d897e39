"""Scripts of CREATE TABLE ... WITH (...), CREATE VIEW and INSERT INTO: connectors, jobs, errors."""

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin.errors import ConfigError, SqlError
from darwin.plan.nodes import GroupAggregate, Scan, walk
from darwin.sql import TableSpec, plan_script, register_connector

ROWS = {"ts": [0, 1_000, 2_000, 11_000, 12_000, 25_000], "auction": [1, 1, 2, 1, 2, 2],
        "price": [10, 30, 20, 5, 40, 15]}


@pytest.fixture
def bids_parquet(tmp_path):
    path = tmp_path / "bids.parquet"
    pq.write_table(pa.table({"ts": pa.array(ROWS["ts"], pa.timestamp("ms")), "auction": ROWS["auction"],
                             "price": ROWS["price"]}), path)
    return path


def ddl(path, fmt="parquet", name="bids"):
    return f"""
    CREATE TABLE {name} (
        ts TIMESTAMP(3),
        auction BIGINT,
        price BIGINT,
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
    ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = '{fmt}');
    """


def read_parts(directory):
    return pa.concat_tables([pq.read_table(p) for p in sorted(directory.glob("**/*.parquet"))])


def test_sql_job_runs_insert_into_a_parquet_table(tmp_path, bids_parquet):
    out = tmp_path / "out"
    script = ddl(bids_parquet) + f"""
    CREATE TABLE totals (wstart TIMESTAMP(3), auction BIGINT, total BIGINT)
    WITH ('connector' = 'filesystem', 'path' = '{out}', 'format' = 'parquet');

    CREATE VIEW cheap AS SELECT * FROM bids WHERE price < 35;

    INSERT INTO totals
    SELECT window_start, auction, SUM(price)
    FROM TABLE(TUMBLE(TABLE cheap, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end;
    """
    results = dw.sql_job(script)
    assert len(results) == 1
    table = read_parts(out)
    assert table.column_names == ["wstart", "auction", "total"]
    rows = sorted((r["wstart"], r["auction"], r["total"]) for r in table.to_pylist())
    assert rows == [(datetime(1970, 1, 1, 0, 0, 0), 1, 40), (datetime(1970, 1, 1, 0, 0, 0), 2, 20),
                    (datetime(1970, 1, 1, 0, 0, 10), 1, 5), (datetime(1970, 1, 1, 0, 0, 20), 2, 15)]


def test_csv_source_reads_declared_types(tmp_path):
    path = tmp_path / "bids.csv"
    path.write_text("1970-01-01 00:00:00,1,10\n1970-01-01 00:00:01,2,30\n")
    out = dw.sql(ddl(path, "csv") + "SELECT auction, price FROM bids WHERE price > 15").collect()
    assert out.to_pylist() == [{"auction": 2, "price": 30}]


def test_registered_connector_and_insert_by_position(bids_parquet):
    made = []

    class Doubling:
        def source(self, spec: TableSpec) -> dw.Table:
            made.append(spec)
            return dw.read_parquet(bids_parquet, time=spec.time_column).select(
                "ts", "auction", price=dw.col("price") * 2)

        def sink(self, spec):
            return dw.sinks.Blackhole()

    register_connector("doubling", Doubling())
    script = plan_script("""
        CREATE TABLE d (ts TIMESTAMP(3), auction BIGINT, price BIGINT, WATERMARK FOR ts AS ts)
        WITH ('connector' = 'doubling', 'x.y' = 'z');
        CREATE TABLE sink (a BIGINT, p BIGINT) WITH ('connector' = 'doubling');
        INSERT INTO sink SELECT auction, price FROM d WHERE auction = 2;
    """)
    assert made[0].options == {"connector": "doubling", "x.y": "z"}
    assert made[0].time_column == "ts" and made[0].max_delay_ms == 0
    insert = script.inserts[0]
    assert insert.target == "sink" and insert.table.columns == ["a", "p"]
    assert sorted(insert.table.collect()["p"].to_pylist()) == [30, 40, 80]


def test_sql_with_tables_and_views_before_the_query():
    t = dw.from_arrow(pa.table({"k": [1, 2, 3]}))
    out = dw.sql("CREATE VIEW v AS SELECT k * 10 AS k10 FROM t;\nSELECT k10 FROM v WHERE k10 > 10", tables={"t": t})
    assert out.collect()["k10"].to_pylist() == [20, 30]


@pytest.mark.parametrize("batch", [1, 2, 100])
def test_a_join_of_two_aggregating_views(mode, batch):
    """Clicks per campaign joined with views per campaign, no window: each count's update takes back
    the joined row it had made (it was refused as 'joins over updating inputs are not supported')."""
    clicks = dw.from_arrow(pa.table({"campaign": [1, 2, 1, 3, 1, 2], "user": [7, 8, 7, 9, 9, 7]}), name="clicks")
    views = dw.from_arrow(pa.table({"campaign": [1, 1, 2, 1, 4], "user": [1, 2, 3, 4, 5]}), name="views")
    out = dw.sql("""CREATE VIEW c AS SELECT campaign, COUNT(*) AS clicks FROM clicks GROUP BY campaign;
    CREATE VIEW v AS SELECT campaign, COUNT(DISTINCT user) AS viewers FROM views GROUP BY campaign;
    SELECT c.campaign, clicks, viewers, CAST(clicks AS DOUBLE) / viewers AS ctr
    FROM c FULL JOIN v ON c.campaign = v.campaign""", tables={"clicks": clicks, "views": views})
    rows = out.collect(dw.Config(mode=mode, batch_size=batch)).to_pylist()
    assert sorted(tuple(r.values()) for r in rows if r["campaign"] is not None) == [(1, 3, 3, 1.0), (2, 2, 1, 2.0),
                                                                                      (3, 1, None, None)]
    assert [r for r in rows if r["campaign"] is None] == [{"campaign": None, "clicks": None, "viewers": 1,
                                                           "ctr": None}]


@pytest.mark.parametrize(("tail", "match"), [
    ("CREATE TABLE o (a BIGINT) WITH ('connector' = 'nowhere');\nINSERT INTO o SELECT auction FROM bids;",
     r"line 3, column 13: table o: unknown connector 'nowhere'"),
    ("CREATE TABLE o (a BIGINT) WITH ('connector' = 'filesystem');\nINSERT INTO o SELECT auction FROM bids;",
     r"line 3, column 13: table o: connector 'filesystem' needs the option 'path'"),
    ("CREATE TABLE o (a BIGINT) WITH ('connector' = 'blackhole');\nINSERT INTO o SELECT auction, price FROM bids;",
     r"line 3, column 22: INSERT INTO o: the query has 2 columns, the table 1"),
    ("CREATE TABLE o (a VARCHAR) WITH ('connector' = 'blackhole');\nINSERT INTO o SELECT auction FROM bids;",
     r"line 3, column 22: INSERT INTO o: column a is string in the table, the query gives int64"),
    ("INSERT INTO nowhere SELECT auction FROM bids;", r"line 2, column 13: INSERT INTO nowhere: declare the table"),
    ("CREATE TABLE o (a BIGINT) WITH ('connector' = 'blackhole');\nINSERT INTO o SELECT auction FROM o;",
     r"line 3, column 35: table o: a blackhole table can only be written to"),
])
def test_script_errors(bids_parquet, tail, match):
    script = f"CREATE TABLE bids (ts TIMESTAMP(3), auction BIGINT, price BIGINT) WITH ('connector' = " \
             f"'filesystem', 'path' = '{bids_parquet}');\n" + tail
    with pytest.raises(SqlError, match=match):
        dw.sql_job(script)


def test_declared_type_must_match_the_source(bids_parquet):
    with pytest.raises(SqlError, match=r"line 2, column 19: table b: column 'price' is declared string but the "
                                       "source has int64"):
        dw.sql(f"CREATE TABLE b (price VARCHAR) WITH ('connector' = 'filesystem', 'path' = '{bids_parquet}');\n"
               "SELECT price FROM b")


def test_proctime_computed_column_is_a_lookup_time(bids_parquet):
    side = dw.from_arrow(pa.table({"k": [1, 2], "name": ["one", "two"]}), name="side")
    out = dw.sql(f"""
        CREATE TABLE bids (ts TIMESTAMP(3), auction BIGINT, price BIGINT, proc AS PROCTIME())
        WITH ('connector' = 'filesystem', 'path' = '{bids_parquet}');
        SELECT B.price, S.name FROM bids AS B JOIN side FOR SYSTEM_TIME AS OF B.proc AS S ON B.auction = S.k
        WHERE B.price > 25""", tables={"side": side}).collect()
    assert sorted(tuple(r.values()) for r in out.to_pylist()) == [(30, "one"), (40, "two")]


def test_processing_time_windows_are_refused_with_the_reason(bids_parquet):
    with pytest.raises(SqlError, match=r"line 9, column 68: TUMBLE over PROCTIME\(\) 'p': Darwin has no processing"):
        dw.sql(ddl(bids_parquet) + """CREATE VIEW B AS SELECT *, PROCTIME() AS p FROM bids;
        SELECT count(*) AS n FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p), INTERVAL '10' SECOND))
        GROUP BY window_start, window_end""")


def test_insert_widens_integers_to_a_double_column(bids_parquet):
    script = plan_script(ddl(bids_parquet) + "CREATE TABLE o (p DOUBLE) WITH ('connector' = 'blackhole');\n"
                                             "INSERT INTO o SELECT price FROM bids WHERE auction = 2;")
    out = script.inserts[0].table.collect()
    assert out.schema.field("p").type == pa.float64() and sorted(out["p"].to_pylist()) == [15.0, 20.0, 40.0]


def test_partitioned_filesystem_sink_writes_hive_style_directories(tmp_path, bids_parquet):
    out = tmp_path / "out"
    results = dw.sql_job(ddl(bids_parquet) + f"""
        CREATE TABLE o (price BIGINT, dt STRING, hm STRING) PARTITIONED BY (dt, hm)
        WITH ('connector' = 'filesystem', 'path' = 'file://{out}', 'format' = 'parquet');
        INSERT INTO o SELECT price, DATE_FORMAT(ts, 'yyyy-MM-dd'), DATE_FORMAT(ts, 'HH:mm:ss') FROM bids
        WHERE price >= 30;""")
    assert sorted(str(p.relative_to(out).parent) for p in results[0].files) == [
        "dt=1970-01-01/hm=00%3A00%3A01", "dt=1970-01-01/hm=00%3A00%3A12"]
    assert sorted(read_parts(out)["price"].to_pylist()) == [30, 40]


def test_the_sql_package_imports_by_its_dotted_name_and_dw_sql_still_runs_a_query():
    """darwin bound dw.sql to the function, which hid the package: `import darwin.sql.connectors as c` failed with
    "cannot import name 'connectors' from 'sql' (unknown location)"."""
    import darwin.sql.connectors as c
    import darwin.sql.kafka as k

    assert c.TableSpec is dw.sql.TableSpec and k.KafkaConnector.__module__ == "darwin.sql.kafka"
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1500], pa.timestamp("ms")), "k": [1, 2]}), time="ts")
    assert dw.sql("SELECT k * 10 AS k10 FROM t WHERE k > 1", tables={"t": t}).collect()["k10"].to_pylist() == [20]
    assert dw.sql.__call__.__doc__ == dw.sql.sql.__doc__


def test_unregistered_connector_is_loaded_from_its_entry_point(monkeypatch, bids_parquet):
    from darwin.sql import connectors

    class Parquetish:
        def source(self, spec):
            return dw.read_parquet(bids_parquet).select(*spec.names)

        def sink(self, spec):
            return dw.sinks.Blackhole()

    class EntryPoint:
        name = "from-entry-point"

        def load(self):
            return Parquetish()

    asked = []
    monkeypatch.setattr(connectors, "entry_points", lambda group, name: asked.append((group, name)) or [EntryPoint()])
    monkeypatch.delitem(connectors._REGISTRY, "from-entry-point", raising=False)
    out = dw.sql("CREATE TABLE t (price BIGINT) WITH ('connector' = 'from-entry-point');\nSELECT price FROM t "
                 "WHERE price > 30").collect()
    assert asked == [("darwin.connectors", "from-entry-point")]
    assert out["price"].to_pylist() == [40]
    monkeypatch.delitem(connectors._REGISTRY, "from-entry-point")


def _items(path, key):
    return f"""
    CREATE TABLE items (
        id BIGINT{' PRIMARY KEY NOT ENFORCED' if key == 'column' else ''},
        ts TIMESTAMP(3),
        {'PRIMARY KEY (id) NOT ENFORCED,' if key == 'table' else ''}
        WATERMARK FOR ts AS ts
    ) WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'parquet');
    """


@pytest.mark.parametrize("key", ["table", "column"])
def test_a_declared_primary_key_makes_a_join_keep_less(tmp_path, bids_parquet, key):
    items = tmp_path / "items.parquet"
    pq.write_table(pa.table({"id": [1, 2], "ts": pa.array([0, 0], pa.timestamp("ms"))}), items)
    query = dw.sql(ddl(bids_parquet) + _items(items, key) +
                   "SELECT b.auction, b.price FROM bids b JOIN items i ON b.auction = i.id")
    assert "right unique on the keys" in query.explain()
    assert sorted(query.collect().column("price").to_pylist()) == sorted(ROWS["price"])


def test_a_primary_key_is_not_enforced_and_names_declared_columns(tmp_path):
    enforced = _items(tmp_path / "x.parquet", "table").replace("NOT ENFORCED", "")
    with pytest.raises(SqlError, match="PRIMARY KEY must be declared NOT ENFORCED") as raised:
        dw.sql(enforced + "SELECT * FROM items")
    assert "line 5" in str(raised.value)
    unknown = _items(tmp_path / "x.parquet", "table").replace("PRIMARY KEY (id)", "PRIMARY KEY (nope)")
    with pytest.raises(SqlError, match="no column 'nope' in items"):
        dw.sql(unknown + "SELECT * FROM items")


# -- nothing a script says is dropped: dw.sql is Flink's sqlQuery, dw.sql_job its statement set ----------

def test_sql_refuses_an_insert_into_at_its_position_and_writes_nothing(tmp_path, bids_parquet):
    out = tmp_path / "out"
    script = ddl(bids_parquet) + f"""CREATE TABLE o (a BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}');
    INSERT INTO o SELECT auction FROM bids;
    SELECT auction FROM bids WHERE price > 1"""
    with pytest.raises(SqlError, match=r"^line 9, column 17: INSERT INTO o: dw.sql\(\) returns the table of the "
                                       r"script's query and runs nothing; run INSERT INTO statements with "
                                       r"dw.sql_job\(script\)"):
        dw.sql(script)
    assert not out.exists()


def test_sql_refuses_a_query_whose_rows_would_go_nowhere(bids_parquet):
    with pytest.raises(SqlError, match=r"^line 8, column 12: only the last statement of the script may be a query"):
        dw.sql(ddl(bids_parquet) + "SELECT price FROM bids;\n    SELECT auction FROM bids")


def test_sql_job_refuses_a_query_that_is_no_insert(tmp_path, bids_parquet):
    out = tmp_path / "out"
    script = ddl(bids_parquet) + f"""CREATE TABLE o (a BIGINT) WITH ('connector' = 'filesystem', 'path' = '{out}');
    INSERT INTO o SELECT auction FROM bids;
    SELECT auction FROM bids WHERE price > 1"""
    with pytest.raises(SqlError, match=r"^line 10, column 12: sql_job\(\) runs INSERT INTO statements"):
        dw.sql_job(script)
    assert not out.exists()  # refused before the INSERT ran


def test_a_path_rule_holds_sources_and_sinks_of_create_table(tmp_path, bids_parquet):
    seen = []

    def rule(path):
        seen.append(path)
        if ".." in path:
            raise ConfigError("the path leads outside")
        return str(tmp_path / path)

    script = plan_script("""CREATE TABLE o (a BIGINT) WITH ('connector' = 'filesystem', 'path' = 'out');
    INSERT INTO o SELECT auction FROM bids""", {"bids": dw.read_parquet(bids_parquet)}, paths=rule)
    assert seen == ["out"] and script.inserts[0].sink.path == tmp_path / "out"
    with pytest.raises(SqlError, match=r"^line 1, column 61: table o: the path leads outside$"):
        plan_script("CREATE TABLE o (a BIGINT) WITH ('connector' = 'filesystem', 'path' = '../o');", paths=rule)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_computed_columns_are_computed_as_rows_are_read(tmp_path, bids_parquet, mode):
    """Flink's computed columns (`price2 AS price * 2`, `t AS TO_TIMESTAMP(...)`) were refused: 'column 'price2'
    needs a type (computed columns other than PROCTIME() are not supported)'. They are an expression of the declared
    columns, in declared order, read by windows like any column, and never written by an INSERT (Flink's rule)."""
    out = tmp_path / "out"
    script = f"""
    CREATE TABLE bids (ts TIMESTAMP(3), auction BIGINT, doubled AS price * 2,
        day AS TO_TIMESTAMP(DATE_FORMAT(ts, 'yyyy-MM-dd')), price BIGINT,
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
    WITH ('connector' = 'filesystem', 'path' = '{bids_parquet}');
    CREATE TABLE copy (ts TIMESTAMP(3), price BIGINT, twice AS price * 2)
    WITH ('connector' = 'filesystem', 'path' = '{out}');
    """
    config = dw.Config(mode=mode)
    everything = dw.sql(script + "SELECT * FROM bids").collect(config)
    assert everything.column_names == ["ts", "auction", "doubled", "day", "price"]
    assert everything["doubled"].to_pylist() == [2 * p for p in ROWS["price"]]
    assert set(everything["day"].to_pylist()) == {datetime(1970, 1, 1)}
    windowed = dw.sql(script + "SELECT window_start, SUM(doubled) AS s FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), "
                               "INTERVAL '10' SECOND)) GROUP BY window_start, window_end").collect(config)
    assert windowed["s"].to_pylist() == [120, 90, 30]
    dw.sql_job(script + "INSERT INTO copy SELECT ts, price FROM bids WHERE price > 25", config=config)
    assert read_parts(out).column_names == ["ts", "price"]  # the computed column is not written
    assert dw.sql(script + "SELECT price, twice FROM copy").collect(config).to_pylist() == [
        {"price": 30, "twice": 60}, {"price": 40, "twice": 80}]


@pytest.mark.parametrize(("columns", "match"), [
    ("s STRING, ts AS UPPER(s), WATERMARK FOR ts AS ts", "line 1, column 33: WATERMARK FOR ts: event time is a "
                                                         "TIMESTAMP; ts is string"),
    ("s STRING, n AS s * 2", "line 1, column 32: computed column n: .* on string"),
    ("s STRING, n AS q + 1", "line 1, column 32: unknown column q; columns here: s"),
])
def test_computed_columns_are_checked_where_they_are_declared(columns, match):
    with pytest.raises(SqlError, match=match):
        dw.sql(f"CREATE TABLE u ({columns}) WITH ('connector' = 'blackhole');\nSELECT 1 AS x")


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_a_watermark_on_a_computed_column_is_kept_where_rows_are_read(tmp_path, mode):
    """Flink's commonest DDL, `ts AS TO_TIMESTAMP(s)` with `WATERMARK FOR ts`, was refused ('ts is a computed
    column'). The time is computed as the source's rows are read, so windows over it are what they are over
    the same times stored as a TIMESTAMP column: the same windows, the same late rows, at any batch size."""
    rng = __import__("random").Random(5)
    times = [1_700_000_000_000 + i * 400 + rng.randrange(-3000, 3000) // 1000 * 1000 for i in range(120)]
    text = [datetime.fromtimestamp(t / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S") for t in times]
    keys = [i % 3 for i in range(120)]
    pq.write_table(pa.table({"s": text, "k": keys}), tmp_path / "text.parquet")
    pq.write_table(pa.table({"ts": pa.array(times, pa.timestamp("ms")), "k": keys}), tmp_path / "typed.parquet")
    window = ("SELECT window_start, k, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE {}, DESCRIPTOR(ts), INTERVAL '5' SECOND)) "
              "GROUP BY window_start, window_end, k")
    computed = dw.sql(f"""CREATE TABLE e (s STRING, k BIGINT, ts AS TO_TIMESTAMP(s),
        WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/text.parquet');
        """ + window.format("e"))
    typed = dw.sql(f"""CREATE TABLE e (ts TIMESTAMP(3), k BIGINT, WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
        WITH ('connector' = 'filesystem', 'path' = '{tmp_path}/typed.parquet');
        """ + window.format("e"))
    for batch_size in (1, 16, 1000):
        config = dw.Config(mode=mode, batch_size=batch_size)
        got, expected = computed.execute(config), typed.execute(config)
        assert got.table.equals(expected.table) and got.table.num_rows > 20
        assert got.metrics["late_rows"] == expected.metrics["late_rows"] > 0


# -- SET and RESET: Flink's session configuration -----------------------------------------------------------
IDLE = pa.table({"ts": pa.array([0, 5_000, 20_000, 40_000, 60_000, 61_000], pa.timestamp("ms")),
                 "k": [1, 2, 2, 2, 1, 1], "v": [10, 20, 30, 40, 50, 60]})  # key 1 is idle from 0 s to 60 s


def idle_keys():
    return dw.from_arrow(IDLE, time="ts", name="t")


@pytest.mark.parametrize("setting", ["SET 'table.exec.state.ttl' = '10 s';", "SET table.exec.state.ttl = 10s;",
                                     "set 'table.exec.state.ttl' = '10000';"])
def test_a_state_ttl_set_forgets_idle_groups_as_the_api_state_ttl_does(mode, setting):
    """An updating aggregation under SET 'table.exec.state.ttl' forgets key 1 while it is idle, so its
    row at 60 s counts from zero (+I), as group_by(...).agg(..., state_ttl=) does; without it, +U 2."""
    query = "SELECT k, COUNT(*) AS n, SUM(v) AS total FROM t GROUP BY k"
    config = dw.Config(mode=mode, batch_size=1)
    expiring = dw.sql(f"{setting}\n{query}", tables={"t": idle_keys()}).changelog(config)
    api = idle_keys().group_by("k").agg(n=dw.count(), total=dw.sum("v"), state_ttl="10s").changelog(config)
    kept = dw.sql(query, tables={"t": idle_keys()}).changelog(config)
    assert expiring.to_pylist() == api.to_pylist()
    assert [r for r in expiring.to_pylist() if r["k"] == 1][1] == {"k": 1, "n": 1, "total": 50, "op": "+I"}
    assert [r for r in kept.to_pylist() if r["k"] == 1][2] == {"k": 1, "n": 2, "total": 60, "op": "+U"}


def test_a_state_ttl_set_forgets_deduplicated_keys_as_the_api_state_ttl_does(mode):
    query = """SELECT ts, k, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) AS rn FROM t)
               WHERE rn = 1"""
    config = dw.Config(mode=mode, batch_size=1)
    expiring = dw.sql(f"SET 'table.exec.state.ttl' = '10 s';\n{query}", tables={"t": idle_keys()}).changelog(config)
    api = idle_keys().deduplicate(on="k", state_ttl="10s").changelog(config)
    assert expiring.to_pylist() == api.to_pylist()
    # keeping the first, only the first row writes: each key is kept again once 10 s past its first row
    assert [r["v"] for r in expiring.to_pylist()] == [10, 20, 40, 50, 60]
    assert [r["v"] for r in dw.sql(query, tables={"t": idle_keys()}).changelog(config).to_pylist()] == [10, 20]


def explained(script, **tables):
    return dw.sql(script, tables=tables or {"t": idle_keys(), "u": idle_keys()}).explain().split("== optimized")[0]


def test_a_state_ttl_set_reaches_the_operators_keeping_state_per_key_and_no_others():
    """Updating aggregations, regular joins and top-Ns take it; windows and interval joins free their
    state as time passes and take none; views planned before the SET take it, as Flink plans a
    statement's job with the session's TTL."""
    plan = explained("""CREATE VIEW counts AS SELECT k, COUNT(*) AS n FROM t GROUP BY k;
    SET 'table.exec.state.ttl' = '1 h';
    CREATE VIEW top AS SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn
                                         FROM t) WHERE rn <= 2;
    CREATE VIEW windows AS SELECT k, window_start, COUNT(*) AS w FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts),
                                     INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;
    CREATE VIEW near AS SELECT t.k, t.v FROM t, u WHERE t.k = u.k AND u.ts BETWEEN t.ts AND t.ts + INTERVAL '1' SECOND;
    SELECT c.k, c.n, top.v FROM counts c JOIN top ON c.k = top.k
    UNION ALL SELECT k, w, 0 FROM windows UNION ALL SELECT k, v, 0 FROM near""")
    assert plan.count("state_ttl=3600000ms") == 3, plan
    for line in plan.splitlines():
        if any(kind in line for kind in ("GroupAggregate", "TopN", "Join inner regular")):
            assert "state_ttl=3600000ms" in line, line
        if line.lstrip().startswith("Aggregate") or "interval" in line:
            assert "state_ttl" not in line, line


def test_a_state_ttl_applies_to_the_statements_after_it_until_reset(tmp_path):
    sets = {"": None, "SET 'table.exec.state.ttl' = '1 min';": 60_000, "SET 'table.exec.state.ttl' = '0 ms';": None,
            "SET 'table.exec.state.ttl' = '2 min'; RESET 'table.exec.state.ttl';": None,
            "SET 'table.exec.state.ttl' = '2 min'; RESET;": None, "SET table.exec.state.ttl = 3h; SET;": 10_800_000}
    script = "CREATE TABLE o (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');\n" + "\n".join(
        f"{s}\nINSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k;" for s in sets)
    inserts = plan_script(script, {"t": idle_keys()}).inserts
    aggregations = [[n for n in walk(i.table.plan) if isinstance(n, GroupAggregate)][0] for i in inserts]
    assert [a.state_ttl_ms for a in aggregations] == list(sets.values())


def test_an_explicit_state_ttl_of_the_api_wins_over_the_set_one():
    counted = idle_keys().group_by("k").agg(n=dw.count(), state_ttl="5s")
    plan = explained("SET 'table.exec.state.ttl' = '1 h';\nSELECT k, n FROM c", c=counted)
    assert "state_ttl=5000ms" in plan and "3600000" not in plan


# -- STATE_TTL query hints (Flink 1.18+) ---------------------------------------------------------------------
JOIN = "SELECT {} a.k, a.v, b.v AS w FROM t a JOIN u b ON a.k = b.k"


@pytest.mark.parametrize(("sets", "hint", "ttl"), [
    ("", "/*+ STATE_TTL('t' = '10 s') */", "10s"),
    ("SET 'table.exec.state.ttl' = '1 h';", "/*+ STATE_TTL('x' = '10s'), STATE_TTL('x' = '1 h') */", "10s"),
    ("SET 'table.exec.state.ttl' = '10 s';", "/*+ STATE_TTL('x' = '1 h', 'x' = '0') */", None),  # 0: none
])
def test_a_state_ttl_hint_gives_an_aggregation_its_ttl_over_the_set_one(mode, sets, hint, ttl):
    """Flink's STATE_TTL hint names the aggregation's input (its alias where it has one) and wins over
    table.exec.state.ttl; within one hint the last value of a name counts, across hints the first."""
    source = "t" if "'t'" in hint else "t AS x"
    query = f"{sets}\nSELECT {hint} k, COUNT(*) AS n, SUM(v) AS total FROM {source} GROUP BY k"
    config = dw.Config(mode=mode, batch_size=1)
    hinted = dw.sql(query, tables={"t": idle_keys()}).changelog(config)
    api = idle_keys().group_by("k").agg(n=dw.count(), total=dw.sum("v"), state_ttl=ttl).changelog(config)
    assert hinted.to_pylist() == api.to_pylist()


@pytest.mark.parametrize(("hint", "sides"), [
    ("/*+ STATE_TTL('a' = '10 s') */", ("10s", None)),
    ("/*+ STATE_TTL('b' = '10 s', 'a' = '0') */", (None, "10s")),
    ("/*+ STATE_TTL('a' = '10 s', 'b' = '10 s') */", "10s"),
])
def test_a_state_ttl_hint_gives_each_side_of_a_join_its_own_ttl(mode, hint, sides):
    """Each side keeps its rows for its own TTL, as join(..., state_ttl=(left, right)) does; the
    right side's idle key 1 is forgotten only where the right side has a TTL."""
    config = dw.Config(mode=mode, batch_size=1)
    hinted = dw.sql(JOIN.format(hint), tables={"t": idle_keys(), "u": idle_keys()}).changelog(config)
    api = idle_keys().join(idle_keys(), on=[("k", "k")], state_ttl=sides).select(
        "k", "v", w=dw.col("v_right")).changelog(config)
    assert hinted.to_pylist() == api.to_pylist()
    kept = dw.sql(JOIN.format(""), tables={"t": idle_keys(), "u": idle_keys()}).changelog(config)
    assert len(hinted) < len(kept)
    left, right = sides if isinstance(sides, tuple) else (sides, sides)
    pairs = {(r["v"], r["w"]) for r in hinted.to_pylist()}  # key 1's rows: 10 at 0 s, 50 and 60 from 60 s
    assert ((60, 10) in pairs) == (right is None) and ((10, 60) in pairs) == (left is None)


def test_a_hinted_side_keeps_its_ttl_and_the_other_takes_the_set_one():
    """A side the hint does not name takes table.exec.state.ttl, as Flink's; in a join of joins the
    hint names the first join's inputs and the next join's right input only."""
    plan = explained("SET 'table.exec.state.ttl' = '1 h';\nSELECT /*+ STATE_TTL('b' = '1 min', 'c' = '0') */ "
                     "a.k FROM t a JOIN u b ON a.k = b.k JOIN u c ON a.k = c.k")
    joins = [line.strip() for line in plan.splitlines() if "Join" in line]
    assert joins == ["Join inner regular on [col('k') = col('k')] state_ttl=3600000ms state_ttl of right=never",
                     "Join inner regular on [col('k') = col('k')] state_ttl=3600000ms state_ttl of right=60000ms"]


def test_a_state_ttl_hint_leaves_windows_and_interval_joins_as_flink_does():
    """Operators that free their state as time passes read no TTL, hinted or not (Flink's too)."""
    plan = explained("""SELECT /*+ STATE_TTL('t' = '1 h') */ k, window_start, COUNT(*) AS w
        FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)) AS t GROUP BY k, window_start, window_end""")
    assert "state_ttl" not in plan
    plan = explained("SELECT /*+ STATE_TTL('t' = '1 h', 'u' = '1 h') */ t.k FROM t, u "
                     "WHERE t.k = u.k AND u.ts BETWEEN t.ts AND t.ts + INTERVAL '1' SECOND")
    assert "interval" in plan and "state_ttl" not in plan


@pytest.mark.parametrize(("query", "match"), [
    ("SELECT /*+ STATE_TTL('t' = '1 h') */ k, COUNT(*) AS n FROM t AS x GROUP BY k",
     r"line 1, column 22: STATE_TTL names 't', which is no input .*its alias where it has one.*here: x\)"),
    ("SELECT /*+ STATE_TTL('a' = '1 h', 'c' = '1 h') */ a.k FROM t a JOIN u b ON a.k = b.k",
     r"line 1, column 35: STATE_TTL names 'c', which is no input .*here: a, b\)"),
    ("SELECT /*+ STATE_TTL('t' = '1 h') */ k FROM t", r"line 1, column 22: .*here: none: it has no join and no "
                                                      r"GROUP BY"),
    ("SELECT k FROM (SELECT /*+ STATE_TTL('t' = '1 h') */ k FROM t) GROUP BY k", r"line 1, column 37: .*here: none"),
    ("SELECT /*+ STATE_TTL('t' = 'soon') */ k, COUNT(*) FROM t GROUP BY k",
     r"line 1, column 28: STATE_TTL\('t' = 'soon'\): expected a duration"),
    ("SELECT\n  /*+ STATE_TTL() */ k, COUNT(*) FROM t GROUP BY k",
     r"line 2, column 7: STATE_TTL needs at least one 'input' = 'duration' pair"),
    ("SELECT /*+ STATE_TTL('t') */ k, COUNT(*) FROM t GROUP BY k",
     r"line 1, column 22: STATE_TTL takes 'input' = 'duration' pairs"),
    ("SELECT\n  /*+ BROADCAST(a) */ 1 AS one", r"line 2, column 7: a SELECT needs FROM"),  # placed in the text
    ("SELECT /*+ LOOKUP('table' = 'u') */ k, COUNT(*) FROM t GROUP BY k",
     r"line 1, column 12: the hint LOOKUP\('table' = 'u'\) is not supported"),
    ("SELECT /*+ INDEX */ k FROM t", r"line 1, column 8: the hint INDEX is not supported"),  # kept as text
    ("SELECT /*+ 1 + */ k FROM t", r"line 1, column 8: the hint 1 \+ is not supported"),
    # sqlglot makes a hint only after a token: one opening a script was a comment, dropped unread
    ("/*+ STATE_TTL('t' = '1 h') */ SELECT k FROM t", r"^line 1, column 1: a hint /\*\+ \.\.\. \*/ goes right after "
                                                      r"SELECT"),
    ("-- a note\n  /* more */ /*+ note */\nSELECT k FROM t", r"^line 2, column 14: a hint /\*\+ \.\.\. \*/ goes"),
    ("/*+ note */", r"^line 1, column 1: a hint /\*\+ \.\.\. \*/ goes right after SELECT"),
    # a hint of several lines is placed where it opens, not where it ends
    ("SELECT k FROM t WHERE /*+ STATE_TTL(\n  't' = '1 h') */ k > 1",
     r"^line 1, column 23: a hint /\*\+ \.\.\. \*/ goes right after SELECT"),
    ("SELECT k FROM t AS x\n  /*+ OPTIONS(\n'a' = 'b') */", r"^line 2, column 3: a table hint follows the table's "
                                                           r"name, before its alias"),
    ("SELECT /*+ STATE_TTL('t' = '1 h') */ k, COUNT(DISTINCT v) AS d FROM t GROUP BY k",
     r"line 1, column 22: STATE_TTL for 't': agg: state_ttl with a distinct count"),
    ("SELECT /*+ STATE_TTL('c' = '1 h') */ n, COUNT(*) AS m FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) c "
     "GROUP BY n", r"line 1, column 22: STATE_TTL for 'c': agg: state_ttl over an updating"),
])
def test_a_state_ttl_hint_flink_or_darwin_refuses_is_refused_at_its_position(query, match):
    with pytest.raises(SqlError, match=match):
        dw.sql(query, tables={"t": idle_keys(), "u": idle_keys()})


def test_flinks_batch_join_strategy_hints_are_ignored_as_in_a_streaming_job():
    hinted = dw.sql(JOIN.format("/*+ BROADCAST(a), SHUFFLE_HASH(b) */"), tables={"t": idle_keys(), "u": idle_keys()})
    plain = dw.sql(JOIN.format(""), tables={"t": idle_keys(), "u": idle_keys()})
    assert hinted.explain() == plain.explain()


@pytest.fixture
def later_bids(tmp_path):
    """Other bids than ``bids_parquet``'s, as Parquet and as Flink's CSV (no header): another file, or
    the same topic read from another position."""
    rows = {"ts": [3_000, 4_000, 14_000, 31_000], "auction": [2, 1, 2, 3], "price": [7, 9, 11, 13]}
    parquet, csv = tmp_path / "later.parquet", tmp_path / "later.csv"
    pq.write_table(pa.table({"ts": pa.array(rows["ts"], pa.timestamp("ms")), "auction": rows["auction"],
                             "price": rows["price"]}), parquet)
    csv.write_text("".join(f"{datetime.fromtimestamp(t / 1000, UTC):%Y-%m-%d %H:%M:%S},{a},{p}\n"
                           for t, a, p in zip(*rows.values())))
    return {"parquet": parquet, "csv": csv}


def rows_of(table, config):
    return sorted(tuple(r.values()) for r in table.collect(config).to_pylist())


WINDOWED = ("SELECT window_start, auction, SUM(price) AS total FROM TABLE(TUMBLE(TABLE {table}, DESCRIPTOR(ts), "
            "INTERVAL '10' SECOND)) GROUP BY window_start, window_end, auction")


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_options_hints_read_a_table_as_declared_with_the_merged_options(mode, bids_parquet, later_bids, fmt):
    """Flink's dynamic table options (`FROM t /*+ OPTIONS('k' = 'v') */`) were dropped silently, so the hinted
    query read the declared file: other rows, no error. The hint's options override or add to the WITH options
    for that reference, which reads what a table declared with the merged options reads (its watermark too)."""
    config = dw.Config(mode=mode)
    hint = f"/*+ OPTIONS('path' = '{later_bids[fmt]}'" + (", 'format' = 'csv') */" if fmt == "csv" else ") */")
    hinted = dw.sql(ddl(bids_parquet) + WINDOWED.format(table=f"bids {hint}"))
    declared = dw.sql(ddl(later_bids[fmt], fmt, name="later") + WINDOWED.format(table="later"))
    assert rows_of(hinted, config) == rows_of(declared, config)
    assert rows_of(hinted, config) != rows_of(dw.sql(ddl(bids_parquet) + WINDOWED.format(table="bids")), config)
    plain = f"SELECT auction, price FROM bids {hint} WHERE price > 8"
    assert rows_of(dw.sql(ddl(bids_parquet) + plain), config) == [(1, 9), (2, 11), (3, 13)]


def test_one_table_hinted_twice_differently_is_two_sources(mode, bids_parquet, later_bids):
    """A self-join of a table read from two positions (Flink's `kafka_table1 /*+ OPTIONS(...) */ t1 JOIN
    kafka_table1 t2`): each reference reads its own options; the same options read one source."""
    config = dw.Config(mode=mode)
    query = ("SELECT a.auction, a.price, b.price AS other FROM {left} a JOIN {right} b ON a.auction = b.auction "
             "WHERE a.price < b.price")
    hint = f"/*+ OPTIONS('path' = '{later_bids['parquet']}') */"
    hinted = dw.sql(ddl(bids_parquet) + query.format(left="bids", right=f"bids {hint}"))
    declared = dw.sql(ddl(bids_parquet) + ddl(later_bids["parquet"], name="later")
                      + query.format(left="bids", right="later"))
    assert rows_of(hinted, config) == rows_of(declared, config) == [(1, 5, 9)]
    assert [s.name for s in sources(hinted)] == ["bids.parquet", "later.parquet"]
    twice = dw.sql(ddl(bids_parquet) + query.format(left=f"bids {hint}", right=f"bids {hint}"))
    assert [s.name for s in sources(twice)] == ["later.parquet"]
    as_declared = dw.sql(ddl(bids_parquet) + query.format(left="bids", right=f"bids /*+ OPTIONS('path' = "
                                                                               f"'{bids_parquet}') */"))
    assert [s.name for s in sources(as_declared)] == ["bids.parquet"]


def sources(table):
    """The distinct sources ``table`` reads, in plan order."""
    return list({id(n.source): n.source for n in walk(table.plan) if isinstance(n, Scan)}.values())


def test_options_hints_of_an_insert_target_write_where_the_merged_table_writes(mode, tmp_path, bids_parquet):
    """`INSERT INTO t /*+ OPTIONS(...) */ SELECT ...` wrote to the declared path and format."""
    declared_path, hinted_path = tmp_path / "declared", tmp_path / "hinted"
    script = ddl(bids_parquet) + f"""
    CREATE TABLE o (auction BIGINT, price BIGINT) WITH ('connector' = 'filesystem', 'path' = '{declared_path}');
    INSERT INTO o /*+ OPTIONS('path' = '{hinted_path}', 'format' = 'csv') */ (price, auction)
    SELECT price, auction FROM bids WHERE price > 12;
    """
    dw.sql_job(script, config=dw.Config(mode=mode))
    assert not declared_path.exists()
    read_back = f"CREATE TABLE r (auction BIGINT, price BIGINT) WITH ('connector' = 'filesystem', 'path' = " \
                f"'{hinted_path}', 'format' = 'csv');\nSELECT * FROM r"
    assert rows_of(dw.sql(read_back), dw.Config(mode=mode)) == [(1, 30), (2, 15), (2, 20), (2, 40)]


def test_options_hints_reach_a_window_functions_table_and_a_state_ttl_hint_names_the_reference(bids_parquet,
                                                                                               later_bids):
    hint = f"/*+ OPTIONS('path' = '{later_bids['parquet']}') */"
    windowed = dw.sql(ddl(bids_parquet) + WINDOWED.format(table=f"bids {hint}"))
    assert [s.name for s in sources(windowed)] == ["later.parquet"]
    counted = dw.sql(ddl(bids_parquet) + f"SELECT /*+ STATE_TTL('b' = '1 h') */ auction, COUNT(*) AS n "
                                         f"FROM bids {hint} AS b GROUP BY auction")
    assert sorted(tuple(r.values()) for r in counted.collect().to_pylist()) == [(1, 1), (2, 2), (3, 1)]
    assert [n.state_ttl_ms for n in walk(counted.plan) if isinstance(n, GroupAggregate)] == [3_600_000]
    twice = dw.sql(ddl(bids_parquet) + "SELECT price FROM bids /*+ OPTIONS('format' = 'csv', 'format' = 'parquet') */")
    assert sorted(twice.collect()["price"].to_pylist()) == sorted(ROWS["price"])  # in one OPTIONS, the last value


@pytest.mark.parametrize(("query", "match"), [
    ("SELECT price FROM bids /*+ OPTIONS('path' = 'x', 'source.monitor-interval' = '1 s') */",
     r"^line 8, column 54: OPTIONS of table bids: connector 'filesystem' has no option 'source.monitor-interval' "
     r"\(it takes 'csv.field-delimiter', 'format', 'path'\)$"),
    ("SELECT price FROM bids /*+ OPTIONS('format' = 'orc') */",
     r"^line 8, column 32: bids /\*\+ OPTIONS\('format' = 'orc'\) \*/: table bids: format 'orc' is not supported"),
    ("SELECT price FROM bids /*+ OPTIONS('path' = '{missing}') */",
     r"^line 8, column 32: bids /\*\+ OPTIONS\('path' = '.*missing.parquet'\) \*/: Parquet file .* does not exist"),
    ("SELECT price FROM bids /*+ OPTIONS() */", r"^line 8, column 32: OPTIONS needs at least one 'key' = 'value'"),
    ("SELECT price FROM bids /*+ OPTIONS('format' = 1) */", r"^line 8, column 40: OPTIONS takes 'key' = 'value' "
                                                           r"pairs of strings"),
    ("SELECT price FROM bids /*+ OPTIONS('format' = 'csv'), STATE_TTL('bids' = '1d') */",
     r"^line 8, column 59: the table hint STATE_TTL\('bids' = '1d'\) is not supported: STATE_TTL is a query hint"),
    ("SELECT price FROM bids /*+ LOOKUP('table' = 'bids') */",
     r"^line 8, column 32: the table hint LOOKUP\('table' = 'bids'\) is not supported: a table takes OPTIONS"),
    ("SELECT price FROM bids /*+ OPTIONS('format' = 'csv', 'format' = 'parquet'), OPTIONS('path' = 'x') */",
     r"^line 8, column 81: a second OPTIONS hint of one table: Flink reads only the first"),
    ("SELECT price FROM bids /*+ OPTIONS('format' = 'csv') */ /*+ OPTIONS('path' = 'x') */",
     r"^line 8, column 65: a second OPTIONS hint of one table"),
    ("SELECT price FROM bids /*+ INDEX */", r"^line 8, column 28: the table hint INDEX is not supported"),
    ("SELECT price FROM bids /*+ OPTIONS */", r"^line 8, column 28: the table hint OPTIONS is not supported"),
    ("CREATE VIEW v AS SELECT * FROM bids;\nSELECT price FROM v /*+ OPTIONS('format' = 'csv') */",
     r"^line 9, column 25: OPTIONS hints apply to the tables of CREATE TABLE; 'v' is a view"),
    ("WITH w AS (SELECT * FROM bids) SELECT price FROM w /*+ OPTIONS('format' = 'csv') */",
     r"^line 8, column 60: OPTIONS hints apply to the tables of CREATE TABLE; 'w' is a view"),
    ("SELECT k FROM given /*+ OPTIONS('format' = 'csv') */", r"^line 8, column 29: .*'given' is a view .*a table "
                                                            r"given to dw.sql"),
    ("SELECT price FROM bids b /*+ OPTIONS('format' = 'csv') */",
     r"^line 8, column 30: a table hint follows the table's name, before its alias"),
    ("SELECT price /*+ OPTIONS('format' = 'csv') */ FROM bids", r"^line 8, column 18: a hint /\*\+ \.\.\. \*/ goes "
                                                               r"right after SELECT .* or right after a table's name"),
    ("SELECT price FROM bids WHERE price > 1 /*+ OPTIONS('format' = 'csv') */",
     r"^line 8, column 44: a hint /\*\+ \.\.\. \*/ goes right after SELECT"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '1' SECOND)) /*+ OPTIONS('format' = 'csv') */",
     r"^line 8, column 86: a table hint follows a table's name .*not a table function"),
    ("SELECT price FROM nothing /*+ OPTIONS('format' = 'csv') */", r"^line 8, column 23: unknown table 'nothing'"),
])
def test_options_hints_flink_or_darwin_refuses_are_refused_at_their_position(tmp_path, bids_parquet, query, match):
    query = query.format(missing=tmp_path / "missing.parquet")
    with pytest.raises(SqlError, match=match):
        dw.sql(ddl(bids_parquet) + query, tables={"given": dw.from_arrow(pa.table({"k": [1]}))}).collect()


def test_options_hints_of_an_insert_target_are_refused_at_their_position(tmp_path, bids_parquet):
    script = ddl(bids_parquet) + f"""CREATE TABLE o (price BIGINT)
    WITH ('connector' = 'filesystem', 'path' = '{tmp_path}');
    INSERT INTO o /*+ OPTIONS('format' = 'avro') */ SELECT price FROM bids;"""
    with pytest.raises(SqlError, match=r"^line 10, column 23: o /\*\+ OPTIONS\('format' = 'avro'\) \*/: table o: "
                                       r"format 'avro' is not supported"):
        dw.sql_job(script)
    with pytest.raises(SqlError, match=r"^line 10, column 58: OPTIONS of table o: connector 'blackhole' has no "
                                       r"option 'path' \(it takes none\)"):
        dw.sql_job(script.replace("'format' = 'avro'", "'connector' = 'blackhole', 'path' = 'x'"))


def test_a_path_rule_holds_the_paths_of_options_hints(tmp_path, bids_parquet):
    """A deployment's query.sql keeps its paths under its directory: a hinted 'path' as a declared one."""
    def rule(path):
        if ".." in path:
            raise ConfigError("the path leads outside")
        return str(tmp_path / path)

    pq.write_table(pq.read_table(bids_parquet), tmp_path / "b.parquet")
    script = plan_script(ddl("b.parquet") + "CREATE TABLE o (p BIGINT) WITH ('connector' = 'filesystem', "
                                            "'path' = 'out');\nINSERT INTO o /*+ OPTIONS('path' = 'elsewhere') */ "
                                            "SELECT price FROM bids /*+ OPTIONS('path' = 'b.parquet') */",
                         paths=rule)
    assert script.inserts[0].sink.path == tmp_path / "elsewhere"
    for hinted in ("INSERT INTO o /*+ OPTIONS('path' = '../x') */ SELECT price FROM bids",
                   "INSERT INTO o SELECT price FROM bids /*+ OPTIONS('path' = '../x') */"):
        with pytest.raises(SqlError, match=r"^line 9, column \d+: table (o|bids): the path leads outside$"):
            plan_script(ddl("b.parquet") + "CREATE TABLE o (p BIGINT) WITH ('connector' = 'filesystem', "
                                           "'path' = 'out');\n" + hinted, paths=rule)


def test_an_option_the_connector_does_not_read_is_refused_where_the_table_is_read_or_written(tmp_path, bids_parquet):
    """A WITH option Darwin's connector does not read (Flink's 'csv.null-literal') was ignored: the file was read
    as if it were not there. Flink's factories refuse an option they do not know; so does Darwin now."""
    declared = ddl(bids_parquet, "csv").replace("'format' = 'csv'", "'format' = 'csv', 'csv.null-literal' = 'n/a'")
    with pytest.raises(SqlError, match=r"^line 8, column 23: table bids: connector 'filesystem' has no option "
                                       r"'csv.null-literal' \(it takes 'csv.field-delimiter', 'format', 'path'\)$"):
        dw.sql(declared + "SELECT price FROM bids")
    with pytest.raises(SqlError, match=r"^line 2, column 13: table o: connector 'blackhole' has no option 'path'"):
        dw.sql_job("CREATE TABLE o (a BIGINT) WITH ('connector' = 'blackhole', 'path' = 'x');\n"
                   "INSERT INTO o SELECT auction FROM b", tables={"b": dw.read_parquet(bids_parquet)})


CSV_ROWS = [("2024-01-01 00:00:00", 1, 10), ("2024-01-01 00:00:01", 2, 20)]


@pytest.mark.parametrize(("option", "delimiter"), [("';'", ";"), ("'\\t'", "\t"), ("','", ",")])
def test_a_csv_tables_field_delimiter_reads_and_writes_its_files(mode, tmp_path, option, delimiter):
    """'csv.field-delimiter' was refused (and before that ignored: the file was read with commas). Flink's CSV
    format splits and writes fields at it, '\\t' spelling a tab; so does Darwin's filesystem connector."""
    source, written = tmp_path / "in.csv", tmp_path / "out"
    source.write_text("".join(delimiter.join(map(str, row)) + "\n" for row in CSV_ROWS))
    delimited = f"'format' = 'csv', 'csv.field-delimiter' = {option}"
    script = ddl(source, "csv").replace("'format' = 'csv'", delimited) \
        + ddl(written, "csv", name="o").replace("'format' = 'csv'", delimited)
    read = dw.sql(script + "SELECT auction, price FROM bids")
    assert rows_of(read, dw.Config(mode=mode)) == [(1, 10), (2, 20)]
    dw.sql_job(script + "INSERT INTO o SELECT ts, auction, price * 2 FROM bids", config=dw.Config(mode=mode))
    lines = sorted(line for f in written.glob("**/*.csv") for line in f.read_text().splitlines())
    assert [line.split(delimiter) for line in lines] == [[f"{t}.000", str(a), str(p * 2)] for t, a, p in CSV_ROWS]
    assert rows_of(dw.sql(script + "SELECT auction, price FROM o"), dw.Config(mode=mode)) == [(1, 20), (2, 40)]


# what a Flink DDL of a filesystem table carries to roll, compact and commit its files: no row changes
FLINK_FILE_TUNING = """, 'sink.rolling-policy.file-size' = '128MB', 'sink.rolling-policy.rollover-interval' = '15 min',
    'sink.rolling-policy.inactivity-interval' = '5 min', 'sink.rolling-policy.check-interval' = '1 min',
    'auto-compaction' = 'true', 'compaction.file-size' = '256MB', 'sink.parallelism' = '4',
    'sink.shuffle-by-partition.enable' = 'true', 'sink.partition-commit.trigger' = 'partition-time',
    'sink.partition-commit.delay' = '1 h', 'sink.partition-commit.watermark-time-zone' = 'UTC',
    'sink.partition-commit.policy.kind' = 'success-file', 'sink.partition-commit.success-file.name' = '_DONE',
    'partition.time-extractor.kind' = 'default', 'partition.time-extractor.timestamp-pattern' = '$dt $hr:00:00',
    'partition.time-extractor.timestamp-formatter' = 'yyyy-MM-dd HH:mm:ss', 'source.report-statistics' = 'NONE')"""


def tuned(declared, fmt):
    with_tuning = declared.replace(f"'format' = '{fmt}')", f"'format' = '{fmt}'" + FLINK_FILE_TUNING)
    assert with_tuning != declared
    return with_tuning


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_flink_options_that_only_tune_files_are_taken_and_change_no_row(mode, tmp_path, bids_parquet, fmt):
    """A Flink DDL's rolling, compaction and partition-commit options were refused since connectors name the
    options they read; they say how Flink's part files are cut and committed, not which rows: Darwin takes
    them and reads and writes what the table without them does."""
    config = dw.Config(mode=mode)
    plain_out, tuned_out = tmp_path / "plain", tmp_path / "tuned"
    query = "INSERT INTO o SELECT ts, auction, price FROM bids WHERE price > 10"
    dw.sql_job(ddl(bids_parquet) + ddl(plain_out, fmt, name="o") + query, config=config)
    dw.sql_job(tuned(ddl(bids_parquet), "parquet") + tuned(ddl(tuned_out, fmt, name="o"), fmt) + query, config=config)
    read = "SELECT auction, price FROM o"
    assert rows_of(dw.sql(tuned(ddl(tuned_out, fmt, name="o"), fmt) + read), config) \
        == rows_of(dw.sql(ddl(plain_out, fmt, name="o") + read), config) == [(1, 30), (2, 15), (2, 20), (2, 40)]


@pytest.mark.parametrize(("options", "match"), [
    ("'format' = 'csv', 'source.monitor-interval' = '10 s'", r"has no option 'source.monitor-interval'"),
    ("'format' = 'csv', 'csv.ignore-parse-errors' = 'true'", r"has no option 'csv.ignore-parse-errors'"),
    ("'format' = 'csv', 'json.fail-on-missing-field' = 'false'", r"has no option 'json.fail-on-missing-field'"),
    ("'format' = 'csv', 'partition.default-name' = 'none'", r"has no option 'partition.default-name'"),
    ("'format' = 'parquet', 'csv.field-delimiter' = ';'",
     r"table bids: 'csv.field-delimiter' is an option of the csv format; this table's format is 'parquet'$"),
    ("'format' = 'csv', 'csv.field-delimiter' = ';;'", r"'csv.field-delimiter' = ';;': a delimiter is one character"),
    ("'format' = 'csv', 'csv.field-delimiter' = '\\n'", r"a delimiter is one character other than a quote"),
])
def test_filesystem_options_that_change_rows_and_are_not_read_are_refused(bids_parquet, options, match):
    """What Flink's filesystem connector reads differently under an option Darwin cannot honour (a directory
    watched for new files, rows with parse errors skipped, another null partition's name) is refused."""
    with pytest.raises(SqlError, match=r"^line 8, column 23: .*" + match):
        dw.sql(ddl(bids_parquet).replace("'format' = 'parquet'", options) + "SELECT price FROM bids").collect()


BLACKHOLE = "CREATE TABLE o (k BIGINT, n BIGINT) WITH ('connector' = 'blackhole');\n"


def test_parallelism_and_checkpoint_interval_set_in_the_script_reach_the_run(tmp_path):
    """SET wins over the caller's Config (Flink's session SET over flink-conf.yaml)."""
    script = BLACKHOLE + "INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k;\n"
    sets = "SET 'parallelism.default' = '2';\nSET 'execution.checkpointing.interval' = '1 ms';\n"
    config = dw.Config(batch_size=1, parallelism=1, checkpoint_dir=str(tmp_path / "checkpoints"))
    [first] = dw.sql_job(script, tables={"t": idle_keys()}, config=config)
    [second] = dw.sql_job(sets + script, tables={"t": idle_keys()},
                          config=config.replace(checkpoint_dir=str(tmp_path / "other")))
    assert first.metrics["checkpoints"] == 1  # the caller's 10 s: only the one at the end
    assert second.metrics["checkpoints"] > 3
    assert [p.get("workers_most", p["workers"]) for p in first.metrics["pipelines"]][0] == 1
    assert [p.get("workers_most", p["workers"]) for p in second.metrics["pipelines"]][0] == 2


@pytest.mark.parametrize(("sets", "changes"), [
    ("SET 'parallelism.default' = '3';", {"parallelism": 3}),
    ("SET 'parallelism.default' = '3'; SET 'table.exec.resource.default-parallelism' = '2';", {"parallelism": 2}),
    ("SET 'table.exec.resource.default-parallelism' = '-1'; SET parallelism.default = 4;", {"parallelism": 4}),
    ("SET 'execution.checkpointing.interval' = '1 min';", {"checkpoint_interval": "60000ms"}),
    ("SET 'table.exec.source.idle-timeout' = '5 s';", {"idle_timeout": "5000ms"}),
    ("SET 'table.exec.source.idle-timeout' = '0';", {"idle_timeout": None}),
    ("SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE';", {"pre_aggregate": False}),
    ("SET 'parallelism.default' = '3'; RESET 'parallelism.default';", {}),
    ("SET 'pipeline.name' = 'bids per auction'; SET 'table.exec.mini-batch.enabled' = 'true';"
     "SET 'table.exec.mini-batch.allow-latency' = '5 s'; SET 'table.exec.mini-batch.size' = '5000';"
     "SET 'execution.runtime-mode' = 'streaming'; SET 'table.local-time-zone' = 'UTC';"
     "SET 'state.backend.incremental' = 'true';", {}),
    ("SET 'state.backend.type' = 'rocksdb';", {"state": "rocksdb"}),
    ("SET 'state.backend' = 'HashMap';", {"state": "memory"}),  # Flink reads the name in any case
    ("SET state.backend = rocksdb; SET 'state.backend.type' = 'hashmap';", {"state": "memory"}),  # the newer key
    ("SET 'state.backend.type' = 'rocksdb'; SET 'state.backend.rocksdb.localdir' = 'rocks';",
     {"state": "rocksdb", "state_path": "rocks"}),
    ("SET 'execution.checkpointing.dir' = 'file:///data/checkpoints';", {"checkpoint_dir": "/data/checkpoints"}),
    ("SET 'state.checkpoints.dir' = 'old'; SET 'execution.checkpointing.dir' = 'new';", {"checkpoint_dir": "new"}),
    ("SET 'state.checkpoints.dir' = 'file:/data/c'; RESET 'state.checkpoints.dir';", {}),
])
def test_settings_give_the_config_fields_of_the_same_meaning(tmp_path, sets, changes):
    caller = dw.Config(parallelism=1, checkpoint_dir=str(tmp_path), idle_timeout="1s", state="mmap",
                       state_path=str(tmp_path / "state"))
    insert = plan_script(f"{sets}\n{BLACKHOLE}INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k",
                         {"t": idle_keys()}).inserts[0]
    assert insert.settings.applied(caller) == caller.replace(**changes)


def test_a_script_sets_its_state_backend_and_where_it_checkpoints(tmp_path):
    """SET 'state.backend.type', 'state.backend.rocksdb.localdir', 'execution.checkpointing.dir' and
    the interval run the job on RocksDB with checkpoints there, with no Config given: the rows are
    those of the memory backend, and a second run resumes the checkpoint."""
    script = BLACKHOLE + "INSERT INTO o SELECT k, COUNT(*) FROM t GROUP BY k;\n"
    sets = (f"SET 'state.backend.type' = 'rocksdb';\nSET 'state.backend.rocksdb.localdir' = '{tmp_path / 'rocks'}';\n"
            f"SET 'execution.checkpointing.dir' = 'file://{tmp_path / 'checkpoints'}';\n"
            "SET 'execution.checkpointing.interval' = '1 ms';\n")
    expected = idle_keys().group_by("k").agg(n=dw.count()).collect(dw.Config(batch_size=1))
    [run] = dw.sql_job(sets + script, tables={"t": idle_keys()}, config=dw.Config(batch_size=1))
    assert run.metrics["checkpoints"] > 3 and any((tmp_path / "checkpoints").iterdir())
    assert any((tmp_path / "rocks").iterdir())
    [again] = dw.sql_job(sets + script, tables={"t": idle_keys()}, config=dw.Config(batch_size=1))
    assert again.resumed_from is not None
    planned = plan_script(sets + script, {"t": idle_keys()}).inserts[0]
    on_rocksdb = planned.settings.applied(dw.Config(batch_size=1)).replace(
        checkpoint_dir=None, checkpoint_interval=None, state_path=str(tmp_path / "collected"))
    assert on_rocksdb.state == "rocksdb"
    assert planned.table.collect(on_rocksdb).sort_by("k").equals(expected.sort_by("k"))


@pytest.mark.parametrize(("sets", "match"), [
    ("SET 'table.exec.state.ttl' = 'an hour';", r"line 1, column 30: SET 'table.exec.state.ttl' = 'an hour': "
                                                r"expected a duration"),
    ("SET 'table.exec.state.ttl' = '1.5 s';", r"line 1, column 30: .*expected a duration"),
    ("SET 'table.exec.state.ttl' = '1500 micros';", r"line 1, column 30: .*not a whole number of milliseconds"),
    ("\n  SET 'parallelism.default' = '0';", r"line 2, column 31: SET 'parallelism.default' = '0': expected an "
                                            r"integer >= 1"),
    ("SET parallelism.default = two;", r"line 1, column 27: .*expected an integer >= 1"),
    ("SET 'execution.checkpointing.interval' = '0 s';", r"line 1, column 42: .*expected a positive duration"),
    ("SET 'execution.runtime-mode' = 'batch';", r"line 1, column 32: .*Flink's batch mode gives only the final rows"),
    ("SET 'table.local-time-zone' = 'Europe/Berlin';", r"line 1, column 31: .*Darwin computes times in UTC"),
    ("SET 'table.exec.mini-batch.enabled' = 'yes';", r"line 1, column 39: .*expected 'true' or 'false'"),
    ("SET 'table.exec.sink.not-null-enforcer' = 'DROP';", r"line 1, column 5: SET "
                                                          r"'table.exec.sink.not-null-enforcer': Darwin does not know"),
    ("SET 'pipeline.name' = 'x';\nRESET state.ttl;", r"line 2, column 7: RESET 'state.ttl': Darwin does not know"),
    ("SET 'table.exec.state.ttl' = 1 h;", r"line 1, column 1: write SET 'key' = 'value'"),
    ("SET 'table.exec.state.ttl' = '1 h'\nSELECT 1 AS one;", r"line 1, column 1: .*a ';' ends the statement"),
    ("SET 'pipeline.name' = 'it''s';", r"line 1, column 1: write SET 'key' = 'value'"),
    ("SET 'execution.checkpointing.interval' = '10 s';",
     r"line 1, column 5: SET 'execution.checkpointing.interval': config key 'checkpoint_interval': needs "
     r"'checkpoint_dir'.*SET 'execution.checkpointing.dir'.*Config\(checkpoint_dir=...\)"),
    ("SET 'state.backend.type' = 'forst';", r"line 1, column 28: .*expected 'hashmap' or 'rocksdb'"),
    ("SET 'execution.checkpointing.dir' = 's3://bucket/checkpoints';",
     r"line 1, column 37: .*Darwin writes to local directories"),
    ("SET 'state.checkpoints.dir' = '';", r"line 1, column 31: .*expected a directory"),
    ("SET 'pipeline.name' = 'x';\nSET 'state.backend.type' = 'rocksdb';",
     r"line 2, column 5: SET 'state.backend.type': config key 'state_path': state backend 'rocksdb' keeps its "
     r"files there.*SET 'state.backend.rocksdb.localdir'"),
])
def test_bad_settings_are_refused_at_their_line_and_column_and_nothing_runs(tmp_path, sets, match):
    script = f"{sets}\nCREATE TABLE o (k BIGINT) WITH ('connector' = 'filesystem', 'path' = '{tmp_path / 'o'}');" \
             "\nINSERT INTO o SELECT k FROM t;"
    with pytest.raises(SqlError, match=match):
        dw.sql_job(script, tables={"t": idle_keys()})
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(("query", "match"), [
    ("SELECT k, v, SUM(v) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s FROM t",
     r"line 2, column 8: SET 'table.exec.state.ttl' \(line 1, column 5\) cannot apply to this statement: an OVER "
     r"window keeps its partitions' rows and takes no state TTL \(Flink clears an idle partition by a "
     r"processing-time timer"),
    ("SELECT n, COUNT(*) AS c FROM (SELECT k, COUNT(*) AS n FROM t GROUP BY k) GROUP BY n",
     r"line 2, column 8: .*agg: state_ttl over an updating"),
    ("SELECT k, COUNT(DISTINCT v) AS d FROM t GROUP BY k", r"line 2, column 8: .*state_ttl with a distinct count"),
])
def test_a_state_ttl_that_cannot_be_kept_is_refused_at_the_statement(query, match):
    with pytest.raises(SqlError, match=match):
        dw.sql(f"SET 'table.exec.state.ttl' = '1 h';\n{query}", tables={"t": idle_keys()})
    dw.sql(f"SET 'table.exec.state.ttl' = '1 h';\nRESET 'table.exec.state.ttl';\n{query}", tables={"t": idle_keys()})


def test_sql_refuses_a_setting_of_the_run_it_cannot_pass_on():
    with pytest.raises(SqlError, match=r"line 2, column 5: SET 'parallelism.default': dw.sql\(\) returns a table, "
                                       r"which runs with the Config given to its collect\(\)"):
        dw.sql("SET 'pipeline.name' = 'x';\nSET 'parallelism.default' = '2';\nSELECT k FROM t",
               tables={"t": idle_keys()})


@pytest.mark.parametrize("state", ["memory", "mmap"])
def test_each_insert_of_a_script_checkpoints_in_a_directory_of_its_own(tmp_path, bids_parquet, state):
    """Each INSERT INTO is a job of its own (as in Flink's SQL client, whose jobs checkpoint under
    their own ids): they shared the Config's checkpoint_dir, so the second failed as 'written by a
    different query', or, the same query, resumed the first's finished checkpoint and wrote nothing."""
    script = ddl(bids_parquet) + "".join(
        f"CREATE TABLE o{n} (auction BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = "
        f"'{tmp_path / f'o{n}'}', 'format' = 'parquet');\n" for n in (1, 2, 3)) + """
    INSERT INTO o1 SELECT auction, COUNT(*) FROM bids GROUP BY auction;
    INSERT INTO o2 SELECT auction, price FROM bids WHERE price > 15;
    INSERT INTO o3 SELECT auction, COUNT(*) FROM bids GROUP BY auction;"""
    state_path = str(tmp_path / "state") if state != "memory" else None
    config = dw.Config(checkpoint_dir=str(tmp_path / "checkpoints"), state=state, state_path=state_path)
    results = dw.sql_job(script, config=config)
    assert [r.metrics["input_rows"] for r in results] == [6, 6, 6]
    assert [read_parts(tmp_path / f"o{n}").num_rows for n in (1, 2, 3)] == [2, 3, 2]
    again = dw.sql_job(script, config=config)  # each finished job resumes its own checkpoint
    assert [r.resumed_from is not None for r in again] == [True, True, True]
    assert [read_parts(tmp_path / f"o{n}").num_rows for n in (1, 2, 3)] == [2, 3, 2]
