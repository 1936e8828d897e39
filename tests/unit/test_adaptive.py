"""Workers adapted while the job runs: the policy, and a job that gives workers back."""

import numpy as np
import pyarrow as pa

import darwin as dw
from darwin.runtime.adaptive import (
    MARGIN,
    PATIENCE,
    PROBE_BATCHES,
    PROBE_EVERY,
    PROBE_FIRST,
    PROBE_SETTLE,
    SPLIT_WORK_S,
    ThreadBudget,
    WorkerShare,
    force_workers,
)


def test_little_work_gives_workers_back_one_at_a_time_and_much_work_takes_them_again():
    share = WorkerShare(pipeline=0, most=3)
    for _ in range(PATIENCE - 1):
        share.observe(SPLIT_WORK_S / 10)
    assert share.active == 3  # not before enough batches agree
    share.observe(SPLIT_WORK_S / 10)
    assert share.active == 2
    for _ in range(10 * PATIENCE):
        share.observe(SPLIT_WORK_S / 10)
    assert share.active == 1 and share.changes == 2
    for _ in range(PATIENCE - 1):
        share.observe(SPLIT_WORK_S * 10)
    share.observe(SPLIT_WORK_S / 10)  # one small batch: the count of batches asking starts again
    for _ in range(PATIENCE - 1):
        share.observe(SPLIT_WORK_S * 10)
    assert share.active == 1
    share.observe(SPLIT_WORK_S * 10)
    assert share.active == 2 and share.changes == 3


def test_forced_counts_are_clamped_to_the_pipelines_workers():
    share = WorkerShare(pipeline=4, most=2)
    with force_workers(lambda pipeline, batch: 7 if pipeline == 4 else 0):
        assert share.for_batch() == 2
    with force_workers(lambda pipeline, batch: 0):
        assert share.for_batch() == 1
    assert share.for_batch() == 2


def test_a_pipeline_with_little_work_per_batch_ends_on_fewer_workers_with_the_same_result():
    rng = np.random.default_rng(3)
    n = 4_000
    t = dw.from_arrow(pa.table({"t": pa.array(np.arange(n) * 10, pa.timestamp("ms")), "k": rng.integers(0, 9, n),
                                "v": rng.integers(0, 100, n)}), time="t")
    query = t.filter(dw.col("v") > 10).window(dw.Tumble("1s", on="t")).group_by("k").agg(s=dw.sum("v"))
    expected = query.execute(dw.Config(batch_size=16))
    actual = query.execute(dw.Config(batch_size=16, parallelism=2))  # 250 batches of microseconds each
    assert actual.table.equals(expected.table)
    [shared] = [p for p in actual.metrics["pipelines"] if p.get("workers_most") == 2]
    assert shared["worker_changes"] >= 1 and shared["workers"] in (1, 2)


