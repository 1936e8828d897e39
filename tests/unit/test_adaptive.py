"""Workers adapted while the job runs: the policy, and a job that gives workers back."""

import numpy as np
import pyarrow as pa

import darwin as dw
from darwin.runtime.adaptive import PATIENCE, SPLIT_WORK_S, WorkerShare, force_workers


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
