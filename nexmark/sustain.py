"""Sustainable throughput: the highest input rate at which a query's latency stays bounded.

Each step runs the query for a fixed wall-clock time on sources paced at one rate (``rate_limit``;
event time advances ``time_scale`` times as fast as wall-clock time), into a discarding sink, and
records its results' latency. A rate is *sustained* when the run kept up with it: its sources were
read on schedule at the end (the last batch read at most ``LAG_LIMIT_S`` or a ``LAG_LIMIT_SHARE``
of the step after it was due), and the p99 latency of the results emitted in the second half of
the run is not above twice that of the first half plus ``P99_SLACK_MS`` (latency that grows
through the run has no bound). The rate doubles (``factor``) until a step fails, then bisects
between the last sustained rate and the first failed one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import darwin as dw
from darwin.io.sinks import Blackhole
from darwin.runtime.job import Driver
from darwin.runtime.latency import Latencies
from nexmark.queries import QUERIES
from nexmark.source import source

LAG_LIMIT_S = 0.5
LAG_LIMIT_SHARE = 0.05
P99_SLACK_MS = 250.0
WARM_UP_EVENTS = 5_000


@dataclass
class Step:
    """One rate tried: what ran, its results' latency (ms), how late its sources were read at the end."""

    rate: float
    events: int
    seconds: float  # wall-clock run time (the schedule is events / rate)
    results: int
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    p99_first_half_ms: float | None
    p99_second_half_ms: float | None
    lag_ms: float  # how long after it was due the last batch was read
    sustained: bool

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def run_step(query: str, rate: float, seconds: float, config: dw.Config, seed: int = 0,
             time_scale: float = 1.0) -> Step:
    """The query for ``seconds`` of wall-clock time on sources paced at ``rate`` events per second."""
    events = max(1, int(rate * seconds))
    sources = source(events=events, seed=seed, rate=max(1, int(rate * time_scale)), rate_limit=rate)
    driver = Driver(QUERIES[query].build(sources).plan, Blackhole(), config)
    driver.latency = Latencies(keep_seconds=math.inf)  # a step is short: keep every result, for its halves
    for _ in driver.outputs():
        pass
    m, latency = driver.metrics.values, driver.latency
    elapsed = float(m["seconds"])
    half = driver.started + elapsed / 2  # results emitted in the first half, then the second
    first, second = latency.kept_percentile(99, until=half), latency.kept_percentile(99, since=half)
    lag = float(m.get("source_lag_ms", 0.0))
    kept_up = lag <= max(LAG_LIMIT_S, LAG_LIMIT_SHARE * seconds) * 1000
    bounded = first is None or second is None or second <= 2 * first + P99_SLACK_MS
    summary = latency.summary()
    return Step(rate, events, elapsed, len(latency), summary["latency_p50_ms"], summary["latency_p99_ms"],
                summary["latency_max_ms"], first, second, lag, kept_up and bounded)


def warm_up(query: str, config: dw.Config, seed: int = 0) -> None:
    """Compile the query's kernels before any step is timed."""
    QUERIES[query].build(source(events=WARM_UP_EVENTS, seed=seed)).sink(Blackhole()).run(config)


def find_sustainable(query: str, config: dw.Config, start: float, factor: float = 2.0, seconds: float = 20.0,
                     steps: int = 8, refine: int = 2, seed: int = 0, time_scale: float = 1.0,
                     report: Callable[[Step], None] = lambda step: None) -> tuple[Step | None, list[Step]]:
    """The highest sustained step (None if even ``start`` was not) and every step, in the order run."""
    warm_up(query, config, seed)
    tried: list[Step] = []

    def attempt(rate: float) -> Step:
        step = run_step(query, rate, seconds, config, seed, time_scale)
        tried.append(step)
        report(step)
        return step

    best: Step | None = None
    failed: Step | None = None
    rate = start
    for _ in range(steps):
        step = attempt(rate)
        if not step.sustained:
            failed = step
            break
        best, rate = step, rate * factor
    if best is not None and failed is not None:
        low, high = best.rate, failed.rate
        for _ in range(refine):
            step = attempt((low + high) / 2)
            if step.sustained:
                best, low = step, step.rate
            else:
                high = step.rate
    return best, tried
