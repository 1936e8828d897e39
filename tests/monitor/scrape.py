"""Reading a job's Prometheus endpoint from a test."""

from __future__ import annotations

import time
import urllib.request


def scrape(port: int) -> dict[str, float]:
    """Every sample of ``/metrics``: its name with labels -> value."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {line.split(" ")[0]: float(line.split(" ")[1]) for line in text.splitlines()
            if line and not line.startswith("#")}


def scrape_once_checkpointed(port: int, checkpoints: int, timeout_s: float = 180.0) -> dict[str, float]:
    """The metrics once the job has taken ``checkpoints`` checkpoints and emitted results."""
    deadline, metrics = time.monotonic() + timeout_s, {}
    while time.monotonic() < deadline:
        metrics = scrape(port)
        if metrics.get("darwin_checkpoints_total", 0) >= checkpoints and metrics.get("darwin_output_rows_total", 0):
            break
        time.sleep(0.2)
    return metrics
