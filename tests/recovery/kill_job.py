"""A checkpointed Nexmark job, run as a child process by the SIGKILL tests.

    python kill_job.py BACKEND WORK_DIR [--plain]

Writes committed output to WORK_DIR/out (or WORK_DIR/plain with --plain: no
checkpoints, memory state) and, when it finishes, WORK_DIR/result.json.
"""

import json
import sys
from pathlib import Path

import darwin as dw
from nexmark.source import source

EVENTS = 3_000_000


def query() -> dw.Table:
    bids = source(events=EVENTS, seed=7, rate=20_000, max_delay="2s").bid
    return (bids.window(dw.Tumble("1s", on="date_time")).group_by("auction")
            .agg(bids=dw.count(), volume=dw.sum("price"), top=dw.max("price")))


def main() -> None:
    backend, work = sys.argv[1], Path(sys.argv[2])
    plain = "--plain" in sys.argv
    cache = str(work.parent / "kernels")
    if plain:
        config = dw.Config(batch_size=2_000, cache_dir=cache)
        out = work / "plain"
    else:
        config = dw.Config(state=backend, state_path=str(work / "state"), checkpoint_dir=str(work / "chk"),
                           checkpoint_interval="3 batches", batch_size=1_000, state_delta_limit=5_000, cache_dir=cache)
        out = work / "out"
    q = query()
    print("ready", flush=True)  # imports done: the parent's random kill delay starts now
    result = q.sink(dw.sinks.Parquet(out)).run(config)
    (work / "result.json").write_text(json.dumps({"resumed_from": result.resumed_from,
                                                  "metrics": result.metrics}))


if __name__ == "__main__":
    main()
