"""The join state's layout (issue 10): what a side keeps per row, and the key index.

Joins with a state TTL (the only join whose rows keep their arrival watermark) against the
reference interpreter, with and without a checkpoint and a crash in the middle; the key index on
its own: a key's kept rows come back in arrival order after growth, deaths and compaction.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_joins import stream

import darwin as dw
from darwin.codegen import join_index as ji
from darwin.state import join_rows
from darwin.state.join_rows import JoinRows
from darwin.state.placement import MappedFiles
from darwin.testing import assert_table_equal
from darwin.types import DType, Field, Schema

SETTINGS = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def ordered_streams(draw, name: str) -> dw.Table:
    """Rows in time order, with gaps wide enough for a TTL to drop rows between matches."""
    n = draw(st.integers(0, 30))
    keys = draw(st.lists(st.one_of(st.none(), st.integers(0, 4)), min_size=n, max_size=n))
    steps = draw(st.lists(st.integers(0, 3_000), min_size=n, max_size=n))
    values = draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n))
    return stream(name, keys, np.cumsum(steps, dtype=np.int64).tolist(), values, [f"{name}{v}" for v in values], 0)


@SETTINGS
@given(left=ordered_streams("L"), right=ordered_streams("R"), how=st.sampled_from(("inner", "left", "full")),
       batch=st.integers(1, 6), state=st.sampled_from(("memory", "mmap", "rocksdb")),
       ttl=st.sampled_from(("4s", ("4s", None), (None, "2s"), ("1s", "6s"))))
def test_joins_with_a_state_ttl_agree_with_the_interpreter(left, right, how, batch, state, ttl):
    """One TTL for both sides, or each side its own (a pair; None keeps that side's rows for ever,
    as Flink's STATE_TTL hint on one input of a join)."""
    q = left.join(right, on=[("k", "k")], how=how, state_ttl=ttl)
    with tempfile.TemporaryDirectory() as directory:
        compiled = q.execute(dw.Config(batch_size=batch, state=state,
                                       state_path=None if state == "memory" else directory))
    reference = q.execute(dw.Config(batch_size=batch, mode="interpreted"))
    assert_table_equal(compiled.changelog, reference.changelog, check_nullability=True)


def test_a_state_ttl_drops_rows_the_join_would_otherwise_match():
    def stream(name: str, keys: list[int], times: list[int]) -> dw.Table:
        table = pa.table({"k": pa.array(keys, pa.int64()), "t": pa.array(times, pa.timestamp("ms"))})
        return dw.from_arrow(table, time="t", max_delay=0, name=name)

    left = stream("L", [1, 2], [0, 9_000])
    right = stream("R", [2, 1, 1], [1_000, 9_500, 9_600])
    config = dw.Config(batch_size=1)
    rows = {}
    for ttl in (None, "4s", ("4s", None), (None, "4s")):
        q = left.join(right, on=[("k", "k")], state_ttl=ttl)
        compiled = q.execute(config).table
        assert_table_equal(compiled, q.execute(config.replace(mode="interpreted")).table)
        rows[ttl] = compiled.num_rows
    assert rows[None] == 3 and rows["4s"] < 3  # L's key 1 (t=0) is gone when R's arrive at 9.5 s
    assert rows[("4s", None)] == rows["4s"] and rows[(None, "4s")] == 3  # only the left side's TTL drops it


def _index(capacity: int = 16, pending_limit: int | None = 0) -> JoinRows:
    """A side keeping arrival numbers ``x``; indexed at once unless ``pending_limit`` says otherwise."""
    rows = JoinRows("t", Schema((Field("x", DType.INT64, False),)), 1, capacity=capacity, pending_limit=pending_limit)
    rows.track(matches=False, bound=True, stamp=False)
    return rows


def _append(rows: JoinRows, keys: list[int], ids: list[int]) -> None:
    """Rows of ``keys``, each with its arrival number ``ids`` as column ``x`` and as its bound."""
    k = np.array(keys, dtype=np.int64).reshape(-1, 1)
    n = len(keys)
    rows.append({"x": (np.array(ids, dtype=np.int64), None)}, np.arange(n), k, ji.hash_keys(k),
                np.array(ids, dtype=np.int64), 0, np.zeros(n, dtype=np.int64))


def _matches(rows: JoinRows, keys: list[int]) -> list[list[int]]:
    """Per probed key, the arrival numbers of its live kept rows, in the probe's order."""
    k = np.array(keys, dtype=np.int64).reshape(-1, 1)
    probe, kept = rows.probe(k, ji.hash_keys(k), np.arange(len(keys)))
    values, _ = rows.gather("x", kept)
    return [values[probe == i].tolist() for i in range(len(keys))]


@pytest.mark.parametrize("pending_limit", [0, None, 700])
def test_a_keys_rows_come_back_in_arrival_order_through_growth_deaths_and_compaction(pending_limit):
    """Indexed at once (0), pending until probes have scanned them enough (None), or both (700)."""
    rows = _index(pending_limit=pending_limit)
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 50, 3000)
    for start in range(0, 3000, 250):  # the index and the rows grow many times
        _append(rows, keys[start:start + 250].tolist(), list(range(start, start + 250)))
    arrived = {key: np.flatnonzero(keys == key).tolist() for key in range(50)}
    assert _matches(rows, [3, 49, 3, 77]) == [arrived[3], arrived[49], arrived[3], []]
    rows.free_below(2000)  # rows 0..1999 die: more dead than live
    survivors = [[r for r in arrived[key] if r >= 2000] for key in (3, 49)]
    assert _matches(rows, [3, 49]) == survivors
    rows.compact()  # renumbers the live rows and indexes them again
    assert rows.count == 1000 and rows.live == 1000
    assert _matches(rows, [3, 49]) == survivors
    _append(rows, [3, 49, 3], [3000, 3001, 3002])
    assert _matches(rows, [49, 3]) == [survivors[1] + [3001], survivors[0] + [3000, 3002]]


