"""The micro-benchmark runs end to end on tiny data (a test checks that it runs, never how fast)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_micro_benchmark_runs_and_every_engine_agrees(tmp_path):
    out = tmp_path / "m.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "darwin_agg.py"), "--records", "30K", "--keys", "500",
         "--rate", "200", "--runs", "1", "--data-dir", str(tmp_path), "--json", str(out)],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["equal"] is True
    assert set(result["records_per_s"]) == {
        "darwin (compiled, host)", "hand kernel, in memory", "hand kernel, incl. Parquet read", "darwin, in memory",
        "pyspark local[*]", "darwin host (child process)", "darwin generic (child process)"}
    assert all(v > 0 for v in result["records_per_s"].values())
