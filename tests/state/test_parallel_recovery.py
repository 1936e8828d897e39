"""A checkpointed job on several workers, crashed and resumed at another parallelism each time,
commits exactly the one-thread run's output (rows and order); state moves between workers by key
group. Persistent backends resume only at the parallelism they were checkpointed at, and say so."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import Crash, assert_rescaled_runs_commit_the_one_thread_output, bids, crash_after, stop_crashing, windowed

import darwin as dw
from darwin.errors import CheckpointError


def ring(t):  # a small dense integer key: one thread would keep a window ring, workers a hash table each
    return windowed(t)


def hashed(t):  # two keys: each worker keeps a hash table
    return dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Slide("4s", every="2s", on="ts")) \
        .group_by("k", "v").agg(n=dw.count(), top=dw.max("ts"))


@pytest.mark.parametrize("query", [ring, hashed])
def test_resuming_at_another_parallelism_commits_the_one_thread_output(query, tmp_path, monkeypatch):
    t = bids(6000)
    plan = query(t)
    assert "state=hash" in plan.explain(dw.Config(parallelism=2))
    assert_rescaled_runs_commit_the_one_thread_output(plan, tmp_path, monkeypatch)


@pytest.mark.parametrize("backend", ["mmap", "rocksdb"])
def test_persistent_state_resumes_only_at_its_parallelism(backend, tmp_path, monkeypatch):
    plan = hashed(bids(3000))
    config = dw.Config(batch_size=250, parallelism=2, checkpoint_dir=str(tmp_path / "chk"),
                       checkpoint_interval="2 batches", state=backend, state_path=str(tmp_path / "state"))
    crash_after(monkeypatch, 6)
    with pytest.raises(Crash):
        plan.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    with pytest.raises(CheckpointError, match="Resume with parallelism=2"):
        plan.sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(parallelism=4))
    result = plan.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from is not None
    assert pq.read_table(tmp_path / "out").equals(
        pa.Table.from_batches(plan.collect(dw.Config(batch_size=250)).to_batches()))
