"""The sources-alone benchmark runs end to end on few events (it is checked to run, never how fast)."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_source_bound_runs_and_reads_spark_figures(tmp_path):
    spark = tmp_path / "m.json"
    spark.write_text(json.dumps([{"query": "q1", "engine": "spark", "error": None,
                                  "events_per_second_per_core": 1000.0}]))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "nexmark_source_bound.py"), "--queries", "q1,q5,ysb",
         "--events", "20K", "--runs", "1", "--spark-json", str(spark)],
        capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in proc.stdout.splitlines() if line.startswith("| ") and not line.startswith("| query")}
    assert set(rows) == {"q1", "q5", "ysb"}
    assert float(rows["q5"][1].rstrip("M")) > 0 and rows["q5"][3] == "-"  # a bound; no Spark figure for q5
    assert rows["q1"][3] == "0.00M" and rows["q1"][5] == "yes"  # 20x of 1,000 events/s is within reach
