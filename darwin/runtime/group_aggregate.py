"""Runs one updating aggregation (``pn.GroupAggregate``): folds each batch's signed rows into its
groups and emits the groups' changes.

The semantics are the reference interpreter's (``darwin.reference.interpreter._GroupAggregate``).
Groups get dense ids in a compiled index (``darwin.codegen.group_index``); a generated kernel folds
the batch into the aggregates' slots (``darwin.codegen.group_fold``); distinct counts keep exact sets of values
(``darwin.runtime.distinct``), one per value their filters share. The row a group last emitted
is its result before the batch, so it is computed, not kept.

The per-group arrays, the key index and the distinct sets live where the state backend's
``scratch`` placement puts them: DRAM on ``memory``, memory-mapped scratch files on ``mmap`` and
``rocksdb``, so the groups may exceed memory. Checkpoints copy them, a chunk at a time. So do the
values min/max keep per group over an updating input (``darwin.runtime.kept_values``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen import group_index as gi
from darwin.codegen.compiler import load_kernel
from darwin.codegen.group_fold import NO_ARGUMENT, FoldSlot, generate_fold
from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.aggregates import SPECIALS, agg_type, function, special_kinds, with_specials
from darwin.plan.exprs import type_of
from darwin.runtime.distinct import DistinctSets
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.folds import text_arrays
from darwin.runtime.group_keys import INITIAL_GROUPS, GroupKeys
from darwin.runtime.kept_values import KeptValues
from darwin.runtime.rows import same_values
from darwin.runtime.state_ttl import Stamps
from darwin.runtime.stream_operators import InputTime
from darwin.state.placement import Placement, copy_rows
from darwin.state.snapshot import load_arrays, save_arrays
from darwin.timestamps import NO_WATERMARK

ADDS = (pn.ChangeKind.INSERT, pn.ChangeKind.UPDATE_AFTER)


class GroupAggregateRunner(InputTime):
    def __init__(self, g: op.StreamOperator, config: Config, pool: StringPool, placement: Placement) -> None:
        """``placement``: where the groups' arrays live (the backend's ``scratch``)."""
        assert isinstance(g.node, pn.GroupAggregate)
        self.g, self.node = g, g.node
        node = g.node
        schema = node.input.schema
        self.placement = placement
        self.groups = GroupKeys([schema.field(k) for k in node.keys], placement)
        self.retracting = pn.updating(node.input)
        self.slots: list[FoldSlot] = []
        self.special_slots: list[int] = []  # float sums over an updating input count NaN and infinities apart
        for i, (_, call) in enumerate(node.aggs):
            fn = function(call.func)
            arg = None if call.input is None else type_of(call.input, schema)
            vdt = fn.value_dtype(None if arg is None else arg.dtype)
            folds = not self.retracting or fn.retract("v", "x") is not None
            self.slots.append(FoldSlot(fn, vdt, folds, every_row=arg is None,
                                       arg_dtype=None if arg is None else arg.dtype))
            if self.retracting and arg is not None and fn.keeps_specials(arg.dtype):
                self.special_slots.append(i)
        self.out_types = [agg_type(call, schema, name) for name, call in node.aggs]
        self.pool = pool
        self.fold_source = generate_fold(tuple(self.slots))
        self.kernel = load_kernel(self.fold_source, config.cache_dir)
        # distinct counts of one value (whatever their filters) share its sets: value -> their aggregates
        shared: dict[Any, list[int]] = {}
        for i, (_, call) in enumerate(node.aggs):
            if function(call.func).distinct:
                shared.setdefault(call.arg, []).append(i)
        self.distinct_members = list(shared.values())
        self.distinct = [DistinctSets(len(members), INITIAL_GROUPS, self.retracting, placement, f"distinct{d}")
                         for d, members in enumerate(self.distinct_members)]
        self.member_of = {i: (d, j) for d, members in enumerate(self.distinct_members) for j, i in enumerate(members)}
        self.wm = NO_WATERMARK
        self.stamps = None if node.state_ttl_ms is None else Stamps(node.state_ttl_ms)
        self._allocate(self.groups.capacity)
        # values kept per group where a retraction needs them (min/max over an updating input)
        self.kept = {i: KeptValues(s.function.name == "min", s.arg_dtype, self.groups.capacity, placement, f"kept{i}")
                     for i, s in enumerate(self.slots) if not s.folds_value and s.arg_dtype is not None}

    @property
    def count(self) -> int:
        return self.groups.count

    def _allocate(self, capacity: int) -> None:
        """Per group: its rows (counting those taken back), each aggregate's value and count."""
        place, int64 = self.placement.allocate, np.dtype(np.int64)
        self.rows = place("rows", (capacity,), int64)
        self.values = [place(f"value{i}", (capacity,), np.dtype(s.value_dtype or np.int64))
                       for i, s in enumerate(self.slots)]
        self.counts = [place(f"count{i}", (capacity,), int64) for i in range(len(self.slots))]
        self.seen = place("seen", (capacity,), np.dtype(np.bool_))
        # per group, of the aggregates that keep them apart: how many NaNs, +infs and -infs they hold
        self.specials = {i: place(f"specials{i}", (capacity, SPECIALS), int64) for i in self.special_slots}

    def _fit(self) -> None:
        """Per-group arrays as long as the group index is (it grows as groups arrive)."""
        if len(self.rows) >= self.groups.capacity:
            return
        rows, values, counts, specials = self.rows, self.values, self.counts, self.specials
        self._allocate(self.groups.capacity)
        n = len(rows)  # the groups before the batch (new ones start at zero)
        for mine, old in zip([self.rows, *self.values, *self.counts], [rows, *values, *counts]):
            copy_rows(mine, old, n)
        for i, held in specials.items():
            copy_rows(self.specials[i], held, n)

    # -- a batch --------------------------------------------------------------------------------
    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        n = batch.length
        if n == 0:
            return None
        ids = self.groups.ids(batch)
        self._fit()
        for sets in self.distinct:
            sets.ensure_groups(len(self.rows))
        for kept in self.kept.values():
            kept.ensure_groups(len(self.rows))
        text = self.pool.text_arrays() if self.kept else ()
        touched = gi.touched(ids, self.seen)
        change = batch.columns.get(pn.CHANGE_KIND)
        sign = np.ones(n, dtype=np.int64) if change is None else np.where(np.isin(change.values, ADDS), 1, -1)
        old_rows = self.rows[touched]  # a copy: fancy indexing
        old = self._results(touched)
        args: list[np.ndarray] = []
        for i, name in enumerate(self.g.args):
            if name is None:  # count(): every row counts
                x, present = NO_ARGUMENT
            else:
                c = batch.columns[name]
                x, present = c.values, (np.ones(n, dtype=np.bool_) if c.valid is None else c.valid)
            if i in self.kept:
                self.kept[i].push(ids, sign, x, present, text)
            if i in self.specials:
                x = self._count_specials(i, ids, sign, present, x)
            args += [np.ascontiguousarray(x), np.ascontiguousarray(present), self.values[i], self.counts[i]]
        self.kernel(ids, sign, self.rows, *args, *text_arrays(self.fold_source, self.pool))
        for sets, members in zip(self.distinct, self.distinct_members):
            sets.push(ids, sign, [gi.key_bits(args[4 * i]).astype(np.int64, copy=False) for i in members],
                      [args[4 * i + 1] for i in members])
        new_rows = self.rows[touched]
        for kept in self.kept.values():
            kept.settle(touched, text)
        self._reset(touched[new_rows == 0])
        if self.stamps is not None:  # every row writes its group's state
            self.stamps.write(touched, self.wm)
        new = self._results(touched)
        return self._changes(touched, old_rows > 0, old, new_rows > 0, new)

    def _count_specials(self, i: int, ids: np.ndarray, sign: np.ndarray, present: np.ndarray,
                        x: np.ndarray) -> np.ndarray:
        """Count the NaNs and infinities of aggregate ``i``'s values apart (``keeps_specials``); the
        values its kernel folds, 0.0 in their place."""
        kinds = special_kinds(x)
        hit = present & (kinds > 0)
        if not hit.any():
            return x
        np.add.at(self.specials[i], (ids[hit], kinds[hit] - 1), sign[hit])
        return np.where(hit, 0.0, x)

    def _reset(self, emptied: np.ndarray) -> None:
        """Groups left without rows start afresh if their key comes again."""
        for arr in self.values + self.counts + list(self.specials.values()):
            arr[emptied] = 0
        for kept in self.kept.values():
            kept.forget(emptied)

    # -- results and changes ----------------------------------------------------------------------
    def _results(self, groups: np.ndarray) -> list[tuple[np.ndarray, np.ndarray | None]]:
        out: list[tuple[np.ndarray, np.ndarray | None]] = []
        for i, slot in enumerate(self.slots):
            if i in self.member_of:
                d, j = self.member_of[i]
                out.append(slot.function.finalize(None, self.distinct[d].counts(j, groups)))
                continue
            count = self.counts[i][groups]
            if i in self.kept:
                out.append((self.kept[i].extremes(groups, np.dtype(slot.value_dtype or np.int64)), count > 0))
                continue
            value = None if slot.value_dtype is None else self.values[i][groups]
            if i in self.specials and value is not None:
                value = with_specials(value, self.specials[i][groups])
            out.append(slot.function.finalize(value, count))
        return out

    def _changes(self, groups: np.ndarray, had: np.ndarray, old: list, has: np.ndarray, new: list) \
            -> EncodedBatch | None:
        n = len(groups)
        same = had & has
        for before, after in zip(old, new):
            same &= same_values(before, after, n)
        emit_old, emit_new = had & ~same, has & ~same
        # each group's -U/-D before its +U/+I, groups in the order the batch first touched them
        take = np.stack([emit_old, emit_new], axis=1).ravel()
        if not take.any():
            return None
        which = np.tile([0, 1], n)[take]  # 0: the old row, 1: the new row
        at = np.repeat(np.arange(n), 2)[take]
        kinds = np.where(which == 0, np.where(has[at], pn.ChangeKind.UPDATE_BEFORE, pn.ChangeKind.DELETE),
                         np.where(had[at], pn.ChangeKind.UPDATE_AFTER, pn.ChangeKind.INSERT)).astype(np.int64)
        columns = self.groups.columns(groups[at])
        for (name, _), (dtype, _), (ov, om), (nv, nm) in zip(self.node.aggs, self.out_types, old, new):
            values = np.where(which == 0, ov[at], nv[at]).astype(dtype.numpy)
            valid = None if om is None and nm is None else np.where(which == 0, _valid(om, n)[at], _valid(nm, n)[at])
            columns[name] = Column(values, valid)
        columns[pn.CHANGE_KIND] = Column(kinds, None)
        return EncodedBatch(columns, len(at))

    # -- event time and checkpoints -------------------------------------------------------------
    def advance(self, input_wm: int) -> EncodedBatch | None:
        """With a state_ttl: forget, silently, the groups whose time ran out (a key that comes again
        starts from zero and is inserted again, as in Flink)."""
        self.wm = input_wm
        if self.stamps is None or input_wm == NO_WATERMARK:
            return None
        gone = self.stamps.expired(np.flatnonzero(self.rows[:self.count] > 0), input_wm)
        if len(gone):
            self.rows[gone] = 0
            self._reset(gone)
            held = np.flatnonzero(self.rows[:self.count] > 0)
            if (self.count - len(held)) * 4 >= self.groups.capacity:
                self._retain(held)
        return None

    def _retain(self, held: np.ndarray) -> None:
        """Keep only the groups ``held`` (of an appending input: no distinct sets, no kept values),
        renumbered in their order, so the ids stay as many as the keys still held."""
        count, m = self.count, len(held)
        for arr in [self.rows, *self.values, *self.counts, *self.specials.values()]:
            arr[:m] = arr[held]
            arr[m:count] = 0
        assert self.stamps is not None and not self.distinct and not self.kept
        self.stamps.retain(held, count)
        self.groups.retain(held)

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        """Each array a file of its own (``.npy``, written from the placed arrays as they are)."""
        table, n = f"group{self.g.id}", self.count
        arrays: dict[str, np.ndarray] = {**self.groups.saved(), "rows": self.rows[:n]}
        for i in range(len(self.slots)):
            arrays[f"v{i}"], arrays[f"c{i}"] = self.values[i][:n], self.counts[i][:n]
        for i, specials in self.specials.items():
            arrays[f"s{i}"] = specials[:n]
        if self.stamps is not None:
            arrays["stamp"] = self.stamps.at[:n]
        files = save_arrays(directory, table, arrays)
        for d, sets in enumerate(self.distinct):
            files += sets.save(directory, table, f"d{d}", n)
        files += [kept.save(directory, table, f"k{i}") for i, kept in self.kept.items()]
        parts = [name[len(table) + 1:-len(".npy")] for name in files]
        return {"table": table, "parts": parts, "count": n, "wm": self.wm}, files

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        n = int(body["count"])
        saved = _saved_arrays(directory, body)
        self.groups.load(saved)
        capacity = self.groups.capacity
        self._allocate(capacity)
        copy_rows(self.rows, saved["rows"], n)
        for i in range(len(self.slots)):
            copy_rows(self.values[i], saved[f"v{i}"], n)
            copy_rows(self.counts[i], saved[f"c{i}"], n)
        for i, specials in self.specials.items():
            if f"s{i}" in saved:  # a checkpoint from before they were counted apart has none
                copy_rows(specials, saved[f"s{i}"], n)
        for d, sets in enumerate(self.distinct):
            sets.restore(saved, f"d{d}", n)
            sets.ensure_groups(capacity)
        if self.stamps is not None and "stamp" in saved:
            self.stamps.load(saved["stamp"])
        self.wm = int(body["wm"])
        text = self.pool.text_arrays() if self.kept else ()
        # a checkpoint from before the kept values were placed holds them as JSON ({group: [[value, count]]})
        old_kept = json.loads(body["kept"]) if "kept" in body else None
        for i, kept in self.kept.items():
            if old_kept is None:
                kept.restore(saved[f"k{i}"], capacity, text)
            else:
                kept.restore_kept(old_kept.get(str(i), {}), capacity, text)

    def close(self) -> None:
        """Scratch files go with the run (a checkpoint holds copies)."""
        self.placement.close()


def _saved_arrays(directory: Path, body: dict[str, Any]) -> Mapping[str, np.ndarray]:
    """A checkpoint's arrays by part: mapped ``.npy`` files, or read from one ``.npz`` (the format
    before the groups could exceed memory)."""
    if "file" in body:
        with np.load(directory / body["file"]) as saved:
            return {part: saved[part] for part in saved.files}
    parts = list(body["parts"])
    return dict(zip(parts, load_arrays(directory, body["table"], parts, mmap=True)))


def _valid(mask: np.ndarray | None, n: int) -> np.ndarray:
    return np.ones(n, np.bool_) if mask is None else mask

