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


def _mix(z: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def event_time_ms(event: int, rate: int = 10_000_000) -> int:
    """The event time of ad event ``event`` (event times never decrease with the id)."""
    return BASE_TIME_MS + event * 1000 // rate


def generate(events: int, seed: int = 0, rate: int = 10_000_000, batch_size: int = 65_536, start: int = 0) \
        -> Iterator[pa.RecordBatch]:
    """Ad events [start, events); each event's fields come from a hash of (seed, event id), so batches do
    not matter."""
    ads = pa.array([a for a, _ in campaigns(seed)])
    ad_types, event_types = pa.array(AD_TYPES), pa.array(EVENT_TYPES)
    for lo in range(start, events, batch_size):
        ids = np.arange(lo, min(lo + batch_size, events), dtype=np.int64)
        with np.errstate(over="ignore"):
            h = _mix(ids.astype(np.uint64) ^ (np.uint64(seed) * np.uint64(0x9E3779B97F4A7C15)))
        cols = [
            pa.array((h % np.uint64(100_000)).astype(np.int64)),
            pa.array(((h >> np.uint64(17)) % np.uint64(10_000)).astype(np.int64)),
            pa.DictionaryArray.from_arrays(pa.array(((h >> np.uint64(31)) % np.uint64(len(ads))).astype(np.int32)),
                                           ads),
            pa.DictionaryArray.from_arrays(pa.array(((h >> np.uint64(41)) % np.uint64(5)).astype(np.int32)),
                                           ad_types),
            pa.DictionaryArray.from_arrays(pa.array(((h >> np.uint64(45)) % np.uint64(3)).astype(np.int32)),
                                           event_types),
            pa.array(BASE_TIME_MS + ids * 1000 // rate, pa.timestamp("ms")),
        ]
        yield pa.RecordBatch.from_arrays(cols, schema=SCHEMA)
