"""Latency of results: each result's emission time minus the ingestion time of the input it came from.

The engine stamps every result batch with the ingestion time of the input batch whose processing
emitted it (``Output.ingested``; the rule is in docs/decisions.md), and the driver records the
difference when the sink has taken the batch. Every row of a batch is one result: percentiles are
over rows.

A job may run for ever, so nothing here grows with the results: the whole run's percentiles come
from a histogram of rows by latency, and only the results of the last ``keep_seconds`` are kept
one by one (the live view's p99 is over the last minute).
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections import deque
from typing import Any

import numpy as np

BUCKETS_PER_DOUBLING = 256  # a bucket spans 0.27% of the latencies in it
LEAST_MS = 2.0 ** -20  # about 1 ns: smaller latencies (and negative ones) share the first bucket
MOST_MS = 2.0 ** 40  # about 35 years: larger ones share the last
BUCKETS = int(math.log2(MOST_MS / LEAST_MS)) * BUCKETS_PER_DOUBLING + 1
RECENT_SECONDS = 60.0  # results kept one by one: the live view's p99 reads the last minute


class Latencies:
    """The latencies of one run's results: a histogram over the run, exact over its last ``keep_seconds``.

    Each histogram bucket holds the rows whose latency falls in it and reports the largest latency
    it holds, so a run's percentile is a latency some result had, at most 0.27% above the exact
    one. The records were a list entry per result batch, for the whole run (~150 bytes a batch:
    250,000 batches of a filter grew the process by 39 MB, a stream job without end).
    """

    def __init__(self, keep_seconds: float = RECENT_SECONDS) -> None:
        self.keep_seconds = keep_seconds
        self.rows_in = np.zeros(BUCKETS, np.int64)  # rows per bucket
        self.largest = np.full(BUCKETS, -math.inf)  # the largest latency (ms) per bucket
        self.rows = 0
        self.most_ms: float | None = None
        # the results of the last keep_seconds: when the sink took each (time.perf_counter() seconds),
        # its latency in ms and its rows, in emission order; the live view reads them from its thread
        self.recent: deque[tuple[float, float, int]] = deque()
        self.lock = threading.Lock()

    def record(self, ingested: float, emitted: float, rows: int) -> None:
        if not rows:
            return
        millis = (emitted - ingested) * 1000.0
        at = _bucket(millis)
        with self.lock:
            self.rows_in[at] += rows
            self.largest[at] = max(self.largest[at], millis)
            self.rows += rows
            self.most_ms = millis if self.most_ms is None else max(self.most_ms, millis)
            self.recent.append((emitted, millis, rows))
            while self.recent[0][0] < emitted - self.keep_seconds:
                self.recent.popleft()

    def __len__(self) -> int:
        return self.rows

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile (0-100) of the latency of the run's rows, in ms (from the histogram)."""
        with self.lock:
            if not self.rows:
                return None
            reached = np.cumsum(self.rows_in)
            target = max(q / 100.0 * reached[-1], 1)  # a bucket holding rows, for q = 0 too
            return float(self.largest[np.searchsorted(reached, target)])

    def recent_percentile(self, q: float, seconds: float) -> float | None:
        """The ``q``-th percentile over the results emitted in the last ``seconds`` (a live view)."""
        return self.kept_percentile(q, since=time.perf_counter() - seconds)

    def kept_percentile(self, q: float, since: float = -math.inf, until: float = math.inf) -> float | None:
        """The ``q``-th percentile (exact) over the kept results emitted from ``since`` until before
        ``until`` (``time.perf_counter()`` times), in ms."""
        with self.lock:
            kept = list(self.recent)
        times = [t for t, _, _ in kept]
        kept = kept[bisect.bisect_left(times, since):bisect.bisect_left(times, until)]
        if not kept:
            return None
        millis = np.array([m for _, m, _ in kept])
        rows = np.array([r for _, _, r in kept], dtype=np.int64)
        order = np.argsort(millis, kind="stable")
        reached = np.cumsum(rows[order])
        return float(millis[order][np.searchsorted(reached, q / 100.0 * reached[-1])])

    def summary(self) -> dict[str, Any]:
        """``latency_p50_ms``, ``latency_p99_ms``, ``latency_max_ms`` (None without results)."""
        return {"latency_p50_ms": self.percentile(50), "latency_p99_ms": self.percentile(99),
                "latency_max_ms": self.most_ms}


def _bucket(millis: float) -> int:
    """The histogram bucket of a latency: ``BUCKETS_PER_DOUBLING`` per doubling from ``LEAST_MS``."""
    if not millis > LEAST_MS:  # NaN too
        return 0
    return min(int(math.log2(millis / LEAST_MS) * BUCKETS_PER_DOUBLING), BUCKETS - 1)
