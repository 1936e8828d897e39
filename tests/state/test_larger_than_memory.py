"""mmap state several times larger than the memory the process may use, beside memory state that fails.

The cap is RLIMIT_DATA (heap and private mappings), not RLIMIT_AS: address space counts
file mappings too, so it cannot tell state on disk from state in memory. Arrow's mimalloc pool
reserves 1 GB arenas, which RLIMIT_DATA counts though they hold nothing: the job uses the system's.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

JOB = Path(__file__).with_name("bounded_memory_job.py")
LIMIT_MB = 384


def run(backend, state_dir, query="window"):
    proc = subprocess.run([sys.executable, str(JOB), backend, str(state_dir), str(LIMIT_MB), query],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_mmap_state_three_times_the_memory_limit(tmp_path):
    got = run("mmap", tmp_path / "state")
    assert got.get("error") is None, got
    assert got["rows"] == 120 * 250_000  # every key in 120 sliding windows
    assert got["total"] == 60 * sum(i % 10 for i in range(500_000))  # every row in 60 windows
    assert got["state_bytes"] >= 3 * (LIMIT_MB << 20)


def test_memory_state_does_not_fit_under_the_same_limit(tmp_path):
    assert run("memory", tmp_path / "state") == {"error": "MemoryError"}


def test_updating_aggregation_on_mmap_three_times_the_memory_limit(tmp_path):
    """A group_by without a window over 12M keys: the groups' arrays and key index are scratch files."""
    got = run("mmap", tmp_path / "state", "group")
    assert got.get("error") is None, got
    groups = 12_000_000
    assert got["changes"] == {"+I": groups, "-U": groups, "+U": groups}  # each key's second row updates it
    cycles, rest = divmod(2 * groups, 7)  # v is i % 7: the changelog folds to every row's sum
    assert got["total"] == 21 * cycles + sum(range(rest))
    assert got["state_bytes"] >= 3 * (LIMIT_MB << 20)
    assert not list((tmp_path / "state").rglob("*.bin"))  # the run's scratch files went with it


def test_updating_aggregation_on_memory_does_not_fit_under_the_same_limit(tmp_path):
    assert run("memory", tmp_path / "state", "group") == {"error": "MemoryError"}


def test_min_max_over_an_updating_input_keep_their_values_in_the_scratch_files(tmp_path):
    """An updating input's min/max keep every value of a group with its count (a retraction of the
    extreme needs the next one): on mmap in the runner's scratch files, so the Python heap does not
    grow with the values (200,000 here; Python dicts held ~20 MB of them)."""
    import tracemalloc

    import numpy as np
    import pyarrow as pa

    import darwin as dw

    n, size = 200_000, 1 << 14
    schema = pa.schema([("k", pa.int64())])

    def batches(rows):  # every key once, then again: the count of each key goes 1 -> 2
        for lo in range(0, 2 * rows, size):
            yield pa.record_batch([pa.array(np.arange(lo, min(lo + size, 2 * rows), dtype=np.int64) % rows)], schema)

    def query(rows):
        per_key = dw.from_batches(schema, lambda: batches(rows), non_null=["k"]).group_by("k").agg(n=dw.count())
        return per_key.group_by("n").agg(lo=dw.min("k"), hi=dw.max("k"), keys=dw.count())

    config = dw.Config(state="mmap", state_path=str(tmp_path / "state"))
    query(100).collect(config)  # compiled before measuring
    heap, files, last = [], [], None
    tracemalloc.start()
    try:
        for b in query(n).iter_batches(config):
            heap.append(tracemalloc.get_traced_memory()[0])
            files.append(sum(f.stat().st_size for f in (tmp_path / "state").rglob("kept*.table.*.bin")))
            last = b.to_pylist()[-1]
    finally:
        tracemalloc.stop()
    assert last == {"n": 2, "lo": 0, "hi": n - 1, "keys": n, "op": "+U"}
    assert max(heap) - heap[0] < 8 << 20, [h >> 20 for h in heap]
    assert max(files) >= n * 32  # a table entry per value
