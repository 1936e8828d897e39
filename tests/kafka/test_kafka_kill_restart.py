"""SIGKILL a Kafka -> Darwin -> Kafka exactly-once job at random moments and restart it until it finishes: a
read_committed consumer of the output topic sees every result exactly once."""

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
from kafka_helpers import consume_all, json_values, produce

import darwin as dw

JOB = Path(__file__).with_name("kafka_kill_job.py")
ROOT = Path(__file__).resolve().parents[2]
KILLS = 3
EVENTS = 40_000


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(JOB), *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for_a_checkpoint(proc: subprocess.Popen, chk: Path) -> None:
    before = set(chk.glob("chk-*")) if chk.exists() else set()
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if chk.exists() and set(chk.glob("chk-*")) - before:
            return
        time.sleep(0.01)


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
    kills = 0
    while True:
        proc = start(broker.bootstrap, source, sink, str(work))
        if kills < KILLS:
            assert proc.stdout.readline().strip() == "ready", proc.stderr.read()[-3000:]
            wait_for_a_checkpoint(proc, work / "chk")
            deadline = time.monotonic() + rng.uniform(0.0, 1.0)
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            if proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
        _, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        break
    assert kills >= 2, f"the job finished before it could be killed enough ({kills} kills)"
    result = json.loads((work / "result.json").read_text())
    assert result["resumed_from"] is not None
    got = Counter(json.dumps(r, sort_keys=True) for r in json_values(consume_all(broker.bootstrap, sink)))
    assert got == expected(records)
    assert list((work / "stage").glob("*.arrow")) == []
