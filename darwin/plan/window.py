"""Event-time window specifications."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from darwin.durations import MAX_DURATION_MS, to_millis
from darwin.errors import PlanError
from darwin.plan.exprs import ExprNode

Duration = str | int | float | timedelta
MAX_WINDOWS_PER_ROW = 1000  # size / slide of a sliding window: each row is aggregated this many times


@dataclass(frozen=True)
class Window:
    """A tumbling (``slide_ms == size_ms``) or sliding window over a timestamp column."""

    size_ms: int
    slide_ms: int
    on: str

    def __post_init__(self) -> None:
        """Bounds that keep window arithmetic in int64 and per-row work and buffers small."""
        for name, ms in (("size", self.size_ms), ("slide", self.slide_ms)):
            if isinstance(ms, bool) or not isinstance(ms, int):
                raise PlanError(f"window {name} must be an integer number of ms, got {ms!r}")
        if self.size_ms <= 0 or self.slide_ms <= 0:
            raise PlanError(f"window size and slide must be positive, got size={self.size_ms}ms "
                            f"slide={self.slide_ms}ms")
        if self.size_ms > MAX_DURATION_MS:
            raise PlanError(f"window size {self.size_ms}ms is longer than the longest duration Darwin supports, "
                            f"100 years ({MAX_DURATION_MS}ms)")
        if self.size_ms % self.slide_ms:
            raise PlanError(f"a sliding window's size ({self.size_ms}ms) must be a multiple of its "
                            f"slide ({self.slide_ms}ms)")
        if self.windows_per_row > MAX_WINDOWS_PER_ROW:
            raise PlanError(f"a sliding window of {self.size_ms}ms every {self.slide_ms}ms puts each row into "
                            f"{self.windows_per_row} windows; at most {MAX_WINDOWS_PER_ROW} are supported: use a "
                            f"slide of at least {-(-self.size_ms // MAX_WINDOWS_PER_ROW)}ms")

    @property
    def is_tumbling(self) -> bool:
        return self.size_ms == self.slide_ms

    def same_windows(self, other: object) -> bool:
        """Whether ``other`` makes the same windows, over whatever time column: a window join pairs
        them (Flink's needs the same kind, size and slide on both sides, not the same column)."""
        return isinstance(other, Window) and (other.size_ms, other.slide_ms) == (self.size_ms, self.slide_ms)

    @property
    def windows_per_row(self) -> int:
        return self.size_ms // self.slide_ms

    def __str__(self) -> str:
        if self.is_tumbling:
            return f"tumble({self.size_ms}ms on {self.on})"
        return f"slide({self.size_ms}ms every {self.slide_ms}ms on {self.on})"


def Tumble(size: Duration, on: str) -> Window:  # noqa: N802 - reads like Flink's Tumble
    """Fixed, non-overlapping windows of ``size`` over timestamp column ``on``."""
    ms = to_millis(size, "Tumble size", PlanError)
    return Window(ms, ms, on)


def Slide(size: Duration, every: Duration, on: str) -> Window:  # noqa: N802
    """Windows of ``size`` starting ``every`` apart; a row falls into size/every windows."""
    return Window(to_millis(size, "Slide size", PlanError), to_millis(every, "Slide every", PlanError), on)


@dataclass(frozen=True)
class SessionWindow:
    """Windows of activity per key over timestamp column ``on``: a row opens the window
    [t, t + gap], and windows that meet or overlap merge (as Flink's session windows do), so a
    session ends ``gap`` after its last row."""

    gap_ms: int
    on: str

    def __post_init__(self) -> None:
        if isinstance(self.gap_ms, bool) or not isinstance(self.gap_ms, int) or self.gap_ms <= 0:
            raise PlanError(f"session gap must be a positive number of ms, got {self.gap_ms!r}")
        if self.gap_ms > MAX_DURATION_MS:
            raise PlanError(f"session gap {self.gap_ms}ms is longer than the longest duration Darwin supports, "
                            f"100 years ({MAX_DURATION_MS}ms)")

    def __str__(self) -> str:
        return f"session(gap {self.gap_ms}ms on {self.on})"


def Session(gap: Duration, on: str) -> SessionWindow:  # noqa: N802
    """Sessions of rows no more than ``gap`` apart, per key, over timestamp column ``on``."""
    return SessionWindow(to_millis(gap, "Session gap", PlanError), on)


@dataclass(frozen=True)
class BarrierWindow:
    """Data-triggered windows: a row for which ``when`` holds (a *barrier*) closes the window of
    every key at once; the rows before it, back to the previous barrier, are the window. ``on``
    (a timestamp column, optional) gives the windows' bounds: the previous and this barrier's time.
    ``when`` is a plan expression (``darwin.plan.exprs``), checked against the input when the
    aggregation is built. With ``by`` (columns), barriers are per key: a barrier closes the window
    of its own ``by`` key only, and window ids count each key's barriers."""

    when: ExprNode
    on: str | None = None
    by: tuple[str, ...] = ()

    def __str__(self) -> str:
        by = f" by [{', '.join(self.by)}]" if self.by else ""
        return f"barrier(when {self.when}{by}" + (f" on {self.on})" if self.on else ")")
