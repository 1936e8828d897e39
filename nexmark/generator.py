"""A deterministic, compiled Nexmark event generator.

It follows the reference generator's model (``nexmark/nexmark``, nexmark-flink):
events interleave person : auction : bid in fixed proportions per epoch of event
ids, ids are derived from the event id, bids prefer hot auctions and bidders,
auctions hot sellers, prices are log-uniform, event time advances by the
configured rate, and records are padded to average sizes. Each event draws from
its own random stream seeded by (seed, event id), so output is identical for any
batch size or event range.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, fields
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from nexmark import _kernels as k
from nexmark import vocab

STREAMS = ("person", "auction", "bid")
VERSION = 2  # changes whenever the same configuration generates different events: cached files name it
_DICT = pa.dictionary(pa.int32(), pa.string())
_TS = pa.timestamp("ms")


def _schema(*spec: tuple[str, pa.DataType]) -> pa.Schema:
    return pa.schema([pa.field(name, t, nullable=False) for name, t in spec])


SCHEMAS: dict[str, pa.Schema] = {
    "person": _schema(("id", pa.int64()), ("name", _DICT), ("email_address", pa.string()),
                      ("credit_card", pa.string()), ("city", _DICT), ("state", _DICT), ("date_time", _TS),
                      ("extra", pa.string())),
    "auction": _schema(("id", pa.int64()), ("item_name", pa.string()), ("description", pa.string()),
                       ("initial_bid", pa.int64()), ("reserve", pa.int64()), ("date_time", _TS),
                       ("expires", _TS), ("seller", pa.int64()), ("category", pa.int64()), ("extra", pa.string())),
    "bid": _schema(("auction", pa.int64()), ("bidder", pa.int64()), ("price", pa.int64()), ("channel", _DICT),
                   ("url", _DICT), ("date_time", _TS), ("extra", pa.string())),
}


@dataclass(frozen=True)
class GeneratorConfig:
    """Generator parameters; defaults are the reference generator's."""

    events: int
    seed: int = 0
    first_event_rate: int = 10_000_000  # events per second of event time
    person_proportion: int = 1
    auction_proportion: int = 3
    bid_proportion: int = 46
    hot_auction_ratio: int = 2
    hot_seller_ratio: int = 4
    hot_bidder_ratio: int = 4
    num_active_people: int = 1000
    num_in_flight_auctions: int = 100
    avg_person_byte_size: int = 200
    avg_auction_byte_size: int = 500
    avg_bid_byte_size: int = 100
    base_time_ms: int = 1_436_918_400_000  # 2015-07-15 00:00:00 UTC

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"GeneratorConfig.{f.name}: expected an integer, got {value!r}")
            least = 0 if f.name in ("events", "seed", "base_time_ms") else 1
            if value < least:
                raise ValueError(f"GeneratorConfig.{f.name}: must be >= {least}, got {value}")

    @property
    def total_proportion(self) -> int:
        return self.person_proportion + self.auction_proportion + self.bid_proportion

    def as_array(self) -> np.ndarray:
        """The parameters kernels read, in the slot order of ``nexmark._kernels``."""
        return np.array([self.seed, self.person_proportion, self.auction_proportion, self.total_proportion,
                         self.hot_auction_ratio, self.hot_seller_ratio, self.hot_bidder_ratio,
                         self.num_active_people, self.num_in_flight_auctions, self.base_time_ms,
                         round(1e9 / self.first_event_rate), self.avg_person_byte_size,
                         self.avg_auction_byte_size, self.avg_bid_byte_size], dtype=np.int64)

    def batch_events(self, stream: str, batch_size: int) -> int:
        """Event ids per batch of ``stream`` read ``batch_size`` rows at a time: whole epochs of
        ``total_proportion`` events, as many as hold at most ``batch_size`` of its rows. A person
        batch spans fifty times the events a bid batch does, so a query reading persons or auctions
        is not paced by batches of a few hundred rows. Where that is fewer than ``batch_size`` ids,
        ``batch_size`` ids (at most as many rows)."""
        share = (self.person_proportion, self.auction_proportion, self.bid_proportion)[STREAMS.index(stream)]
        return max(batch_size, batch_size // share * self.total_proportion)

    def ids_of_kind(self, kind: int, start: int, end: int) -> np.ndarray:
        """The event ids in [start, end) of one kind (0 person, 1 auction, 2 bid), ascending,
        computed per epoch instead of classifying every id."""
        bounds = np.cumsum([0, self.person_proportion, self.auction_proportion, self.bid_proportion])
        total = self.total_proportion
        epochs = np.arange(start // total, (end - 1) // total + 1 if end > start else start // total,
                           dtype=np.int64)
        ids = (epochs[:, None] * total + np.arange(bounds[kind], bounds[kind + 1], dtype=np.int64)).ravel()
        return ids[(ids >= start) & (ids < end)]

    def kind_of(self, ids: np.ndarray) -> np.ndarray:
        """0 person, 1 auction, 2 bid, for each event id."""
        offset = ids % self.total_proportion
        return (offset >= self.person_proportion).astype(np.int8) + (
            offset >= self.person_proportion + self.auction_proportion)


@lru_cache(maxsize=8)
def _channels(seed: int) -> tuple[pa.Array, pa.Array]:
    return vocab.channels_and_urls(seed)


@lru_cache(maxsize=8)
def _letters(seed: int) -> np.ndarray:
    """The seeded pool padding is copied from."""
    return np.random.default_rng([seed, 0xE87A]).integers(97, 123, 1 << 16).astype(np.uint8)


_NAMES = pa.array(vocab.NAMES)
_CITIES = pa.array(vocab.US_CITIES)
_STATES = pa.array(vocab.US_STATES)


def _strings(buf: np.ndarray, offsets: np.ndarray) -> pa.Array:
    n = len(offsets) - 1
    data = buf[: offsets[-1]]
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data))