def test_the_key_index_grows_with_the_keys_not_the_rows():
    """A batch of many rows under few keys keeps a small index; one with more new keys than the index
    has room for grows it in the middle of the batch, and every row stays findable in order."""
    rows = _index()
    _append(rows, [7, 8, 9] * 20_000, list(range(60_000)))
    assert len(rows.slots) <= 64 and rows.distinct == 3
    keys = np.arange(5_000) * 13 % 4_999  # 4,999 keys, new ones mid-batch long after the index is full
    _append(rows, keys.tolist(), list(range(60_000, 65_000)))
    assert rows.distinct == 3 + 4_999 - 3 and 2 * rows.distinct <= len(rows.slots) <= 8 * rows.distinct
    assert _matches(rows, [8, 0, 4_998]) == [list(range(1, 60_000, 3)) + [60_000 + int(np.flatnonzero(keys == 8)[0])],
                                             [60_000, 64_999], [60_000 + int(np.flatnonzero(keys == 4_998)[0])]]


def test_wide_keys_and_untracked_bookkeeping():
    """Two-component keys equal only when both components are; a side that tracks nothing keeps
    no match counts, bounds or stamps, and still finds its rows."""
    rows = JoinRows("t", Schema((Field("x", DType.INT64, True),)), 2)
    rows.track(matches=False, bound=False, stamp=False)
    assert rows.per_row == ("keys", "alive")
    k = np.array([[1, 2], [2, 1], [1, 2], [1, 3]], dtype=np.int64)
    x = np.array([10, 20, 30, 40], dtype=np.int64)
    valid = np.array([True, False, True, True])
    rows.append({"x": (x, valid)}, np.arange(4), k, ji.hash_keys(k), np.zeros(4, np.int64), 0, np.zeros(4, np.int64))
    probe_keys = np.array([[1, 2], [2, 1], [3, 1]], dtype=np.int64)
    probe, kept = rows.probe(probe_keys, ji.hash_keys(probe_keys), np.arange(3))
    assert probe.tolist() == [0, 0, 1] and kept.tolist() == [0, 2, 1]
    values, got_valid = rows.gather("x", np.array([0, 1, -1]))
    assert values[:2].tolist() == [10, 20] and got_valid.tolist() == [True, False, False]
    assert len(rows.matches) == len(rows.bound) == len(rows.stamp) == 0


@pytest.mark.parametrize("lengths", [[0, 0, 0], [1, 0, 300, 5, 70_000], list(range(0, 400, 7))])
def test_decoded_strings_are_the_pools_strings(lengths):
    from darwin.runtime.encoding import StringPool

    pool = StringPool()
    rng = np.random.default_rng(len(lengths))
    strings = ["".join(chr(97 + int(c)) for c in rng.integers(0, 26, n)) + "é" * (n % 3) for n in lengths]
    codes = pool.append(pa.array(strings, pa.string()))
    order = rng.permutation(len(codes))
    valid = rng.random(len(codes)) < 0.8
    decoded = pool.decode(codes[order], valid)
    assert decoded.to_pylist() == [s if v else None for s, v in zip(np.array(strings, dtype=object)[order], valid)]
    assert pool.decode(codes, None).to_pylist() == strings


