"""The Nexmark generator as Darwin sources: ``source(events=N).bid`` is a Table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa

import darwin as dw
from darwin.io.source import Split
from darwin.types import Schema
from nexmark import ysb
from nexmark.generator import SCHEMAS, STREAMS, GeneratorConfig, generate, id_bounds
from nexmark.side_input import side_input_table

TIME_COLUMN = "date_time"
YSB_CHUNK = 65_536  # events ysb.generate makes at a time


class NexmarkStream:
    """One stream of the generator, replayable: every call to ``batches`` yields the same rows."""

    def __init__(self, config: GeneratorConfig, stream: str) -> None:
        self.config, self.stream = config, stream
        self.name = f"nexmark.{stream}"
        self.ordered_by = TIME_COLUMN  # event times grow with the event id (Darwin-on-Spark relies on it)
        self.schema = Schema.from_arrow(SCHEMAS[stream], frozenset(SCHEMAS[stream].names))

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self._generated(columns, batch_size, 0, self.config.events)

    def _generated(self, columns: tuple[str, ...], batch_size: int, start: int, end: int, skip: int = 0) \
            -> Iterator[pa.RecordBatch]:
        """The batches of events [start, end) (``start`` on the batch grid), the first ``skip`` rows left out."""
        for batch in generate(self.config, self.stream, batch_size=self._grid(batch_size), start_event=start,
                              end_event=end, columns=frozenset(columns)):
            yield batch.select(list(columns)).slice(skip) if skip else batch.select(list(columns))
            skip = 0

    # -- seeking and splits: batches cover ``_grid`` event ids each, counted from event 0 -------------
    def _grid(self, batch_size: int) -> int:
        """Event ids per batch: as many as hold at most ``batch_size`` of this stream's rows."""
        return self.config.batch_events(self.stream, batch_size)

    @property
    def _place(self) -> tuple[int, int]:
        """Where this stream's events sit in each epoch of ``total_proportion`` events: the offset of
        its first one, and how many there are."""
        c = self.config
        shares = (c.person_proportion, c.auction_proportion, c.bid_proportion)
        kind = STREAMS.index(self.stream)
        return sum(shares[:kind]), shares[kind]

    def rows_before(self, event: int) -> int:
        """Rows of this stream among events [0, event)."""
        low, share = self._place
        epochs, within = divmod(min(event, self.config.events), self.config.total_proportion)
        return epochs * share + min(max(within - low, 0), share)

    def _batch_start(self, row: int, batch_size: int) -> int | None:
        """The first event of the batch holding row ``row`` of this stream (None past the end)."""
        if row >= self.rows_before(self.config.events):
            return None
        low, share = self._place
        epoch, within = divmod(row, share)
        grid = self._grid(batch_size)
        return (epoch * self.config.total_proportion + low + within) // grid * grid

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From row ``offset``: the events before its batch are not generated."""
        start = self._batch_start(offset, batch_size)
        if start is not None:
            yield from self._generated(columns, batch_size, start, self.config.events, offset - self.rows_before(start))

    def splits(self, columns: tuple[str, ...], batch_size: int, offset: int, split_rows: int) -> Iterator[Split]:
        """Event-id ranges of whole batches (about ``split_rows`` rows each), from the batch holding ``offset``."""
        start = self._batch_start(offset, batch_size)
        if start is None:
            return
        c = self.config
        grid = self._grid(batch_size)
        events = max(1, split_rows * c.total_proportion // self._place[1] // grid) * grid
        first = offset
        for lo in range(start, c.events, events):
            hi = min(lo + events, c.events)
            yield Split(first, self.rows_before(hi) - first, (lo, hi, first - self.rows_before(lo)))
            first = self.rows_before(hi)

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        """Generated on this thread: the compiled generator releases the GIL."""
        lo, hi, skip = split.where
        return list(self._generated(columns, batch_size, lo, hi, skip))

    def bounds(self, column: str) -> tuple[int, int] | None:
        """Bounds every value of an id column lies within, from the generator's rules (not the tightest:
        a random choice may pick an id up to ``ID_LEAD`` ahead of the last one created). A windowed
        aggregation grouped by one gets a window ring over them."""
        return id_bounds(self.config, self.stream, column)

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
    """YSB's ad events as a Darwin source: the batches ``dw.from_batches`` over ``ysb.generate`` gives
    (chunks of ``YSB_CHUNK`` events, each cut into batches), seekable, and read in splits of whole chunks."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.config = config
        self.name = "ysb.ads"
        self.ordered_by = "event_time"  # event times grow with the event id (Darwin-on-Spark relies on it)
        self.schema = Schema.from_arrow(ysb.SCHEMA, frozenset(ysb.SCHEMA.names))

    def chunks(self, columns: tuple[str, ...], batch_size: int, start: int, end: int, skip: int = 0) \
            -> Iterator[pa.RecordBatch]:
        """Events [start, end) as Darwin reads them: chunks of ``YSB_CHUNK`` events cut into batches, the
        first ``skip`` rows left out (Darwin-on-Spark generates its partitions through this too)."""
        c = self.config
        for chunk in ysb.generate(end, c.seed, c.first_event_rate, YSB_CHUNK, start, frozenset(columns)):
            for lo in range(0, max(chunk.num_rows, 1), batch_size):
                if skip >= min(lo + batch_size, chunk.num_rows):
                    continue
                piece = chunk.slice(lo, batch_size).select(list(columns))
                yield piece.slice(skip - lo) if skip > lo else piece
            skip = 0

    def batches(self, columns: tuple[str, ...], batch_size: int) -> Iterator[pa.RecordBatch]:
        yield from self.chunks(columns, batch_size, 0, self.config.events)

    def batches_from(self, columns: tuple[str, ...], batch_size: int, offset: int) -> Iterator[pa.RecordBatch]:
        """From event ``offset``: the chunks before its own are not generated."""
        if offset < self.config.events:
            start = offset // YSB_CHUNK * YSB_CHUNK
            yield from self.chunks(columns, batch_size, start, self.config.events, offset - start)

    def splits(self, columns: tuple[str, ...], batch_size: int, offset: int, split_rows: int) -> Iterator[Split]:
        """Ranges of whole chunks of events (about ``split_rows`` each), from the chunk holding ``offset``."""
        events = max(1, split_rows // YSB_CHUNK) * YSB_CHUNK
        first = offset
        for lo in range(offset // YSB_CHUNK * YSB_CHUNK, self.config.events, events):
            hi = min(lo + events, self.config.events)
            yield Split(first, hi - first, (lo, hi, first - lo))
            first = hi

    def read_split(self, split: Split, columns: tuple[str, ...], batch_size: int) -> list[pa.RecordBatch]:
        lo, hi, skip = split.where
        return list(self.chunks(columns, batch_size, lo, hi, skip))

    # -- Darwin-on-Spark: Spark generates the events (nexmark.spark_source, stream "ads"), not the driver
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

    def __repr__(self) -> str:
        return f"YsbAds({self.config.events} events)"


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
        c = config
        self.ads = dw.from_source(YsbAds(c), "event_time", max_delay, rate_limit=rate_limit)
        self.side_input = dw.from_arrow(side_input_table(), name="nexmark.side_input")

    def _table(self, stream: str, max_delay: Any) -> dw.Table:
        c = self.config
        share = {"person": c.person_proportion, "auction": c.auction_proportion, "bid": c.bid_proportion}
        rate = None if self.rate_limit is None else \
            self.rate_limit * share[stream] / (c.person_proportion + c.auction_proportion + c.bid_proportion)
        # the generator gives every new person and auction the next id: no two rows share one
        key = None if stream == "bid" else "id"
        return dw.from_source(NexmarkStream(self.config, stream), TIME_COLUMN, max_delay, rate_limit=rate,
                              primary_key=key)


def source(events: int, seed: int = 0, rate: int | None = None, max_delay: Any = "0s",
           rate_limit: float | None = None, **options: Any) -> NexmarkSources:
    """The three Nexmark streams of ``events`` events; ``rate`` is events per second of event time,
    ``rate_limit`` events per second of wall-clock time (unpaced when None)."""
    if rate is not None:
        options["first_event_rate"] = rate
    return NexmarkSources(GeneratorConfig(events=events, seed=seed, **options), max_delay, rate_limit)
