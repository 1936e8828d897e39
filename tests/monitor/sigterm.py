"""A job in a process of its own, stopped by SIGTERM as an operator stops it."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def job_process(args: list[str], **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """The job's process (text output); killed if the test leaves before it ended."""
    process = subprocess.Popen(args, text=True, **popen)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def stop_with_sigterm(process: subprocess.Popen[str], timeout_s: float = 120.0) -> str:
    """SIGTERM, then the rest of its output once it has ended."""
    process.send_signal(signal.SIGTERM)
    out, _ = process.communicate(timeout=timeout_s)
    return out
