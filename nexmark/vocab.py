"""Fixed vocabularies of the Nexmark generator (values as in the reference generator).

Low-cardinality string columns are Arrow dictionary arrays over these lists, so
their codes are stable across batches.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

US_STATES = ["AZ", "CA", "ID", "OR", "WA", "WY"]
US_CITIES = ["Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent",
             "Cheyenne"]
FIRST_NAMES = ["Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"]
LAST_NAMES = ["Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"]
NAMES = [f"{f} {last}" for f in FIRST_NAMES for last in LAST_NAMES]  # code = first * len(LAST) + last
HOT_CHANNELS = ["Google", "Facebook", "Baidu", "Apple"]
CHANNELS_NUMBER = 10_000


def _reverse_bits32(n: int) -> int:
    """Java's Integer.reverse as a signed 32-bit value."""
    r = int(f"{n & 0xFFFFFFFF:032b}"[::-1], 2)
    return r - (1 << 32) if r >= 1 << 31 else r


def channels_and_urls(seed: int) -> tuple[pa.Array, pa.Array]:
    """Channel names and their URLs: 4 hot ones, then 'channel-N' for N < 10,000.

    URLs are random per (seed, channel); 9 in 10 cold channels carry a channel_id parameter.
    """
    rng = np.random.default_rng([seed, 0x5EED])
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz_", dtype=np.uint8)

    def base_url() -> str:
        parts = ["".join(map(chr, letters[rng.integers(0, len(letters), int(rng.integers(3, 5)))]))
                 for _ in range(3)]
        return "https://www.nexmark.com/" + "/".join(parts) + "/item.htm?query=1"

    channels = list(HOT_CHANNELS)
    urls = [base_url() for _ in HOT_CHANNELS]
    for n in range(CHANNELS_NUMBER):
        url = base_url()
        if rng.integers(0, 10) > 0:
            url += f"&channel_id={abs(_reverse_bits32(n))}"
        channels.append(f"channel-{n}")
        urls.append(url)
    return pa.array(channels, pa.string()), pa.array(urls, pa.string())
