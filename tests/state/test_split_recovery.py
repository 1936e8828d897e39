"""Runs reading their sources in splits side by side (issue 12) give the one-thread output, rows and
order, under random stalls of the threads; a job crashed and resumed at other parallelisms (the
checkpoint keeps one offset per source: the rows handed on in order) loses and doubles no row."""

import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import assert_rescaled_runs_commit_the_one_thread_output, bids, run_rescaled

import darwin as dw
from darwin.io.sources import ParquetSource
from darwin.runtime import compiled
from darwin.runtime.workers import inject_delays
from nexmark import source as nexmark_source


@pytest.fixture(autouse=True)
def small_splits(monkeypatch):
    """Splits of a few hundred rows, so that these small inputs are read in many of them."""
    monkeypatch.setattr(compiled, "SPLIT_ROWS", 300)


@pytest.fixture
def parquet_dir(tmp_path):
    t = bids(4000)
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(t.slice(0, 2500), d / "part-0.parquet", row_group_size=230)
    pq.write_table(t.slice(2500), d / "part-1.parquet", row_group_size=170)
    return d


def windowed(t):
    return t.window(dw.Tumble("2s", on="ts")).group_by("k").agg(s=dw.sum("v"), n=dw.count(), hi=dw.max("v"))


def test_parquet_read_in_splits_gives_the_one_thread_output(parquet_dir, monkeypatch):
    plan = windowed(dw.read_parquet(parquet_dir, time="ts", max_delay="5s"))
    expected = plan.collect(dw.Config(batch_size=100))
    assert expected.num_rows > 0
    read = []
    original = ParquetSource.read_split
    monkeypatch.setattr(ParquetSource, "read_split", lambda self, *a: read.append(a[0]) or original(self, *a))
    rng = random.Random(7)
    with inject_delays(lambda worker: rng.random() * 0.002):
        for workers in (2, 4):
            assert plan.collect(dw.Config(batch_size=100, parallelism=workers)).equals(expected)
    assert len(read) == 2 * (6 + 5)  # each run read 6 + 5 splits: pairs of row groups (230 and 170 rows)


def test_the_generator_read_in_splits_gives_the_one_thread_output():
    bid = nexmark_source.source(events=20_000, max_delay="1s").bid
    plan = bid.window(dw.Tumble("1ms", on="date_time")).group_by("auction").agg(n=dw.count(), top=dw.max("price"))
    expected = plan.collect(dw.Config(batch_size=500))
    assert expected.num_rows > 0
    rng = random.Random(3)
    with inject_delays(lambda worker: rng.random() * 0.002):
        for workers in (2, 4):
            assert plan.collect(dw.Config(batch_size=500, parallelism=workers)).equals(expected)


def test_parquet_files_resumed_at_other_parallelisms_commit_the_one_thread_output(parquet_dir, tmp_path,
                                                                                 monkeypatch):
    plan = windowed(dw.read_parquet(parquet_dir, time="ts", max_delay="5s"))
    assert_rescaled_runs_commit_the_one_thread_output(plan, tmp_path, monkeypatch)


def test_an_in_memory_table_resumed_at_other_parallelisms_commits_the_one_thread_output(tmp_path, monkeypatch):
    plan = windowed(dw.from_arrow(bids(4000), time="ts", max_delay="5s"))
    assert_rescaled_runs_commit_the_one_thread_output(plan, tmp_path, monkeypatch)


@pytest.mark.parametrize("runs", [[(1, 7), (1, 5), (1, None)], [(2, 7), (1, 5), (2, None)]], ids=["1", "2 to 1 to 2"])
def test_an_updating_result_over_parquet_resumes_to_the_uninterrupted_changelog(parquet_dir, tmp_path, monkeypatch,
                                                                                runs):
    """An updating result emits after each batch, so its changelog depends on where batches end. A
    resumed run read a Parquet file in batches counted from the row group holding the checkpoint's
    offset (from row 300, in the row group of rows 230 to 460: 30, 100, ... where the first run read 100, 100),
    and committed another changelog than the run never interrupted."""
    plan = dw.read_parquet(parquet_dir, time="ts").deduplicate(on="k", keep="last")
    expected = plan.changelog(dw.Config(batch_size=100))
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, runs, batch_size=100,
                          checkpoint_interval="3 batches")
    assert result.resumed_from is not None
    written = pq.read_table(tmp_path / "out")
    assert written.num_rows == expected.num_rows > 97
    assert pa.Table.from_pylist(written.to_pylist(), expected.schema).equals(expected)


def test_a_resume_refuses_files_that_changed_before_its_offset(tmp_path, monkeypatch):
    """A directory resumes by a row offset into its sorted files. A file added that sorts before the ones
    read (or one of them rewritten or removed) moved the offset: b's first rows were counted twice and
    a's never, silently. The resume is refused now, naming the file; a file sorting after is read."""
    from crashes import Crash, crash_after, stop_crashing

    from darwin.errors import CheckpointError

    t = bids(300)
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(t.slice(0, 100), d / "b.parquet")
    pq.write_table(t.slice(100, 100), d / "c.parquet")
    config = dw.Config(batch_size=30, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="1 batches")

    def run(out: str):
        query = dw.read_parquet(d).group_by("k").agg(n=dw.count())
        return query.sink(dw.sinks.Parquet(str(tmp_path / out), mode="upsert", key=["k"])).run(config)

    crash_after(monkeypatch, 2)
    with pytest.raises(Crash):
        run("out")
    stop_crashing(monkeypatch)
    pq.write_table(t.slice(200, 100), d / "a.parquet")
    with pytest.raises(CheckpointError, match=r"'a.parquet' now comes where 'b.parquet' was"):
        run("out")
    (d / "a.parquet").rename(d / "d.parquet")  # after the files read: taken
    run("out")
    final = pq.read_table(tmp_path / "out").to_pylist()
    assert sum(r["n"] for r in final) == 300
