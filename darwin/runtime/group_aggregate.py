"""Runs one updating aggregation (``pn.GroupAggregate``): folds each batch's signed rows into its
groups and emits the groups' changes.

The semantics are the reference interpreter's (``darwin.reference.interpreter._GroupAggregate``).
Groups get dense ids in a compiled index (``darwin.codegen.group_index``); a generated kernel folds
the batch into the aggregates' slots (``darwin.codegen.group_fold``). The row a group last emitted
is its result before the batch, so it is computed, not kept.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen import group_index as gi
from darwin.codegen.compiler import load_kernel
from darwin.codegen.group_fold import FoldSlot, generate_fold
from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.aggregates import NAN_KEY, agg_type, function, keep, kept_extreme
from darwin.plan.exprs import type_of
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.progress import NO_WATERMARK
from darwin.types import DType

INITIAL_GROUPS = 1024
ADDS = (pn.ChangeKind.INSERT, pn.ChangeKind.UPDATE_AFTER)


class GroupAggregateRunner:
    def __init__(self, g: op.StreamOperator, config: Config, pool: StringPool) -> None:
        assert isinstance(g.node, pn.GroupAggregate)
        self.g, self.node = g, g.node
        node = g.node
        schema = node.input.schema
        self.key_fields = [schema.field(k) for k in node.keys]
        self.width = max(1, sum(1 + f.nullable for f in self.key_fields))
        self.retracting = pn.updating(node.input)
        self.slots: list[FoldSlot] = []
        for _, call in node.aggs:
            fn = function(call.func)
            arg = None if call.arg is None else type_of(call.arg, schema)
            vdt = fn.value_dtype(None if arg is None else arg.dtype)
            folds = not self.retracting or fn.retract("v", "x") is not None
            self.slots.append(FoldSlot(fn, vdt, folds))
        self.out_types = [agg_type(call, schema, name) for name, call in node.aggs]
        self.kernel = load_kernel(generate_fold(tuple(self.slots)), config.cache_dir)
        self.count = 0
        self.wm = NO_WATERMARK
        self._allocate(INITIAL_GROUPS)
        # values kept per group where a retraction needs them (min/max over an updating input)
        self.kept: dict[int, dict[int, dict[Any, int]]] = {i: {} for i, s in enumerate(self.slots) if not s.folds_value}

    def _allocate(self, capacity: int) -> None:
        self.keys = np.zeros((capacity, self.width), dtype=np.int64)
        self.rows = np.zeros(capacity, dtype=np.int64)
        self.values = [np.zeros(capacity, dtype=s.value_dtype or np.int64) for s in self.slots]
        self.counts = [np.zeros(capacity, dtype=np.int64) for _ in self.slots]
        self.index = np.full(2 * capacity, gi.EMPTY, dtype=np.int64)
        self.seen = np.zeros(capacity, dtype=np.bool_)

    def _grow(self, needed: int) -> None:
        """Room for ``needed`` groups (the index stays at most half full)."""
        capacity = len(self.rows)
        if needed <= capacity:
            return
        while capacity < needed:
            capacity *= 2
        keys, rows, values, counts = self.keys, self.rows, self.values, self.counts
        self._allocate(capacity)
        n = self.count
        self.keys[:n], self.rows[:n] = keys[:n], rows[:n]
        for mine, old in zip(self.values + self.counts, values + counts):
            mine[:n] = old[:n]
        gi.rehash(self.index, self.keys, n)

    # -- a batch --------------------------------------------------------------------------------
    def push(self, batch: EncodedBatch) -> EncodedBatch | None:
        n = batch.length
        if n == 0:
            return None
        keys = self._key_rows(batch)
        self._grow(self.count + n)
        ids = np.empty(n, dtype=np.int64)
        self.count = gi.assign(self.index, self.keys, self.count, keys, gi.hash_keys(keys), ids)
        touched = gi.touched(ids, self.seen)
        change = batch.columns.get(pn.CHANGE_KIND)
        sign = np.ones(n, dtype=np.int64) if change is None else np.where(np.isin(change.values, ADDS), 1, -1)
        old_rows = self.rows[touched]  # a copy: fancy indexing
        old = self._results(touched)
        args: list[np.ndarray] = []
        for i, name in enumerate(self.g.args):
            if name is None:
                x, present = np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.bool_)
            else:
                c = batch.columns[name]
                x, present = c.values, (np.ones(n, dtype=np.bool_) if c.valid is None else c.valid)
            if i in self.kept:
                self._keep(i, ids, sign, present, x)
            args += [np.ascontiguousarray(x), np.ascontiguousarray(present), self.values[i], self.counts[i]]
        self.kernel(ids, sign, self.rows, *args)
        new_rows = self.rows[touched]
        self._reset(touched[new_rows == 0])
        new = self._results(touched)
        return self._changes(touched, old_rows > 0, old, new_rows > 0, new)

    def _key_rows(self, batch: EncodedBatch) -> np.ndarray:
        """Key components as int64: floats as normalised bits, a NULL as a 0 and a validity 0."""
        keys = np.zeros((batch.length, self.width), dtype=np.int64)
        pos = 0
        for f in self.key_fields:
            c = batch.columns[f.name]
            v = gi.key_bits(c.values)
            keys[:, pos] = v if c.valid is None else np.where(c.valid, v, 0)
            if f.nullable:
                keys[:, pos + 1] = 1 if c.valid is None else c.valid
            pos += 1 + f.nullable
        return keys

    def _keep(self, i: int, ids: np.ndarray, sign: np.ndarray, present: np.ndarray, x: np.ndarray) -> None:
        """Fold the values of aggregate ``i`` into the multisets it keeps per group."""
        kept = self.kept[i]
        for g, s, v in zip(ids[present].tolist(), sign[present].tolist(), x[present].tolist()):
            keep(kept.setdefault(g, {}), v, s)

    def _reset(self, emptied: np.ndarray) -> None:
        """Groups left without rows start afresh if their key comes again."""
        for arr in self.values + self.counts:
            arr[emptied] = 0
        for kept in self.kept.values():
            for g in emptied.tolist():
                kept.pop(g, None)

    # -- results and changes ----------------------------------------------------------------------
    def _results(self, groups: np.ndarray) -> list[tuple[np.ndarray, np.ndarray | None]]:
        out: list[tuple[np.ndarray, np.ndarray | None]] = []
        for i, slot in enumerate(self.slots):
            count = self.counts[i][groups]
            if i in self.kept:
                out.append(self._extreme(i, groups, count))
                continue
            value = None if slot.value_dtype is None else self.values[i][groups]
            out.append(slot.function.finalize(value, count))
        return out

    def _extreme(self, i: int, groups: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """min/max of the values kept, as the reference's accumulator takes them."""
        smaller = self.slots[i].function.name == "min"
        values = np.zeros(len(groups), dtype=self.slots[i].value_dtype or np.int64)
        for j, g in enumerate(groups.tolist()):
            kept = self.kept[i].get(g)
            if kept:
                values[j] = kept_extreme(kept, smaller)
        return values, count > 0

    def _changes(self, groups: np.ndarray, had: np.ndarray, old: list, has: np.ndarray, new: list) \
            -> EncodedBatch | None:
        n = len(groups)
        same = had & has
        for (ov, om), (nv, nm) in zip(old, new):
            ovalid, nvalid = _valid(om, n), _valid(nm, n)
            equal = (ov == nv) | (np.isnan(ov) & np.isnan(nv)) if ov.dtype.kind == "f" else ov == nv
            same &= (ovalid == nvalid) & (equal | ~ovalid)
        emit_old, emit_new = had & ~same, has & ~same
        # each group's -U/-D before its +U/+I, groups in the order the batch first touched them
        take = np.stack([emit_old, emit_new], axis=1).ravel()
        if not take.any():
            return None
        which = np.tile([0, 1], n)[take]  # 0: the old row, 1: the new row
        at = np.repeat(np.arange(n), 2)[take]
        kinds = np.where(which == 0, np.where(has[at], pn.ChangeKind.UPDATE_BEFORE, pn.ChangeKind.DELETE),
                         np.where(had[at], pn.ChangeKind.UPDATE_AFTER, pn.ChangeKind.INSERT)).astype(np.int64)
        columns = self._key_columns(groups[at])
        for (name, _), (dtype, _), (ov, om), (nv, nm) in zip(self.node.aggs, self.out_types, old, new):
            values = np.where(which == 0, ov[at], nv[at]).astype(dtype.numpy)
            valid = None if om is None and nm is None else np.where(which == 0, _valid(om, n)[at], _valid(nm, n)[at])
            columns[name] = Column(values, valid)
        columns[pn.CHANGE_KIND] = Column(kinds, None)
        return EncodedBatch(columns, len(at))

    def _key_columns(self, groups: np.ndarray) -> dict[str, Column]:
        out: dict[str, Column] = {}
        pos = 0
        for f in self.key_fields:
            raw = self.keys[groups, pos]
            values = raw.view(np.float64) if f.dtype is DType.FLOAT64 else \
                raw.astype(np.bool_) if f.dtype is DType.BOOL else raw
            valid = self.keys[groups, pos + 1].astype(np.bool_) if f.nullable else None
            out[f.name] = Column(values, valid)
            pos += 1 + f.nullable
        return out

    # -- event time and checkpoints -------------------------------------------------------------
    def advance(self, input_wm: int) -> EncodedBatch | None:
        """Nothing fires: its watermark is its input's."""
        self.wm = input_wm
        return None

    def counters(self) -> dict[str, int]:
        return {}

    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        name = f"group{self.g.id}.npz"
        n = self.count
        arrays: dict[str, Any] = {"keys": self.keys[:n], "rows": self.rows[:n]}
        for i in range(len(self.slots)):
            arrays[f"v{i}"], arrays[f"c{i}"] = self.values[i][:n], self.counts[i][:n]
        np.savez(directory / name, **arrays)
        kept = {str(i): {str(g): [[_NAN_TEXT if k is NAN_KEY else k, c] for k, c in values.items()]
                         for g, values in per_group.items()} for i, per_group in self.kept.items()}
        return {"file": name, "count": n, "wm": self.wm, "kept": json.dumps(kept)}, [name]

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        n = int(body["count"])
        capacity = INITIAL_GROUPS
        while capacity < n:
            capacity *= 2
        self._allocate(capacity)
        with np.load(directory / body["file"]) as saved:
            self.keys[:n], self.rows[:n] = saved["keys"], saved["rows"]
            for i in range(len(self.slots)):
                self.values[i][:n], self.counts[i][:n] = saved[f"v{i}"], saved[f"c{i}"]
        self.count, self.wm = n, int(body["wm"])
        gi.rehash(self.index, self.keys, n)
        for i, per_group in json.loads(body["kept"]).items():
            self.kept[int(i)] = {int(g): {(NAN_KEY if k == _NAN_TEXT else k): c for k, c in values}
                                 for g, values in per_group.items()}

    def close(self) -> None:
        pass


def _valid(mask: np.ndarray | None, n: int) -> np.ndarray:
    return np.ones(n, np.bool_) if mask is None else mask


_NAN_TEXT = "NaN"  # NAN_KEY in a checkpoint
