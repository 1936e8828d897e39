"""Event-based windowing: a sum per sensor for every window a barrier event closes.

A stream of sensor readings is cut into windows by data, not by time: each ``barrier`` event
(say, an operator pressing "end of shift") closes the window of every sensor at once, and the
sum of each sensor's readings since the previous barrier is emitted. Run it with
``python examples/event_windows.py [parallelism]``.
"""

from __future__ import annotations

import random
import sys

import pyarrow as pa

import darwin as dw
from darwin import col

SENSORS = 40


def events(n: int = 20_000, seed: int = 7) -> pa.Table:
    """Readings of random sensors, with a barrier about every 1,000 events."""
    rng = random.Random(seed)
    kind = ["barrier" if rng.random() < 0.001 else "reading" for _ in range(n)]
    return pa.table({"t": pa.array(range(0, n * 5, 5), pa.timestamp("ms")),
                     "kind": kind,
                     "sensor": [rng.randrange(SENSORS) for _ in range(n)],
                     "value": [rng.randrange(1000) for _ in range(n)]})


def query(table: pa.Table) -> dw.Table:
    readings = dw.from_arrow(table, time="t", name="events")
    return readings.window(dw.Barrier(col("kind") == "barrier", on="t")).group_by("sensor") \
        .agg(total=dw.sum("value"), readings=dw.count())


def expected(table: pa.Table) -> list[tuple[int, int, int, int]]:
    """The same in plain Python: (window, sensor, total, readings), sensors in first-arrival order."""
    out, window, sums = [], 0, {}
    for row in table.to_pylist():
        if row["kind"] == "barrier":
            out += [(window, s, total, n) for s, (total, n) in sums.items()]
            window, sums = window + 1, {}
        else:
            total, n = sums.get(row["sensor"], (0, 0))
            sums[row["sensor"]] = (total + row["value"], n + 1)
    return out


def main(parallelism: int = 1) -> tuple[list, list]:
    """The windows Darwin emits and the plain-Python ones, as (window, sensor, total, readings)."""
    table = events()
    result = query(table).collect(dw.Config(parallelism=parallelism, batch_size=4096))
    got = [(r["window_id"], r["sensor"], r["total"], r["readings"]) for r in result.to_pylist()]
    return got, expected(table)


if __name__ == "__main__":
    got, want = main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    windows = sorted({w for w, *_ in got})
    print(f"{len(got)} sums over {len(windows)} barrier windows; the first window's busiest sensors:")
    for w, sensor, total, n in sorted((r for r in got if r[0] == 0), key=lambda r: -r[2])[:5]:
        print(f"  window {w} sensor {sensor:2d}: total {total:7d} over {n} readings")
    print("check against plain Python:", "OK" if got == want else "MISMATCH")
    sys.exit(0 if got == want else 1)
