"""The Nexmark generator as Darwin sources: ``source(events=N).bid`` is a Table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

import darwin as dw
from darwin.types import Schema
from nexmark import ysb
from nexmark.generator import SCHEMAS, STREAMS, GeneratorConfig, generate
from nexmark.side_input import side_input_table

TIME_COLUMN = "date_time"


class NexmarkStream:
    """One stream of the generator, replayable: every call to ``batches`` yields the same rows."""

    def __init__(self, config: GeneratorConfig, stream: str) -> None:
        self.config, self.stream = config, stream
        self.name = f"nexmark.{stream}"
        self.ordered_by = TIME_COLUMN  # event times grow with the event id (Darwin-on-Spark relies on it)
        self.schema = Schema.from_arrow(SCHEMAS[stream], frozenset(SCHEMAS[stream].names))

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        for batch in generate(self.config, self.stream, batch_size=batch_size, columns=frozenset(columns)):
            yield batch.select(list(columns))

    # -- Darwin-on-Spark: Spark generates the events (nexmark.spark_source), not the driver -------
    def spark_frame(self, spark: Any, columns: tuple[str, ...], batch_size: int, delay_ms: int) -> tuple[Any, int]:
        from nexmark import spark_source

        spark_source.register(spark)
        opts = spark_source.options(self.config, self.stream, columns, batch_size, delay_ms, _parallelism(spark))
        rows = len(self.config.ids_of_kind(STREAMS.index(self.stream), 0, self.config.events))
        return spark.read.format(spark_source.NAME).options(**opts).load(), rows

    def spark_stream(self, spark: Any, columns: tuple[str, ...], rate: float | None, batch_size: int) -> Any:
        from nexmark import spark_source

        spark_source.register(spark)
        opts = spark_source.options(self.config, self.stream, columns, partitions=_parallelism(spark), rate=rate,
                                    max_events=batch_size)
        return spark.readStream.format(spark_source.NAME).options(**opts).load()

    def stream_end(self, rate: float | None) -> Any:
        return {"event": self.config.events}


class YsbAds:
    """YSB's ad events of the generator's size, seed and rate (``nexmark.ysb``), replayable; on Spark
    they are generated on the executors like the Nexmark streams (``nexmark.spark_source``)."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.config = config
        self.name = "ysb.ads"
        self.ordered_by = "event_time"  # event times grow with the event id (Darwin-on-Spark relies on it)
        self.schema = Schema.from_arrow(ysb.SCHEMA, frozenset(ysb.SCHEMA.names))

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        c = self.config
        for batch in ysb.generate(c.events, c.seed, c.first_event_rate, batch_size):
            yield batch.select(list(columns))

    def spark_frame(self, spark: Any, columns: tuple[str, ...], batch_size: int, delay_ms: int) -> tuple[Any, int]:
        from nexmark import spark_source

        spark_source.register(spark)
        opts = spark_source.options(self.config, spark_source.ADS, columns, batch_size, delay_ms, _parallelism(spark))
        return spark.read.format(spark_source.NAME).options(**opts).load(), self.config.events

    def spark_stream(self, spark: Any, columns: tuple[str, ...], rate: float | None, batch_size: int) -> Any:
        from nexmark import spark_source

        spark_source.register(spark)
        opts = spark_source.options(self.config, spark_source.ADS, columns, partitions=_parallelism(spark),
                                    rate=rate, max_events=batch_size)
        return spark.readStream.format(spark_source.NAME).options(**opts).load()

    def stream_end(self, rate: float | None) -> Any:
        return {"event": self.config.events}


def _parallelism(spark: Any) -> int:
    return int(spark.sparkContext.defaultParallelism)


class NexmarkSources:
    """The Nexmark streams, q13's bounded side input, and YSB ad events of the same size, seed and rate.

    ``rate_limit`` (events per second of wall-clock time) paces the streams: each Nexmark stream gets
    its share of the events (person 1 : auction 3 : bid 46, as the generator interleaves them), the
    YSB ad events all of it.
    """

    def __init__(self, config: GeneratorConfig, max_delay: Any = "0s", rate_limit: float | None = None) -> None:
        self.config, self.rate_limit = config, rate_limit
        self.person = self._table("person", max_delay)
        self.auction = self._table("auction", max_delay)
        self.bid = self._table("bid", max_delay)
        self.ads = dw.from_source(YsbAds(config), "event_time", max_delay, rate_limit=rate_limit)
        self.side_input = dw.from_arrow(side_input_table(), name="nexmark.side_input")

    def _table(self, stream: str, max_delay: Any) -> dw.Table:
        c = self.config
        share = {"person": c.person_proportion, "auction": c.auction_proportion, "bid": c.bid_proportion}
        rate = None if self.rate_limit is None else \
            self.rate_limit * share[stream] / (c.person_proportion + c.auction_proportion + c.bid_proportion)
        return dw.from_source(NexmarkStream(self.config, stream), TIME_COLUMN, max_delay, rate_limit=rate)


def source(events: int, seed: int = 0, rate: int | None = None, max_delay: Any = "0s",
           rate_limit: float | None = None, **options: Any) -> NexmarkSources:
    """The three Nexmark streams of ``events`` events; ``rate`` is events per second of event time,
    ``rate_limit`` events per second of wall-clock time (unpaced when None)."""
    if rate is not None:
        options["first_event_rate"] = rate
    return NexmarkSources(GeneratorConfig(events=events, seed=seed, **options), max_delay, rate_limit)
