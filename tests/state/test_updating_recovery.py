"""An updating aggregation killed mid-run and restarted: the committed changelog equals an
uninterrupted run's, on every backend (its groups are restored from the checkpoint)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import Crash, bids, run_until_done

import darwin as dw
from darwin import col
from darwin.runtime.output import final_table


def _assert_resumes_exactly_once(q, config, out, monkeypatch, crashes, at_least):
    """Crashed at ``crashes`` and restarted, the Parquet sink holds the uninterrupted changelog (an
    appending result's rows, without change kinds), of more than ``at_least`` rows."""
    expected = q.changelog(dw.Config(batch_size=100))
    result = run_until_done(q, lambda: dw.sinks.Parquet(out), config, monkeypatch, crashes=crashes)
    assert result.resumed_from is not None
    written = pq.read_table(out)
    if "op" not in written.column_names:  # an appending result is written without change kinds
        expected = expected.drop_columns(["op"])
    assert written.num_rows == expected.num_rows > at_least
    assert pa.Table.from_pylist(written.to_pylist(), expected.schema).equals(expected)


def test_an_updating_aggregation_resumes_exactly_once(configure, tmp_path, monkeypatch):
    t = dw.from_arrow(bids(), time="ts")
    per_key = t.group_by("k").agg(n=dw.count(), total=dw.sum("v"), high=dw.max("v"))
    q = per_key.group_by("n").agg(keys=dw.count(), mean=dw.avg("total"))  # retracts what the first one updates
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    _assert_resumes_exactly_once(q, config, tmp_path / "out", monkeypatch, [9, 6], 100)


@pytest.mark.parametrize("backend", ["mmap", "rocksdb"])  # memory has no state_path
def test_scratch_files_a_killed_run_left_do_not_trip_the_resume(backend, configure, tmp_path, monkeypatch):
    """On mmap and rocksdb the groups live in scratch files under state_path, which a killed process
    leaves (a crash raised in the process closes them): the resumed run starts them afresh, restores
    the checkpoint's copy, and leaves none when it ends."""
    from crashes import crash_after, stop_crashing

    t = dw.from_arrow(bids(), time="ts")
    q = t.group_by("k").agg(n=dw.count(), vals=dw.count_distinct("v")).group_by("n").agg(keys=dw.count())
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="3 batches")
    crash_after(monkeypatch, 8)
    with pytest.raises(Crash):
        q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    tables = sorted((tmp_path / "state").glob("group*"))
    assert [d.name for d in tables] == ["group0", "group1"]
    for d in tables:  # what a killed run leaves: its arrays, longer than the checkpoint's, full of garbage
        (d / "rows.7.bin").write_bytes(b"\xff" * 65536)
        (d / "keys.3.bin").write_bytes(b"\x01" * 4096)
    result = q.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    assert result.resumed_from is not None
    expected = q.changelog(dw.Config(batch_size=100))
    assert pa.Table.from_pylist(pq.read_table(tmp_path / "out").to_pylist(), expected.schema).equals(expected)
    assert not list((tmp_path / "state").rglob("*.bin"))


def test_distinct_counts_resume_exactly_once(configure, tmp_path, monkeypatch):
    """The sets of count_distinct (pairs and multiplicities, shared by filters) and the strings a
    formatted time was given come back from the checkpoint; values retracted by the second level
    leave its sets."""
    from darwin import col

    t = dw.from_arrow(bids(), time="ts")
    per_key = t.group_by("k", second=col("ts").dt.strftime("%S")).agg(
        n=dw.count(), vals=dw.count_distinct("v"), low=dw.count_distinct("v", filter=col("v") < 5))
    q = per_key.group_by("second").agg(keys=dw.count_distinct("k"), counts=dw.count_distinct("n"),
                                       busy=dw.count_distinct("k", filter=col("vals") > 3),
                                       lows=dw.count_distinct("low"))
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="3 batches")
    assert q.changelog(dw.Config(batch_size=100)).equals(q.changelog(dw.Config(batch_size=100, mode="interpreted")))
    _assert_resumes_exactly_once(q, config, tmp_path / "out", monkeypatch, [7, 5, 4], 100)