def _timestamps(values: np.ndarray) -> pa.Array:
    return pa.Array.from_buffers(_TS, len(values), [None, pa.py_buffer(values)])


def _dict(codes: np.ndarray, dictionary: pa.Array) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), dictionary)


# the bid columns the kernel may skip, and the columns that need each (a channel code gives both the
# channel and the url)
_BID_BITS = {"auction": k.BID_AUCTION, "bidder": k.BID_BIDDER, "price": k.BID_PRICE, "channel": k.BID_CHANNEL}
_BID_READS = {"auction": frozenset({"auction"}), "bidder": frozenset({"bidder"}), "price": frozenset({"price"}),
              "channel": frozenset({"channel", "url"})}


def _bid_batch(cfg: GeneratorConfig, ids: np.ndarray, columns: frozenset[str] | None = None) -> pa.RecordBatch:
    n = len(ids)
    with_extra = columns is None or "extra" in columns
    wanted = {name: columns is None or bool(columns & read) for name, read in _BID_READS.items()}
    cols = {name: np.empty(n, dtype=np.int64) for name in ("auction", "bidder", "price", "channel", "date_time")}
    extra = np.empty(n * k.extra_bound(32, cfg.avg_bid_byte_size) + 1 if with_extra else 1, dtype=np.uint8)
    extra_off = np.empty(n + 1, dtype=np.int64)
    channels, urls = _channels(cfg.seed)
    k.bids(cfg.as_array(), _letters(cfg.seed), ids, cols["auction"], cols["bidder"], cols["price"], cols["channel"],
           cols["date_time"],
           extra, extra_off, len(vocab.HOT_CHANNELS), vocab.CHANNELS_NUMBER, with_extra,
           sum(bit for name, bit in _BID_BITS.items() if wanted[name]))
    arrays = {"auction": lambda: pa.array(cols["auction"]), "bidder": lambda: pa.array(cols["bidder"]),
              "price": lambda: pa.array(cols["price"]), "channel": lambda: _dict(cols["channel"], channels),
              "url": lambda: _dict(cols["channel"], urls), "date_time": lambda: _timestamps(cols["date_time"]),
              "extra": lambda: _strings(extra, extra_off)}
    schema = SCHEMAS["bid"] if columns is None else \
        pa.schema([f for f in SCHEMAS["bid"] if f.name in columns])  # only the columns asked for: Arrow's too
    return pa.RecordBatch.from_arrays([arrays[f.name]() for f in schema], schema=schema)


_TEXT = {"auction": frozenset({"item_name", "description", "extra"}),
         "person": frozenset({"email_address", "credit_card", "extra"})}


