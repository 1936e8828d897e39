"""Event-time progress and run metrics, shared by the compiled and reference engines."""

from __future__ import annotations

from typing import Any

NO_WATERMARK = -(2**63)  # before any event: nothing is late, nothing fires


class WatermarkClock:
    """Watermark = max event time seen − delay (bounded out-of-orderness), never moving back."""

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self.max_time = NO_WATERMARK

    def observe(self, t: int) -> None:
        if t > self.max_time:
            self.max_time = t

    @property
    def watermark(self) -> int:
        return NO_WATERMARK if self.max_time == NO_WATERMARK else self.max_time - self.delay_ms


class Metrics:
    """Counters and timings of one run, readable as a plain dict."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {"input_rows": 0, "output_rows": 0, "late_rows": 0,
                                       "null_time_rows": 0, "windows_fired": 0}

    def add(self, name: str, amount: int | float) -> None:
        self.values[name] = self.values.get(name, 0) + amount

    def set(self, name: str, value: Any) -> None:
        self.values[name] = value

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)
