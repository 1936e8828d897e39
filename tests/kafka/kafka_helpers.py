"""Producing to and reading back from the test broker."""

import json


def produce(bootstrap, topic, records, **settings):
    """records: (partition, value bytes, key, timestamp ms[, headers]) tuples, produced and flushed."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **settings})
    for r in records:
        part, value, key, ts = r[:4]
        p.produce(topic, value=value, key=key, partition=part, timestamp=ts, headers=r[4] if len(r) > 4 else None)
        p.poll(0)
    assert p.flush(10) == 0


def consume_all(bootstrap, topic, isolation="read_committed", quiet_s=1.5):
    """Every message of ``topic`` (value bytes, key, partition), read until nothing arrives for ``quiet_s``."""
    import time

    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}-{time.monotonic()}",
                  "isolation.level": isolation, "enable.auto.commit": False, "session.timeout.ms": 2000})
    meta = c.list_topics(topic, timeout=10).topics[topic]
    c.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
    out, last = [], time.monotonic()
    while time.monotonic() - last < quiet_s:
        for m in c.consume(10_000, timeout=0.2):
            if m.error() is None:
                out.append((m.value(), m.key(), m.partition()))
                last = time.monotonic()
    c.close()
    return out


def json_values(messages):
    return [json.loads(v) for v, _, _ in messages]


def java_murmur2(data: bytes) -> int:
    """Kafka's Java Utils.murmur2 (a signed 32-bit int), which its default partitioner hashes keys with."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (0x9747B28C ^ len(data)) & mask
    whole = len(data) & ~3
    for i in range(0, whole, 4):
        k = (int.from_bytes(data[i:i + 4], "little") * m) & mask
        k = ((k ^ (k >> 24)) * m) & mask
        h = ((h * m) & mask) ^ k
    tail = data[whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * m) & mask
    h = ((h ^ (h >> 13)) * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def java_partition(key: bytes, partitions: int) -> int:
    """The partition Java's producer (and Flink's 'default' sink partitioner) gives a keyed record."""
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions
