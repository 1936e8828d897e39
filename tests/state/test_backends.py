"""One suite, every state backend: results, crash recovery, damaged checkpoints, refusals.

Crashes here are exceptions thrown from inside the run after a chosen number of
input batches (``tests/crashes.py``); ``tests/recovery`` kills real processes with SIGKILL.
"""

import csv
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import Crash, bids, crash_after, run_until_done, stop_crashing, windowed
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streams import (
    JOIN_SHAPES,
    SHAPES,
    q_all_aggregates,
    q_count_distinct,
    q_late_output,
    q_sliding_count_distinct,
    q_sliding_string_key,
    source,
    streams,
)

import darwin as dw
from darwin.config import STATE_BACKENDS
from darwin.errors import CheckpointError, ConfigError, SinkError
from darwin.state.checkpoint import MANIFEST
from darwin.testing import assert_engines_agree

STATEFUL = [s for s in SHAPES if s.__name__ not in ("q_stateless", "q_windowed_rows")]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def committed(sink_kind, directory: Path):
    """The committed output: a table for Parquet, the data lines of every part for CSV."""
    if sink_kind == "parquet":
        return pq.read_table(directory) if any(directory.glob("part-*")) else None
    lines = []
    for part in sorted(directory.glob("part-*.csv")):
        with open(part, newline="") as f:
            lines += list(csv.reader(f))[1:]
    return lines


SINKS = {"parquet": dw.sinks.Parquet, "csv": dw.sinks.CSV}


# -- results ------------------------------------------------------------------------------------

@pytest.mark.parametrize("shape", STATEFUL, ids=lambda f: f.__name__)
@settings(max_examples=8, **SETTINGS)
@given(data=streams())
def test_every_backend_agrees_with_the_reference(configure, shape, data):
    table, cuts, delay, batch_size = data
    assert_engines_agree(shape(source(table, cuts, delay)), configure(batch_size=batch_size))


