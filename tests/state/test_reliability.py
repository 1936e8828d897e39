"""Checkpoints that fall back, state files tied to their job, and files Darwin does not own.

Each test here is a regression test of the reliability issue: a path that once gave
silently wrong output, an unusable older checkpoint, or a deleted user file.
"""

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import Crash, bids, crash_after, stop_crashing, windowed
from typer.testing import CliRunner

import darwin as dw
from darwin.cli import app
from darwin.config import STATE_BACKENDS
from darwin.errors import CheckpointError, SinkError
from darwin.files import exclusive_lock
from darwin.io.output_dir import OutputDirectory
from darwin.runtime.dictionary import DICTIONARY
from darwin.state.checkpoint import MANIFEST, MARKER, CheckpointStore
from darwin.state.ownership import LOCK


def crash_midway(q, config, out, monkeypatch, batches=17):
    """Run until batch ``batches`` (checkpoints every 4 batches: 1-4 exist, 3 and 4 are kept)."""
    crash_after(monkeypatch, batches)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(out)).run(config)
    stop_crashing(monkeypatch)


def flip_byte(path: Path, at: float = 0.5) -> None:
    data = bytearray(path.read_bytes())
    i = int(len(data) * at)
    data[i] ^= 0xFF
    path.write_bytes(bytes(data))


def reset(checkpoint_dir: Path) -> None:
    result = CliRunner().invoke(app, ["reset", str(checkpoint_dir), "--yes"])
    assert result.exit_code == 0, result.output


# -- a damaged newest checkpoint falls back to the previous one, on every backend ----------------------

DAMAGE = [(b, d) for b in STATE_BACKENDS for d in ("manifest", "dictionary", "state") if (b, d) != ("mmap", "state")]


@pytest.mark.parametrize(("backend", "damage"), DAMAGE)
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous(backend, damage, job, tmp_path, monkeypatch):
    """mmap checkpoints hold no state files (the state lives once, in state_path): their state damage
    is ``test_damaged_mmap_state_is_refused_and_reset_is_the_way_out``."""
    q, config, expected = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    newest = tmp_path / "chk" / "chk-000004"
    if damage == "manifest":  # a plausible but wrong offset: only the checksum can tell
        text = (newest / MANIFEST).read_text()
        (newest / MANIFEST).write_text(text.replace('"offset": 1600', '"offset": 1500'))
        assert (newest / MANIFEST).read_text() != text
    elif damage == "dictionary":
        flip_byte(newest / DICTIONARY, at=0.9)
    else:
        state = [f for f in newest.rglob("*") if f.suffix in (".npy", ".sst")]
        assert state, "the checkpoint holds its own state files"
        flip_byte(max(state, key=lambda f: f.stat().st_size))
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from == 3
    assert pq.read_table(tmp_path / "out").equals(expected)


def test_kept_checkpoints_share_no_file(backend, job, tmp_path, monkeypatch):
    """No hard link between the live state and a checkpoint, or between checkpoints: one damaged block
    can break one checkpoint only. Each holds its own string dictionary."""
    q, config, _ = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    files = [f for f in (tmp_path / "chk").rglob("*") if f.is_file()]
    files += [f for f in (tmp_path / "state").rglob("*") if f.is_file()]
    assert [f for f in files if f.stat().st_nlink > 1] == []
    for checkpoint in ("chk-000003", "chk-000004"):
        assert (tmp_path / "chk" / checkpoint / DICTIONARY).exists()


def test_the_string_dictionary_is_restored_with_its_codes(backend, configure, tmp_path, monkeypatch):
    names = [f"name{i % 40 if i < 1500 else i % 60}" for i in range(3000)]  # 20 new names after row 1500
    t = bids().append_column("s", pa.array(names))
    q = dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Tumble("2s", on="ts")).group_by("s").agg(n=dw.count())
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")
    crash_midway(q, config, tmp_path / "out", monkeypatch, batches=25)
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert pq.read_table(tmp_path / "out").equals(q.collect(dw.Config(batch_size=100)))


