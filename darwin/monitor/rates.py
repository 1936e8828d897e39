"""Rows per second between two looks at a job."""

from __future__ import annotations

import time


class Rate:
    """The rate of a growing count since the previous call (0.0 on the first)."""

    def __init__(self) -> None:
        self.last: tuple[float, int] | None = None

    def update(self, count: int, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        previous, self.last = self.last, (now, count)
        if previous is None or now <= previous[0]:
            return 0.0
        return max(0, count - previous[1]) / (now - previous[0])
