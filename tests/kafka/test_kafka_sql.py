"""Flink SQL's 'kafka' connector: tables of topics read and written by a SQL script, as the fluent API's
Kafka source and sink do; what Darwin cannot do as Flink does is refused at the table's use."""

import json
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from kafka_helpers import consume_all, java_partition, json_values, produce
from test_kafka_io import BIDS, as_rows, bid_records

import darwin as dw
from darwin.errors import SinkError, SqlError
from darwin.io.kafka import KafkaSink
from darwin.sql import plan_script

SOURCE = """CREATE TABLE bids (
  auction BIGINT, price BIGINT, bidder STRING,
  ts TIMESTAMP(3) METADATA FROM 'timestamp', part INT METADATA FROM 'partition' VIRTUAL,
  `offset` BIGINT METADATA VIRTUAL,
  WATERMARK FOR ts AS ts - INTERVAL '0' SECOND
) WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{servers}',
  'properties.group.id' = 'sql-{topic}', 'scan.startup.mode' = '{mode}', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'json');
"""
SINK = """CREATE TABLE counts (auction BIGINT, auction_text STRING, n BIGINT, top BIGINT,
  window_start TIMESTAMP(3), window_end TIMESTAMP(3))
WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{servers}', 'format' = 'json',
  'key.format' = 'raw', 'key.fields' = 'auction_text', 'sink.delivery-guarantee' = 'at-least-once');
"""
WINDOWED = """INSERT INTO counts
SELECT auction, CAST(auction AS STRING), COUNT(*), MAX(price), window_start, window_end
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY auction, window_start, window_end;
"""


def test_a_sql_job_reads_a_topic_and_writes_one_as_the_fluent_api_does(broker, topic):
    source, by_sql, by_api = topic(2), topic(2), topic(2)
    records = bid_records(600, 2)
    produce(broker.bootstrap, source, records)
    script = SOURCE.format(topic=source, servers=broker.bootstrap, mode="earliest-offset") \
        + SINK.format(topic=by_sql, servers=broker.bootstrap) + WINDOWED
    [result] = dw.sql_job(script, config=dw.Config(batch_size=100))
    fluent = dw.read_kafka(source, broker.bootstrap, BIDS, max_delay="0s") \
        .window(dw.Tumble("1s", on="timestamp")).group_by("auction") \
        .agg(n=dw.count(), top=dw.max("price")) \
        .select("auction", auction_text=dw.col("auction").cast("string"), n="n", top="top", window_start="window_start",
                window_end="window_end")
    fluent.sink(KafkaSink(by_api, broker.bootstrap, key="auction_text")) \
        .run(dw.Config(batch_size=100))
    got, expected = consume_all(broker.bootstrap, by_sql), consume_all(broker.bootstrap, by_api)
    assert result.metrics["input_rows"] == 600 and len(got) > 13
    assert as_rows(json_values(got)) == as_rows(json_values(expected))
    assert sorted((key, part) for _, key, part in got) == sorted((key, part) for _, key, part in expected)


def test_an_options_hint_changes_where_the_topic_is_read_from(broker, topic):
    name = topic(1)
    produce(broker.bootstrap, name, bid_records(50, 1))
    script = SOURCE.format(topic=name, servers=broker.bootstrap, mode="latest-offset")
    assert dw.sql(script + "SELECT auction FROM bids").collect().num_rows == 0
    hinted = script + "SELECT auction, ts, part, `offset` FROM bids /*+ OPTIONS('scan.startup.mode' = " \
                      "'earliest-offset') */"
    got = dw.sql(hinted).collect()
    assert got.num_rows == 50
    assert got.column("offset").to_pylist() == list(range(50)) and set(got.column("part").to_pylist()) == {0}
    assert got.column("ts").cast("int64").to_pylist() == [ts for *_, ts in bid_records(50, 1)]


def test_flink_options_map_onto_the_kafka_source_and_sink(tmp_path):
    script = _script(", 'properties.group.id' = 'g', 'properties.fetch.wait.max.ms' = '20', 'value.format' = 'csv'")
    source = dw.sql(script.replace("'format' = 'json', ", "")).plan
    while not hasattr(source, "source"):
        source = source.input
    kafka = source.source.inner
    assert (kafka.topic, kafka.bootstrap_servers, kafka.group, kafka.format) == ("bids", "127.0.0.1:9", "g", "csv")
    assert (kafka.start, kafka.bounded, kafka.metadata) == ("group", False, ())  # Flink's defaults: group, unbounded
    assert kafka.config == {"fetch.wait.max.ms": "20"}
    script = SINKS.format(path=_rows(tmp_path), connector="kafka", columns="", options=", 'key.format' = 'raw', "
                          "'key.fields' = 's', 'properties.linger.ms' = '1'")
    sink = plan_script(script).inserts[0].sink
    assert (sink.topic, sink.key, sink.guarantee, sink.format) == ("o", "s", "at_least_once", "json")
    assert sink.config == {"linger.ms": "1"}  # keys partitioned as Java does: KafkaSink's default


