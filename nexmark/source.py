"""The Nexmark generator as Darwin sources: ``source(events=N).bid`` is a Table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

import darwin as dw
from darwin.types import Schema
from nexmark import ysb
from nexmark.generator import SCHEMAS, GeneratorConfig, generate
from nexmark.side_input import side_input_table

TIME_COLUMN = "date_time"


class NexmarkStream:
    """One stream of the generator, replayable: every call to ``batches`` yields the same rows."""

    def __init__(self, config: GeneratorConfig, stream: str) -> None:
        self.config, self.stream = config, stream
        self.name = f"nexmark.{stream}"
        self.schema = Schema.from_arrow(SCHEMAS[stream], frozenset(SCHEMAS[stream].names))

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        for batch in generate(self.config, self.stream, batch_size=batch_size, columns=frozenset(columns)):
            yield batch.select(list(columns))


class NexmarkSources:
    """The Nexmark streams, q13's bounded side input, and YSB ad events of the same size, seed and rate."""

    def __init__(self, config: GeneratorConfig, max_delay: Any = "0s") -> None:
        self.config = config
        self.person = self._table("person", max_delay)
        self.auction = self._table("auction", max_delay)
        self.bid = self._table("bid", max_delay)
        c = config
        self.ads = dw.from_batches(ysb.SCHEMA, lambda: ysb.generate(c.events, c.seed, c.first_event_rate),
                                   time="event_time", max_delay=max_delay, name="ysb.ads",
                                   non_null=ysb.SCHEMA.names)
        self.side_input = dw.from_arrow(side_input_table(), name="nexmark.side_input")

    def _table(self, stream: str, max_delay: Any) -> dw.Table:
        return dw.from_source(NexmarkStream(self.config, stream), TIME_COLUMN, max_delay)


def source(events: int, seed: int = 0, rate: int | None = None, max_delay: Any = "0s", **options: Any) \
        -> NexmarkSources:
    """The three Nexmark streams of ``events`` events; ``rate`` is events per second of event time."""
    if rate is not None:
        options["first_event_rate"] = rate
    return NexmarkSources(GeneratorConfig(events=events, seed=seed, **options), max_delay)