# -- a finished job, and state laid out for other data -------------------------------------------------

def test_a_finished_job_is_not_resumed_over_more_input(job, tmp_path):
    """Resuming a finished job's final checkpoint over a longer input emitted its last windows twice."""
    q, config, expected = job
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    longer = windowed(bids(4000))
    with pytest.raises(CheckpointError, match="finished job.*consumed 3000 input rows.*darwin reset"):
        longer.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert pq.read_table(tmp_path / "out").equals(expected)
    reset(tmp_path / "chk")
    longer.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert pq.read_table(tmp_path / "out").equals(longer.collect(dw.Config(batch_size=100)))


def test_the_main_job_over_more_events_is_refused_not_doubled(tmp_path):
    deploy = tmp_path / "deploy.yaml"
    deploy.write_text(f"state: mmap\nstate_path: {tmp_path / 'state'}\ncheckpoint_dir: {tmp_path / 'chk'}\n"
                      "checkpoint_interval: 2 batches\nbatch_size: 4096\n")
    args = ["run", "--query", "q12", "--config", str(deploy), "--out", str(tmp_path / "out")]
    first = CliRunner().invoke(app, [*args, "--events", "20K"])
    assert first.exit_code == 0, first.output
    rows = pq.read_table(tmp_path / "out").num_rows
    more = CliRunner().invoke(app, [*args, "--events", "30K"])
    assert more.exit_code == 2
    assert "finished job" in more.output
    assert pq.read_table(tmp_path / "out").num_rows == rows