def test_how_many_tasks_write_is_taken_and_ignored():
    """Flink's 'sink.parallelism' tunes the writers, never which partition a keyed record goes to."""
    assert dw.sql(_script(", 'sink.parallelism' = '4'")).explain() == dw.sql(_script()).explain()


def _script(source_options: str = "", columns: str = "", query: str = "SELECT auction FROM bids") -> str:
    return (f"CREATE TABLE bids (auction BIGINT{columns}) WITH ('connector' = 'kafka', 'topic' = 'bids', "
            f"'properties.bootstrap.servers' = '127.0.0.1:9', 'format' = 'json'{source_options});\n{query}")


@pytest.mark.parametrize("script, position, problem", [
    (_script(", 'json.ignore-parse-errors' = 'true'"), (2, 21), "connector 'kafka' has no option "
                                                                  "'json.ignore-parse-errors'"),
    (_script(", 'scan.startup.mode' = 'timestamp', 'scan.startup.timestamp-millis' = '1'"), (2, 21),
     "'scan.startup.mode' = 'timestamp' is not supported"),
    (_script(", 'scan.startup.mode' = 'specific-offsets'"), (2, 21),
     "'scan.startup.mode' = 'specific-offsets' is not supported"),
    (_script(", 'scan.bounded.mode' = 'group-offsets'"), (2, 21), "'scan.bounded.mode' = 'group-offsets' is not"),
    (_script().replace("'topic' = 'bids', ", ""), (2, 21), "connector 'kafka' needs the option 'topic'"),
    (_script().replace("'topic' = 'bids'", "'topic' = 'a;b'"), (2, 21), "take one topic"),
    (_script(", 'topic-pattern' = 'b.*'"), (2, 21), "'topic-pattern' is not supported"),
    (_script().replace("'json'", "'avro-confluent', 'avro-confluent.url' = 'http://r'"), (2, 21),
     "has no option 'avro-confluent.url'"),
    (_script().replace("'json'", "'avro'"), (2, 21), "'format' = 'avro' is not supported in SQL"),
    (_script().replace("'json'", "'debezium-json'"), (2, 21), "changelog formats"),
    (_script(", 'properties.auto.offset.reset' = 'latest'"), (2, 21), "'properties.auto.offset.reset' = 'latest'"),
    (_script(", 'key.format' = 'raw', 'key.fields' = 'k'"), (2, 21), "'key.format' is not supported on a table"),
    (_script(columns=", h STRING METADATA FROM 'headers'"), (2, 21), "column h METADATA FROM 'headers': connector "
                                                                     "'kafka' cannot fill it (its metadata keys are "
                                                                     "'timestamp', 'partition', 'offset')"),
    (_script(columns=", PRIMARY KEY (auction) NOT ENFORCED"), (2, 21), "takes no PRIMARY KEY"),
    (_script(query="SELECT auction FROM bids /*+ OPTIONS('scan.startup.mode' = 'oldest') */"), (2, 30),
     "'scan.startup.mode' = 'oldest'; use one of"),
    (_script(query="SELECT auction FROM bids /*+ OPTIONS('sink.buffer-flush.max-rows' = '2') */"), (2, 38),
     "has no option 'sink.buffer-flush.max-rows'"),
])
def test_what_the_connector_cannot_do_is_refused_where_the_table_is_used(script, position, problem):
    with pytest.raises(SqlError) as e:
        dw.sql(script)
    assert str(e.value).startswith(f"line {position[0]}, column {position[1]}:"), str(e.value)
    assert problem in str(e.value)


def _rows(directory):
    path = directory / "in.parquet"
    pq.write_table(pa.table({"a": [1, 1], "s": ["x", "y"]}), path)
    return path


SINKS = """CREATE TABLE src (a BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = '{path}');
CREATE TABLE out (a BIGINT, s STRING{columns}) WITH ('connector' = '{connector}', 'topic' = 'o',
  'properties.bootstrap.servers' = '127.0.0.1:9', 'format' = 'json'{options});
INSERT INTO out SELECT a, s FROM src;
"""


@pytest.mark.parametrize("connector, columns, options, problem", [
    ("kafka", "", ", 'sink.delivery-guarantee' = 'exactly-once'", "'exactly-once' is not supported in SQL"),
    ("kafka", "", ", 'key.format' = 'json', 'key.fields' = 's'", "'key.format' = 'json' is not supported"),
    ("kafka", "", ", 'key.fields' = 'a', 'key.format' = 'raw'", "one STRING column"),
    ("kafka", "", ", 'key.fields' = 's'", "'key.format' is missing"),
    ("kafka", "", ", 'key.format' = 'raw', 'key.fields' = 's', 'value.fields-include' = 'EXCEPT_KEY'",
     "'value.fields-include' = 'EXCEPT_KEY' is not supported"),
    ("kafka", "", ", 'sink.partitioner' = 'round-robin'", "'sink.partitioner' = 'round-robin' is not supported"),
    ("kafka", ", ts TIMESTAMP(3) METADATA FROM 'timestamp'", "", "Darwin's Kafka sink writes no metadata columns"),
    ("kafka", "", ", 'value.format' = 'raw'", "'format' and 'value.format' both name"),
    ("upsert-kafka", ", PRIMARY KEY (a) NOT ENFORCED", ", 'key.format' = 'json'", "has no option 'format'"),
])
def test_a_sink_table_the_kafka_sink_cannot_write_is_refused_at_the_insert(tmp_path, connector, columns, options,
                                                                           problem):
    script = SINKS.format(path=_rows(tmp_path), connector=connector, columns=columns, options=options) \
        .replace("INSERT INTO out SELECT", "INSERT INTO out (a, s) SELECT")
    with pytest.raises(SqlError, match=rf"^line 4, column 13: .*{re.escape(problem)}"):
        dw.sql_job(script)


