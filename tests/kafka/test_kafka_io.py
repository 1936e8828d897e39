"""Kafka source and sink against a real Kafka-protocol broker (Tansu): decoding, per-partition event time,
idleness, offsets in checkpoints, and both sink guarantees."""

import json
import time
from collections import Counter
from datetime import datetime

import pyarrow as pa
import pytest
from crashes import run_until_done
from kafka_helpers import consume_all, java_murmur2, java_partition, json_values, produce

import darwin as dw
from darwin.errors import SinkError, SourceError
from darwin.io.kafka import KafkaSink, KafkaSource, codecs

BIDS = pa.schema([("auction", pa.int64()), ("price", pa.int64()), ("bidder", pa.string())])


def bid_records(n, partitions, start_ms=1_000):
    """(partition, value, key, timestamp) of n bids, spread over partitions by auction."""
    out = []
    for i in range(n):
        auction = i % 13
        out.append((auction % partitions, json.dumps({"auction": auction, "price": i, "bidder": f"b{i % 5}"}).encode(),
                    str(auction).encode(), start_ms + i * 10))
    return out


def windowed_counts(table):
    return table.window(dw.Tumble("1s", on="timestamp")).group_by("auction").agg(n=dw.count(), top=dw.max("price"))


def expected_counts(records):
    rows = [dict(json.loads(v), timestamp=ts) for _, v, _, ts in records]
    t = pa.table({"auction": [r["auction"] for r in rows], "price": [r["price"] for r in rows],
                  "timestamp": pa.array([r["timestamp"] for r in rows], pa.timestamp("ms"))})
    return windowed_counts(dw.from_arrow(t, time="timestamp")).collect()


def as_rows(table_or_dicts):
    """Rows as comparable text; a table's timestamps as the sink writes them (Flink's '1970-01-01 00:00:01')."""
    if isinstance(table_or_dicts, pa.Table):
        t = table_or_dicts
        for i, f in enumerate(t.schema):
            if pa.types.is_timestamp(f.type):
                t = t.set_column(i, f.name, codecs.text(t.column(i).combine_chunks()))
        rows = t.to_pylist()
    else:
        rows = table_or_dicts
    return Counter(json.dumps({k: str(v) for k, v in sorted(r.items())}) for r in rows)


def test_round_trip_kafka_to_darwin_to_kafka(broker, topic):
    source, sink = topic(4), topic(2)
    records = bid_records(5_000, 4)
    produce(broker.bootstrap, source, records)
    q = windowed_counts(dw.read_kafka(source, broker.bootstrap, BIDS, max_delay="0s"))
    result = q.sink(KafkaSink(sink, broker.bootstrap, key="auction")).run(dw.Config(batch_size=700))
    out = json_values(consume_all(broker.bootstrap, sink))
    expected = expected_counts(records)
    assert result.metrics["input_rows"] == 5_000 and result.metrics["late_rows"] == 0
    assert as_rows(out) == as_rows(expected)
    assert len(out) == expected.num_rows > 13


def test_metadata_columns_and_headers(broker, topic):
    name = topic(2)
    produce(broker.bootstrap, name, [(1, b'{"auction": 7, "price": 1, "bidder": "x"}', b"k7", 5_000, [("h", b"v")]),
                                     (0, b'{"auction": 8, "price": 2}', None, 6_000)])
    t = dw.read_kafka(name, broker.bootstrap, BIDS).collect().sort_by("auction")
    assert t.column("key").to_pylist() == ["k7", None]
    assert t.column("partition").to_pylist() == [1, 0]
    assert t.column("offset").to_pylist() == [0, 0]
    assert t.column("timestamp").cast(pa.int64()).to_pylist() == [5_000, 6_000]
    assert [None if h is None else json.loads(h) for h in t.column("headers").to_pylist()] == [{"h": "v"}, None]
    assert t.column("bidder").to_pylist() == ["x", None]