def test_a_resume_over_another_key_range_is_refused(tmp_path, monkeypatch):
    """The memory backend sizes a window ring from the keys' range; another range is another layout
    (this was a numpy broadcast ValueError)."""
    config = dw.Config(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    q = windowed(bids())
    assert "window-ring-aggregate" in q.explain(config)
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    wider = bids()
    wider = wider.set_column(1, "k", pa.array([i % 500 for i in range(wider.num_rows)]))
    with pytest.raises(CheckpointError, match="another layout.*domain"):
        windowed(wider).sink(dw.sinks.Parquet(tmp_path / "out")).run(config)


# -- state files belong to one job and one checkpoint --------------------------------------------------

@pytest.mark.parametrize("backend", ["mmap"])
@pytest.mark.parametrize("damage", ["truncated", "changed"])
def test_damaged_mmap_state_is_refused_and_reset_is_the_way_out(backend, damage, configure, tmp_path, monkeypatch,
                                                               caplog):
    """Each key is written once, so no undo log holds it: damage to it cannot be rolled back."""
    n = 3000
    t = pa.table({"ts": pa.array(list(range(n)), pa.timestamp("ms")), "k": list(range(n)),
                  "v": [i % 7 for i in range(n)]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1h", on="ts")).group_by("k").agg(s=dw.sum("v"))
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    table = tmp_path / "state" / "pipeline0"
    if damage == "truncated":  # into the live entries, not only the unused capacity
        os.truncate(table / "key0.bin", 800)
        reason = "key0.bin holds .* bytes, but checkpoint 3 needs"
    else:
        flip_byte(table / "value0.bin", at=0.01)
        reason = "checksum of its 1200 entries differs"
    with pytest.raises(CheckpointError, match=f"no checkpoint .* can be restored.*{reason}"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    if damage == "truncated":
        assert "key0.bin holds 800 bytes, but checkpoint 4 needs" in caplog.text
    reset(tmp_path / "chk")  # the documented way out: then the job starts over
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert pq.read_table(tmp_path / "out").equals(q.collect(dw.Config(batch_size=100)))


@pytest.mark.parametrize("backend", ["mmap"])
def test_a_stale_copy_of_state_path_is_refused(backend, job, tmp_path, monkeypatch):
    q, config, _ = job
    crash_midway(q, config, tmp_path / "out", monkeypatch, batches=9)  # checkpoints 1 and 2
    shutil.copytree(tmp_path / "state", tmp_path / "backup")
    crash_midway(q, config, tmp_path / "out", monkeypatch, batches=9)  # 3 and 4
    shutil.rmtree(tmp_path / "state")
    shutil.copytree(tmp_path / "backup", tmp_path / "state")
    with pytest.raises(CheckpointError, match="rolled back|checksum"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)


@pytest.mark.parametrize("backend", ["mmap", "rocksdb"])
def test_two_jobs_cannot_share_a_state_path(backend, job, tmp_path, monkeypatch):
    q, config, expected = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    other = config.replace(checkpoint_dir=str(tmp_path / "other-chk"))
    with pytest.raises(CheckpointError, match="holds the state of another job"):
        windowed(bids(), size="3s").sink(dw.sinks.Parquet(tmp_path / "other-out")).run(other)
    held = exclusive_lock(Path(config.state_path), LOCK, "state_path", CheckpointError)  # a job running now
    try:
        with pytest.raises(CheckpointError, match="in use by another running job"):
            q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    finally:
        held.close()
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)  # the owner resumes, undisturbed
    assert result.resumed_from == 4
    assert pq.read_table(tmp_path / "out").equals(expected)


@pytest.mark.parametrize("backend", ["rocksdb"])
def test_damaged_live_rocksdb_files_do_not_matter_after_a_restart(backend, job, tmp_path, monkeypatch):
    q, config, expected = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    for sst in (tmp_path / "state").rglob("*.sst"):
        flip_byte(sst)  # a data block
        flip_byte(sst, 0.97)  # the index and properties RocksDB reads as it opens the file
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from == 4
    assert pq.read_table(tmp_path / "out").equals(expected)


# -- Darwin touches only what it made ------------------------------------------------------------------

def test_pruning_keeps_directories_darwin_did_not_make(tmp_path):
    store = CheckpointStore(tmp_path)
    (tmp_path / "chk-2024-backup").mkdir()
    (tmp_path / "chk-2024-backup" / "precious").write_text("user data")
    (tmp_path / "chk-000000").mkdir()  # a name Darwin would use, but not made by Darwin
    for i in range(1, 5):
        (store.directory(i) / "data.bin").write_bytes(b"x")
        store.commit(i, {}, ["data.bin"])
    assert (tmp_path / "chk-2024-backup" / "precious").read_text() == "user data"
    assert (tmp_path / "chk-000000").is_dir()
    assert store.ids() == [3, 4]
    (tmp_path / "chk-000009").mkdir()
    (tmp_path / "chk-000009" / "precious").write_text("user data")
    with pytest.raises(CheckpointError, match="not made by Darwin"):
        store.directory(9)
    (tmp_path / "chk-000010").mkdir()  # a job killed between making the directory and marking it
    assert (store.directory(10) / MARKER).exists()


@pytest.mark.parametrize("backend", ["memory"])
def test_an_output_directory_with_other_files_is_refused(job, tmp_path):
    q, config, _ = job
    out = tmp_path / "out"
    (out / "_staging").mkdir(parents=True)
    (out / "_staging" / "mine.txt").write_text("user data")
    with pytest.raises(SinkError, match="not empty.*_staging"):
        q.sink(dw.sinks.Parquet(out)).run(config)
    shutil.rmtree(out / "_staging")
    pq.write_table(pa.table({"x": [1]}), out / "unrelated.parquet")
    with pytest.raises(SinkError, match="not empty.*unrelated.parquet"):
        q.sink(dw.sinks.Parquet(out)).run(config)
    assert pq.read_table(out / "unrelated.parquet").num_rows == 1


@pytest.mark.parametrize("backend", ["memory"])
def test_a_resumed_job_leaves_other_files_alone_and_reads_back_only_its_parts(job, tmp_path, monkeypatch):
    q, config, expected = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    pq.write_table(pa.table({"x": [1]}), tmp_path / "out" / "unrelated.parquet")
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert (tmp_path / "out" / "unrelated.parquet").exists()
    assert all(f.name.startswith("part-") for f in result.files)
    assert pa.concat_tables([pq.read_table(f) for f in result.files]).equals(expected)


@pytest.mark.parametrize("backend", ["memory", "mmap"])
def test_reset_deletes_only_what_the_job_made(backend, job, tmp_path, monkeypatch):
    q, config, expected = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    keep = [tmp_path / "chk" / "notes.txt", tmp_path / "out" / "notes.txt"]
    if backend == "mmap":
        keep.append(tmp_path / "state" / "notes.txt")
    for f in keep:
        f.write_text("user data")
    reset(tmp_path / "chk")
    assert all(f.read_text() == "user data" for f in keep)
    assert not list((tmp_path / "chk").glob("chk-*")) and not list((tmp_path / "out").glob("part-*"))
    assert not any(p.name == MARKER for p in (tmp_path / "chk").rglob("*"))
    for f in keep[1:]:
        f.unlink()
    q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert pq.read_table(tmp_path / "out").equals(expected)


def test_reset_of_a_directory_without_a_job_is_refused(job, tmp_path, monkeypatch):
    """It said 'the job in out is reset: 1 paths removed' (the lock it had just made itself), exit 0, so a reset
    given the wrong directory looked done and the next run resumed the job's checkpoints."""
    q, config, expected = job
    crash_midway(q, config, tmp_path / "out", monkeypatch)
    for wrong in (tmp_path / "out", tmp_path):
        result = CliRunner().invoke(app, ["reset", str(wrong), "--yes"])
        assert result.exit_code == 2, result.output
        assert "holds no Darwin job" in result.output and "nothing to reset" in result.output
    assert list((tmp_path / "chk").glob("chk-*")) and list((tmp_path / "out").glob("part-*"))
    assert not (tmp_path / "out" / ".darwin-checkpoints.lock").exists()
    reset(tmp_path / "chk")


def test_paths_that_are_files_are_clear_errors(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    q = windowed(bids(300))
    with pytest.raises(SinkError, match="output directory.*is a file"):
        q.sink(dw.sinks.Parquet(a_file)).run()
    with pytest.raises(CheckpointError, match="checkpoint_dir.*is a file"):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(dw.Config(checkpoint_dir=str(a_file)))
    for backend in ("mmap", "rocksdb"):
        with pytest.raises(CheckpointError, match="state_path.*is a file"):
            q.collect(dw.Config(state=backend, state_path=str(a_file)))


def test_rocksdb_failures_mid_run_are_state_errors_naming_the_database(tmp_path):
    """rocksdict reports RocksDB's errors (e.g. a block checksum mismatch) as a bare ``Exception``."""
    from darwin.codegen.aggregates import layout
    from darwin.errors import StateError
    from darwin.state.ownership import StatePath
    from darwin.state.rocksdb import RocksBackend

    class Damaged:
        def items(self):
            raise Exception("Corruption: block checksum mismatch in 000012.sst")

        def close(self):
            pass

    backend = RocksBackend(StatePath(tmp_path / "state", "0" * 32, None, fresh=True), delta_limit=8)
    table = backend.hash_table("pipeline0", layout(windowed(bids()).plan))
    table.db.close()
    table.db, table.stored, table.evicted = Damaged(), 1, None  # restored: any window may be stored
    try:
        with pytest.raises(StateError, match="RocksDB state in .*pipeline0.*Corruption.*resumes from"):
            list(table.fire(0, 1, final=True))
    finally:
        backend.close()


def test_a_partition_directory_made_before_a_kill_is_removed_on_resume(tmp_path):
    """A run killed between making a staged part's partition directory and writing the part left
    the empty directory behind; the resumed run's tidy-up removes it, and only the empty ones."""
    out = OutputDirectory(tmp_path / "out", "parquet", depth=1)
    out.claim(resume=False, job="job")
    out.staging.mkdir()
    out.staged("p=0/part-000003.parquet")
    out.staged("p=1/part-000003.parquet").write_bytes(b"staged")
    out.staged("p=2/notes.txt").write_text("not a part")
    out.tidy(last_epoch=2)
    assert [p.relative_to(out.staging).as_posix() for p in out.staging.rglob("*")] == ["p=2", "p=2/notes.txt"]
