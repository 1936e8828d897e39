"""The watermark at each key's last write, for an operator with a ``state_ttl`` (Flink's
``table.exec.state.ttl``, in event time: ``docs/decisions.md``, "state_ttl is event time").

A key expires once the operator's watermark is more than the TTL past its stamp; a key written
before any watermark is stamped with the first watermark, as a join's rows are
(``darwin.runtime.join``). Keys are dense ids (``darwin.runtime.group_keys``).
"""

from __future__ import annotations

import numpy as np

from darwin.timestamps import NO_WATERMARK


class Stamps:
    def __init__(self, ttl_ms: int) -> None:
        self.ttl = ttl_ms
        self.at = np.full(1024, NO_WATERMARK, np.int64)

    def write(self, keys: np.ndarray, wm: int) -> None:
        """``keys`` were written while the operator's watermark was ``wm``."""
        if len(keys) and int(keys.max()) >= len(self.at):
            grown = np.full(max(2 * len(self.at), int(keys.max()) + 1), NO_WATERMARK, np.int64)
            grown[:len(self.at)] = self.at
            self.at = grown
        self.at[keys] = wm

    def expired(self, held: np.ndarray, wm: int) -> np.ndarray:
        """The keys of ``held`` whose time has run out by the watermark ``wm``."""
        stamp = self.at[held]
        stamp[stamp == NO_WATERMARK] = wm  # written before any watermark: its time starts with the first
        self.at[held] = stamp
        return held[stamp < wm - self.ttl]

    def retain(self, keys: np.ndarray, count: int) -> None:
        """Keep only ``keys`` (ascending) of the first ``count``, numbered 0, 1, ... (``GroupKeys.retain``)."""
        self.at[:len(keys)] = self.at[keys]
        self.at[len(keys):count] = NO_WATERMARK

    def load(self, saved: np.ndarray) -> None:
        self.at = np.full(max(1024, len(saved)), NO_WATERMARK, np.int64)
        self.at[:len(saved)] = saved
