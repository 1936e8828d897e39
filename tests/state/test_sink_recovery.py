"""Sinks of every mode crashed mid-run and restarted, on every backend: an upsert sink commits
exactly the snapshot an uninterrupted run commits (and between runs readers see the snapshot of
the last checkpoint, whole), a changelog sink exactly the changelog, a partitioned sink exactly
the same files in the same partition directories."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import Crash, bids, crash_after, run_until_done, stop_crashing
from typer.testing import CliRunner

import darwin as dw
from darwin import col
from darwin.cli import app
from darwin.runtime.output import final_table
from darwin.state.checkpoint import MANIFEST, CheckpointStore
from darwin.testing import assert_table_equal


def updating() -> dw.Table:
    """Groups that change, leave the result (a filter drops them) and come back."""
    per_key = dw.from_arrow(bids(), time="ts").group_by("k").agg(n=dw.count(), total=dw.sum("v"), high=dw.max("v"))
    return per_key.filter(col("n") % 5 != 0)


def partitioned() -> dw.Table:
    return dw.from_arrow(bids(), time="ts").with_columns(
        p=col("k") % 4, tag=dw.when(col("v") > 6, "high:/..").otherwise("low"))


def checkpointed(configure, work: Path):
    """Checkpoints every 4 batches of 100 rows; state and checkpoints of a job of its own under ``work``."""
    return configure(batch_size=100, checkpoint_dir=str(work / "chk"), checkpoint_interval="4 batches",
                     state_path=str(work / "state"))


def files_under(out: Path) -> dict[str, pa.Table]:
    """Every committed file by its path below ``out`` (partition directories included)."""
    return {str(f.relative_to(out)): pq.read_table(f) for f in sorted(out.rglob("*.parquet"))
            if not any(p.startswith(("_", ".")) for p in f.relative_to(out).parts)}


def test_an_upsert_sink_resumes_to_the_uninterrupted_snapshot(configure, tmp_path, monkeypatch):
    q = updating()
    plain = tmp_path / "plain"
    q.sink(dw.sinks.Parquet(plain / "out", mode="upsert")).run(checkpointed(configure, plain))
    expected = q.collect(dw.Config(batch_size=100))
    changelog = q.changelog(dw.Config(batch_size=100))
    assert expected.num_rows > 3 and changelog.num_rows > 100
    work = tmp_path / "job"
    out = work / "out"
    for at in (9, 6, 11):  # batches read before each crash, counted from where the run resumed
        crash_after(monkeypatch, at)
        with pytest.raises(Crash):
            q.sink(dw.sinks.Parquet(out, mode="upsert")).run(checkpointed(configure, work))
        stop_crashing(monkeypatch)
        newest = CheckpointStore(work / "chk").latest()
        assert newest is not None
        # what a reader sees meanwhile: the whole snapshot of the last checkpoint, nothing later
        prefix = final_table(changelog.slice(0, newest.body["output_rows"]))
        assert_table_equal(pq.read_table(out / "snapshot.parquet"), prefix)
    result = q.sink(dw.sinks.Parquet(out, mode="upsert")).run(checkpointed(configure, work))
    assert result.resumed_from is not None and result.files == [out / "snapshot.parquet"]
    assert_table_equal(pq.read_table(out / "snapshot.parquet"), expected)
    assert pq.read_table(out / "snapshot.parquet").equals(pq.read_table(plain / "out" / "snapshot.parquet"))
    assert sorted(p.name for p in (out / "_darwin_versions").iterdir()) == \
        sorted(p.name for p in (plain / "out" / "_darwin_versions").iterdir())  # the last two epochs'
    assert not list((out / "_darwin_staging").iterdir())


def test_a_changelog_sink_resumes_to_the_uninterrupted_changelog(configure, tmp_path, monkeypatch):
    q = updating()
    expected = q.changelog(dw.Config(batch_size=100))
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out, mode="changelog"), checkpointed(configure, tmp_path),
                            monkeypatch, crashes=[9, 6])
    assert result.resumed_from is not None
    assert pq.read_table(out).equals(expected)


@pytest.mark.parametrize("query", ["append", "changelog"])
def test_a_partitioned_sink_resumes_to_the_uninterrupted_files(query, configure, tmp_path, monkeypatch):
    if query == "append":
        q, by = partitioned(), ["p", "tag"]
    else:
        q, by = dw.from_arrow(bids(), time="ts").with_columns(p=col("k") % 3).group_by("p").agg(n=dw.count()), ["p"]
    plain = tmp_path / "plain"
    q.sink(dw.sinks.Parquet(plain / "out", partition_by=by)).run(checkpointed(configure, plain))
    expected = files_under(plain / "out")
    assert len(expected) > 8 and all("=" in name for name in expected)
    work = tmp_path / "job"
    result = run_until_done(q, lambda: dw.sinks.Parquet(work / "out", partition_by=by),
                            checkpointed(configure, work), monkeypatch, crashes=[9, 6])
    assert result.resumed_from is not None
    got = files_under(work / "out")
    assert sorted(got) == sorted(expected)
    assert all(got[name].equals(expected[name]) for name in expected)
    assert [f.relative_to(work / "out") for f in result.files] == [Path(name) for name in sorted(expected)]
    assert not list((work / "out" / "_darwin_staging").iterdir())


def test_an_upsert_sink_falls_back_with_a_damaged_newest_checkpoint(configure, tmp_path, monkeypatch):
    """The visible snapshot is already the newest checkpoint's: resuming from the one before writes
    that one's snapshot again, and the run goes on to the uninterrupted result."""
    q = updating()
    config = checkpointed(configure, tmp_path)
    out = tmp_path / "out"
    crash_after(monkeypatch, 17)  # checkpoints 1-4 are taken; 3 and 4 are kept
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(out, mode="upsert")).run(config)
    stop_crashing(monkeypatch)
    newest = tmp_path / "chk" / "chk-000004"
    text = (newest / MANIFEST).read_text()
    (newest / MANIFEST).write_text(text.replace('"offset": 1600', '"offset": 1500'))
    older = next(c for c in CheckpointStore(tmp_path / "chk").complete() if c.id == 3)
    changelog = q.changelog(dw.Config(batch_size=100))
    opened = []
    original = dw.sinks.Parquet.open

    def spy(self, result, resume, job):  # the visible snapshot once the sink has resumed
        original(self, result, resume, job)
        opened.append((pq.read_table(out / "snapshot.parquet"), sorted(p.name for p in (out / "_darwin_versions")
                                                                      .iterdir())))
    monkeypatch.setattr(dw.sinks.Parquet, "open", spy)
    result = q.sink(dw.sinks.Parquet(out, mode="upsert")).run(config)
    assert result.resumed_from == 3
    visible, versions = opened[0]
    assert_table_equal(visible, final_table(changelog.slice(0, older.body["output_rows"])))
    assert versions == ["snapshot-000003.arrow"]  # the kept checkpoints were 3 and 4; 4 is not usable
    assert_table_equal(pq.read_table(out / "snapshot.parquet"), q.collect(dw.Config(batch_size=100)))


