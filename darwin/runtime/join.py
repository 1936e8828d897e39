"""Runs one join operator: probes and keeps each side's rows, frees them as watermarks allow.

The semantics are the reference interpreter's (``darwin.reference.interpreter._Join``); the work
per batch is vectorised or compiled (``darwin.codegen.join_index``): keys hashed at once, a
batch's pairs found in one compiled probe, a ``where`` condition evaluated by a generated kernel
over the candidate pairs, the output's order planned by one compiled pass.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from darwin.codegen import join_index as ji
from darwin.config import Config
from darwin.graph import operators as op
from darwin.plan import nodes as pn
from darwin.plan.exprs import columns_of
from darwin.runtime.encoding import Column, EncodedBatch, StringPool
from darwin.runtime.pipeline import PipelineRunner, concatenated
from darwin.runtime.rows import same_values
from darwin.state.backend import StateBackend
from darwin.timestamps import NO_WATERMARK
from darwin.types import DType, Field, Schema

KEEP = "__darwin_keep"
WITHDRAWN = np.array([pn.ChangeKind.UPDATE_BEFORE, pn.ChangeKind.DELETE], dtype=np.int64)


class JoinRunner:
    def __init__(self, j: op.JoinOperator, config: Config, pool: StringPool, backend: StateBackend,
                 read: frozenset[str] | None = None) -> None:
        """``read``: the output columns the pipelines after the join bind (None: all); no other is assembled."""

        self.j, node = j, j.join
        self.sides = (backend.join_rows(f"join{j.id}.left", node.left.schema, len(j.keys)),
                      backend.join_rows(f"join{j.id}.right", node.right.schema, len(j.keys)))
        self.schemas = (node.left.schema, node.right.schema)
        self.timing = None if j.timing is None else (j.timing.left, j.timing.right)
        self.outer = (node.how in ("left", "full"), node.how in ("right", "full"))
        for rows, outer, side in zip(self.sides, self.outer, (node.left, node.right)):
            rows.track(matches=outer, bound=self.timing is not None,
                       stamp=self.timing is None and node.expires, withdrawn=pn.updating(side))
        self.updating = pn.updating(node)
        self.side_wm = [NO_WATERMARK, NO_WATERMARK]
        self.wm = NO_WATERMARK
        self.late_rows = self.null_time_rows = 0
        output = pn.with_change_kind(node.schema) if self.updating else node.schema
        self.emits = None if read is None or set(output.names) <= read else frozenset(read)
        self.output_schema = output if self.emits is None else \
            Schema(tuple(f for f in output.fields if f.name in self.emits))
        self.nullable = frozenset(f.name for f in node.schema.fields if f.nullable)
        self.condition = None
        self.condition_reads: frozenset[str] = frozenset()
        if node.where is not None:  # evaluated over the candidate pairs' columns it reads, no others
            self.condition_reads = columns_of(node.where)
            reads = Schema(tuple(f for f in node.schema.fields if f.name in self.condition_reads))
            keep = Schema((Field(KEEP, DType.BOOL, True),))
            p = op.Pipeline(-1, op.JoinPort(j.id), reads, (op.ProjectOp(((KEEP, node.where),)),), op.EmitRows(), keep)
            self.condition = PipelineRunner(p, config, pool, backend)

    # -- a batch of one side ----------------------------------------------------------------------
    def push(self, batch: EncodedBatch, side: int) -> EncodedBatch | None:
        n, mine, theirs = batch.length, self.sides[side], self.sides[1 - side]
        keys, usable = self._keys(batch)
        eligible = np.ones(n, dtype=np.bool_)
        bound = np.zeros(n, dtype=np.int64)
        timing = None if self.timing is None else self.timing[side]
        if timing is not None:
            t = batch.columns[timing.time]
            has_time = np.ones(n, dtype=np.bool_) if t.valid is None else t.valid
            self.null_time_rows += int(n - has_time.sum())
            with np.errstate(over="ignore"):
                late = has_time & (t.values + np.int64(timing.time_shift) < self.side_wm[side])
            self.late_rows += int(late.sum())
            eligible &= ~late
            usable &= has_time
            b = batch.columns[timing.bound]
            with np.errstate(over="ignore"):
                bound = b.values.astype(np.int64) + np.int64(timing.bound_shift)
            if b.valid is not None:
                bound = np.where(b.valid, bound, np.int64(NO_WATERMARK))
        kinds = batch.columns.get(pn.CHANGE_KIND)  # an updating input's: rows withdrawn take back their pairs
        row_kind = np.zeros(n, np.int64) if kinds is None else kinds.values.astype(np.int64, copy=False)
        withdrawn = np.isin(row_kind, WITHDRAWN)
        probing = np.flatnonzero(eligible & usable)
        hashes = ji.hash_keys(keys)
        pair_probe, pair_kept = theirs.probe(keys, hashes, probing)
        kept = probing[~withdrawn[probing]]
        if self.j.unique[1 - side] and not self.outer[side] and len(pair_probe):
            # the one row of theirs with this key is here: none can come that this row would match
            matched = np.zeros(n, dtype=np.bool_)
            matched[pair_probe] = True
            kept = kept[~matched[kept]]
        if self.condition is not None and len(pair_probe):
            pair_probe, pair_kept = self._where(side, batch, pair_probe, pair_kept)
        pad = np.zeros(n, dtype=np.bool_)
        if self.outer[side]:
            pad[eligible & ~usable] = True  # a NULL key or time never matches: padded at once
            if timing is None:
                pad[probing] = True  # a regular join pads at once; an interval or window join when freed
        outer = self.outer[side] or self.outer[1 - side]  # an inner join passes its input's kinds on, as Flink's
        out_probe, out_kept, kind, matches = ji.plan_output(
            n, np.flatnonzero(eligible), pair_probe, pair_kept, theirs.matches, pad,
            self.updating and self.outer[1 - side], self.outer[1 - side], row_kind, not outer, not self.outer[side])
        result = self._assemble(side, batch.columns, out_probe, out_kept, kind, self.emits) if len(out_probe) else None
        if timing is not None and not self.outer[side]:
            # a row whose bound the other side's watermark has passed would be freed at the next
            # advance, and no row of the other side that is not late can match it before: not kept
            kept = kept[bound[kept] >= self.side_wm[1 - side]]
        columns = {name: (c.values, c.valid) for name, c in batch.columns.items()}
        first = mine.count
        mine.append(columns, kept, keys, hashes, bound, self.wm, matches)
        if withdrawn.any():
            self._take_back(side, columns, np.flatnonzero(withdrawn & usable), keys, hashes, first, kept)
        return result

    def _take_back(self, side: int, columns: dict[str, tuple[np.ndarray, np.ndarray | None]], rows: np.ndarray,
                   keys: np.ndarray, hashes: np.ndarray, first: int, appended: np.ndarray) -> None:
        """Batch rows ``rows`` withdrawn: each takes back one kept row of its side with exactly its
        values (NaN equal to NaN, NULL to NULL, -0.0 not to 0.0) that came before it, the earliest
        first. Rows ``first``, first+1, ... were kept from this batch's rows ``appended``."""
        mine = self.sides[side]
        pair_probe, pair_kept = mine.probe(keys, hashes, rows)
        if not len(pair_probe):
            return
        same = np.ones(len(pair_probe), dtype=np.bool_)
        for f in self.schemas[side].fields:
            values, valid = columns[f.name]
            here = (values[pair_probe], None if valid is None else valid[pair_probe])
            same &= same_values(here, mine.gather(f.name, pair_kept), len(pair_probe))
        mine.taken_back(ji.take_back(pair_probe, pair_kept, same, mine.alive, first, appended))

    def _keys(self, batch: EncodedBatch) -> tuple[np.ndarray, np.ndarray]:
        """Key components as int64 (floats as normalised bits) and whether the row's key has no NULL."""
        n = batch.length
        keys = np.zeros((n, len(self.j.keys)), dtype=np.int64)
        usable = np.ones(n, dtype=np.bool_)
        for k, name in enumerate(self.j.keys):
            c = batch.columns[name]
            keys[:, k] = ji.key_bits(c.values)
            if c.valid is not None:
                usable &= c.valid
        return keys, usable

    def _where(self, side: int, batch: EncodedBatch, pair_probe: np.ndarray, pair_kept: np.ndarray) \
            -> tuple[np.ndarray, np.ndarray]:
        assert self.condition is not None
        candidates = self._assemble(side, batch.columns, pair_probe, pair_kept, None, self.condition_reads)
        out, _, _ = self.condition.process(candidates)
        assert out is not None
        keep = out.columns[KEEP]
        mask = keep.values.astype(np.bool_) & (True if keep.valid is None else keep.valid)
        return pair_probe[mask], pair_kept[mask]

    def _assemble(self, side: int, columns: dict[str, Column], batch_rows: np.ndarray, kept_rows: np.ndarray,
                  kind: np.ndarray | None, only: frozenset[str] | None = None) -> EncodedBatch:
        """Joined rows: this side's columns from the batch, the other side's from the state (-1: NULL);
        with ``only``, just those output columns."""
        present = batch_rows >= 0
        every = bool(present.all())
        safe = batch_rows if every else np.where(present, batch_rows, 0)

        def column(s: int, name: str) -> tuple[np.ndarray, np.ndarray | None]:
            if s != side:
                return self.sides[s].gather(name, kept_rows)
            c = columns[name]
            values = c.values[safe] if len(c.values) else np.zeros(len(safe), c.values.dtype)
            if c.valid is None:
                return values, None if every else present
            return values, present & c.valid[safe]

        return self._joined(column, len(batch_rows), kind, only)

    def _joined(self, column: Callable[[int, str], tuple[np.ndarray, np.ndarray | None]], n: int,
                kind: np.ndarray | None, only: frozenset[str] | None = None) -> EncodedBatch:
        """``n`` output rows, each input column (side, name) given by ``column``; the change kind
        ``kind`` (all +I when None) if the output is updating. With ``only``, just those columns."""
        out: dict[str, Column] = {}
        names = self.j.join.right_names
        for s in (0, 1):
            for f in self.schemas[s].fields:
                name = f.name if s == 0 else names[f.name]
                if only is not None and name not in only:
                    continue
                values, valid = column(s, f.name)
                if valid is None and name in self.nullable:  # operators downstream expect a nullable column's mask
                    valid = np.ones(n, dtype=np.bool_)
                out[name] = Column(values, valid)
        if self.updating and (only is None or pn.CHANGE_KIND in only):
            out[pn.CHANGE_KIND] = Column(kind if kind is not None else np.zeros(n, np.int64), None)
        return EncodedBatch(out, n)

    # -- the watermark ----------------------------------------------------------------------------
    def advance(self, left_wm: int, right_wm: int) -> EncodedBatch | None:
        """Take the sides' new watermarks; free what they allow. Padded rows of an outer interval or
        window join's rows freed without a match come back (left side first, in arrival order)."""
        self.side_wm = [left_wm, right_wm]
        new = min(left_wm, right_wm)
        parts = []
        for side in (0, 1):
            ttl = self.j.join.ttl_of(side)
            rows = self.sides[side]
            count = rows.count
            if self.timing is not None:
                freed = rows.free_below(self.side_wm[1 - side])
                if self.outer[side] and len(freed):
                    unmatched = freed[rows.matches[freed] == 0]
                    if len(unmatched):
                        parts.append(self._padded(side, unmatched))
            elif ttl is not None and new != NO_WATERMARK:
                stamp = rows.stamp[:count]
                stamp[stamp == NO_WATERMARK] = new  # arrived before any watermark: time starts at the first
                rows.free(stamp < new - ttl)
            rows.compact()
        timing = self.j.timing  # a bounded join holds its watermark back by how long it keeps rows
        self.wm = new if timing is None else timing.output_watermark(left_wm, right_wm)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else concatenated(parts, self.output_schema)

    def _padded(self, side: int, kept: np.ndarray) -> EncodedBatch:
        """Rows ``kept`` of ``side`` with the other side's columns NULL."""
        none = np.full(len(kept), -1, dtype=np.int64)
        return self._joined(lambda s, name: self.sides[s].gather(name, kept if s == side else none), len(kept), None,
                            self.emits)

    def counters(self) -> dict[str, int]:
        return {"late_rows": self.late_rows, "null_time_rows": self.null_time_rows}

    # -- checkpoints ------------------------------------------------------------------------------
    def snapshot(self, directory: Path) -> tuple[dict[str, Any], list[str]]:
        body: dict[str, Any] = {"side_wm": self.side_wm, "wm": self.wm, "late_rows": self.late_rows,
                                "null_time_rows": self.null_time_rows, "sides": []}
        files: list[str] = []
        for rows in self.sides:
            meta, written = rows.snapshot(directory)
            body["sides"].append(meta)
            files += written
        return body, files

    def restore(self, directory: Path, body: dict[str, Any]) -> None:
        self.side_wm, self.wm = list(body["side_wm"]), int(body["wm"])
        self.late_rows, self.null_time_rows = int(body["late_rows"]), int(body["null_time_rows"])
        for rows, meta in zip(self.sides, body["sides"]):
            rows.restore(directory, meta)

    def close(self) -> None:
        for rows in self.sides:
            rows.close()