RANKINGS = {
    "top_n": lambda t: t.top_n(3, by="k", order=[dw.desc("v"), "ts"], rank="rank"),
    "deduplicate": lambda t: t.deduplicate(on="k", keep="last", order="ts"),
    "window_top_n": lambda t: t.window(dw.Tumble("5s", on="ts")).top_n(2, by="k", order=dw.desc("v"), rank="r"),
    "top_n_over_updates": lambda t: t.group_by("k").agg(total=dw.sum("v")).top_n(5, order=dw.desc("total")),
    "over": lambda t: t.with_columns(mean=dw.avg("v").over(partition_by="k", order_by="ts", rows=(3, 0))),
    "sessions": lambda t: t.window(dw.Session("3s", on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v")),
}


@pytest.mark.parametrize("name", sorted(RANKINGS))
def test_a_stream_operator_resumes_exactly_once(name, configure, tmp_path, monkeypatch):
    """Its kept rows (or buffered session rows), arrival numbers and open windows come back from the
    checkpoint."""
    q = RANKINGS[name](dw.from_arrow(bids(), time="ts", max_delay="5s"))
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    _assert_resumes_exactly_once(q, config, tmp_path / "out", monkeypatch, [9, 6], 50)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
def test_emitting_on_close_adds_the_changes_up(mode):
    """Without checkpoints everything is held to the end: the final table, inserted once per group."""
    t = dw.from_arrow(bids(), time="ts")
    q = t.group_by("k").agg(n=dw.count(), total=dw.sum("v"))
    every_batch = q.changelog(dw.Config(mode=mode, batch_size=100))
    on_close = q.changelog(dw.Config(mode=mode, batch_size=100, emit="on_close"))
    assert set(on_close["op"].to_pylist()) == {"+I"}
    assert on_close.num_rows == 97 < every_batch.num_rows
    assert sorted(on_close.drop_columns(["op"]).to_pylist(), key=str) == sorted(
        q.collect(dw.Config(mode=mode, batch_size=100)).to_pylist(), key=str)


def test_emitting_on_close_releases_at_checkpoints_exactly_once(configure, tmp_path, monkeypatch):
    """Each checkpoint releases what changed since the last one (-U/+U per group key); a crash
    loses nothing and repeats nothing: the changelog ends in the uninterrupted final table."""
    t = dw.from_arrow(bids(), time="ts")
    q = t.group_by("k").agg(n=dw.count(), total=dw.sum("v"))
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches",
                       emit="on_close")
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out, mode="changelog"), config, monkeypatch, crashes=[9, 6])
    assert result.resumed_from is not None
    written = pq.read_table(out)
    every_batch = q.changelog(dw.Config(batch_size=100))
    assert 97 < written.num_rows < every_batch.num_rows
    assert set(written["op"].to_pylist()) == {"+I", "-U", "+U"}
    assert sorted(final_table(written).to_pylist(), key=str) == sorted(q.collect().to_pylist(), key=str)


@pytest.mark.parametrize("parallelism", [1, 2])
def test_emitting_on_close_across_stops_commits_the_uninterrupted_changelog(configure, tmp_path, monkeypatch,
                                                                              parallelism):
    """A stop takes a checkpoint between two of the interval's. It released what was held, so the
    resumed run's releases fell at other batches and the committed changelog was another (the same
    final table): the stop's checkpoint keeps what is held and where the interval stood, and the runs
    stopped anywhere (at an interval's checkpoint too), crashed and resumed commit the changelog of
    the run never interrupted."""
    from crashes import crash_after, stop_after, stop_crashing

    from darwin.runtime.control import JobControl

    t = dw.from_arrow(bids(), time="ts")
    q = t.group_by("k").agg(n=dw.count(), total=dw.sum("v"))
    settings = dict(batch_size=100, checkpoint_interval="4 batches", emit="on_close", parallelism=parallelism)
    q.sink(dw.sinks.Parquet(tmp_path / "want", mode="changelog")).run(
        configure(checkpoint_dir=str(tmp_path / "chk-want"), state_path=str(tmp_path / "state-want"), **settings))
    want = pq.read_table(tmp_path / "want")
    config = configure(checkpoint_dir=str(tmp_path / "chk"), **settings)
    out = tmp_path / "out"
    for stop, crash in [(5, None), (2, None), (None, 1), (3, None), (None, 4), (0, None), (None, None)]:
        control = JobControl()
        if stop is not None:
            stop_after(monkeypatch, control, stop)
        if crash is not None:
            crash_after(monkeypatch, crash)
        try:
            result = q.sink(dw.sinks.Parquet(out, mode="changelog")).run(config, control)
            assert result.stopped == (stop is not None)
        except Crash:
            pass
        finally:
            stop_crashing(monkeypatch)
    assert result.resumed_from is not None and not result.stopped
    assert 97 < want.num_rows and pq.read_table(out).to_pylist() == want.to_pylist()


def test_kept_extremes_resume_with_their_signed_zeros_and_nans(configure, tmp_path, monkeypatch):
    """min/max over an updating input keep their group's values; -0.0 and 0.0 are two of them (and
    every NaN one) in the checkpoint too, so after a restore the extremes, and the changes they
    emit, are the uninterrupted run's."""
    import math
    import random

    rng = random.Random(5)
    n = 600
    t = pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), "id": [rng.randrange(60) for _ in range(n)],
                  "f": [rng.choice([0.0, -0.0, -0.0, 0.0, -0.0, float("nan")]) for _ in range(n)]})
    per_id = dw.from_arrow(t, time="ts").group_by("id").agg(k=dw.min(col("id") % 3), f=dw.max("f"))
    q = per_id.group_by("k").agg(lo=dw.min("f"), hi=dw.max("f"), n=dw.count())

    def exact(table):
        return [tuple("nan" if isinstance(v, float) and math.isnan(v) else repr(v) for v in r.values())
                for r in table.to_pylist()]

    expected = q.changelog(dw.Config(batch_size=20))
    assert exact(expected) == exact(q.changelog(dw.Config(batch_size=20, mode="interpreted")))
    assert {"-0.0", "0.0", "nan"} <= {v for row in exact(expected.select(["lo", "hi"])) for v in row}
    config = configure(batch_size=20, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out, mode="changelog"), config, monkeypatch, crashes=[13, 9])
    assert result.resumed_from is not None
    assert exact(pq.read_table(out).select(expected.column_names)) == exact(expected)


