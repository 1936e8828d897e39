"""Watching and stopping a running job: a Prometheus endpoint, a progress display, stop on signals."""

from darwin.monitor.display import ProgressDisplay
from darwin.monitor.prometheus import serve_metrics
from darwin.monitor.signals import stop_on_signals

__all__ = ["ProgressDisplay", "serve_metrics", "stop_on_signals"]
