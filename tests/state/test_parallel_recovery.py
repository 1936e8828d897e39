"""A checkpointed job, crashed and resumed at another parallelism each time (one thread among them),
commits exactly the one-thread run's output (rows and order); state moves between workers by key
group, one thread's entries numbered in first-seen order on their way to workers, on every backend
(on mmap and rocksdb from the checkpoint's tables into new ones)."""

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from crashes import (
    Crash,
    assert_rescaled_runs_commit_the_one_thread_output,
    bids,
    crash_after,
    run_rescaled,
    stop_crashing,
    windowed,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streams import q_all_aggregates, q_multi_key_having, q_sliding_string_key, source, streams

import darwin as dw
from darwin import col
from darwin.errors import CheckpointError


def ring(t):  # a small dense integer key: one thread would keep a window ring, workers a hash table each
    return windowed(t)


def hashed(t):  # two keys: each worker keeps a hash table
    return dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Slide("4s", every="2s", on="ts")) \
        .group_by("k", "v").agg(n=dw.count(), top=dw.max("ts"))


def distinct(t):  # count_distinct in a sliding window: two keyed aggregations, the second over the first's windows
    return dw.from_arrow(t, time="ts", max_delay="5s").window(dw.Slide("4s", every="2s", on="ts")) \
        .group_by("k").agg(d=dw.count_distinct("v"), big=dw.count_distinct("v", filter=col("v") > 6), n=dw.count())


def branches(t):  # a union of one source's branches, each row judged by the source's progress at it
    source = dw.from_arrow(t, time="ts", max_delay="5s")
    both = source.filter(col("k") < 40).union(source.filter(col("k") >= 40))
    return both.window(dw.Tumble("2s", on="ts")).group_by("k").agg(n=dw.count(), s=dw.sum("v"))


@pytest.mark.parametrize("query", [ring, hashed, distinct, branches])
def test_resuming_at_another_parallelism_commits_the_one_thread_output(query, tmp_path, monkeypatch):
    t = bids(6000)
    plan = query(t)
    assert "state=hash" in plan.explain(dw.Config(parallelism=2))
    assert_rescaled_runs_commit_the_one_thread_output(plan, tmp_path, monkeypatch)


# 2 -> 4, crashing before its first checkpoint (the next run reads the same checkpoint's tables again),
# 2 -> 4 taking two checkpoints, 4 -> 1 taking one (the tables of 4 workers stay), 1 -> 3, 3 -> 2 taking
# two each (every table but the last run's goes, those of 4 workers too)
PERSISTENT_RUNS = [(2, 6), (4, 1), (4, 6), (1, 3), (3, 6), (2, None)]


@pytest.mark.parametrize("backend", ["mmap", "rocksdb"])
@pytest.mark.parametrize("query", [hashed, distinct])
def test_persistent_state_resumes_at_another_parallelism(backend, query, tmp_path, monkeypatch):
    """On mmap and rocksdb the workers' tables are files under state_path: a resume at another
    parallelism reads the checkpoint's tables and fills new ones (this was refused, "only state on
    'memory' moves between workers"), and the old tables go once two checkpoints since are durable."""
    plan = query(bids(6000))
    expected = plan.collect(dw.Config(batch_size=250))
    state = tmp_path / "state"
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, PERSISTENT_RUNS,
                          state=backend, state_path=str(state))
    assert result.resumed_from is not None
    got = pq.read_table(tmp_path / "out")
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(pa.Table.from_batches(expected.to_batches(), schema=got.schema))
    tables = {d.name for d in state.iterdir() if d.is_dir() and d.name.startswith("pipeline")}
    assert tables and all(".w0of2" in name or ".w1of2" in name for name in tables), tables


# -- one thread and several workers ------------------------------------------------------------------

def _bids(n=6000):
    t = bids(n)
    return t.append_column("j", pa.array([i % 7 for i in range(n)]))


def _from(t):
    return dw.from_arrow(t, time="ts", max_delay="5s")


def merged_rings(t):  # one thread: a ring without serials; workers: rings over every key, merged as windows fire
    return _from(t).window(dw.Tumble("2s", on="ts")).group_by("k").agg(n=dw.count(), top=dw.max("ts"))


