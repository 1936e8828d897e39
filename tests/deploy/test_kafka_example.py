"""configs/kafka-exactly-once.yaml against a Tansu broker started by the test (bootstrap_servers and
topics rewritten in a copy of the file)."""

import json
import re
import time

import pytest
import yaml
from confluent_kafka import Producer

from darwin import deploy
from darwin.errors import ConfigError


def _produce(bootstrap, topic, values):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for v in values:
        p.produce(topic, value=json.dumps(v).encode())
        p.poll(0)
    assert p.flush(10) == 0


def _consume(bootstrap, topic, quiet_s=1.5):
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "isolation.level": "read_committed",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    out, last = [], time.monotonic()
    while time.monotonic() - last < quiet_s:
        for m in c.consume(1000, timeout=0.2):
            if m.error() is None:
                out.append((m.key(), json.loads(m.value())))
                last = time.monotonic()
    c.close()
    return out


def test_kafka_exactly_once_example_runs_against_a_broker(examples, broker, topic):
    source, sink = topic(), topic()
    path = examples / "kafka-exactly-once.yaml"
    job = yaml.safe_load(path.read_text())
    job["sources"]["payments"].update(topic=source, bootstrap_servers=broker.bootstrap)
    job["sinks"]["large"].update(topic=sink, bootstrap_servers=broker.bootstrap)
    path.write_text(yaml.safe_dump(job))
    payments = [{"id": i, "account": f"a{i % 3}", "amount": 40.0 * (i % 5),
                 "ts": f"2026-03-01 10:00:{i:02d}"} for i in range(40)]
    _produce(broker.bootstrap, source, payments)

    result = deploy.run(deploy.load(path))

    expected = [(p["account"].encode(), {"id": p["id"], "account": p["account"], "cents": int(p["amount"] * 100),
                                         "ts": p["ts"]}) for p in payments if p["amount"] >= 100]
    got = _consume(broker.bootstrap, sink)
    assert len(expected) == 16
    got = sorted(got, key=lambda kv: kv[1]["id"])
    assert got == expected
    assert result.metrics["input_rows"] == 40


def test_a_value_field_named_like_a_metadata_column_is_read_by_leaving_that_column_out(broker, topic, tmp_path):
    """A JSON field 'timestamp' clashed with the record timestamp column, and the error's way out (metadata=...)
    was no key of a deployment ('sources.ev.metadata': unknown key): such messages could not be read from a file."""
    source = topic()
    _produce(broker.bootstrap, source, [{"id": i, "timestamp": f"2026-03-01 10:00:0{i}"} for i in range(3)])
    job = tmp_path / "job.yaml"
    job.write_text(f"""\
sources:
  ev:
    type: kafka
    topic: {source}
    bootstrap_servers: {broker.bootstrap}
    schema: {{id: int64, timestamp: "timestamp[ms]"}}
    metadata: [offset]
query:
  sql: SELECT id, `timestamp`, `offset` FROM ev
sinks:
  out: {{type: csv, path: out}}
""")
    deploy.run(deploy.load(job))
    text = "".join(p.read_text() for p in sorted((tmp_path / "out").glob("part-*")))
    assert "2026-03-01 10:00:02" in text and len(text.strip().splitlines()) == 4  # the header and 3 rows
    for bad, problem in (("[offset, ofset]", "unknown metadata column(s) ['ofset']"), ("offset", "expected a list")):
        job.write_text(job.read_text().replace("metadata: [offset]", f"metadata: {bad}"))
        with pytest.raises(ConfigError, match=rf"job.yaml:7: key 'sources.ev.metadata': {re.escape(problem)}"):
            deploy.load(job)
        job.write_text(job.read_text().replace(f"metadata: {bad}", "metadata: [offset]"))
