"""Scripts of CREATE TABLE ... WITH (...), CREATE VIEW and INSERT INTO: connectors, jobs, errors."""

from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import darwin as dw
from darwin.errors import ConfigError, SqlError
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
