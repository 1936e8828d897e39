"""A Prometheus endpoint for a running job (the ``prometheus-client`` library serves it).

The values are read from ``JobControl.status()`` when Prometheus scrapes, so the job pays
nothing between scrapes; checkpoint durations go into a histogram as checkpoints complete.
The server listens on loopback unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from darwin.errors import ConfigError
from darwin.monitor.rates import Rate
from darwin.runtime.control import JobControl

CHECKPOINT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class JobCollector(Collector):
    """The job's counters and gauges at scrape time."""

    def __init__(self, control: JobControl) -> None:
        self.control = control
        self.throughput = Rate()

    def collect(self) -> Iterator[Any]:
        status = self.control.status()
        if status is None:
            return
        for name, value, text in (("darwin_input_rows", status.input_rows, "rows read from the sources"),
                                  ("darwin_output_rows", status.output_rows, "result rows the sinks took"),
                                  ("darwin_late_rows", status.late_rows, "rows that arrived after their window"),
                                  ("darwin_checkpoints", status.checkpoints, "completed checkpoints")):
            yield CounterMetricFamily(name, text, value=value)
        yield GaugeMetricFamily("darwin_throughput_rows_per_second", "input rows per second since the last scrape",
                                value=self.throughput.update(status.input_rows))
        p99 = None if status.latency_p99_ms is None else status.latency_p99_ms / 1000.0
        optional: tuple[tuple[str, float | None, str], ...] = (
            ("darwin_watermark_milliseconds", status.watermark_ms, "the sources' smallest watermark"),
            ("darwin_watermark_lag_seconds", status.watermark_lag_seconds(), "wall clock minus watermark"),
            ("darwin_consumer_lag_messages", status.consumer_lag, "messages the sources have not read"),
            ("darwin_latency_p99_seconds", p99, "p99 latency of the results of the last minute"),
            ("darwin_checkpoint_age_seconds", status.checkpoint_age_seconds(), "time since the newest checkpoint"))
        for gauge, reading, about in optional:
            if reading is not None:
                yield GaugeMetricFamily(gauge, about, value=reading)
        rows = CounterMetricFamily("darwin_pipeline_input_rows", "rows each pipeline was given", labels=["pipeline"])
        busy = CounterMetricFamily("darwin_pipeline_busy_seconds", "seconds each pipeline ran", labels=["pipeline"])
        workers = GaugeMetricFamily("darwin_pipeline_workers", "workers each pipeline uses now (adapted while "
                                    "the job runs)", labels=["pipeline"])
        for pipeline in status.pipelines:
            rows.add_metric([str(pipeline["pipeline"])], pipeline["rows_in"])
            busy.add_metric([str(pipeline["pipeline"])], pipeline["seconds"])
            workers.add_metric([str(pipeline["pipeline"])], pipeline["workers"])
        yield rows
        yield busy
        yield workers


class MetricsServer:
    """The endpoint of one job; ``close()`` stops it."""

    def __init__(self, control: JobControl, port: int, address: str = "127.0.0.1") -> None:
        self.registry = CollectorRegistry()
        self.registry.register(JobCollector(control))
        durations = Histogram("darwin_checkpoint_duration_seconds", "how long checkpoints took",
                              registry=self.registry, buckets=CHECKPOINT_BUCKETS)
        control.on_checkpoint(durations.observe)
        try:
            self.server, self.thread = start_http_server(port, addr=address, registry=self.registry)
        except OSError as e:
            raise ConfigError(f"metrics port {port} on {address}: cannot listen ({e.strerror or e})") from None
        self.port = self.server.server_port

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def serve_metrics(control: JobControl, port: int, address: str = "127.0.0.1") -> MetricsServer:
    """Serve the job's metrics at ``http://address:port/metrics`` (port 0: any free port, see ``.port``)."""
    return MetricsServer(control, port, address)
