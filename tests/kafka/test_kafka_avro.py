"""Avro values: the bulk decoder and encoder agree with fastavro both ways, refuse malformed payloads by
message, and carry a Kafka job end to end (plain and Confluent wire format); KafkaSource.lag()."""

import datetime
import io
import json
import threading

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_helpers import consume_all, produce

import darwin as dw
from darwin.errors import SinkError, SourceError
from darwin.io.kafka import KafkaSink, KafkaSource, avro

# -- random flat schemas and rows --------------------------------------------------------------

_SYMBOLS = ["RED", "GREEN", "BLUE"]
_TYPES = {  # avro type -> (values, Arrow type of the plain value)
    "boolean": (st.booleans(), pa.bool_()),
    "int": (st.integers(-(2**31), 2**31 - 1), pa.int32()),
    "long": (st.integers(-(2**63), 2**63 - 1), pa.int64()),
    "float": (st.floats(width=32, allow_nan=False), pa.float32()),
    "double": (st.floats(allow_nan=False), pa.float64()),
    "string": (st.text(max_size=20), pa.string()),
    "bytes": (st.binary(max_size=20), pa.binary()),
    "enum": (st.sampled_from(_SYMBOLS), pa.string()),
    "date": (st.integers(-700_000, 2_900_000), pa.date32()),
    "timestamp-millis": (st.integers(-6 * 10**13, 25 * 10**13), pa.timestamp("ms")),  # years 70..9900
    "timestamp-micros": (st.integers(-6 * 10**16, 25 * 10**16), pa.timestamp("us")),
    "null": (st.none(), pa.null()),
}


def _avro_type(name, i):
    if name == "enum":
        return {"type": "enum", "name": f"E{i}", "symbols": _SYMBOLS}
    if name == "date":
        return {"type": "int", "logicalType": "date"}
    if name.startswith("timestamp"):
        return {"type": "long", "logicalType": name}
    return name


@st.composite
def schemas_and_rows(draw):
    kinds = draw(st.lists(st.tuples(st.sampled_from(sorted(_TYPES)), st.sampled_from(["no", "first", "last"])),
                          min_size=1, max_size=8))
    fields = []
    for i, (kind, null) in enumerate(kinds):
        t = _avro_type(kind, i)
        if null != "no" and kind != "null":
            t = ["null", t] if null == "first" else [t, "null"]
        fields.append({"name": f"f{i}", "type": t})
    schema = {"type": "record", "name": "R", "fields": fields}
    rows = draw(st.lists(st.fixed_dictionaries({
        f"f{i}": (_TYPES[k][0] if n == "no" or k == "null" else st.none() | _TYPES[k][0])
        for i, (k, n) in enumerate(kinds)}), max_size=30))
    return schema, [k for k, _ in kinds], rows


def _plain(v):
    """A fastavro-read value as the plain number or text it stands for."""
    if isinstance(v, datetime.datetime):
        return v
    if isinstance(v, datetime.date):
        return (v - datetime.date(1970, 1, 1)).days
    return v


def _fastavro_bytes(schema, rows):
    parsed = fastavro.parse_schema(schema)
    out = []
    for r in rows:
        b = io.BytesIO()
        fastavro.schemaless_writer(b, parsed, r)
        out.append(b.getvalue())
    return out


def _as_ints(batch, kinds):
    """Decoded columns with dates and timestamps as their integers, to compare with the rows written."""
    cols = []
    for c, k in zip(batch.columns, kinds):
        if k == "date":
            c = c.cast(pa.int32())
        elif k.startswith("timestamp"):
            c = c.cast(pa.int64())
        cols.append(c.to_pylist())
    return [dict(zip(batch.schema.names, vals)) for vals in zip(*cols)] if cols and batch.num_rows else []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas_and_rows())
def test_fastavro_bytes_decode_and_our_bytes_decode_with_fastavro(case):
    schema, kinds, rows = case
    plan = avro.layout(schema, "plain", None, "test", SourceError)
    written = _fastavro_bytes(schema, rows)
    decoded = avro.decode(plan, written, lambda i: f"offset {i}")
    assert decoded.num_rows == len(rows)
    assert _as_ints(decoded, kinds) == rows
    batch = pa.record_batch([pa.array([r[f"f{i}"] for r in rows], _TYPES[k][1]) for i, k in enumerate(kinds)],
                            names=[f"f{i}" for i in range(len(kinds))])
    ours = avro.encode(plan, batch, "test")
    assert ours == written  # Avro's binary encoding of these types is canonical
    parsed = fastavro.parse_schema(schema)
    back = [fastavro.schemaless_reader(io.BytesIO(b), parsed, None) for b in ours]
    for got, want in zip(back, rows):
        for (name, value), k in zip(got.items(), kinds):
            if isinstance(value, datetime.datetime):
                unit = 1000 if k == "timestamp-millis" else 1_000_000
                # integer microseconds (a float quotient would round values beyond 2^53)
                value = ((value - datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC))
                         // datetime.timedelta(microseconds=1)) * unit // 1_000_000
            assert _plain(value) == want[name]


