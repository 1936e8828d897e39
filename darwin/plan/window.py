"""Event-time window specifications."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from darwin.durations import to_millis
from darwin.errors import PlanError

Duration = str | int | float | timedelta


@dataclass(frozen=True)
class Window:
    """A tumbling (``slide_ms == size_ms``) or sliding window over a timestamp column."""

    size_ms: int
    slide_ms: int
    on: str

    def __post_init__(self) -> None:
        if self.size_ms <= 0 or self.slide_ms <= 0:
            raise PlanError(f"window size and slide must be positive, got size={self.size_ms}ms "
                            f"slide={self.slide_ms}ms")
        if self.size_ms % self.slide_ms:
            raise PlanError(f"a sliding window's size ({self.size_ms}ms) must be a multiple of its "
                            f"slide ({self.slide_ms}ms)")

    @property
    def is_tumbling(self) -> bool:
        return self.size_ms == self.slide_ms

    @property
    def windows_per_row(self) -> int:
        return self.size_ms // self.slide_ms

    def __str__(self) -> str:
        if self.is_tumbling:
            return f"tumble({self.size_ms}ms on {self.on})"
        return f"slide({self.size_ms}ms every {self.slide_ms}ms on {self.on})"


def Tumble(size: Duration, on: str) -> Window:  # noqa: N802 - reads like Flink's Tumble
    """Fixed, non-overlapping windows of ``size`` over timestamp column ``on``."""
    ms = to_millis(size, "Tumble size")
    return Window(ms, ms, on)


def Slide(size: Duration, every: Duration, on: str) -> Window:  # noqa: N802
    """Windows of ``size`` starting ``every`` apart; a row falls into size/every windows."""
    return Window(to_millis(size, "Slide size"), to_millis(every, "Slide every"), on)
