"""`darwin run job.yaml --metrics-port 0` serves its metrics while it runs, and SIGTERM stops it with a
final checkpoint that the next run resumes from."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from scrape import scrape_once_checkpointed  # noqa: E402
from sigterm import job_process, stop_with_sigterm  # noqa: E402

JOB = """\
name: endless-bids
sources:
  bid:
    type: nexmark
    stream: bid
    events: 1000000000
    rate: 10000
    rate_limit: 200000
    time: date_time
    max_delay: 1s
query:
  sql: |
    SELECT window_start, window_end, auction, count(*) AS bids
    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '1' SECOND))
    GROUP BY window_start, window_end, auction
sinks:
  counts:
    type: parquet
    path: out
config:
  checkpoint_dir: checkpoints
  checkpoint_interval: 1s
"""


def _run_until_checkpointed_then_stop(job: Path) -> str:
    with job_process([sys.executable, "-m", "darwin.cli", "run", str(job), "--metrics-port", "0"],
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=job.parent) as process:
        assert process.stdout is not None
        seen = []
        for line in process.stdout:
            seen.append(line)
            found = re.search(r"http://127\.0\.0\.1:(\d+)/metrics", line)
            if found:
                port = int(found.group(1))
                break
        else:
            raise AssertionError("no metrics address in: " + "".join(seen))
        metrics = scrape_once_checkpointed(port, 1)
        assert metrics["darwin_checkpoints_total"] >= 1 and metrics["darwin_throughput_rows_per_second"] >= 0
        rest = stop_with_sigterm(process)
    assert process.returncode == 0, "".join(seen) + rest
    return "".join(seen) + rest


def test_sigterm_stops_a_yaml_job_with_a_final_checkpoint_and_the_next_run_resumes(tmp_path: Path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(JOB)
    first = _run_until_checkpointed_then_stop(job)
    assert "stopped: the final checkpoint keeps the open windows" in first
    second = _run_until_checkpointed_then_stop(job)
    assert "resumed from checkpoint" in second and "stopped" in second
    assert list((tmp_path / "out").glob("part-*"))
