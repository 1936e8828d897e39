"""The state-backend benchmark runs end to end on tiny data (a test checks that it runs, never how fast)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def test_state_backend_benchmark_runs_and_every_backend_agrees(tmp_path):
    out = tmp_path / "s.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "state_backends.py"), "--records", "30K", "--rate", "200",
         "--keys", "20K", "--runs", "1", "--batch-size", "3000", "--write-records", "20K", "--write-keys", "2K",
         "--join-events", "20K",
         "--data-dir", str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["equal"] is True
    backends = {"memory", "mmap", "rocksdb"}
    assert set(result["micro"]["records_per_s"]) == backends | {"memory, hash table"}
    assert set(result["micro"]["ratios"]) == {f"{b} / {m}" for b in ("mmap", "rocksdb")
                                              for m in ("memory", "memory, hash table")}
    assert set(result["keys"]["insert_rows_per_s"]) == set(result["keys"]["update_rows_per_s"]) == backends
    for measure in ("checkpoint", "recovery", "fire"):
        assert set(result["checkpoint"][measure]) == backends
    assert {"per_record_records_per_s", "grouped_records_per_s"} <= set(result["rocksdb_writes"])
    assert set(result["join"]["events_per_s"]) == backends and result["join"]["rows"] > 0
    for section in ("micro", "keys", "checkpoint", "rocksdb_writes", "join"):
        assert result[section]["equal"] is True, section
        numbers = list(_numbers({k: v for k, v in result[section].items() if k != "equal"}))
        assert numbers and all(v > 0 for v in numbers), section
    assert not list(tmp_path.glob("state-backends-*")), "temporary state was left behind"