def ring_panes(t):  # sliding: panes in one ring (their rows numbered), merged rings of panes on workers
    return _from(t).window(dw.Slide("4s", every="1s", on="ts")).group_by("k").agg(n=dw.count(), top=dw.max("ts"))


def hash_panes(t):  # panes in hash tables, routed by key group on workers
    return _from(t).window(dw.Slide("4s", every="2s", on="ts")).group_by("k", "j").agg(n=dw.count(),
                                                                                       top=dw.max("ts"))


def pre_aggregated(t):  # one thread's hash table without serials; workers pre-aggregate slices
    return _from(t).window(dw.Tumble("2s", on="ts")).group_by("k", "j").agg(n=dw.count(), lo=dw.min("ts"))


def sliding_floats(t):  # a float sum: no panes, each row in each of its windows; routed on workers
    return _from(t).window(dw.Slide("4s", every="2s", on="ts")).group_by("k", "j").agg(s=dw.sum("v"))


# (query, what one thread keeps, what two workers keep)
SHAPES = [(windowed, "window-ring-aggregate", "state=hash -> parallel by key groups"),
          (merged_rings, "state=ring", "window rings merged"),
          (ring_panes, "state=ring panes", "window rings merged"),
          (hash_panes, "state=hash panes", "state=hash panes -> parallel by key groups"),
          (pre_aggregated, "state=hash", "local/global pre-aggregation"),
          (sliding_floats, "state=hash", "state=hash -> parallel by key groups")]
RUNS = {"1 to 2": [(1, 7), (2, None)], "2 to 1": [(2, 7), (1, None)], "1 to 4": [(1, 5), (4, None)],
        "1 to 2 to 1 to 3 to 1": [(1, 4), (2, 5), (1, 3), (3, 4), (1, None)]}


@pytest.mark.parametrize("runs", RUNS.values(), ids=RUNS.keys())
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: s[0].__name__)
def test_one_thread_and_workers_resume_each_others_checkpoints(shape, runs, tmp_path, monkeypatch):
    """A one-thread checkpoint holds no first-seen serials (a ring where workers keep hash tables);
    resumed on workers its entries are numbered in its tables' order, and workers' entries go back
    to one thread in (window, serial) order: the windows fire with the rows, in the order, of the run
    never interrupted (this was refused as "another layout ... a key range")."""
    query, one, two = shape
    plan = query(_bids())
    assert one in plan.explain(dw.Config(parallelism=1)) and two in plan.explain(dw.Config(parallelism=2))
    expected = plan.collect(dw.Config(batch_size=250))
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, runs)
    assert result.resumed_from is not None
    got = pq.read_table(tmp_path / "out")
    assert got.num_rows == expected.num_rows > 0
    assert got.equals(pa.Table.from_batches(expected.to_batches(), schema=got.schema))


def q_counted(t):  # every aggregate merges exactly: pre-aggregated on workers
    return t.window(dw.Tumble("1s", on="ts")).group_by("k", "s").agg(n=dw.count(), nv=dw.count("v"),
                                                                       hi=dw.max("v"), last=dw.max("ts"))


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=streams(), shape=st.sampled_from([q_all_aggregates, q_sliding_string_key, q_multi_key_having, q_counted]),
       runs=st.lists(st.tuples(st.sampled_from([1, 2, 3]), st.integers(0, 8)), min_size=1, max_size=4),
       last=st.sampled_from([1, 2, 4]), every=st.integers(1, 2), batch_size=st.integers(1, 8),
       backend=st.sampled_from(["memory", "mmap", "rocksdb"]))
def test_random_streams_resumed_at_random_parallelisms_give_the_one_thread_output(
        tmp_path_factory, monkeypatch, data, shape, runs, last, every, batch_size, backend):
    """Nullable, string and several keys; late rows; crashes anywhere, each run at another parallelism,
    on every backend."""
    table, cuts, delay, _ = data
    plan = shape(source(table, cuts, delay))
    base = tmp_path_factory.mktemp("rescaled")
    plain = plan.sink(dw.sinks.Parquet(base / "plain")).run(dw.Config(batch_size=batch_size))
    state = {} if backend == "memory" else {"state": backend, "state_path": str(base / "state")}
    # a run the input ends before its crash finishes the job
    result = run_rescaled(plan, base / "out", base / "chk", monkeypatch, [*runs, (last, None)], may_finish=True,
                          batch_size=batch_size, checkpoint_interval=f"{every} batches", **state)
    assert pq.read_table(base / "out").equals(pq.read_table(base / "plain"))
    for name in ("input_rows", "output_rows", "late_rows", "windows_fired"):
        assert result.metrics.get(name) == plain.metrics.get(name), name


