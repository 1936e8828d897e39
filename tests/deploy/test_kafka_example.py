"""configs/kafka-exactly-once.yaml against a Tansu broker started by the test (bootstrap_servers and
topics rewritten in a copy of the file)."""

import json
import time

import yaml
from confluent_kafka import Producer

from darwin import deploy


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
                                         "ts": p["ts"] + ".000"}) for p in payments if p["amount"] >= 100]
    got = _consume(broker.bootstrap, sink)
    assert len(expected) == 16
    got = sorted(got, key=lambda kv: kv[1]["id"])
    assert got == expected
    assert result.metrics["input_rows"] == 40
