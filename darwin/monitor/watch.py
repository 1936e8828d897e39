"""Run a job the way ``darwin run`` does: stopped cleanly by SIGTERM/SIGINT, watched by a progress
display and a Prometheus endpoint when asked."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from rich.console import Console

from darwin.monitor.display import ProgressDisplay
from darwin.monitor.prometheus import serve_metrics
from darwin.monitor.signals import stop_on_signals
from darwin.runtime.control import JobControl

if TYPE_CHECKING:
    from darwin.runtime.job import JobResult


def run_watched(run: Callable[[JobControl], JobResult], *, metrics_port: int | None = None, progress: bool = False,
                drain: bool = False, console: Console | None = None) -> JobResult:
    """``run(control)`` (e.g. ``lambda c: query.sink(s).run(config, c)``), until the end of its input or the
    first SIGTERM/SIGINT (a final checkpoint, then the end; with ``drain`` its open windows fire first)."""
    control = JobControl()
    with ExitStack() as watching:
        if metrics_port is not None:
            server = serve_metrics(control, metrics_port)
            watching.callback(server.close)
            (console or Console(stderr=True)).print(f"metrics: http://127.0.0.1:{server.port}/metrics")
        if progress:
            watching.enter_context(ProgressDisplay(control, console))
        watching.enter_context(stop_on_signals(control, drain))
        return run(control)