OPERATIONS = st.lists(st.one_of(
    st.tuples(st.just("append"), st.lists(st.tuples(st.integers(0, 6), st.integers(0, 40), st.booleans()),
                                          max_size=12)),
    st.tuples(st.just("probe"), st.lists(st.integers(0, 7), max_size=6)),
    st.tuples(st.just("free"), st.integers(0, 45)),
    st.tuples(st.just("checkpoint"), st.none())), max_size=25)
PENDING_SCHEMA = Schema((Field("x", DType.INT64, False), Field("y", DType.INT64, True)))


def _side(pending_limit: int | None, directory: Path | None) -> JoinRows:
    if directory is not None:
        directory.mkdir()
    placement = None if directory is None else MappedFiles(directory)
    rows = JoinRows("t", PENDING_SCHEMA, 1, placement, capacity=4, pending_limit=pending_limit)
    rows.track(matches=False, bound=True, stamp=False)
    return rows


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS, pending_limit=st.sampled_from([0, None, 1, 5]), scans=st.sampled_from([0, 1, 8, 10**9]),
       mapped=st.booleans())
def test_pending_rows_are_found_gathered_and_freed_as_indexed_ones(operations, pending_limit, scans, mapped):
    """Rows waiting unindexed (darwin.state.pending_rows), indexed in between by probes' scans
    (``scans``: SCANS_PER_INDEX), by a limit on pending rows or by a checkpoint, restored from it:
    each probe finds every live row of its key in arrival order, with its values and NULLs, and a
    watermark frees exactly the rows whose bound it passed, in arrival order, as a plain model says."""
    model: list[dict] = []  # each row kept: key, x (arrival number), y (x or NULL), bound, alive
    with tempfile.TemporaryDirectory() as directory, mock.patch.object(join_rows, "SCANS_PER_INDEX", scans):
        run = 0

        def fresh() -> JoinRows:
            nonlocal run
            run += 1
            return _side(pending_limit, Path(directory) / f"run{run}" if mapped else None)

        rows = fresh()
        for what, arg in operations:
            if what == "append":
                keys = np.array([[k] for k, _, _ in arg], dtype=np.int64).reshape(-1, 1)
                x = np.arange(len(model), len(model) + len(arg), dtype=np.int64)
                valid = np.array([v for _, _, v in arg], dtype=np.bool_)
                bound = np.array([b for _, b, _ in arg], dtype=np.int64)
                keep = np.flatnonzero(np.arange(len(arg)) % 3 != 2)  # a join keeps some of a batch's rows
                rows.append({"x": (x, None), "y": (x, valid)}, keep, keys, ji.hash_keys(keys), bound, 0,
                            np.zeros(len(arg), np.int64))
                model += [{"key": arg[i][0], "x": int(x[i]), "y": int(x[i]) if arg[i][2] else None,
                           "bound": arg[i][1], "alive": i % 3 != 2} for i in range(len(arg))]
            elif what == "probe":
                keys = np.array(arg, dtype=np.int64).reshape(-1, 1)
                probe, kept = rows.probe(keys, ji.hash_keys(keys), np.arange(len(arg)))
                x, _ = rows.gather("x", kept)
                y, y_valid = rows.gather("y", kept)
                found = [list(zip(x[probe == i].tolist(), [v if ok else None for v, ok in
                                                           zip(y[probe == i].tolist(), y_valid[probe == i])]))
                         for i in range(len(arg))]
                assert found == [[(r["x"], r["y"]) for r in model if r["alive"] and r["key"] == k] for k in arg]
            elif what == "free":
                freed = rows.free_below(arg)
                x, _ = rows.gather("x", freed)
                expected = [r["x"] for r in model if r["alive"] and r["bound"] < arg]
                assert x.tolist() == expected
                for r in model:
                    r["alive"] = r["alive"] and r["bound"] >= arg
                rows.compact()
            else:
                checkpoint = Path(directory) / f"checkpoint{run}"
                os.makedirs(checkpoint)
                meta, _ = rows.snapshot(checkpoint)
                rows.close()
                rows = fresh()
                rows.restore(checkpoint, meta)
            assert rows.live == sum(r["alive"] for r in model)
        rows.close()
