"""A live progress line for a running job: rows in/out and their rates, watermark lag, checkpoint age,
consumer lag and p99 latency, redrawn once a second from ``JobControl.status()`` (the ``rich`` library)."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from darwin.monitor.rates import Rate
from darwin.runtime.control import JobControl, JobStatus


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f} s"


class ProgressDisplay:
    """``with ProgressDisplay(control): query.sink(...).run(config, control)`` shows the job as it runs."""

    def __init__(self, control: JobControl, console: Console | None = None, refresh_per_second: float = 1.0) -> None:
        self.control = control
        self.rows_in, self.rows_out = Rate(), Rate()
        self.live = Live(get_renderable=self.render, console=console or Console(stderr=True),
                         refresh_per_second=refresh_per_second, transient=False)

    def render(self) -> Group:
        status = self.control.status()
        table = Table(show_header=True, header_style="bold", box=None)
        for name in ("rows in", "in/s", "rows out", "out/s", "late", "watermark lag", "checkpoints",
                     "checkpoint age", "consumer lag", "p99 latency"):
            table.add_column(name, justify="right")
        if status is None:
            return Group(table)
        table.add_row(*self.cells(status))
        return Group(table, self.pipelines(status))

    @staticmethod
    def pipelines(status: JobStatus) -> Table:
        """Per pipeline: rows given, workers (in use / most, as adapted), busy seconds and (on several
        workers) the imbalance."""
        table = Table(show_header=True, header_style="dim", box=None)
        for name in ("pipeline", "rows in", "workers", "busy", "imbalance"):
            table.add_column(name, justify="right")
        for p in status.pipelines:
            workers = f"{p['workers']}/{p['workers_most']}" if "workers_most" in p else str(p["workers"])
            table.add_row(str(p["pipeline"]), f"{p['rows_in']:,}", workers, _seconds(p["seconds"]),
                          f"{p['imbalance']:.2f}" if "imbalance" in p else "-")
        return table

    def cells(self, status: JobStatus) -> list[str]:
        p99 = "-" if status.latency_p99_ms is None else f"{status.latency_p99_ms:,.1f} ms"
        return [f"{status.input_rows:,}", f"{self.rows_in.update(status.input_rows):,.0f}",
                f"{status.output_rows:,}", f"{self.rows_out.update(status.output_rows):,.0f}",
                f"{status.late_rows:,}", _seconds(status.watermark_lag_seconds()), f"{status.checkpoints:,}",
                _seconds(status.checkpoint_age_seconds()),
                "-" if status.consumer_lag is None else f"{status.consumer_lag:,}",
                p99 + (" (stopping)" if status.stopping else "")]

    def __enter__(self) -> ProgressDisplay:
        self.live.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.live.__exit__(kind, error, trace)