def _text_buffers(n: int, sizes: dict[str, int], with_text: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """A byte buffer and offsets per text column; one byte each when the text is not generated."""
    return {name: (np.empty(n * size + 1 if with_text else 1, dtype=np.uint8), np.empty(n + 1, dtype=np.int64))
            for name, size in sizes.items()}


def _auction_batch(cfg: GeneratorConfig, ids: np.ndarray, columns: frozenset[str] | None = None) \
        -> pa.RecordBatch:
    n = len(ids)
    with_text = columns is None or bool(columns & _TEXT["auction"])
    ints = {name: np.empty(n, dtype=np.int64) for name in
            ("id", "initial_bid", "reserve", "date_time", "expires", "seller", "category")}
    bufs = _text_buffers(n, {"item_name": 20, "description": 100,
                             "extra": k.extra_bound(48, cfg.avg_auction_byte_size)}, with_text)
    k.auctions(cfg.as_array(), _letters(cfg.seed), ids, ints["id"], ints["initial_bid"], ints["reserve"],
               ints["date_time"],
               ints["expires"], ints["seller"], ints["category"], *bufs["item_name"], *bufs["description"],
               *bufs["extra"], with_text)
    return pa.RecordBatch.from_arrays(
        [pa.array(ints["id"]), _strings(*bufs["item_name"]), _strings(*bufs["description"]),
         pa.array(ints["initial_bid"]), pa.array(ints["reserve"]), _timestamps(ints["date_time"]),
         _timestamps(ints["expires"]), pa.array(ints["seller"]), pa.array(ints["category"]),
         _strings(*bufs["extra"])], schema=SCHEMAS["auction"])


def _person_batch(cfg: GeneratorConfig, ids: np.ndarray, columns: frozenset[str] | None = None) \
        -> pa.RecordBatch:
    n = len(ids)
    with_text = columns is None or bool(columns & _TEXT["person"])
    ints = {name: np.empty(n, dtype=np.int64) for name in ("id", "name", "city", "state", "date_time")}
    bufs = _text_buffers(n, {"email_address": 20, "credit_card": 19,
                             "extra": k.extra_bound(40, cfg.avg_person_byte_size)}, with_text)
    k.people(cfg.as_array(), _letters(cfg.seed), ids, ints["id"], ints["name"], ints["city"], ints["state"],
             ints["date_time"],
             *bufs["email_address"], *bufs["credit_card"], *bufs["extra"], len(vocab.FIRST_NAMES),
             len(vocab.LAST_NAMES), len(vocab.US_CITIES), len(vocab.US_STATES), with_text)
    return pa.RecordBatch.from_arrays(
        [pa.array(ints["id"]), _dict(ints["name"], _NAMES), _strings(*bufs["email_address"]),
         _strings(*bufs["credit_card"]), _dict(ints["city"], _CITIES), _dict(ints["state"], _STATES),
         _timestamps(ints["date_time"]), _strings(*bufs["extra"])], schema=SCHEMAS["person"])


_BUILDERS = {"person": _person_batch, "auction": _auction_batch, "bid": _bid_batch}


def generate(config: GeneratorConfig, stream: str, batch_size: int = 65_536, start_event: int = 0,
             end_event: int | None = None, columns: frozenset[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of one stream for events [start_event, end_event), each covering batch_size event ids.

    With ``columns``, only those need be right: text nobody asked for (a bid's ``extra``, an
    auction's or a person's text columns) is left empty, a bid batch holds only those columns (the
    others are not drawn), and every other value is the same.
    """
    if stream not in _BUILDERS:
        raise ValueError(f"unknown Nexmark stream {stream!r}; streams are {list(STREAMS)}")
    end = config.events if end_event is None else min(end_event, config.events)
    kind = STREAMS.index(stream)
    for lo in range(start_event, end, batch_size):
        yield _BUILDERS[stream](config, config.ids_of_kind(kind, lo, min(lo + batch_size, end)), columns)


def generate_all(config: GeneratorConfig, batch_size: int = 65_536) -> Iterator[dict[str, pa.RecordBatch]]:
    """All three streams, one event-id range at a time."""
    for lo in range(0, config.events, batch_size):
        ids = np.arange(lo, min(lo + batch_size, config.events), dtype=np.int64)
        kinds = config.kind_of(ids)
        yield {s: _BUILDERS[s](config, ids[kinds == i]) for i, s in enumerate(STREAMS)}


def write_parquet(config: GeneratorConfig, out_dir: str | os.PathLike[str], batch_size: int = 1 << 16) \
        -> dict[str, Path]:
    """person/auction/bid.parquet under ``out_dir``, each written to a temporary name and renamed."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for stream in STREAMS:
        fd, tmp = tempfile.mkstemp(dir=out, suffix=".parquet.tmp")
        os.close(fd)
        try:
            with pq.ParquetWriter(tmp, SCHEMAS[stream]) as writer:
                for batch in generate(config, stream, batch_size):
                    writer.write_batch(batch)
            paths[stream] = out / f"{stream}.parquet"
            os.replace(tmp, paths[stream])
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
    return paths


def id_bounds(config: GeneratorConfig, stream: str, column: str) -> tuple[int, int] | None:
    """(min, max) bounds of an id column of ``stream`` over all of ``config``'s events: ids created up
    to the last epoch, and as the bid and auction kernels draw them, up to ``ID_LEAD`` beyond."""
    if config.events == 0:
        return None
    epochs = (config.events - 1) // config.total_proportion + 1
    people, auctions = epochs * config.person_proportion, epochs * config.auction_proportion
    drawn = {("person", "id"): (k.FIRST_PERSON_ID, people - 1),
             ("auction", "id"): (k.FIRST_AUCTION_ID, auctions - 1),
             ("auction", "seller"): (k.FIRST_PERSON_ID, people - 1 + k.ID_LEAD),
             ("bid", "auction"): (k.FIRST_AUCTION_ID, auctions - 1 + k.ID_LEAD),
             ("bid", "bidder"): (k.FIRST_PERSON_ID, people - 1 + k.ID_LEAD)}
    found = drawn.get((stream, column))
    return None if found is None else (found[0], found[0] + found[1])
