"""A windowed aggregation's state checkpointed at one parallelism, restored at another, on any backend.

One thread keeps one table: a hash table, or a window ring. Several workers keep one each, by key
group (hash tables) or over every key (merged rings), and their entries carry the serial of the row
that made each (``AggLayout.first_seen``), by which the workers' fired windows merge into the order
one thread fires them in: by window, then first seen. A restore at another parallelism reads the
saved tables in the layout the checkpoint's run compiled them to (``saved``: its pipeline), makes
them one list of entries in that order, and hands them to this run's tables:

- From one thread to workers, entries without serials are numbered in their table's order. A hash
  table holds its entries in insertion order and a ring each window's in first-seen order, so the
  numbers are first-seen order within every window, and serials of entries without panes are only
  ever compared within a window (pane layouts number their rows on one thread too: they keep their
  serials). Rows after the restore are numbered on from above them.
- From workers to one thread, the entries go in by (window, serial) -- the order a one-thread table
  holds a window's entries in -- without their serials where one thread keeps none.

Either way the windows fire in the order, and with the rows, of the run that was never interrupted.

On ``mmap`` and ``rocksdb`` the tables are files under ``state_path``, and the count of workers is in
their names (``table_names``): the new tables never share a name with the checkpoint's, so those stay
as the checkpoint left them until a crash before the next checkpoint needs them again, and are
deleted only once ``KEEP`` checkpoints taken since are durable (``RetiredTables``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen import layout as ctl
from darwin.codegen.aggregates import AggLayout, layout
from darwin.errors import CheckpointError
from darwin.graph import operators as op
from darwin.state.backend import KeyedState, StateBackend
from darwin.state.checkpoint import KEEP
from darwin.state.merge import merge_ring_entries
from darwin.state.panes import NOT_YET
from darwin.state.ring import RingState
from darwin.timestamps import NO_WATERMARK

COUNTER_SLOTS = (ctl.LATE_ROWS, ctl.NULL_TIME_ROWS, ctl.FUTURE_ROWS)


@dataclass
class SavedAggregation:
    """A checkpointed windowed aggregation as one thread would hold it: every entry (key columns,
    window start first, and value slots of the checkpoint's layout ``lay``) in table order, and the
    counters and progress of one thread's ``ctl``."""

    keys: list[np.ndarray]
    values: list[np.ndarray]
    lay: AggLayout
    ctl: np.ndarray  # counters added up over workers; MAX_TIME the progress over every row, ROW_BASE the next serial
    windows_fired: int

    @property
    def max_time(self) -> int:
        return int(self.ctl[ctl.MAX_TIME])

    @property
    def rows_seen(self) -> int:
        return int(self.ctl[ctl.ROW_BASE])

    def entries_for(self, target: AggLayout) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """The entries in ``target``'s layout (first-seen serials made or dropped); ROW_BASE moves
        above the serials made."""
        keys, values, lay = self.keys, self.values, self.lay
        if lay.first_seen is None and target.first_seen is not None:
            n = len(keys[0])
            values = [*values, np.arange(n, dtype=np.int64)]  # the serial is the layout's last slot
            self.ctl[ctl.ROW_BASE] = max(self.rows_seen, n)
        elif lay.first_seen is not None and target.first_seen is None:
            values = [v for j, v in enumerate(values) if j != lay.first_seen]
        if len(keys) != target.key_width or [v.dtype for v in values] != list(target.value_dtypes):
            raise CheckpointError("the checkpoint's aggregation state does not have the layout of this query's: "
                                  "resume at the parallelism it was taken at, or give a new checkpoint_dir")
        return keys, values


def table_names(p: op.Pipeline) -> list[str]:
    """The names of a windowed aggregation's tables: one thread's, or one per worker, the count of
    workers in each (tables of another count never share a name with them)."""
    if p.parallel is not None and p.parallel.keyed:
        n = p.parallel.workers
        return [f"pipeline{p.id}.w{i}of{n}" for i in range(n)]
    return [f"pipeline{p.id}"]


class RetiredTables:
    """After a restore at another parallelism: once ``KEEP`` checkpoints taken since are durable, no
    retained checkpoint needs any table of the pipeline but this run's, so the others are deleted --
    the checkpoint's, and any an earlier run left (one that crashed before its own checkpoints)."""

    def __init__(self, backend: StateBackend, pipeline: op.Pipeline) -> None:
        self.backend, self.pipeline, self.checkpoints_left = backend, pipeline, KEEP

    def after_checkpoint(self) -> None:
        self.checkpoints_left -= 1
        if self.checkpoints_left == 0:
            ours, kept = f"pipeline{self.pipeline.id}", set(table_names(self.pipeline))
            for name in self.backend.stored_tables():
                if (name == ours or name.startswith(ours + ".w")) and name not in kept:
                    self.backend.drop_table(name)


def read_saved(saved: op.Pipeline, directory: Path, body: dict[str, Any], checkpoint_id: int,
               backend: StateBackend) -> SavedAggregation:
    """The state pipeline ``saved`` checkpointed in ``body`` (one thread's, or its workers' side by
    side), read from its tables (copies in the checkpoint, or files on ``backend``)."""
    sink = saved.sink
    assert isinstance(sink, op.WindowAggregateSink)  # only aggregations keep keyed state
    lay, ring = layout(sink.aggregate, saved.numbers_rows), sink.state.ring
    workers = body.get("workers")
    if (workers is not None) != (saved.parallel is not None and saved.parallel.keyed):
        raise CheckpointError(f"pipeline {saved.id}'s state was checkpointed by "
                              f"{'several workers' if workers is not None else 'one thread'}, which its layout does "
                              "not say; resume at the parallelism it was taken at, or give a new checkpoint_dir")
    parts = list(zip(table_names(saved), [body] if workers is None else workers))
    entries = []
    for name, part in parts:
        table: KeyedState | RingState = backend.hash_table(name, lay) if ring is None \
            else RingState(name, ring, lay.value_dtypes, sink.window.slide_ms)
        try:
            table.restore(directory, part["state"], checkpoint_id)
            entries.append(table.entries())
        finally:
            table.close()
    if ring is not None and len(entries) > 1:  # merged rings: any worker may hold any key of a window
        keys, values = merge_ring_entries(lay, ring, entries)  # combined, by window then serial
    else:
        keys = [np.concatenate(c) for c in zip(*(k for k, _ in entries))]
        values = [np.concatenate(c) for c in zip(*(v for _, v in entries))]
        if lay.first_seen is not None:  # by window, then the row that made the entry
            order = np.lexsort((values[lay.first_seen], keys[0]))
            keys, values = [k[order] for k in keys], [v[order] for v in values]
    ctls = [_ctl(part["ctl"]) for _, part in parts]
    summed = ctls[0].copy()
    for slot in COUNTER_SLOTS:
        summed[slot] = sum(int(c[slot]) for c in ctls)
    # panes: every worker fired through the batch's watermark before the checkpoint
    summed[ctl.FIRED_THROUGH] = max(int(c[ctl.FIRED_THROUGH]) for c in ctls)
    if workers is not None:
        summed[ctl.MAX_TIME], summed[ctl.ROW_BASE] = int(body["max_time"]), int(body["rows_seen"])
    return SavedAggregation(keys, values, lay, summed, int(body["windows_fired"]))


def _ctl(saved: list[int]) -> np.ndarray:
    """A checkpointed ``ctl``; slots added since keep their initial values."""
    out = np.zeros(ctl.SIZE, dtype=np.int64)
    out[ctl.MAX_TIME] = NO_WATERMARK
    out[ctl.MIN_WINDOW_END] = np.iinfo(np.int64).max
    out[ctl.FIRED_THROUGH] = NOT_YET
    values = np.array(saved, dtype=np.int64)
    out[:len(values)] = values[:ctl.SIZE]
    return out