@pytest.mark.parametrize("columns, options, problem", [
    ("", ", 'key.format' = 'json'", "needs a PRIMARY KEY (...) NOT ENFORCED"),
    (", PRIMARY KEY (a) NOT ENFORCED", "", "needs the option 'key.format'"),
    (", PRIMARY KEY (a) NOT ENFORCED", ", 'key.format' = 'raw'", "'key.format' = 'raw' writes one STRING column; "
                                                                 "the key has a"),
    (", PRIMARY KEY (a) NOT ENFORCED", ", 'key.format' = 'avro'", "'key.format' = 'avro' is not supported"),
    (", PRIMARY KEY (a) NOT ENFORCED", ", 'key.format' = 'json', 'key.fields' = 'a'", "has no option 'key.fields'"),
])
def test_an_upsert_kafka_table_darwin_cannot_write_is_refused_at_the_insert(tmp_path, columns, options, problem):
    script = SINKS.format(path=_rows(tmp_path), connector="upsert-kafka", columns=columns, options=options) \
        .replace("'format' = 'json'", "'value.format' = 'json'")
    with pytest.raises(SqlError, match=rf"^line 4, column 13: .*{re.escape(problem)}"):
        dw.sql_job(script)


def test_a_raw_value_is_one_string_column(tmp_path):
    script = SINKS.format(path=_rows(tmp_path), connector="kafka", columns="", options="").replace("'json'", "'raw'")
    with pytest.raises(SqlError, match=r"^line 4, column 13: .*'raw' writes one STRING column .* has a int64, s "):
        dw.sql_job(script)


def test_an_updating_result_is_refused_by_a_kafka_table_before_it_runs(tmp_path):
    script = SINKS.format(path=_rows(tmp_path), connector="kafka", columns="", options="").replace(
        "SELECT a, s FROM src", "SELECT COUNT(*), s FROM src GROUP BY s")
    with pytest.raises(SinkError, match="a 'kafka' table takes appends only, as in Flink"):
        dw.sql_job(script)


UPSERT = """CREATE TABLE src (a BIGINT, s STRING) WITH ('connector' = 'filesystem', 'path' = '{path}');
CREATE TABLE counts (s STRING, n BIGINT, total BIGINT, PRIMARY KEY (s) NOT ENFORCED) WITH (
  'connector' = 'upsert-kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{servers}',
  'key.format' = '{key_format}', 'value.format' = 'json', 'sink.parallelism' = '2');
INSERT INTO counts SELECT s, COUNT(*) AS n, SUM(a) AS total FROM src GROUP BY s HAVING COUNT(*) < 40;
"""


@pytest.mark.parametrize("key_format, key_of", [("json", lambda s: json.dumps({"s": s}, separators=(",", ":"))),
                                                ("raw", lambda s: s)])
def test_an_updating_result_into_upsert_kafka_is_the_latest_row_per_key_and_tombstones(broker, topic, tmp_path,
                                                                                       key_format, key_of):
    """Flink's 'upsert-kafka' sink was refused. Each key's changes are keyed messages in its Java partition, in
    order; an update writes the new row only (no tombstone before it); a row leaving the result (its count
    reaching 40) is a tombstone; the topic compacted is the query's final table."""
    path = tmp_path / "in.parquet"
    n = 400
    pq.write_table(pa.table({"a": list(range(n)), "s": [f"k{i % 7}" if i < 250 else f"k{i % 3}" for i in range(n)]}),
                   path)
    name = topic(3)
    script = UPSERT.format(path=path, topic=name, servers=broker.bootstrap, key_format=key_format)
    dw.sql_job(script, config=dw.Config(batch_size=25))
    messages = consume_all(broker.bootstrap, name)
    latest = {}
    for value, key, part in messages:
        assert part == java_partition(key, 3)
        latest[key] = value
    query = script.split("INSERT INTO counts ")[1]
    final = dw.sql(script.split("INSERT INTO")[0] + query).collect()
    assert {k: json.loads(v) for k, v in latest.items() if v is not None} == \
        {key_of(r["s"]).encode(): r for r in final.to_pylist()}
    gone = {k for k, v in latest.items() if v is None}
    assert gone == {key_of(s).encode() for s in ("k0", "k1", "k2")}  # counted to 40: left the result
    tombstones = [k for v, k, _ in messages if v is None]
    assert sorted(tombstones) == sorted(gone)  # one each: an update writes no tombstone before its new row
    assert len(messages) > 3 * len(latest)
