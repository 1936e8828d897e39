"""Watching and stopping a running job: a Prometheus endpoint, a progress display, stop on signals."""

from darwin.monitor.display import ProgressDisplay
from darwin.monitor.prometheus import serve_metrics
from darwin.monitor.signals import stop_on_signals
from darwin.monitor.watch import run_watched

__all__ = ["ProgressDisplay", "run_watched", "serve_metrics", "stop_on_signals"]
