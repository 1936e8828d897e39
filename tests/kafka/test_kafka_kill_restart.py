"""SIGKILL a Kafka -> Darwin -> Kafka exactly-once job at random moments and restart it until it finishes: a
read_committed consumer of the output topic sees every result exactly once."""

import json
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
from kafka_helpers import consume_all, json_values, produce
from kills import run_with_kills

import darwin as dw

JOB = Path(__file__).with_name("kafka_kill_job.py")
KILLS = 3
EVENTS = 40_000


def expected(records):
    t = pa.table({"auction": [r["auction"] for r, _ in records], "price": [r["price"] for r, _ in records],
                  "timestamp": pa.array([ts for _, ts in records], pa.timestamp("ms"))})
    out = (dw.from_arrow(t, time="timestamp").window(dw.Tumble("1s", on="timestamp")).group_by("auction")
           .agg(n=dw.count(), top=dw.max("price"))).collect()
    out = out.cast(pa.schema([pa.field(f.name, pa.string() if pa.types.is_timestamp(f.type) else f.type)
                              for f in out.schema]))
    return Counter(json.dumps(r, sort_keys=True) for r in out.to_pylist())


def test_killed_exactly_once_job_publishes_every_result_once(broker, topic, tmp_path):
    source, sink = topic(4), topic(2)
    records = [({"auction": i % 29, "price": i, "bidder": f"b{i % 7}"}, 1_000 + i * 3) for i in range(EVENTS)]
    produce(broker.bootstrap, source, [((r["auction"]) % 4, json.dumps(r).encode(), None, ts) for r, ts in records])
    rng = random.Random("kafka-kill")
    work = tmp_path / "job"
    work.mkdir()
    kills = run_with_kills(JOB, (broker.bootstrap, source, sink, str(work)), work, rng, KILLS, longest_s=1.0)
    assert kills >= 2, f"the job finished before it could be killed enough ({kills} kills)"
    result = json.loads((work / "result.json").read_text())
    assert result["resumed_from"] is not None
    got = Counter(json.dumps(r, sort_keys=True) for r in json_values(consume_all(broker.bootstrap, sink)))
    assert got == expected(records)
    assert list((work / "stage").glob("*.arrow")) == []