@pytest.mark.parametrize("fmt", ["json", "csv", "raw"])
def test_value_formats_decode_in_bulk(broker, topic, fmt):
    name = topic(1)
    rows = [(i, f"n,{i}" if fmt != "csv" else f'n "{i}"\nline', 1_000 + i) for i in range(300)]
    if fmt == "json":
        values = [json.dumps({"id": i, "s": s, "t": "1970-01-01 00:00:01.500"}).encode() for i, s, _ in rows]
        schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("t", pa.timestamp("ms"))])
    elif fmt == "csv":
        values = [f'{i},"{s.replace(chr(34), chr(34) * 2)}",1970-01-01 00:00:01.500'.encode() for i, s, _ in rows]
        schema = pa.schema([("id", pa.int64()), ("s", pa.string()), ("t", pa.timestamp("ms"))])
    else:
        values = [s.encode() for _, s, _ in rows]
        schema = None
    produce(broker.bootstrap, name, [(0, v, None, ts) for v, (_, _, ts) in zip(values, rows)])
    got = dw.read_kafka(name, broker.bootstrap, schema, format=fmt).collect()
    assert got.num_rows == 300
    if fmt == "raw":
        assert got.column("value").to_pylist() == [s for _, s, _ in rows]
    else:
        assert got.column("id").to_pylist() == list(range(300))
        assert got.column("s").to_pylist() == [s for _, s, _ in rows]
        assert set(got.column("t").cast(pa.int64()).to_pylist()) == {1_500}


FLINK_VALUES = {
    "csv": [b'0,1.0,true,"1970-01-01 00:00:00","a,b","","1970-01-01 00:00:01"',
            b'-3,NaN,,"1970-01-01 00:00:01.5","q""uote",,"1970-01-01 00:00:01.001"'],
    "json": [b'{"i":0,"f":1.0,"b":true,"t":"1970-01-01 00:00:00","s":"a,b","e":"","ts":"1970-01-01 00:00:01"}',
             b'{"i":-3,"f":"NaN","b":null,"t":"1970-01-01 00:00:01.5","s":"q\\"uote","e":null,'
             b'"ts":"1970-01-01 00:00:01.001"}']}


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_values_written_as_flink_writes_them_read_back_through_the_source(broker, topic, fmt):
    """The sink's CSV and JSON values (Flink's csv and json formats: Java's floats, Flink's timestamps, CSV text
    quoted only where Jackson quotes it, JSON strings escaped as Jackson escapes them) come back through the
    source as they were, every column type, NULL apart from the empty string."""
    rows = pa.table({
        "i": [0, -3, None, 42], "f": [1.0, float("nan"), float("-inf"), None],
        "b": [True, None, False, True], "t": pa.array([0, 1_500, None, 86_400_001], pa.timestamp("ms")),
        "s": ["a,b", 'q"uote', "two\nlines\r\n", None], "e": ["", None, " lead", "x" * 30],
        "ts": pa.array([1_000, 1_001, 1_002, 1_003], pa.timestamp("ms"))})
    name = topic(1)
    dw.from_arrow(rows, time="ts").sink(KafkaSink(name, broker.bootstrap, format=fmt, timestamp="ts")).run()
    assert [v for v, _, _ in consume_all(broker.bootstrap, name, quiet_s=0.5)][:2] == FLINK_VALUES[fmt]
    back = dw.read_kafka(name, broker.bootstrap, rows.schema, format=fmt, metadata=(), time="ts").collect()
    assert [[repr(v) for v in r.values()] for r in back.to_pylist()] == \
        [[repr(v) for v in r.values()] for r in rows.to_pylist()]


def test_a_bad_message_names_its_partition_and_offset(broker, topic):
    name = topic(1)
    produce(broker.bootstrap, name, [(0, b'{"auction": 1}', None, 1_000), (0, b"not json", None, 1_001)])
    with pytest.raises(SourceError, match=rf"^KafkaSource\('{name}'\) partition 0 offset 1: the value b'not json' is "
                                          r"not a JSON object"):
        dw.read_kafka(name, broker.bootstrap, BIDS).collect()