def test_a_table_of_small_chunks_keeps_both_workers():
    """from_arrow of a table of many small chunks (pq.read_table of a file of many row groups) was read
    in batches of its chunks whatever the batch size: each batch carried too little work to share, and
    the job went on with one worker of two. Its batches are now of the size configured."""
    n, chunk = 4_000_000, 4_000
    i = np.arange(n, dtype=np.int64)
    whole = pa.table({"t": pa.array(i // 100, pa.timestamp("ms")), "k": i * 7919 % 100_000, "v": i % 97})
    chunked = pa.concat_tables([whole.slice(a, chunk) for a in range(0, n, chunk)])
    query = dw.from_arrow(chunked, time="t").window(dw.Tumble("10s", on="t")).group_by("k").agg(s=dw.sum("v"),
                                                                                                   n=dw.count())
    result = query.execute(dw.Config(batch_size=1 << 19, parallelism=2))  # about 5 ms of work a batch
    [shared] = [p for p in result.metrics["pipelines"] if p.get("workers_most") == 2]
    assert shared["workers"] == 2 and shared["worker_changes"] == 0


def test_rows_routed_to_key_owners_give_workers_back_with_the_same_result():
    """A keyed aggregation whose rows go to their key's owner (hash tables, no pre-aggregation) kept
    every worker whatever its work per batch: a step on the pool for microseconds of kernel. Now on
    one worker the coordinating thread routes the batch once and runs every owner in turn, so the
    owners keep their key groups' state and the result is the one thread's."""
    rng = np.random.default_rng(5)
    n = 4_000
    t = dw.from_arrow(pa.table({"t": pa.array(np.arange(n) * 10, pa.timestamp("ms")),
                                "k": rng.integers(0, 50, n) * 1_000_003, "v": rng.integers(0, 100, n)}), time="t")
    query = t.window(dw.Tumble("1s", on="t")).group_by("k").agg(s=dw.sum("v"), c=dw.count())
    expected = query.execute(dw.Config(batch_size=16))
    for workers in (2, 4):
        actual = query.execute(dw.Config(batch_size=16, parallelism=workers, pre_aggregate=False))
        assert actual.table.equals(expected.table)
        [shared] = [p for p in actual.metrics["pipelines"] if p.get("workers_most") == workers]
        assert shared["worker_changes"] >= 1 and shared["workers"] < workers


def _feed(budget: ThreadBudget, per_row: dict[int, float], batches: int, rows: int = 1000) -> list[int]:
    """``batches`` input batches of ``rows`` taking ``per_row[threads]`` seconds a row; the threads of each."""
    used = []
    for _ in range(batches):
        used.append(budget.threads)
        budget.observe(rows, rows * per_row[budget.threads])
    return used


def _probe(now: int, other: int) -> list[int]:
    """The threads of a probe's batches: half the measured batches as now, the other way, as now again."""
    half = PROBE_BATCHES // 2
    return ([now] * (PROBE_SETTLE + half) + [other] * (PROBE_SETTLE + PROBE_BATCHES)
            + [now] * (PROBE_SETTLE + PROBE_BATCHES - half))


def test_the_run_gives_its_threads_back_where_one_is_measured_faster_and_probes_again():
    """Two workers slower than one (q5, q12, YSB on two busy cores: reading threads, workers and other
    processes share them): the run times its batches both ways, goes on with one thread, and probes
    again; when two are faster again, it takes them back."""
    budget = ThreadBudget(most=2)
    slower_on_two = {1: 1e-6, 2: 1.3e-6}
    probe = _probe(2, 1)
    used = _feed(budget, slower_on_two, PROBE_FIRST + len(probe))
    assert used == [2] * PROBE_FIRST + probe and budget.threads == 1
    used = _feed(budget, slower_on_two, PROBE_EVERY + len(probe))
    assert used == [1] * PROBE_EVERY + _probe(1, 2) and budget.threads == 1  # held, then probed again
    assert budget.one_thread_batches == PROBE_SETTLE + PROBE_BATCHES + PROBE_EVERY + len(probe) - PROBE_SETTLE \
        - PROBE_BATCHES and budget.probes == 2
    _feed(budget, {1: 1e-6, 2: 0.6e-6}, PROBE_EVERY + len(probe))  # the machine's other work went away
    assert budget.threads == 2


def test_a_run_slowing_down_as_it_goes_does_not_favour_either_way():
    """Batches taking longer as the state grows: the probe's halves before and after cancel the drift."""
    budget = ThreadBudget(most=2)
    for i in range(PROBE_FIRST + len(_probe(2, 1))):
        budget.observe(1000, 1000 * 1e-6 * (1 + 0.05 * i))  # the same speed both ways, 5% slower a batch
    assert budget.threads == 2


def test_the_run_keeps_its_threads_unless_one_is_faster_by_the_margin():
    budget = ThreadBudget(most=4)
    _feed(budget, {1: 1e-6 * (1 - MARGIN / 2), 4: 1e-6}, PROBE_FIRST + len(_probe(4, 1)))
    assert budget.threads == 4 and budget.probes == 1  # within the noise: what the user asked for
    idle = ThreadBudget(most=2)
    _feed(idle, {1: 1e-6, 2: 2e-6}, PROBE_FIRST + len(_probe(2, 1)), rows=0)
    assert idle.threads == 2  # no rows came in: nothing measured, nothing changed
    single = ThreadBudget(most=1)
    _feed(single, {1: 1e-6}, 100)
    assert single.threads == 1 and single.one_thread_batches == 0 and single.probes == 0


def test_a_share_is_not_told_of_batches_the_budget_kept_on_one_thread(monkeypatch):
    """Routed on one thread a batch is routed once, not by every worker: other work than the share's
    own count does, which could make it give its workers back for good. Its batches are not told."""
    rng = np.random.default_rng(7)
    n = 50_000
    t = dw.from_arrow(pa.table({"t": pa.array(np.arange(n), pa.timestamp("ms")),
                                "k": rng.integers(0, 5_000, n) * 1_000_003, "v": rng.integers(0, 100, n)}), time="t")
    query = t.window(dw.Tumble("1s", on="t")).group_by("k").agg(s=dw.sum("v"), c=dw.count())
    expected = query.execute(dw.Config(batch_size=512))
    made = ThreadBudget.__init__

    def on_one_thread(self: ThreadBudget, most: int) -> None:
        made(self, most)
        self.threads = 1
    monkeypatch.setattr(ThreadBudget, "__init__", on_one_thread)
    monkeypatch.setattr(ThreadBudget, "observe", lambda self, rows, seconds: None)
    actual = query.execute(dw.Config(batch_size=512, parallelism=2, pre_aggregate=False))  # ~100 tiny batches
    assert actual.table.equals(expected.table)
    [shared] = [p for p in actual.metrics["pipelines"] if p.get("workers_most") == 2]
    assert shared["workers"] == 2 and shared["worker_changes"] == 0
    assert shared["worker_busy_seconds"][1] == 0.0  # every batch ran on the coordinating thread
