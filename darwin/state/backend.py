"""The state backend protocol: where the keyed state of aggregations and the rows of joins live."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from darwin.codegen.aggregates import AggLayout
from darwin.config import Config
from darwin.state.join_rows import JoinRows
from darwin.state.placement import Placement
from darwin.types import Schema


class KeyedState(Protocol):
    """The state of one windowed aggregation, as the runtime drives it.

    Kernels see only numpy arrays (``array``); the table decides where they live and
    how a checkpoint captures them.
    """

    name: str

    def array(self, name: str) -> np.ndarray: ...
    def is_empty(self) -> bool: ...
    def grow(self, needed: int) -> None:
        """Room for ``needed`` more entries before the kernel goes on."""
    def fire(self, watermark: int, size_ms: int, final: bool) -> Iterator[tuple[list[np.ndarray], list[np.ndarray]]]:
        """Remove the windows with end <= watermark (all if ``final``): chunks of key and value columns."""
    def min_start(self) -> int | None: ...
    def end_batch(self) -> None:
        """The kernel has been through an input batch (rocksdb writes its changes then)."""
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        """Capture the state for a checkpoint: manifest entries and the files written to ``directory``."""
    def restore(self, directory: Path, meta: dict[str, Any], checkpoint_id: int) -> None: ...
    def entries(self) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Every entry's key and value columns, without taking them out: each window's in first-seen order."""
    def add_entries(self, keys: Sequence[np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Put entries the table does not hold, after its own (state moving between workers)."""
    def after_checkpoint(self, checkpoint_id: int) -> None: ...
    def close(self) -> None: ...


class StateBackend(Protocol):
    name: str

    def hash_table(self, name: str, lay: AggLayout, new: bool = False) -> KeyedState:
        """Table ``name``; a resumed run opens the one its checkpoint restores, unless ``new``: then
        it starts empty (a table another number of workers divides the state into)."""

    def stored_tables(self) -> list[str]:
        """The names of the tables kept outside the process (files under ``state_path``)."""

    def drop_table(self, name: str) -> None:
        """Delete what table ``name`` keeps outside the process (no checkpoint restores it any more)."""

    def join_rows(self, name: str, schema: Schema, key_width: int) -> JoinRows:
        """The rows one side of a join keeps (``name`` is unique in the job)."""

    def scratch(self, name: str) -> Placement:
        """Where an operator's arrays go that its checkpoints copy (``name`` is unique in the job):
        DRAM, or scratch files under ``state_path`` emptied each run, so state may exceed memory."""

    def close(self) -> None: ...


def backend_for(config: Config, job: str, fresh: bool = True) -> StateBackend:
    """The configured backend for job ``job``; unless ``fresh``, tables open the files a checkpoint restores.

    Persistent backends claim ``state_path`` for the job first (``darwin.state.ownership``).
    """
    if config.state == "memory":
        from darwin.state.memory import MemoryBackend

        return MemoryBackend()
    from darwin.state.ownership import StatePath

    assert config.state_path is not None  # Config requires it for these backends
    owned = StatePath(config.state_path, job, config.checkpoint_dir, fresh)
    if config.state == "mmap":
        from darwin.state.mmap import MmapBackend

        return MmapBackend(owned, job)
    from darwin.state.rocksdb import RocksBackend

    return RocksBackend(owned, config.state_delta_limit)
