"""One suite, every state backend: results, crash recovery, damaged checkpoints, refusals.

Crashes here are exceptions thrown from inside the run after a chosen number of
input batches (between any two steps of a batch boundary, see ``crash_after``);
``tests/recovery`` kills real processes with SIGKILL.
"""

import csv
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import SHAPES, q_all_aggregates, q_late_output, q_sliding_string_key, source, streams

import darwin as dw
import darwin.runtime.compiled as compiled
from darwin.config import STATE_BACKENDS
from darwin.errors import CheckpointError, ConfigError, SinkError
from darwin.state.checkpoint import MANIFEST
from darwin.testing import assert_engines_agree

STATEFUL = [s for s in SHAPES if s.__name__ not in ("q_stateless", "q_windowed_rows")]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(params=STATE_BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def configure(backend, tmp_path):
    """A config factory for this backend; rocksdb gets a tiny delta so it merges all the time."""
    def make(**changes):
        extra = {"state_delta_limit": 3} if backend == "rocksdb" else {}
        return dw.Config(state=backend, state_path=str(tmp_path / "state"), **extra).replace(**changes)
    return make


class Crash(Exception):
    """Stands in for the process dying."""


def crash_after(monkeypatch, batches):
    """Make the next run die when it reads input batch ``batches`` (counted from where it resumed)."""
    original = compiled.read_from

    def failing(*args, **kwargs):
        for i, batch in enumerate(original(*args, **kwargs)):
            if i == batches:
                raise Crash(f"crash at batch {i}")
            yield batch
    monkeypatch.setattr(compiled, "read_from", failing)


def run_until_done(query, sink_factory, config, monkeypatch, crashes):
    """Run, crashing at each of ``crashes`` (batch numbers) that the run reaches, then to the end."""
    try:
        for at in crashes:
            crash_after(monkeypatch, at)
            try:
                return query.sink(sink_factory()).run(config)
            except Crash:
                pass
    finally:
        monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)
    return query.sink(sink_factory()).run(config)


ORIGINAL_READ_FROM = compiled.read_from


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
    make = SINKS[sink_kind]
    plain = q.sink(make(base / "plain", base / "plain-late")).run(configure(batch_size=batch_size))
    config = configure(batch_size=batch_size, checkpoint_dir=str(base / "chk"), checkpoint_interval=f"{every} batches")
    result = run_until_done(q, lambda: make(base / "out", base / "out-late"), config, monkeypatch, crashes)
    assert committed(sink_kind, base / "out") == committed(sink_kind, base / "plain")
    if late:
        assert committed(sink_kind, base / "out-late") == committed(sink_kind, base / "plain-late")
    for name in ("input_rows", "output_rows", "late_rows", "windows_fired"):
        assert result.metrics[name] == plain.metrics[name], name
    assert result.metrics["input_rows"] == table.num_rows
    assert not list((base / "out" / "_staging").iterdir())


def bids(n=3000):
    return pa.table({"ts": pa.array([i * 37 % 100_000 + i * 20 for i in range(n)], pa.timestamp("ms")),
                     "k": [i % 97 for i in range(n)], "v": [float(i % 13) for i in range(n)]})


def windowed(t, size="2s"):
    return (dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Tumble(size, on="ts")).group_by("k")
            .agg(s=dw.sum("v"), n=dw.count(), hi=dw.max("v")))


@pytest.fixture
def job(configure, tmp_path):
    """(query, checkpointing config, expected table) over a stream of 3000 rows in 30 batches."""
    q = windowed(bids())
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    return q, config, q.collect(dw.Config(batch_size=100))


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


def test_a_damaged_checkpoint_is_detected(backend, job, tmp_path, monkeypatch):
    """Memory and RocksDB state fall back to the previous checkpoint; mmap state, rolled forward in
    place, cannot go back past it and says so."""
    q, config, expected = job
    crash_after(monkeypatch, 17)  # after checkpoints 1-4
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    newest = sorted((tmp_path / "chk").glob("chk-*"))[-1]
    manifest = newest / MANIFEST
    text = manifest.read_text()
    damaged = re.sub(r'"offset": (\d+)', lambda m: f'"offset": {int(m.group(1)) - 100}', text)
    assert damaged != text
    manifest.write_text(damaged)  # a plausible but wrong offset: only the checksum can tell
    monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)
    if backend == "mmap":
        with pytest.raises(CheckpointError, match="cannot be rolled back"):
            q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
        return
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from == 3
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
    monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)
    other = windowed(bids(), size="3s")
    with pytest.raises(CheckpointError, match="different query.*tumble\\(3000ms"):
        other.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)


def test_a_changed_backend_is_refused(backend, job, tmp_path, monkeypatch):
    q, config, _ = job
    crash_after(monkeypatch, 10)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)
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


def test_checkpoints_write_only_new_strings(configure, tmp_path, monkeypatch):
    names = [f"name{i % 40 if i < 1500 else i % 60}" for i in range(3000)]  # 20 new names after row 1500
    t = bids().append_column("s", pa.array(names))
    q = dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Tumble("2s", on="ts")).group_by("s").agg(n=dw.count())
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")
    crash_after(monkeypatch, 25)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    segments = sorted((tmp_path / "chk" / "strings").glob("strings-*.arrow"))
    counts = [pa.ipc.open_file(pa.memory_map(str(s))).read_all().num_rows for s in segments]
    assert counts == [40, 20]  # 12 checkpoints, two of which saw new names
    monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert pq.read_table(tmp_path / "out").equals(q.collect(dw.Config(batch_size=100)))
    segments = sorted((tmp_path / "chk" / "strings").glob("strings-*.arrow"))
    assert sum(pa.ipc.open_file(pa.memory_map(str(s))).read_all().num_rows for s in segments) == 60
    segments[0].unlink()
    with pytest.raises(CheckpointError, match="segment"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)


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
    monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from == 1
    assert pq.read_table(tmp_path / "out").equals(q.collect(dw.Config(batch_size=500)))