def test_a_csv_value_of_the_wrong_type_names_topic_partition_offset_and_column(broker, topic):
    name = topic(2)
    produce(broker.bootstrap, name, [(0, b"1,10,a", None, 1_000), (1, b"2,20,b", None, 1_000),
                                     (1, b"3,30,c", None, 1_001), (1, b"4,forty,d", None, 1_002)])
    with pytest.raises(SourceError, match=rf"^KafkaSource\('{name}'\) partition 1 offset 2: the value b'4,forty,d' "
                                          r"is not a CSV line .*: column 'price': .*int64: invalid value 'forty'$"):
        dw.read_kafka(name, broker.bootstrap, BIDS, format="csv").collect()


def test_partitions_keep_their_own_watermarks(broker, topic):
    """Partition 0 is written to the end before partition 1 starts, over the same event times: read in arrival
    order, every row of partition 1 would be late. The source serves the partition furthest behind first."""
    name = topic(2)
    first = [(0, json.dumps({"auction": 1, "price": i}).encode(), None, 1_000 + i * 10) for i in range(2_000)]
    second = [(1, json.dumps({"auction": 2, "price": i}).encode(), None, 1_000 + i * 10) for i in range(2_000)]
    produce(broker.bootstrap, name, first)
    produce(broker.bootstrap, name, second)
    source = KafkaSource(name, broker.bootstrap, schema=BIDS)
    batches = list(source.batches(("partition", "timestamp"), 500))
    assert [b.num_rows for b in batches] == [500] * 8
    assert all(set(b.column("partition").to_pylist()) == {0, 1} for b in batches)  # merged, not one after the other
    times = pa.Table.from_batches(batches).column("timestamp").cast(pa.int64()).to_pylist()
    assert times == sorted(times)  # neither partition runs ahead of the other
    result = windowed_counts(dw.from_source(source, time="timestamp", max_delay="0s")).execute(
        dw.Config(batch_size=500))
    assert result.metrics["late_rows"] == 0
    assert result.table.num_rows == 2 * 20 and set(result.table.column("n").to_pylist()) == {100}


def test_an_idle_partition_stops_holding_the_others_back(broker, topic):
    name = topic(2)
    produce(broker.bootstrap, name, [(0, b'{"auction": 1}', None, 1_000 + i) for i in range(10)])
    source = KafkaSource(name, broker.bootstrap, schema=BIDS, bounded=False, idle_timeout="800ms")
    started = time.monotonic()
    batches = source.batches(("auction", "partition"), 100)
    first = next(b for b in batches if b.num_rows)
    waited = time.monotonic() - started
    batches.close()
    assert first.column("partition").to_pylist() == [0] * 10
    assert waited >= 0.8  # partition 1 (nothing delivered: furthest behind) held it back until it was idle


def test_offsets_live_in_checkpoints_and_are_committed_to_the_group(broker, topic, tmp_path):
    from confluent_kafka import Consumer, TopicPartition

    name, out = topic(3), topic(1)
    records = bid_records(3_000, 3)
    produce(broker.bootstrap, name, records)
    config = dw.Config(batch_size=400, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")
    q = windowed_counts(dw.read_kafka(name, broker.bootstrap, BIDS, group="monitor"))
    q.sink(KafkaSink(out, broker.bootstrap)).run(config)
    manifest = json.loads(sorted((tmp_path / "chk").glob("chk-*/MANIFEST.json"))[-1].read_text())
    position = manifest["body"]["engine"]["sources"][0]["position"] if "body" in manifest else \
        manifest["engine"]["sources"][0]["position"]
    ends = Counter(p for p, _, _, _ in records)
    assert {int(p): v["offset"] for p, v in position["partitions"].items()} == dict(ends)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "monitor"})
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        committed = {tp.partition: tp.offset for tp in c.committed([TopicPartition(name, p) for p in range(3)],
                                                                   timeout=10)}
        if committed == dict(ends):
            break
        time.sleep(0.2)
    c.close()
    assert committed == dict(ends)


