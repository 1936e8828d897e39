"""Simulated crashes and the small checkpointed job the state tests share.

A crash is an exception thrown from inside the run when it reads a chosen input batch,
between any two steps of a batch boundary; ``tests/recovery`` kills real processes.
"""

import pyarrow as pa

import darwin as dw
import darwin.runtime.compiled as compiled

ORIGINAL_READ_FROM = compiled.read_from


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


def stop_after(monkeypatch, control, batches):
    """Make the next run ask ``control`` to stop (a stop-with-savepoint) when it reads input batch
    ``batches`` (counted from where it resumed)."""
    original = compiled.read_from

    def stopping(*args, **kwargs):
        for i, batch in enumerate(original(*args, **kwargs)):
            if i == batches:
                control.stop()
            yield batch
    monkeypatch.setattr(compiled, "read_from", stopping)


def stop_crashing(monkeypatch):
    monkeypatch.setattr(compiled, "read_from", ORIGINAL_READ_FROM)


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
        stop_crashing(monkeypatch)
    return query.sink(sink_factory()).run(config)


RESCALING_RUNS = [(4, 5), (2, 4), (8, 6), (3, None)]  # (workers, the batch the run crashes at)


def run_rescaled(plan, out, chk, monkeypatch, runs=RESCALING_RUNS, may_finish=False, **settings):
    """Run ``plan`` into Parquet ``out`` with checkpoints in ``chk``, each run at another parallelism and
    crashing at its batch (the last one runs to the end; with ``may_finish``, any run may, where the
    input ends before its crash); the last run's result. ``settings`` go to every run's Config."""
    settings = {"batch_size": 250, "checkpoint_interval": "2 batches", **settings}
    result = None
    for workers, crash in runs:
        config = dw.Config(parallelism=workers, checkpoint_dir=str(chk), **settings)
        if crash is not None:
            crash_after(monkeypatch, crash)
        try:
            result = plan.sink(dw.sinks.Parquet(out)).run(config)
            assert crash is None or may_finish, "the run should have crashed"
        except Crash:
            continue
        finally:
            stop_crashing(monkeypatch)
    return result


def assert_rescaled_runs_commit_the_one_thread_output(plan, tmp_path, monkeypatch):
    """Crashing runs at parallelism 4, 2 and 8, then a run at 3, commit exactly one thread's output."""
    import pyarrow.parquet as pq

    expected = plan.collect(dw.Config(batch_size=250))
    out = tmp_path / "out"
    result = run_rescaled(plan, out, tmp_path / "chk", monkeypatch)
    assert result.resumed_from is not None
    got = pq.read_table(out)
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(pa.Table.from_batches(expected.to_batches(), schema=got.schema))


def bids(n=3000):
    return pa.table({"ts": pa.array([i * 37 % 100_000 + i * 20 for i in range(n)], pa.timestamp("ms")),
                     "k": [i % 97 for i in range(n)], "v": [float(i % 13) for i in range(n)]})


def windowed(t, size="2s"):
    return (dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Tumble(size, on="ts")).group_by("k")
            .agg(s=dw.sum("v"), n=dw.count(), hi=dw.max("v")))
