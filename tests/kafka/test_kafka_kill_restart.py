"""SIGKILL a Kafka -> Darwin -> Kafka exactly-once job at random moments and restart it until it finishes: a
read_committed consumer of the output topic sees every result exactly once."""

import json
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from kafka_helpers import consume_all, json_values, produce
from kills import run_with_kills, start

import darwin as dw
from darwin.io.kafka import codecs

JOB = Path(__file__).with_name("kafka_kill_job.py")
KILLS = 2  # each kill costs a restart; two are required
EVENTS = 40_000


def expected(records):
    t = pa.table({"auction": [r["auction"] for r, _ in records], "price": [r["price"] for r, _ in records],
                  "timestamp": pa.array([ts for _, ts in records], pa.timestamp("ms"))})
    out = (dw.from_arrow(t, time="timestamp").window(dw.Tumble("1s", on="timestamp")).group_by("auction")
           .agg(n=dw.count(), top=dw.max("price"))).collect()
    for i, f in enumerate(out.schema):  # timestamps as the sink writes them (Flink's '1970-01-01 00:00:01')
        if pa.types.is_timestamp(f.type):
            out = out.set_column(i, f.name, codecs.text(out.column(i).combine_chunks()))
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


SQL_JOB = Path(__file__).with_name("kafka_sql_kill_job.py")


def test_killed_sql_job_from_a_topic_commits_exactly_the_uninterrupted_output(broker, topic, tmp_path):
    """A SQL script (Flink's kafka connector into a filesystem table) killed and resumed from its checkpoints
    (the topic's offsets in them) writes what one uninterrupted run writes: nothing lost, nothing twice."""
    source = topic(4)
    records = [({"auction": i % 29, "price": i, "bidder": f"b{i % 7}"}, 1_000 + i * 3) for i in range(EVENTS)]
    produce(broker.bootstrap, source, [(r["auction"] % 4, json.dumps(r).encode(), None, ts) for r, ts in records])
    plain = tmp_path / "plain"
    plain.mkdir()
    proc = start(SQL_JOB, broker.bootstrap, source, str(plain))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    work = tmp_path / "job"
    work.mkdir()
    rng = random.Random("kafka-sql-kill")
    kills = run_with_kills(SQL_JOB, (broker.bootstrap, source, str(work)), work, rng, KILLS, longest_s=1.0)
    assert kills >= 2, f"the job finished before it could be killed enough ({kills} kills)"
    assert json.loads((work / "result.json").read_text())["resumed_from"] is not None
    expected, got = pq.read_table(plain / "out"), pq.read_table(work / "out")
    assert expected.num_rows > 29 * 100
    assert Counter(map(str, got.to_pylist())) == Counter(map(str, expected.to_pylist()))


def test_killed_sql_job_from_a_topic_to_a_topic_loses_no_result(broker, topic, tmp_path):
    """Into a 'kafka' table (at least once, as SQL's only guarantee): every result of an uninterrupted run is in the
    topic, and a repeated one is a result produced again after the checkpoint resumed from."""
    source, plain, killed = topic(4), topic(2), topic(2)
    records = [({"auction": i % 29, "price": i, "bidder": f"b{i % 7}"}, 1_000 + i * 3) for i in range(EVENTS)]
    produce(broker.bootstrap, source, [(r["auction"] % 4, json.dumps(r).encode(), None, ts) for r, ts in records])
    (tmp_path / "plain").mkdir()
    proc = start(SQL_JOB, broker.bootstrap, source, str(tmp_path / "plain"), plain)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    work = tmp_path / "job"
    work.mkdir()
    rng = random.Random("kafka-sql-kill-topic")
    kills = run_with_kills(SQL_JOB, (broker.bootstrap, source, str(work), killed), work, rng, KILLS, longest_s=1.0)
    assert kills >= 2, f"the job finished before it could be killed enough ({kills} kills)"
    expected = Counter(v for v, _, _ in consume_all(broker.bootstrap, plain))
    got = Counter(v for v, _, _ in consume_all(broker.bootstrap, killed))
    assert sum(expected.values()) > 29 * 100 and max(expected.values()) == 1
    assert set(got) == set(expected)