@settings(max_examples=60, deadline=None)
@given(schemas_and_rows(), st.data())
def test_any_cut_of_a_message_is_refused_naming_it(case, data):
    schema, _, rows = case
    written = _fastavro_bytes(schema, rows)
    if not rows or not any(written):
        return
    bad = data.draw(st.sampled_from([i for i, b in enumerate(written) if b]))
    cut = data.draw(st.integers(0, len(written[bad]) - 1))
    payloads = [*written[:bad], written[bad][:cut], *written[bad + 1:]]
    plan = avro.layout(schema, "plain", None, "test", SourceError)
    with pytest.raises(SourceError, match=rf"^message {bad}: the Avro value"):
        avro.decode(plan, payloads, lambda i: f"message {i}")


SCHEMA = {"type": "record", "name": "Bid", "fields": [
    {"name": "auction", "type": "long"}, {"name": "price", "type": "int"},
    {"name": "bidder", "type": ["null", "string"]},
    {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["BUY", "SELL"]}},
    {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}


def _bid(i):
    return {"auction": i % 7, "price": i, "bidder": None if i % 3 == 0 else f"b{i % 4}",
            "kind": "BUY" if i % 2 else "SELL", "at": 1_000 + 10 * i}


@pytest.mark.parametrize(("payload", "problem"), [
    (b"\x02\x04\x00", "ends before its record does"),  # bidder: no union branch
    (b"\x02\x04\x02\x02a\x00\x80\x01\xff", "byte\\(s\\) left after its record"),
    (b"\xff" * 11, "malformed varint"),
    (b"\x02\x04\x04", "union branch 2"),
    (b"\x02\xff\xff\xff\xff\x7f", "outside the 32-bit range"),
    (b"\x02\x04\x00\x04\x80\x01", "enum index 2"),
    (b"\x02\x04\x02\x01", "negative length -1"),
    (b"\x02\x04\x02\x02\xff\x00\x80\x01", "not UTF-8"),
    (None, "tombstone"),
])
def test_a_malformed_value_is_refused_naming_its_message(payload, problem):
    plan = avro.layout(json.dumps(SCHEMA), "plain", None, "test", SourceError)
    good = _fastavro_bytes(SCHEMA, [_bid(1), _bid(2)])
    with pytest.raises(SourceError, match=rf"^message 2: the Avro value.*{problem}"):
        avro.decode(plan, [*good, payload, good[0]], lambda i: f"message {i}")


def test_confluent_wire_checks_magic_byte_and_schema_id():
    plan = avro.layout(SCHEMA, "confluent", 42, "test", SourceError)
    body = _fastavro_bytes(SCHEMA, [_bid(5)])[0]
    ok = b"\x00" + (42).to_bytes(4, "big") + body
    assert avro.decode(plan, [ok], str).to_pylist()[0]["price"] == 5
    assert avro.encode(plan, avro.decode(plan, [ok], str), "test") == [ok]
    with pytest.raises(SourceError, match="schema id 43, not the expected 42"):
        avro.decode(plan, [ok, b"\x00" + (43).to_bytes(4, "big") + body], str)
    with pytest.raises(SourceError, match="magic byte 0"):
        avro.decode(plan, [b"\x01" + ok[1:]], str)
    with pytest.raises(SourceError, match="truncated"):
        avro.decode(plan, [ok[:3]], str)


def test_named_enums_read_as_fastavro_writes_them():
    schema = {"type": "record", "name": "R", "namespace": "x.y", "fields": [
        {"name": "a", "type": {"type": "enum", "name": "E", "symbols": ["P", "Q"]}},
        {"name": "b", "type": ["x.y.E", "null"]}, {"name": "c", "type": ["null", "E"]},
        {"name": "d", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}
    rows = [{"a": "Q", "b": None, "c": "P", "d": 5}, {"a": "P", "b": "Q", "c": None, "d": -7}]
    plan = avro.layout(schema, "plain", None, "test", SourceError)
    decoded = avro.decode(plan, _fastavro_bytes(schema, rows), str)
    assert decoded.schema.field("d").type == pa.timestamp("us")
    assert decoded.set_column(3, "d", decoded.column("d").cast(pa.int64())).to_pylist() == rows
    assert avro.encode(plan, decoded, "test") == _fastavro_bytes(schema, rows)


def test_a_sliced_batch_encodes_as_its_rows():
    plan = avro.layout(SCHEMA, "plain", None, "test", SinkError)
    batch = pa.RecordBatch.from_pylist([_bid(i) for i in range(6)], schema=plan.schema)
    assert avro.encode(plan, batch.slice(2, 3), "test") == _fastavro_bytes(SCHEMA, [_bid(i) for i in (2, 3, 4)])


@pytest.mark.parametrize(("field_type", "problem"), [
    ({"type": "record", "name": "In", "fields": []}, "field 'x' has type \"record\", which is not supported"),
    ({"type": "array", "items": "long"}, "field 'x' has type \"array\""),
    ({"type": "map", "values": "long"}, "field 'x' has type \"map\""),
    (["null", "long", "string"], "field 'x' is the union"),
    ({"type": "bytes", "logicalType": "decimal", "precision": 4}, "logical type 'decimal'"),
])
def test_unsupported_avro_types_are_refused_by_field(field_type, problem):
    schema = {"type": "record", "name": "R", "fields": [{"name": "x", "type": field_type}]}
    with pytest.raises(SourceError, match=problem):
        KafkaSource("t", "127.0.0.1:1", format="avro", avro_schema=schema)


def test_avro_settings_are_checked():
    with pytest.raises(SourceError, match="needs avro_schema"):
        KafkaSource("t", "127.0.0.1:1", format="avro")
    with pytest.raises(SourceError, match="avro_schema_id"):
        KafkaSource("t", "127.0.0.1:1", format="avro", avro_schema=SCHEMA, avro_wire="confluent")
    with pytest.raises(SourceError, match="not a field of the Avro record"):
        KafkaSource("t", "127.0.0.1:1", format="avro", avro_schema=SCHEMA, schema=pa.schema([("nope", pa.int64())]))
    with pytest.raises(SinkError, match="is for format='avro'"):
        KafkaSink("t", "127.0.0.1:1", avro_schema=SCHEMA)
    s = KafkaSource("t", "127.0.0.1:1", format="avro", avro_schema=SCHEMA, metadata=("partition",))
    assert s.arrow_schema.names == ["auction", "price", "bidder", "kind", "at", "partition"]
    assert str(s.arrow_schema.field("at").type) == "timestamp[ms]" and not s.arrow_schema.field("price").nullable
    plan = avro.layout(SCHEMA, "plain", None, "test", SinkError)
    with pytest.raises(SinkError, match="holds 'HOLD', not a symbol"):
        avro.encode(plan, pa.RecordBatch.from_pylist([{**_bid(1), "kind": "HOLD"}], schema=plan.schema), "test")
    with pytest.raises(SinkError, match="column 'price' holds a null at row 1"):
        avro.encode(plan, pa.RecordBatch.from_pylist([_bid(1), {**_bid(2), "price": None}]), "test")


# -- against the broker ------------------------------------------------------------------------


def test_avro_job_from_kafka_to_kafka_in_confluent_wire(broker, topic):
    source, sink = topic(3), topic(1)
    bodies = _fastavro_bytes(SCHEMA, [_bid(i) for i in range(2_000)])
    records = [(i % 3, b"\x00" + (7).to_bytes(4, "big") + b, None, 1_000 + 10 * i) for i, b in enumerate(bodies)]
    produce(broker.bootstrap, source, records)
    out_schema = {"type": "record", "name": "Count", "fields": [
        {"name": "auction", "type": "long"}, {"name": "kind", "type": {"type": "enum", "name": "K",
                                                                       "symbols": ["BUY", "SELL"]}},
        {"name": "n", "type": "long"}, {"name": "top", "type": ["null", "int"]},
        {"name": "op", "type": "string"}]}  # an updating result: its change kind is a column too
    bids = dw.read_kafka(source, broker.bootstrap, format="avro", avro_schema=SCHEMA, avro_wire="confluent",
                         avro_schema_id=7, time="at", max_delay="0s")
    q = bids.group_by("auction", "kind").agg(n=dw.count(), top=dw.max("price"))
    result = q.sink(KafkaSink(sink, broker.bootstrap, format="avro", avro_schema=out_schema, key="auction",
                              avro_wire="confluent", avro_schema_id=8)).run(dw.Config(batch_size=300))
    assert result.metrics["input_rows"] == 2_000
    parsed = fastavro.parse_schema(out_schema)
    got = {}
    for value, _, _ in consume_all(broker.bootstrap, sink):
        assert value[:5] == b"\x00" + (8).to_bytes(4, "big")
        r = fastavro.schemaless_reader(io.BytesIO(value[5:]), parsed, None)
        if r["op"] in ("+I", "+U"):
            got[(r["auction"], r["kind"])] = (r["n"], r["top"])  # an update replaces what came before
    want = {}
    for i in range(2_000):
        b = _bid(i)
        n, top = want.get((b["auction"], b["kind"]), (0, -1))
        want[(b["auction"], b["kind"])] = (n + 1, max(top, i))
    assert got == want


def test_a_malformed_avro_message_names_its_partition_and_offset(broker, topic):
    name = topic(2)
    good = _fastavro_bytes(SCHEMA, [_bid(i) for i in range(4)])
    produce(broker.bootstrap, name, [(0, good[0], None, 1_000), (1, good[1], None, 1_000),
                                     (1, good[2], None, 1_001), (1, good[3][:-1], None, 1_002)])
    with pytest.raises(SourceError, match=r"partition 1 offset 2: the Avro value in field 'at' ends before its "
                                          r"record does \(truncated\)"):
        dw.read_kafka(name, broker.bootstrap, format="avro", avro_schema=SCHEMA).collect()


def test_lag_is_what_the_run_has_not_delivered_per_partition(broker, topic):
    name = topic(2)
    for i in range(20):  # one message per produce call: Tansu's high watermark is exact per record batch
        produce(broker.bootstrap, name, [(i % 2, json.dumps({"i": i}).encode(), None, 1_000 + i)])
    source = KafkaSource(name, broker.bootstrap, schema=pa.schema([("i", pa.int64())]), metadata=("timestamp",))
    assert source.lag() == {}
    batches = source.batches(("i", "timestamp"), 4)
    seen, lags = 0, []
    for batch in batches:
        seen += batch.num_rows
        box = {}
        reader = threading.Thread(  # as a monitor would, aside
            target=lambda box=box: box.update(lag=source.lag(), fresh=source.lag(fresh=True)))
        reader.start()
        reader.join()
        assert box["fresh"] == box["lag"]
        lags.append((seen, box["lag"]))
    assert seen == 20
    for delivered, lag in lags:
        assert set(lag) == {0, 1} and sum(lag.values()) == 20 - delivered
    assert lags[-1][1] == {0: 0, 1: 0}
    assert source.lag() == {}


def test_lag_from_a_monitor_thread_while_an_unbounded_job_runs(broker, topic):
    import time

    name = topic(1)
    source = KafkaSource(name, broker.bootstrap, format="avro", avro_schema=SCHEMA, bounded=False,
                         idle_timeout="10s", poll_timeout="20ms", metadata=("timestamp",))
    bodies = _fastavro_bytes(SCHEMA, [_bid(i) for i in range(40)])
    seen = []

    def monitor():
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and source.lag() != {0: 0}:
            seen.append(source.lag())
            time.sleep(0.02)
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": broker.bootstrap})
        for i, b in enumerate(bodies):  # one message per flush: Tansu's high watermark is then exact
            producer.produce(name, value=b, partition=0, timestamp=1_000 + i)
            assert producer.flush(10) == 0
        while time.monotonic() < deadline and (hole.rows < 40 or source.lag() != {0: 0}):
            seen.append(source.lag())
            time.sleep(0.02)
        seen.append(source.lag())
        seen.append(source.lag(fresh=True))
        source.stop()

    hole = dw.sinks.Blackhole()
    watcher = threading.Thread(target=monitor)
    watcher.start()
    result = dw.from_source(source, time="at").select("auction", "price").sink(hole).run(dw.Config(batch_size=8))
    watcher.join()
    assert result.metrics["input_rows"] == 40 and hole.rows == 40
    assert seen[-2:] == [{0: 0}, {0: 0}]  # cached, then asked of the broker
    assert all(set(lag) <= {0} and all(0 <= v <= 40 for v in lag.values()) for lag in seen)