def test_state_grows_far_past_its_first_allocation(configure):
    n = 50_000
    t = pa.table({"ts": pa.array([i // 10 for i in range(n)], pa.timestamp("ms")), "k": list(range(n)),
                  "v": [i % 7 for i in range(n)]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1h", on="ts")).group_by("k").agg(s=dw.sum("v"))
    got = q.collect(configure(batch_size=4096))
    assert got.num_rows == n
    assert got.column("s").to_pylist() == [i % 7 for i in range(n)]


# -- crash and resume -----------------------------------------------------------------------------

def uninterrupted_and_resumed(q, make_sink, configure, base, batch_size, every, monkeypatch, crashes):
    """The results of one uninterrupted run (into plain/) and of a run crashed at ``crashes`` and
    resumed from checkpoints every ``every`` batches (into out/), with one state_path per job."""
    state = str(base / "state")
    plain = q.sink(make_sink(base / "plain", base / "plain-late")).run(configure(batch_size=batch_size,
                                                                                  state_path=state))
    config = configure(batch_size=batch_size, state_path=state, checkpoint_dir=str(base / "chk"),
                       checkpoint_interval=f"{every} batches")
    resumed = run_until_done(q, lambda: make_sink(base / "out", base / "out-late"), config, monkeypatch, crashes)
    return plain, resumed


def parquet(path, _late):
    return dw.sinks.Parquet(path)


def test_rocksdb_reads_a_firing_window_in_chunks_in_first_seen_order(tmp_path, monkeypatch):
    """A window's entries are decoded a chunk at a time as RocksDB hands them over (not held as a bytes
    object each until the window ends), then put in first-seen order: the memory backend's output."""
    import darwin.state.rocksdb as rocks

    monkeypatch.setattr(rocks, "FIRE_CHUNK", 7)
    n = 600
    t = pa.table({"ts": pa.array([i * 13 for i in range(n)], pa.timestamp("ms")),
                  "k": [(i * 7919) % 211 for i in range(n)], "v": [i % 5 for i in range(n)]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("2s", on="ts")).group_by("k").agg(s=dw.sum("v"), n=dw.count())
    expected = q.collect(dw.Config(batch_size=64))
    got = q.collect(dw.Config(batch_size=64, state="rocksdb", state_path=str(tmp_path), state_delta_limit=16))
    assert got.equals(expected) and got.num_rows > 3 * 7


@settings(max_examples=15, **SETTINGS)
@given(data=streams(), batch_size=st.integers(1, 6), every=st.integers(1, 3), delta_limit=st.sampled_from([2, 7, 1000]),
       crashes=st.lists(st.integers(0, 12), max_size=3),
       shape=st.sampled_from([q_all_aggregates, q_late_output, q_sliding_string_key]))
def test_rocksdb_fires_from_its_cache_and_from_scans_alike(tmp_path_factory, monkeypatch, data, batch_size, every,
                                                           delta_limit, crashes, shape):
    """A window the cache wholly holds fires from it, one it lost entries of from a RocksDB scan; a copy a
    checkpoint wrote leaves with its window either way, so neither a later scan nor a restart sees it again."""
    table, cuts, delay, _ = data
    q = shape(source(table, cuts, delay))
    base = tmp_path_factory.mktemp("run")
    q.sink(dw.sinks.Parquet(base / "memory", base / "memory-late")).run(dw.Config(batch_size=batch_size))

    def configure(**changes):
        return dw.Config(state="rocksdb", state_path=str(base / "state"), state_delta_limit=delta_limit).replace(
            **changes)
    plain, result = uninterrupted_and_resumed(q, dw.sinks.Parquet, configure, base, batch_size, every, monkeypatch,
                                              crashes)
    for run in ("plain", "out"):
        assert committed("parquet", base / run) == committed("parquet", base / "memory"), run
        if shape is q_late_output:
            assert committed("parquet", base / f"{run}-late") == committed("parquet", base / "memory-late"), run
    assert result.metrics["windows_fired"] == plain.metrics["windows_fired"]


@pytest.mark.parametrize("every", [None, 2])
def test_rocksdb_fires_an_entry_taken_up_again_after_the_cache_lost_it_whole(tmp_path, every):
    """Keys 1-4 fill the cache (4 entries) and are written out when key 5 comes; key 1 is counted again, key 6
    comes, and the window fires with keys 5, 1 and 6 in the cache, never written: RocksDB's part of key 1 and
    the cache's are one entry, first seen where key 1 first came, and 5 and 6 follow the written ones."""
    t = pa.table({"ts": pa.array([0, 1, 2, 3, 4, 5, 6, 2000], pa.timestamp("ms")),
                  "k": [1, 2, 3, 4, 5, 1, 6, 9], "v": [1, 2, 3, 4, 5, 10, 6, 9]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v"))
    checkpoints = {} if every is None else {"checkpoint_dir": str(tmp_path / "chk"),
                                            "checkpoint_interval": f"{every} batches"}
    got = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(dw.Config(
        batch_size=1, state="rocksdb", state_path=str(tmp_path / "state"), state_delta_limit=4, **checkpoints))
    assert got.metrics["output_rows"] == 7
    assert pq.read_table(tmp_path / "out").select(["k", "n", "s"]).to_pylist()[:6] == [
        {"k": 1, "n": 2, "s": 11}, {"k": 2, "n": 1, "s": 2}, {"k": 3, "n": 1, "s": 3}, {"k": 4, "n": 1, "s": 4},
        {"k": 5, "n": 1, "s": 5}, {"k": 6, "n": 1, "s": 6}]


@pytest.mark.parametrize("sink_kind", SINKS)
@settings(max_examples=15, **SETTINGS)
@given(data=streams(), batch_size=st.integers(1, 6), every=st.integers(1, 3),
       crashes=st.lists(st.integers(0, 12), min_size=1, max_size=4),
       shape=st.sampled_from([q_all_aggregates, q_late_output, q_sliding_string_key]))
def test_crashes_and_restarts_give_exactly_the_uninterrupted_output(configure, tmp_path_factory, monkeypatch,
                                                                  sink_kind, data, batch_size, every, crashes, shape):
    table, cuts, delay, _ = data
    late = shape is q_late_output
    q = shape(source(table, cuts, delay))
    base = tmp_path_factory.mktemp("run")
    plain, result = uninterrupted_and_resumed(q, SINKS[sink_kind], configure, base, batch_size, every, monkeypatch,
                                              crashes)
    assert committed(sink_kind, base / "out") == committed(sink_kind, base / "plain")
    if late:
        assert committed(sink_kind, base / "out-late") == committed(sink_kind, base / "plain-late")
    for name in ("input_rows", "output_rows", "late_rows", "windows_fired"):
        assert result.metrics[name] == plain.metrics[name], name
    assert result.metrics["input_rows"] == table.num_rows
    assert not list((base / "out" / "_darwin_staging").iterdir())


@settings(max_examples=8, **SETTINGS)
@given(data=streams(), batch_size=st.integers(1, 6), every=st.integers(1, 3),
       crashes=st.lists(st.integers(0, 12), min_size=1, max_size=3),
       shape=st.sampled_from([q_count_distinct, q_sliding_count_distinct]))
def test_crashes_in_a_windowed_distinct_count_give_exactly_the_uninterrupted_output(
        configure, tmp_path_factory, monkeypatch, data, batch_size, every, crashes, shape):
    """Both steps of the compiled count (darwin.plan.split_distinct) come back from the checkpoint:
    the first's (window, keys, value) groups and the second's windows."""
    table, cuts, delay, _ = data
    q = shape(source(table, cuts, delay))
    base = tmp_path_factory.mktemp("run")
    plain, result = uninterrupted_and_resumed(q, parquet, configure, base, batch_size, every, monkeypatch, crashes)
    assert committed("parquet", base / "out") == committed("parquet", base / "plain")
    for name in ("input_rows", "output_rows", "late_rows", "windows_fired"):
        assert result.metrics[name] == plain.metrics[name], name


@settings(max_examples=8, **SETTINGS)
@given(left=streams(), right=streams(), batch_size=st.integers(1, 6), every=st.integers(1, 3),
       crashes=st.lists(st.integers(0, 12), min_size=1, max_size=3), shape=st.sampled_from(JOIN_SHAPES))
def test_crashes_in_a_join_give_exactly_the_uninterrupted_output(configure, tmp_path_factory, monkeypatch, left,
                                                                 right, batch_size, every, crashes, shape):
    """Both sources' offsets and both sides' kept rows come back from the checkpoint."""
    (lt, lcuts, delay, _), (rt, rcuts, _, _) = left, right
    q = shape(source(lt, lcuts, delay, name="left"), source(rt, rcuts, delay, name="right"))
    base = tmp_path_factory.mktemp("run")
    plain, result = uninterrupted_and_resumed(q, parquet, configure, base, batch_size, every, monkeypatch, crashes)
    assert committed("parquet", base / "out") == committed("parquet", base / "plain")
    for name in ("input_rows", "output_rows", "late_rows"):
        assert result.metrics[name] == plain.metrics[name], name
    assert result.metrics["input_rows"] == lt.num_rows + rt.num_rows


# values whose sums and extremes depend on the order they are folded in: a NaN seen first stays
# the extreme, 1e16 swallows 1.0 and cancels with -1e16
AWKWARD_FLOATS = st.sampled_from([0.5, -1.0, 0.0, -0.0, float("nan"), 1e16, -1e16, 1.0, 3.25])


def exactly(table):
    """Rows with each value as its repr: NaN equals NaN, -0.0 differs from 0.0."""
    return [tuple(repr(v) for v in row.values()) for row in table.to_pylist()]


def float_aggregates(rows):
    table = pa.table({"ts": pa.array([i for i in range(len(rows))], pa.timestamp("ms")),
                      "k": [k for k, _ in rows], "f": [f for _, f in rows]})
    return (dw.from_arrow(table, time="ts").window(dw.Tumble("100ms", on="ts")).group_by("k")
            .agg(lo=dw.min("f"), hi=dw.max("f"), s=dw.sum("f"), a=dw.avg("f")))


@settings(max_examples=25, **SETTINGS)
@given(rows=st.lists(st.tuples(st.integers(0, 2), AWKWARD_FLOATS), min_size=1, max_size=40),
       batch_size=st.integers(1, 5), delta_limit=st.integers(1, 4))
@example(rows=[(1, 0.5), (2, 0.0), (1, float("nan")), (1, -1.0)], batch_size=2, delta_limit=2)
@example(rows=[(1, 1.0), (2, 0.0), (1, 1e16), (1, -1e16)], batch_size=2, delta_limit=2)
def test_float_aggregates_fold_row_by_row_however_state_is_kept(configure, rows, batch_size, delta_limit):
    """rocksdb's cache combined an entry's rows after it was evicted with what RocksDB held, which
    is not the fold of the rows for float sums and extremes; every backend must fold alike."""
    q = float_aggregates(rows)
    got = assert_engines_agree(q, configure(batch_size=batch_size, state_delta_limit=delta_limit)).table
    want = q.collect(dw.Config(batch_size=batch_size))
    assert exactly(got) == exactly(want)


@settings(max_examples=20, **SETTINGS)
@given(rows=st.lists(st.tuples(st.integers(0, 2), AWKWARD_FLOATS), min_size=4, max_size=40),
       batch_size=st.integers(1, 4), crashes=st.lists(st.integers(1, 8), min_size=1, max_size=2))
def test_float_aggregates_resume_to_the_uninterrupted_output(configure, tmp_path_factory, monkeypatch, rows,
                                                           batch_size, crashes):
    q = float_aggregates(rows)
    base = tmp_path_factory.mktemp("floats")
    plain = configure(batch_size=batch_size, state_path=str(base / "plain-state"))
    q.sink(dw.sinks.Parquet(base / "plain")).run(plain)
    config = configure(batch_size=batch_size, state_path=str(base / "state"), checkpoint_dir=str(base / "chk"),
                       checkpoint_interval="1 batches")
    run_until_done(q, lambda: dw.sinks.Parquet(base / "out"), config, monkeypatch, crashes)
    assert exactly(committed("parquet", base / "out")) == exactly(committed("parquet", base / "plain"))


EXTREME_FLOATS = st.sampled_from([0.5, -1.0, 0.0, -0.0, float("nan"), float("inf"), float("-inf"), 1e16])


@settings(max_examples=20, **SETTINGS)
@given(rows=st.lists(st.tuples(st.integers(0, 4), EXTREME_FLOATS), min_size=1, max_size=40),
       batch_size=st.integers(1, 5), delta_limit=st.integers(1, 3), seed=st.integers(0, 100))
@example(rows=[(1, 0.0), (1, float("nan")), (2, -0.0), (2, 0.0), (1, -1.0)], batch_size=1, delta_limit=1, seed=0)
def test_float_extremes_fold_in_parts_on_every_backend(configure, caplog, rows, batch_size, delta_limit, seed):
    """min/max of floats merge exactly (NaN above every number, -0.0 below 0.0, whatever the order),
    so rocksdb evicts their entries and combines them with what it stored, like integer aggregates;
    the result is the same for the rows in any order."""
    import random

    def query(rows):
        table = pa.table({"ts": pa.array(range(len(rows)), pa.timestamp("ms")), "k": [k for k, _ in rows],
                          "f": [f for _, f in rows]})
        return (dw.from_arrow(table, time="ts").window(dw.Tumble("1h", on="ts")).group_by("k")
                .agg(lo=dw.min("f"), hi=dw.max("f")))

    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    config = configure(batch_size=batch_size, state_delta_limit=delta_limit)
    with caplog.at_level("WARNING"):
        got = assert_engines_agree(query(rows), config).table
        again = query(shuffled).collect(config)
    assert "cannot be folded in parts" not in caplog.text
    assert sorted(exactly(got)) == sorted(exactly(again))


def test_a_checkpoint_torn_while_being_written_is_skipped(job, tmp_path, monkeypatch):
    q, config, expected = job
    from darwin.state.checkpoint import CheckpointStore

    commit = CheckpointStore.commit

    def torn(self, checkpoint_id, body, files=None):
        if checkpoint_id == 3:  # the files are there, the manifest only half written
            (self.root / f"chk-{checkpoint_id:06d}" / (MANIFEST + ".tmp")).write_text('{"format": 1, "id"')
            raise Crash("crash while writing the manifest")
        return commit(self, checkpoint_id, body, files)
    monkeypatch.setattr(CheckpointStore, "commit", torn)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    monkeypatch.setattr(CheckpointStore, "commit", commit)
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from == 2
    assert pq.read_table(tmp_path / "out").equals(expected)


def test_restarting_a_finished_job_adds_nothing(job, tmp_path):
    q, config, expected = job
    first = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    again = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert again.files == first.files
    assert again.resumed_from is not None
    assert again.metrics["output_rows"] == first.metrics["output_rows"] == expected.num_rows
    assert pq.read_table(tmp_path / "out").equals(expected)


def test_time_interval_checkpoints(job, tmp_path):
    q, config, expected = job
    result = q.sink(dw.sinks.CSV(tmp_path / "out")).run(config.replace(checkpoint_interval="1ms"))
    assert result.metrics["checkpoints"] > 5
    assert sum(1 for _ in result.files) >= 1
    assert len(committed("csv", tmp_path / "out")) == expected.num_rows


# -- refusals -------------------------------------------------------------------------------------

def test_a_changed_query_is_refused(job, tmp_path, monkeypatch):
    q, config, _ = job
    crash_after(monkeypatch, 10)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    other = windowed(bids(), size="3s")
    with pytest.raises(CheckpointError, match="different query.*tumble\\(3000ms"):
        other.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)


def test_a_changed_backend_is_refused(backend, job, tmp_path, monkeypatch):
    q, config, _ = job
    crash_after(monkeypatch, 10)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    other = next(b for b in STATE_BACKENDS if b != backend)
    with pytest.raises(CheckpointError, match=f"backend '{backend}'.*'{other}'"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(state=other))


def test_output_of_another_run_is_never_overwritten(job, tmp_path):
    q, config, _ = job
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(checkpoint_dir=None, checkpoint_interval=None))
    with pytest.raises(SinkError, match="already holds part files"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(checkpoint_dir=str(tmp_path / "new")))


def test_late_rows_need_a_directory(tmp_path):
    q = dw.from_arrow(bids(), time="ts").window(dw.Tumble("1s", on="ts"), late_output=True).agg(n=dw.count())
    with pytest.raises(SinkError, match="late_path"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run()


def test_collect_refuses_a_checkpoint_dir(tmp_path):
    with pytest.raises(ConfigError, match="sink"):
        windowed(bids()).collect(dw.Config(checkpoint_dir=str(tmp_path / "chk")))


def test_the_main_job_commits_and_resumes_on_every_backend(backend, tmp_path):
    from typer.testing import CliRunner

    from darwin.cli import app

    config = tmp_path / "deploy.yaml"
    config.write_text(f"state: {backend}\nstate_path: {tmp_path / 'state'}\ncheckpoint_dir: {tmp_path / 'chk'}\n"
                      "checkpoint_interval: 2 batches\nbatch_size: 4096\n")
    args = ["run", "--query", "q12", "--events", "60K", "--config", str(config), "--out", str(tmp_path / "out")]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "committed to" in first.output
    again = CliRunner().invoke(app, args)  # a finished job resumes from its final checkpoint
    assert again.exit_code == 0, again.output
    assert "resumed from checkpoint" in again.output
    assert CliRunner().invoke(app, args[:-2]).exit_code == 2  # checkpoints without --out


def test_state_that_grows_between_checkpoints_recovers(configure, tmp_path, monkeypatch):
    """Entries changed, then the table grown, then the same entries changed again, then a crash."""
    n = 8000
    keys = [i % 100 if i < 5000 or i % 2 else 1000 + i for i in range(n)]  # new keys from row 5000 on
    t = pa.table({"ts": pa.array(list(range(n)), pa.timestamp("ms")), "k": keys, "v": [i % 7 for i in range(n)]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1h", on="ts")).group_by("k").agg(s=dw.sum("v"), n=dw.count())
    config = configure(batch_size=500, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="10 batches")
    crash_after(monkeypatch, 15)  # checkpoint after row 5000; growth past 1024 entries before the crash
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from == 1
    assert pq.read_table(tmp_path / "out").equals(q.collect(dw.Config(batch_size=500)))
