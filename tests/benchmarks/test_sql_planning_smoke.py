"""The SQL planning benchmark runs (a test checks that it runs and what it reports, never how fast)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_sql_planning_benchmark_reports_every_query_asked_for(tmp_path):
    out = tmp_path / "planning.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "sql_planning.py"), "--runs", "1",
                           "--queries", "q0,q5,q9", "--json", str(out)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # this checkout, whatever is installed
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert set(result) == {"q0", "q5", "q9"}
    for r in result.values():
        assert set(r) == {"parse_ms", "sql_ms", "fluent_ms"}
        assert all(v > 0 for v in r.values())
