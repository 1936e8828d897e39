"""Latency of results: each result's emission time minus the ingestion time of the input it came from.

The engine stamps every result batch with the ingestion time of the input batch whose processing
emitted it (``Output.ingested``; the rule is in docs/decisions.md), and the driver records the
difference when the sink has taken the batch. Every row of a batch is one result: percentiles are
over rows.
"""

from __future__ import annotations

import bisect
import time
from typing import Any

import numpy as np


class Latencies:
    """The latencies of one run's results, in emission order."""

    def __init__(self) -> None:
        self.emitted: list[float] = []  # time.perf_counter() seconds when the sink took the batch
        self.millis: list[float] = []
        self.rows: list[int] = []

    def record(self, ingested: float, emitted: float, rows: int) -> None:
        if rows:
            self.emitted.append(emitted)
            self.millis.append((emitted - ingested) * 1000.0)
            self.rows.append(rows)

    def __len__(self) -> int:
        return sum(self.rows)

    def percentile(self, q: float, first: int = 0, last: int | None = None) -> float | None:
        """The ``q``-th percentile (0-100) of the latency of the rows of batches ``first:last``, in ms."""
        if last is None:  # the rows list is appended last: its length is what all three lists hold
            last = len(self.rows)
        millis, rows = np.array(self.millis[first:last]), np.array(self.rows[first:last], dtype=np.int64)
        if not len(rows):
            return None
        order = np.argsort(millis, kind="stable")
        reached = np.cumsum(rows[order])
        return float(millis[order][np.searchsorted(reached, q / 100.0 * reached[-1])])

    def recent_percentile(self, q: float, seconds: float) -> float | None:
        """The ``q``-th percentile over the results emitted in the last ``seconds`` (a live view)."""
        first = bisect.bisect_left(self.emitted, time.perf_counter() - seconds)
        return self.percentile(q, first)

    def summary(self) -> dict[str, Any]:
        """``latency_p50_ms``, ``latency_p99_ms``, ``latency_max_ms`` (None without results)."""
        return {"latency_p50_ms": self.percentile(50), "latency_p99_ms": self.percentile(99),
                "latency_max_ms": max(self.millis) if self.millis else None}