# -- persistent backends ------------------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["mmap", "rocksdb"])
@pytest.mark.parametrize("shape", [pre_aggregated, sliding_floats])
@pytest.mark.parametrize("runs", [[(1, 5), (2, None)], [(2, 5), (1, None)]], ids=["1 to 2", "2 to 1"])
def test_persistent_keyed_state_moves_between_one_thread_and_workers(backend, shape, runs, tmp_path, monkeypatch):
    """One thread's table and the workers' (pre-aggregated, and a float sum rocksdb keeps in its cache
    whole) on mmap and rocksdb, each resumed by the other: the one-thread output (this was refused)."""
    plan = shape(_bids(3000))
    expected = plan.collect(dw.Config(batch_size=250))
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, runs,
                          checkpoint_interval="1 batch", state=backend, state_path=str(tmp_path / "state"))
    assert result.resumed_from is not None
    assert pq.read_table(tmp_path / "out").equals(
        pa.Table.from_batches(expected.to_batches(), schema=pq.read_table(tmp_path / "out").schema))


def _joined(t):
    left = _from(t).filter(col("j") == 1).select("ts", "k", "v")
    right = _from(t).filter(col("j") == 2).select("ts", "k", w="v")
    return left.join(right, on=[("k", "k")], how="left", where=col("ts_right").between(col("ts") - 500,
                                                                                       col("ts") + 1000))


def _sessions(t):
    return _from(t).window(dw.Session("1s", on="ts")).group_by("j").agg(n=dw.count(), s=dw.sum("v"))


def _global(t):  # no group key: one thread aggregates, over the workers' filtered slices
    return _from(t).filter(col("j") > 0).window(dw.Tumble("2s", on="ts")).agg(n=dw.count(), s=dw.sum("v"))


@pytest.mark.parametrize("backend", ["mmap", "rocksdb"])
@pytest.mark.parametrize("query", [_joined, _sessions, _global], ids=lambda f: f.__name__)
def test_persistent_state_not_kept_per_worker_resumes_at_any_parallelism(backend, query, tmp_path, monkeypatch):
    """Joins, sessions and aggregations no worker shares keep one state whatever the parallelism (all
    of this was refused)."""
    plan = query(_bids(3000))
    runs = [(1, 4), (2, 3), (1, 2), (3, None)]
    expected = plan.collect(dw.Config(batch_size=100))
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, runs, batch_size=100,
                          checkpoint_interval="1 batch", state=backend, state_path=str(tmp_path / "state"))
    assert result.resumed_from is not None
    assert pq.read_table(tmp_path / "out").equals(pa.Table.from_batches(expected.to_batches()))


# -- the checkpoint's identity still refuses what is not the same job ---------------------------------

def test_another_query_or_key_range_is_refused_at_another_parallelism_too(tmp_path, monkeypatch):
    config = dw.Config(batch_size=100, checkpoint_dir=str(tmp_path / "chk"), checkpoint_interval="2 batches")
    plan = merged_rings(_bids(3000))
    crash_after(monkeypatch, 6)
    with pytest.raises(Crash):
        plan.sink(dw.sinks.Parquet(tmp_path / "out")).run(config)
    stop_crashing(monkeypatch)
    wider = _bids(3000)
    wider = wider.set_column(1, "k", pa.array([i % 500 for i in range(wider.num_rows)]))
    for workers in (1, 2):
        with pytest.raises(CheckpointError, match="another layout.*domain"):
            merged_rings(wider).sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(parallelism=workers))
    other = _from(_bids(3000)).window(dw.Tumble("3s", on="ts")).group_by("k").agg(n=dw.count(), top=dw.max("ts"))
    with pytest.raises(CheckpointError, match="different query"):
        other.sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(parallelism=2))
    assert plan.sink(dw.sinks.Parquet(tmp_path / "out")).run(config.replace(parallelism=2)).resumed_from is not None