def test_float_sums_resume_with_the_nans_and_infinities_they_hold(configure, tmp_path, monkeypatch):
    """A float sum over an updating input counts its NaNs and infinities apart from the finite
    values; the counts come back from the checkpoint, so a NaN or infinity retracted after a restore
    leaves the sum of what is held, as in the uninterrupted run."""
    import math
    import random

    rng = random.Random(7)
    n = 600
    values = [1.5, -2.0, 4.25, 0.5, 3.0, 8.0, 1.0, -4.5, math.nan, math.inf, -math.inf]
    t = pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), "id": [rng.randrange(12) for _ in range(n)],
                  "f": [rng.choice(values) for _ in range(n)]})
    latest = dw.from_arrow(t, time="ts").deduplicate(on="id", keep="last")  # each id's value changes
    q = latest.group_by(k=col("id") % 6).agg(total=dw.sum("f"), mean=dw.avg("f"), n=dw.count())

    def exact(table):
        return [tuple("nan" if isinstance(v, float) and math.isnan(v) else repr(v) for v in r.values())
                for r in table.to_pylist()]

    expected = q.changelog(dw.Config(batch_size=20))
    assert exact(expected) == exact(q.changelog(dw.Config(batch_size=20, mode="interpreted")))
    assert {"nan", "inf", "-inf"} <= set(exact(expected.select(["total"]))[i][0] for i in range(expected.num_rows))
    assert any(math.isfinite(v) for v in expected.column("total").to_pylist())  # a special left a group again
    config = configure(batch_size=20, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")
    out = tmp_path / "out"
    result = run_until_done(q, lambda: dw.sinks.Parquet(out, mode="changelog"), config, monkeypatch, crashes=[13, 9])
    assert result.resumed_from is not None
    assert exact(pq.read_table(out).select(expected.column_names)) == exact(expected)


@pytest.mark.parametrize("how", ["inner", "full"])
def test_a_join_of_updating_results_resumes_exactly_once(how, configure, tmp_path, monkeypatch):
    """Both sides' kept rows and their match counts come back from the checkpoint: a retraction read
    after the crash takes back a row kept before it, with its pairs, and pads the other side again."""
    t = dw.from_arrow(bids(), time="ts")
    totals = t.group_by("k").agg(total=dw.sum("v"))
    counts = t.filter(col("v") % 3 == 0).group_by(k=col("k") % 7).agg(n=dw.count(), high=dw.max("v"))
    q = totals.join(counts, on=[("k", "k")], how=how)
    config = configure(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="4 batches")
    assert q.changelog(dw.Config(batch_size=100)).equals(q.changelog(dw.Config(batch_size=100, mode="interpreted")))
    _assert_resumes_exactly_once(q, config, tmp_path / "out", monkeypatch, [9, 6], 100)


def test_kept_values_of_a_checkpoint_from_before_they_were_placed_restore():
    """Checkpoints before the kept values were placed held them as JSON in the body ({group:
    [[value, count], ...]}, a NaN as "NaN"): they restore into the table, each group's extreme
    with them, -0.0 apart from 0.0."""
    import json

    import numpy as np

    from darwin.runtime.kept_values import KeptValues
    from darwin.state.placement import InMemory
    from darwin.types import DType

    saved = json.loads(json.dumps({"0": [[1.5, 1], ["NaN", 2], [-0.0, 1]], "2": [[0.0, 1], [-0.0, 3]],
                                   "3": [[-2.0, 1]]}))
    groups = np.arange(5)
    extremes = {}
    for smaller in (True, False):
        kept = KeptValues(smaller, DType.FLOAT64, 4, InMemory(), "kept0")
        kept.restore_kept(saved, 5, ())
        extremes[smaller] = [repr(v) for v in kept.extremes(groups, np.dtype(np.float64)).tolist()]
    assert extremes[True] == ["-0.0", "0.0", "-0.0", "-2.0", "0.0"]  # groups 1 and 4 hold none
    assert extremes[False] == ["nan", "0.0", "0.0", "-2.0", "0.0"]
    ints = KeptValues(False, DType.INT64, 4, InMemory(), "kept1")
    ints.restore_kept({"1": [[7, 1], [-3, 2]], "0": [[5, -1]]}, 2, ())
    assert ints.extremes(np.arange(2), np.dtype(np.int64)).tolist() == [5, 7]
