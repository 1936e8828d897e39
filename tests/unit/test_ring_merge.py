"""Merging several workers' window rings (``merge_ring_entries``) against a plain dictionary merge:
entries of one window and key combined oldest first, the result in one ring's firing order."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin.codegen.aggregates import AggLayout, layout
from darwin.graph.operators import Ring
from darwin.plan import nodes as pn
from darwin.state.merge import MERGED_RUNS, merge_ring_entries, merged_runs, take_rows, window_order

LOW, SIZE = 100, 8


def _layout() -> AggLayout:
    t = dw.from_arrow(pa.table({"ts": pa.array([0], pa.timestamp("ms")), "k": [1], "v": [2]}), time="ts")
    node = t.window(dw.Tumble("10s", on="ts")).group_by("k").agg(s=dw.sum("v"), n=dw.count(), m=dw.max("v")).plan
    assert isinstance(node, pn.Aggregate)
    return layout(node, first_seen=True)


LAY = _layout()

# one worker's entries: (window index, key offset) -> (value, serial of the row that made it)
part = st.dictionaries(st.tuples(st.integers(0, 2), st.integers(0, SIZE - 1)),
                       st.tuples(st.integers(-50, 50), st.integers(0, 10_000)), max_size=20)


def _entries(entries: dict[tuple[int, int], tuple[int, int]], shuffle: np.random.Generator | None):
    items = sorted(entries.items(), key=lambda e: (e[0][0], e[1][1]))  # as a ring fires: window, then first seen
    if shuffle is not None:  # as ``entries()`` walks slots
        items = [items[i] for i in shuffle.permutation(len(items))]
    starts = np.array([w * 10_000 for (w, _), _ in items], np.int64)
    keys = np.array([LOW + k for (_, k), _ in items], np.int64)
    v = np.array([x for _, (x, _) in items], np.int64)
    seen = np.array([s for _, (_, s) in items], np.int64)
    return [starts, keys], [v, np.ones(len(v), np.int64), v.copy(), seen]


@settings(max_examples=200, deadline=None)
@given(st.lists(part, min_size=1, max_size=4), st.booleans(), st.integers(0, 2**32 - 1))
def test_merge_matches_a_dictionary_merge(parts, shuffled, seed):
    serials = [s for p in parts for _, s in p.values()]
    assume(len(set(serials)) == len(serials))  # a row makes one entry: serials are unique
    rng = np.random.default_rng(seed) if shuffled else None
    keys, values = merge_ring_entries(LAY, Ring(4, LOW, SIZE), [_entries(p, rng) for p in parts])
    expected: dict[tuple[int, int], list[int]] = {}
    for p in parts:
        for (w, k), (x, s) in p.items():
            e = expected.setdefault((w * 10_000, LOW + k), [0, 0, x, s])
            e[0] += x
            e[1] += 1
            e[2] = max(e[2], x)
            e[3] = min(e[3], s)
    order = sorted(expected, key=lambda wk: (wk[0], expected[wk][3]))
    assert list(zip(keys[0].tolist(), keys[1].tolist())) == order
    assert [list(t) for t in zip(*(v.tolist() for v in values))] == [expected[wk] for wk in order]


@settings(max_examples=40, deadline=None)
@given(runs=st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10_000)), max_size=30), max_size=5),
       scrambled=st.booleans(), seed=st.integers(0, 1000))
def test_workers_fired_rows_are_merged_in_window_then_first_seen_order(runs, scrambled, seed):
    """The ordered gate's order of several workers' fired windows: each worker's run in (window,
    first seen) order is merged, not sorted; rows out of order (many runs) are sorted. Either way it
    is the sort of every row by window, then first seen. First-seen serials are unique."""
    serials = np.random.default_rng(seed).permutation(10_000 * 6)[:sum(len(r) for r in runs)]
    starts, seen, at = [], [], 0
    for run in runs:
        rows = sorted((w, int(s)) for (w, _), s in zip(run, serials[at:at + len(run)]))
        at += len(run)
        starts += [w for w, _ in rows]
        seen += [s for _, s in rows]
    starts_a, seen_a = np.array(starts, np.int64), np.array(seen, np.int64)
    if scrambled:  # a worker out of order: the runs break up
        order = np.random.default_rng(seed).permutation(len(starts_a))
        starts_a, seen_a = starts_a[order], seen_a[order]
    got = window_order([starts_a], [seen_a])
    want = np.lexsort((seen_a, starts_a))
    assert np.array_equal(want, np.arange(len(want))) if got is None else np.array_equal(got, want)


@settings(max_examples=60, deadline=None)
@given(parts=st.lists(st.lists(st.lists(st.integers(0, 3), max_size=20), max_size=4), min_size=1, max_size=5),
       scrambled=st.booleans(), seed=st.integers(0, 1000))
def test_parts_in_runs_are_merged_without_moving_rows(parts, scrambled, seed):
    """Several workers' fired rows, each part a few runs in (window, first seen) order (a worker's
    mid-batch windows, then the rest): ``merged_runs`` tells the merge, ``take_rows`` gathers it in
    chunks, and it is the sort of every row by window, then first seen. Too many runs: None."""
    rng = np.random.default_rng(seed)
    serials = rng.permutation(10_000)
    starts, seen, at = [], [], 0
    for runs in parts:
        rows = []
        for run in runs:
            rows += sorted((w * 10, int(s)) for w, s in zip(run, serials[at:at + len(run)]))
            at += len(run)
        if scrambled:
            rows = [rows[i] for i in rng.permutation(len(rows))]
        starts.append(np.array([w for w, _ in rows], np.int64))
        seen.append(np.array([s for _, s in rows], np.int64))
    merged = merged_runs(starts, seen)
    if merged is None:
        breaks = [np.count_nonzero((np.diff(a) < 0) | ((np.diff(a) == 0) & (np.diff(b) < 0)))
                  for a, b in zip(starts, seen)]
        assert sum(1 + int(n) for n in breaks) > MERGED_RUNS
        return
    all_starts, all_seen = np.concatenate(starts), np.concatenate(seen)
    want = np.lexsort((all_seen, all_starts))
    assert merged.windows == len(np.unique(all_starts))
    got_starts, got_seen, got_halves, got_odd = [], [], [], []
    halves = [s / 2 for s in seen]  # floats and bools are gathered alike
    odd = [s % 2 == 1 for s in seen]
    next_row = merged.first.copy()
    for first in range(0, len(merged.source), 7):  # chunk by chunk, as the gate yields them
        which, rows = merged.rows(first, first + 7, next_row)
        for columns, into in ((starts, got_starts), (seen, got_seen), (halves, got_halves), (odd, got_odd)):
            into += take_rows(which, rows, columns).tolist()
    assert got_halves == (all_seen[want] / 2).tolist() and got_odd == (all_seen[want] % 2 == 1).tolist()
    assert got_starts == all_starts[want].tolist() and got_seen == all_seen[want].tolist()


# a worker's rows: (key offset, value, the windows the row is in); a row in several windows (a sliding
# window's) makes an entry of each with the same first-seen serial
rows = st.lists(st.tuples(st.integers(0, SIZE - 1), st.integers(-50, 50), st.sets(st.integers(0, 2), min_size=1)),
                max_size=25)


def _ring_of(rows_with_serials, shuffle: np.random.Generator | None):
    """One worker's ring entries of its rows: per window and key, the sum, count and max of its rows
    and the serial of the first, in firing order (or walked slot by slot: shuffled)."""
    ring: dict[tuple[int, int], list[int]] = {}
    for serial, (k, x, windows) in rows_with_serials:
        for w in windows:
            e = ring.setdefault((w, k), [0, 0, x, serial])
            e[0], e[1], e[2] = e[0] + x, e[1] + 1, max(e[2], x)
    items = sorted(ring.items(), key=lambda e: (e[0][0], e[1][3]))
    if shuffle is not None:
        items = [items[i] for i in shuffle.permutation(len(items))]
    starts = np.array([w * 10_000 for (w, _), _ in items], np.int64)
    keys = np.array([LOW + k for (_, k), _ in items], np.int64)
    values = [np.array([e[i] for _, e in items], np.int64) for i in range(4)]
    return [starts, keys], values


@settings(max_examples=200, deadline=None)
@given(st.lists(rows, min_size=1, max_size=5), st.booleans(), st.integers(0, 2**32 - 1))
def test_workers_rings_merge_into_one_rings_windows(workers_rows, shuffled, seed):
    """Workers folding the slices of a stream of rows into rings of their own (rows in several
    windows, so a serial is first seen in several windows; parts of any number and length, empty
    ones too, in firing order or walked slot by slot) merge into the ring one thread would hold
    over every row: the same entries, combined, in its firing order."""
    rng = np.random.default_rng(seed) if shuffled else None
    serial, slices = 0, []
    for worker_rows in workers_rows:  # worker i's slice comes after worker i - 1's
        slices.append(list(enumerate(worker_rows, start=serial)))
        serial += len(worker_rows)
    keys, values = merge_ring_entries(LAY, Ring(4, LOW, SIZE), [_ring_of(s, rng) for s in slices])
    want_keys, want_values = _ring_of([r for s in slices for r in s], None)
    assert [k.tolist() for k in keys] == [k.tolist() for k in want_keys]
    assert [v.tolist() for v in values] == [v.tolist() for v in want_values]
