"""SIGTERM and SIGINT stop a job cleanly: a final checkpoint, then the end (a second one stops at once)."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from darwin.runtime.control import JobControl

log = logging.getLogger(__name__)
SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stop_on_signals(control: JobControl, drain: bool = False) -> Iterator[None]:
    """While inside, the first SIGTERM/SIGINT asks ``control`` to stop (with ``drain``); a second raises
    KeyboardInterrupt, for a job that does not reach its next batch boundary. Only the main thread can
    install handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(number: int, frame: FrameType | None) -> None:
        if control.stop_requested:
            raise KeyboardInterrupt
        log.warning("%s: stopping at the next batch boundary with a final checkpoint (again to stop at once)",
                    signal.Signals(number).name)
        control.stop(drain=drain)

    previous = {s: signal.signal(s, handle) for s in SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
