"""A running job seen from outside: asked to stop (a signal handler), and read (a progress display, a
metrics endpoint) from other threads while the driver runs.

Stopping follows Flink's stop-with-savepoint: at the next batch boundary the job takes a final
checkpoint and ends, its open windows kept in that checkpoint, so a restart with the same
``checkpoint_dir`` goes on where it stopped. With ``drain`` (Flink's ``stop --drain``) the
inputs end there instead: every window fires, as at the end of a bounded input, and the final
checkpoint is that of a finished job.

The driver publishes nothing per batch: a reader calls ``status()``, which asks the driver for
its counters at that moment, so watching a job costs it nothing while nobody looks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobStatus:
    """How a job is doing at one moment."""

    input_rows: int
    output_rows: int
    late_rows: int
    watermark_ms: int | None  # the smallest of the sources' watermarks; None before any event time
    checkpoints: int
    last_checkpoint_at: float | None  # time.time() when the newest checkpoint completed
    last_checkpoint_seconds: float | None  # how long it took
    latency_p99_ms: float | None  # of the results of the last minute
    consumer_lag: int | None  # messages the sources that report it have not read yet (Kafka)
    stopping: bool
    pipelines: list[dict[str, Any]] = field(default_factory=list)

    def watermark_lag_seconds(self, now: float | None = None) -> float | None:
        """Wall clock minus watermark (meaningful when event time is wall-clock time)."""
        if self.watermark_ms is None:
            return None
        return (time.time() if now is None else now) - self.watermark_ms / 1000.0

    def checkpoint_age_seconds(self, now: float | None = None) -> float | None:
        if self.last_checkpoint_at is None:
            return None
        return (time.time() if now is None else now) - self.last_checkpoint_at


class JobControl:
    """Handed to ``SinkQuery.run(config, control=...)``: stop the job, read its status, hear of checkpoints."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self.drain = False
        self._status: Callable[[], JobStatus] | None = None
        self._listeners: list[Callable[[float], None]] = []
        self.started = time.time()

    # -- stopping ---------------------------------------------------------------------------------
    def stop(self, drain: bool = False) -> None:
        """End the job at the next batch boundary with a final checkpoint (callable from any thread,
        a signal handler included); ``drain`` ends the inputs first, so every open window fires."""
        self.drain = self.drain or drain
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    # -- watching ---------------------------------------------------------------------------------
    def attach(self, status: Callable[[], JobStatus]) -> None:
        """The driver says where its status comes from once it runs."""
        self._status = status

    def status(self) -> JobStatus | None:
        """The job's status now; None before it has started."""
        return None if self._status is None else self._status()

    def on_checkpoint(self, listener: Callable[[float], None]) -> None:
        """Call ``listener(seconds)`` after every completed checkpoint (in the driver's thread)."""
        self._listeners.append(listener)

    def checkpointed(self, seconds: float) -> None:
        for listener in self._listeners:
            listener(seconds)