@pytest.mark.parametrize("backend", ["memory"])
def test_reset_removes_snapshots_and_partitions_but_nothing_else(backend, configure, tmp_path, monkeypatch):
    config = checkpointed(configure, tmp_path)
    crash_after(monkeypatch, 9)
    with pytest.raises(Crash):
        partitioned().sink(dw.sinks.Parquet(tmp_path / "parts", partition_by=["p", "tag"])).run(config)
    stop_crashing(monkeypatch)
    kept = tmp_path / "parts" / "p=1" / "notes.txt"
    kept.write_text("user data")
    result = CliRunner().invoke(app, ["reset", str(tmp_path / "chk"), "--yes"])
    assert result.exit_code == 0, result.output
    assert sorted(p.relative_to(tmp_path / "parts") for p in (tmp_path / "parts").rglob("*")) == \
        [Path("p=1"), Path("p=1/notes.txt")]
    config = config.replace(checkpoint_dir=str(tmp_path / "chk2"))
    crash_after(monkeypatch, 9)
    with pytest.raises(Crash):
        updating().sink(dw.sinks.CSV(tmp_path / "snap", mode="upsert")).run(config)
    stop_crashing(monkeypatch)
    assert (tmp_path / "snap" / "snapshot.csv").exists()
    result = CliRunner().invoke(app, ["reset", str(tmp_path / "chk2"), "--yes"])
    assert result.exit_code == 0, result.output
    assert not list((tmp_path / "snap").iterdir())
