"""The Yahoo Streaming Benchmark workload, as the AIR engine paper uses it.

Ad events (user, page, ad, ad type, event type, event time); 100 campaigns of 10
ads each. The query keeps views, joins each ad to its campaign (a small static
table) and counts views per campaign in 10-second tumbling windows.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np
import pyarrow as pa
from numba import njit

CAMPAIGNS = 100
ADS_PER_CAMPAIGN = 10
AD_TYPES = ["banner", "modal", "sponsored-search", "mail", "mobile"]
EVENT_TYPES = ["view", "click", "purchase"]
_DICT = pa.dictionary(pa.int32(), pa.string())
SCHEMA = pa.schema([pa.field("user_id", pa.int64(), False), pa.field("page_id", pa.int64(), False),
                    pa.field("ad_id", _DICT, False), pa.field("ad_type", _DICT, False),
                    pa.field("event_type", _DICT, False), pa.field("event_time", pa.timestamp("ms"), False)])
BASE_TIME_MS = 1_436_918_400_000


def _uuid(rng: np.random.Generator) -> str:
    h = f"{int(rng.integers(0, 2**63)):016x}{int(rng.integers(0, 2**63)):016x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


@lru_cache(maxsize=8)
def campaigns(seed: int) -> tuple[tuple[str, str], ...]:
    """(ad id, campaign id) pairs: the static table of the join."""
    rng = np.random.default_rng([seed, 0x75B])
    ids = [_uuid(rng) for _ in range(CAMPAIGNS)]
    return tuple((_uuid(rng), ids[a // ADS_PER_CAMPAIGN]) for a in range(CAMPAIGNS * ADS_PER_CAMPAIGN))


# the ad event's fields ``_draw`` may skip, and the column each is
USER, PAGE, AD, AD_TYPE, EVENT_TYPE = 1, 2, 4, 8, 16
_FIELDS = {"user_id": USER, "page_id": PAGE, "ad_id": AD, "ad_type": AD_TYPE, "event_type": EVENT_TYPE}


@njit(nogil=True, cache=True)
def _draw(lo: int, seed: int, rate: int, wanted: int, user: np.ndarray, page: np.ndarray, ad: np.ndarray,
          ad_type: np.ndarray, event_type: np.ndarray, time: np.ndarray, ads: int) -> None:
    """Events lo, lo + 1, ...: each field from a 64-bit mix (splitmix64's finalizer) of the event id and
    the seed; only the fields in ``wanted`` (and the time) are written. Compiled without the GIL, so
    splits of the stream are generated side by side."""
    salt = np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)
    for j in range(time.shape[0]):
        i = lo + j
        z = np.uint64(i) ^ salt
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        h = z ^ (z >> np.uint64(31))
        if wanted & USER:
            user[j] = np.int64(h % np.uint64(100_000))
        if wanted & PAGE:
            page[j] = np.int64((h >> np.uint64(17)) % np.uint64(10_000))
        if wanted & AD:
            ad[j] = np.int32((h >> np.uint64(31)) % np.uint64(ads))
        if wanted & AD_TYPE:
            ad_type[j] = np.int32((h >> np.uint64(41)) % np.uint64(5))
        if wanted & EVENT_TYPE:
            event_type[j] = np.int32((h >> np.uint64(45)) % np.uint64(3))
        time[j] = BASE_TIME_MS + i * 1000 // rate


def event_time_ms(event: int, rate: int = 10_000_000) -> int:
    """The event time of ad event ``event`` (event times never decrease with the id)."""
    return BASE_TIME_MS + event * 1000 // rate


def generate(events: int, seed: int = 0, rate: int = 10_000_000, batch_size: int = 65_536, start: int = 0,
             columns: frozenset[str] | None = None) -> Iterator[pa.RecordBatch]:
    """Ad events ``start`` to ``events`` (exclusive), in batches of ``batch_size`` from ``start``; each
    event's fields come from a hash of (seed, event id), so batches do not matter (a Spark data source
    generates ranges of ids on its executors, ``nexmark.spark_source``). With ``columns``, a batch
    holds only those (the others are not drawn)."""
    ads = pa.array([a for a, _ in campaigns(seed)])
    dictionaries = {"ad_id": ads, "ad_type": pa.array(AD_TYPES), "event_type": pa.array(EVENT_TYPES)}
    schema = SCHEMA if columns is None else pa.schema([f for f in SCHEMA if f.name in columns])
    wanted = sum(bit for name, bit in _FIELDS.items() if name in schema.names)
    for lo in range(start, events, batch_size):
        n = min(lo + batch_size, events) - lo
        values = {name: np.empty(n, np.int64 if name in ("user_id", "page_id") else np.int32) for name in _FIELDS}
        time = np.empty(n, np.int64)
        _draw(lo, seed, rate, wanted, values["user_id"], values["page_id"], values["ad_id"], values["ad_type"],
              values["event_type"], time, len(ads))
        arrays = []
        for f in schema:
            if f.name == "event_time":
                arrays.append(pa.array(time, pa.timestamp("ms")))
            elif f.name in dictionaries:
                arrays.append(pa.DictionaryArray.from_arrays(pa.array(values[f.name]), dictionaries[f.name]))
            else:
                arrays.append(pa.array(values[f.name]))
        yield pa.RecordBatch.from_arrays(arrays, schema=schema)