def test_exactly_once_sink_after_crashes_publishes_every_row_once(broker, topic, tmp_path, monkeypatch):
    source, sink = topic(2), topic(1)
    records = bid_records(6_000, 2)
    produce(broker.bootstrap, source, records)
    q = windowed_counts(dw.read_kafka(source, broker.bootstrap, BIDS, max_delay="0s"))
    config = dw.Config(batch_size=500, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="3 batches")

    def kafka_sink():
        return KafkaSink(sink, broker.bootstrap, guarantee="exactly_once", staging_dir=tmp_path / "stage")

    result = run_until_done(q, kafka_sink, config, monkeypatch, crashes=[4, 5, 2])
    assert result.resumed_from is not None
    out = json_values(consume_all(broker.bootstrap, sink))
    assert as_rows(out) == as_rows(expected_counts(records))
    assert list((tmp_path / "stage").glob("*.arrow")) == []


def test_a_timestamp_column_of_text_is_refused_before_the_run():
    """It failed mid-run with pyarrow's ArrowInvalid: Failed to parse string: '2024-01-01' as ... int64."""
    t = pa.table({"s": ["2024-01-01"], "ts": pa.array([5], pa.timestamp("ms"))})
    with pytest.raises(SinkError, match=r"^KafkaSink\('t'\)\(timestamp='s'\): the record timestamp comes from a "
                                        r"timestamp column .*; 's' is string$"):
        dw.from_arrow(t, time="ts").sink(KafkaSink("t", "127.0.0.1:1", timestamp="s"))


def test_a_key_is_written_as_the_value_writes_its_column(broker, topic):
    """Keys were Python's str() of each value: b'True' for a boolean (the value says true), and a timestamp as
    '1970-01-01 00:00:00.005000' where the value has '1970-01-01 00:00:00.005'."""
    rows = pa.table({"b": [True, False], "n": [7, None], "f": [1.5, 2.0],
                     "ts": pa.array([5, 6], pa.timestamp("ms"))})
    got = {}
    for key in ("b", "n", "f", "ts"):
        name = topic(1)
        dw.from_arrow(rows, time="ts").sink(KafkaSink(name, broker.bootstrap, key=key)).run()
        messages = consume_all(broker.bootstrap, name, quiet_s=0.5)
        got[key] = [k for _, k, _ in messages]
        for value, k, _ in messages:
            if k is not None:
                assert json.dumps(json.loads(value)[key]).strip('"').encode() == k
    assert got == {"b": [b"true", b"false"], "n": [b"7", None], "f": [b"1.5", b"2.0"],
                   "ts": [b"1970-01-01 00:00:00.005", b"1970-01-01 00:00:00.006"]}


def test_a_keyed_record_goes_to_the_partition_a_java_producer_gives_it(broker, topic):
    """The sink hashed keys with librdkafka's default partitioner (CRC32), so a key landed elsewhere than Flink's or
    any Java producer's puts it (murmur2), and elsewhere than the same job written in SQL; a producer setting
    still chooses another."""
    assert [java_murmur2(s.encode()) for s in ("21", "foobar", "abc")] == [-973932308, -790332482, 479470107]
    keys = pa.table({"k": [f"key-{i}" for i in range(60)], "ts": pa.array(range(60), pa.timestamp("ms"))})
    java, chosen = topic(4), topic(4)
    dw.from_arrow(keys, time="ts").sink(KafkaSink(java, broker.bootstrap, key="k")).run()
    got = {k: part for _, k, part in consume_all(broker.bootstrap, java, quiet_s=0.5)}
    assert got == {k.encode(): java_partition(k.encode(), 4) for k in keys.column("k").to_pylist()}
    dw.from_arrow(keys, time="ts").sink(KafkaSink(chosen, broker.bootstrap, key="k",
                                                  config={"partitioner": "consistent"})).run()
    crc = {k: part for _, k, part in consume_all(broker.bootstrap, chosen, quiet_s=0.5)}
    assert len(crc) == 60 and crc != got


