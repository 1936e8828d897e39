"""Event-time progress and run metrics, shared by the compiled and reference engines."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from darwin.durations import MAX_EVENT_TIME_MS
from darwin.errors import SourceError
from darwin.timestamps import NO_WATERMARK

LATE_WARNING_INTERVAL_S = 60.0

log = logging.getLogger(__name__)


def latest_event_time(times: pa.Array, source: str, column: str) -> int | None:
    """The largest event time of a batch (None if it has none), refusing one beyond ``MAX_EVENT_TIME_MS`` of 1970.

    Windows' ends, the watermark and lateness are computed in int64 from event times and durations of
    at most 100 years, so only these times have windows int64 holds: near its ends a window's end
    wrapped around (the compiled engine fired wrong windows, the interpreter failed in Arrow). Every
    engine checks a source's time column here, in one pass that also finds the clock's maximum."""
    extent = pc.min_max(times)
    lowest, highest = extent["min"].as_py(), extent["max"].as_py()
    if highest is None:
        return None
    for t in (lowest, highest):
        if abs(t) > MAX_EVENT_TIME_MS:
            raise SourceError(f"source {source!r}: event time column {column!r} holds {t} ms since 1970, "
                              f"beyond the event times {_SUPPORTED}")
    return int(highest)


_SUPPORTED = "Darwin's windows and watermark support (-2^62 to 2^62 ms, about 146 million years either side of 1970)"


def window_time_error(column: str, t: int) -> SourceError:
    """The error of a window meeting time ``t`` beyond ``MAX_EVENT_TIME_MS`` on ``column``, one that is not a
    time attribute (``darwin.plan.temporal.checks_window_times``): a source's event times are refused as they
    are read, but a window on a second timestamp column, or on one computed, meets its values only there."""
    return SourceError(window_time_message(column, str(t)))


def window_time_message(column: str, t: str) -> str:
    """``window_time_error``'s message, the time given as text (Spark's writes it in the JVM)."""
    return f"window on column {column!r} meets {t} ms since 1970, beyond the times {_SUPPORTED}"


def check_window_times(times: np.ndarray, column: str) -> None:
    """Refuse a batch's times beyond ``MAX_EVENT_TIME_MS`` that a window on ``column`` meets (one pass each way)."""
    if len(times):
        for t in (int(times.min()), int(times.max())):
            if abs(t) > MAX_EVENT_TIME_MS:
                raise window_time_error(column, t)


def check_window_time(t: int, column: str) -> int:
    """``t``, a time a window on ``column`` meets, refused beyond ``MAX_EVENT_TIME_MS`` (the interpreter's check)."""
    if abs(t) > MAX_EVENT_TIME_MS:
        raise window_time_error(column, t)
    return t


class WatermarkClock:
    """Watermark = max event time seen − delay (bounded out-of-orderness), never moving back.

    With ``max_future_ms``, a row more than that ahead of the largest event time seen so far
    does not move it (one far-future event would otherwise make every later row late); such
    rows are counted in ``future_rows``. The compiled kernels implement the same rule.
    """

    def __init__(self, delay_ms: int, max_future_ms: int | None = None) -> None:
        self.delay_ms, self.max_future_ms = delay_ms, max_future_ms
        self.max_time = NO_WATERMARK
        self.future_rows = 0

    def observe(self, t: int) -> None:
        if t > self.max_time:
            if (self.max_future_ms is not None and self.max_time != NO_WATERMARK
                    and t > self.max_time + self.max_future_ms):
                self.future_rows += 1
            else:
                self.max_time = t

    @property
    def watermark(self) -> int:
        return NO_WATERMARK if self.max_time == NO_WATERMARK else self.max_time - self.delay_ms


class LateRowsWarning:
    """Says in the log that late rows are being lost: when it starts, then at most once per interval.

    Late rows are otherwise only a counter, and a single event far in the future makes every
    later row late; the warning names the likely cause and the bounds that address it.
    """

    def __init__(self, source: str, kept: bool = False, interval_s: float = LATE_WARNING_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.source, self.kept, self.interval_s, self.clock = source, kept, interval_s, clock
        self.reported = 0
        self.last: float | None = None

    def update(self, late_rows: int, watermark: int) -> None:
        """Called after each batch with the running count of late rows and the watermark."""
        if late_rows <= self.reported:
            return
        now = self.clock()
        if self.last is not None and now - self.last < self.interval_s:
            return
        self.last, self.reported = now, late_rows
        log.warning("source %r: %d late rows so far %s (watermark %d ms): their windows had already closed. "
                    "If events arrive later than max_delay allows, raise max_delay; if a few events far in the "
                    "future moved the watermark, set max_future on the source.", self.source, late_rows,
                    "sent to the late output" if self.kept else "dropped", watermark)


class Metrics:
    """Counters and timings of one run, readable as a plain dict."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {"input_rows": 0, "output_rows": 0, "late_rows": 0,
                                       "null_time_rows": 0, "future_rows": 0, "windows_fired": 0}

    def add(self, name: str, amount: int | float) -> None:
        self.values[name] = self.values.get(name, 0) + amount

    def set(self, name: str, value: Any) -> None:
        self.values[name] = value

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)