def test_a_value_column_named_like_a_metadata_column_left_out_keeps_the_values(broker, topic):
    """metadata=(...) without 'timestamp' frees the name for a field of the value, as the clash error says; the
    source still wrote the record timestamp (and so 'key', 'offset', 'partition', 'headers') over that column."""
    name = topic(1)
    produce(broker.bootstrap, name, [(0, json.dumps({"timestamp": "2026-03-01 10:00:05", "key": "v", "offset": 9,
                                                     "partition": 8, "headers": "h"}).encode(), b"k", 1_000)])
    schema = pa.schema([("timestamp", pa.timestamp("ms")), ("key", pa.string()), ("offset", pa.int64()),
                        ("partition", pa.int64()), ("headers", pa.string())])
    row = dw.read_kafka(name, broker.bootstrap, schema, metadata=()).collect().to_pylist()[0]
    assert row == {"timestamp": datetime(2026, 3, 1, 10, 0, 5), "key": "v", "offset": 9, "partition": 8,
                   "headers": "h"}


def test_sink_settings_are_checked():
    with pytest.raises(SinkError, match="staging_dir"):
        KafkaSink("t", "127.0.0.1:1", guarantee="exactly_once")
    with pytest.raises(SinkError, match="guarantee"):
        KafkaSink("t", "127.0.0.1:1", guarantee="twice")
    with pytest.raises(SourceError, match="schema"):
        KafkaSource("t", "127.0.0.1:1", format="csv")
    with pytest.raises(SourceError, match="metadata"):
        KafkaSource("t", "127.0.0.1:1", schema=pa.schema([("offset", pa.int64())]))


def test_unbounded_job_reads_what_arrives_until_stopped(broker, topic, tmp_path):
    import threading

    source, sink = topic(2), topic(1)
    records = bid_records(4_000, 2)
    kafka = KafkaSource(source, broker.bootstrap, schema=BIDS, bounded=False, idle_timeout="10s",
                        poll_timeout="20ms")

    def feed():
        for i in range(0, len(records), 1_000):  # in four bursts while the job runs
            produce(broker.bootstrap, source, records[i:i + 1_000])
            time.sleep(0.3)
        time.sleep(1.0)
        kafka.stop()

    feeder = threading.Thread(target=feed)
    feeder.start()
    config = dw.Config(batch_size=300, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="200ms")
    q = windowed_counts(dw.from_source(kafka, time="timestamp", max_delay="0s"))
    result = q.sink(KafkaSink(sink, broker.bootstrap, guarantee="exactly_once", staging_dir=tmp_path / "stage")).run(
        config)
    feeder.join()
    assert result.metrics["input_rows"] == 4_000 and result.metrics["late_rows"] == 0
    assert result.metrics["checkpoints"] >= 3
    assert as_rows(json_values(consume_all(broker.bootstrap, sink))) == as_rows(expected_counts(records))


def test_a_finished_job_rerun_over_the_same_topic_adds_nothing(broker, topic, tmp_path):
    source, sink = topic(2), topic(1)
    records = bid_records(2_000, 2)
    produce(broker.bootstrap, source, records)
    config = dw.Config(batch_size=300, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")

    def run():
        q = windowed_counts(dw.read_kafka(source, broker.bootstrap, BIDS, max_delay="0s"))
        return q.sink(KafkaSink(sink, broker.bootstrap, guarantee="exactly_once",
                                staging_dir=tmp_path / "stage")).run(config)

    run()
    again = run()
    assert again.resumed_from is not None
    assert as_rows(json_values(consume_all(broker.bootstrap, sink))) == as_rows(expected_counts(records))
    produce(broker.bootstrap, source, bid_records(10, 2, start_ms=100_000))
    with pytest.raises(dw.errors.CheckpointError, match="finished job"):
        run()


def test_late_rows_are_refused_before_the_query_runs():
    t = pa.table({"ts": pa.array([1_000], pa.timestamp("ms")), "k": [1]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1s", on="ts"), late_output=True).group_by("k").agg(
        n=dw.count())
    with pytest.raises(SinkError, match="late rows"):
        q.sink(KafkaSink("t", "127.0.0.1:1")).run()


def test_a_publish_killed_halfway_is_completed_once_on_recovery(broker, topic, tmp_path):
    """A crash after the checkpoint, in the middle of publishing its epoch: the restarted sink re-commits the
    epoch, and rows the broker already shows (Tansu does not hide aborted transactions) are not sent twice."""
    from darwin.io.sinks import ResultSpec

    name = topic(2)
    batch = pa.record_batch({"id": list(range(100)), "s": [f"r{i}" for i in range(100)]})
    spec = ResultSpec(batch.schema)
    first = KafkaSink(name, broker.bootstrap, key="id", guarantee="exactly_once", staging_dir=tmp_path)
    first.open(spec, None, "job-1")
    first.write("result", batch)
    prepared = first.prepare(1)  # the checkpoint holding this is durable; then the process dies publishing it
    (tmp_path / "publishing-000001.json").write_text(json.dumps(first._ends()))
    first._producer.begin_transaction()
    first._produce(batch.slice(0, 40), (1, 0))
    assert first._producer.flush(10) == 0
    first._producer = None  # dies without committing
    second = KafkaSink(name, broker.bootstrap, key="id", guarantee="exactly_once", staging_dir=tmp_path)
    second.open(spec, prepared, "job-1")
    second.close()
    got = sorted(v["id"] for v in json_values(consume_all(broker.bootstrap, name)))
    assert got == list(range(100))
    assert list(tmp_path.iterdir()) == []


def _within(seconds, f):
    """f() run in a thread: its result, or a failure if it has not returned within ``seconds``."""
    import threading

    out = {}

    def run():
        try:
            out["value"] = f()
        except BaseException as e:  # noqa: BLE001 - re-raised below
            out["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert out, f"still running after {seconds} s"
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_a_bounded_read_ends_on_a_topic_written_in_transactions(broker, topic, tmp_path):
    """The last offset of a partition written in transactions is a commit marker, which no consumer is handed:
    the bounded read waited for it forever, so a job reading an exactly-once sink's topic (or any transactional
    producer's) never finished. """
    source, between = topic(2), topic(2)
    records = bid_records(400, 2)
    produce(broker.bootstrap, source, records)
    first = windowed_counts(dw.read_kafka(source, broker.bootstrap, BIDS, max_delay="0s"))
    first.sink(KafkaSink(between, broker.bootstrap, key="auction", guarantee="exactly_once",
                         staging_dir=tmp_path / "stage")).run(dw.Config(checkpoint_dir=str(tmp_path / "chk"),
                                                                        checkpoint_interval="1 batch", batch_size=100))
    schema = pa.schema([("auction", pa.int64()), ("n", pa.int64()), ("top", pa.int64())])
    got = _within(30, lambda: dw.read_kafka(between, broker.bootstrap, schema).collect())
    columns = ["auction", "n", "top"]
    assert as_rows(got.select(columns)) == as_rows(expected_counts(records).select(columns))


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_a_row_too_large_for_a_message_is_refused_by_name_before_its_checkpoint(broker, topic, tmp_path, guarantee):
    """At-least-once let confluent-kafka's bare KafkaException (MSG_SIZE_TOO_LARGE) out; exactly-once staged the
    row and failed only publishing it, after the checkpoint holding it was complete, so every restart failed again.
    Now both refuse the row with a SinkError naming its key, its size and the setting, before the checkpoint."""
    name = topic(1)
    rows = pa.table({"id": [1, 2], "s": ["small", "x" * 1_500_000], "ts": pa.array([1, 2], pa.timestamp("ms"))})
    sink = KafkaSink(name, broker.bootstrap, key="id", guarantee=guarantee, staging_dir=tmp_path / "stage")
    with pytest.raises(SinkError, match=r"the row with id='2' makes a message of 15000\d\d bytes, more than the "
                                        r"producer's message.max.bytes \(1000000\)"):
        dw.from_arrow(rows, time="ts").sink(sink).run(dw.Config(checkpoint_dir=str(tmp_path / "chk"), batch_size=1))
    if guarantee == "exactly_once":
        assert consume_all(broker.bootstrap, name, quiet_s=0.5) == []
    bigger = KafkaSink(name, broker.bootstrap, key="id", config={"message.max.bytes": 1_000_000_000},
                       staging_dir=tmp_path / "stage2")  # and a larger limit lets it through to the broker
    bigger._check_sizes(pa.record_batch(rows.select(["id", "s"]).to_batches()[0]))
