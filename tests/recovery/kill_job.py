"""A checkpointed Nexmark job, run as a child process by the SIGKILL tests.

    python kill_job.py BACKEND WORK_DIR QUERY [--plain]

QUERY is ``aggregate`` (a windowed aggregation) or ``join`` (a regular join of two sources).
Writes committed output to WORK_DIR/out (or WORK_DIR/plain with --plain: no
checkpoints, memory state) and, when it finishes, WORK_DIR/result.json.
"""

import json
import sys
from pathlib import Path

import darwin as dw
from darwin import col
from nexmark.source import source


def aggregate() -> dw.Table:
    bids = source(events=3_000_000, seed=7, rate=20_000, max_delay="2s").bid
    return (bids.window(dw.Tumble("1s", on="date_time")).group_by("auction")
            .agg(bids=dw.count(), volume=dw.sum("price"), top=dw.max("price")))


def join() -> dw.Table:
    """Bids of category-10 auctions (Nexmark q20's shape): both sides' rows stay in state."""
    s = source(events=1_000_000, seed=7, rate=20_000, max_delay="2s")
    auctions = s.auction.filter(col("category") == 10).select("id", "seller", "reserve")
    return s.bid.select("auction", "bidder", "price", "date_time").join(auctions, left_on="auction", right_on="id")


# (query, checkpoint interval): a join's checkpoint copies its kept rows, so it checkpoints less often
QUERIES = {"aggregate": (aggregate, "3 batches"), "join": (join, "25 batches")}


def main() -> None:
    backend, work = sys.argv[1], Path(sys.argv[2])
    query, interval = QUERIES[sys.argv[3]]
    plain = "--plain" in sys.argv
    cache = str(work.parent / "kernels")
    if plain:
        config = dw.Config(batch_size=1_000, cache_dir=cache)  # the batches of the checkpointed run
        out = work / "plain"
    else:
        config = dw.Config(state=backend, state_path=str(work / "state"), checkpoint_dir=str(work / "chk"),
                           checkpoint_interval=interval, batch_size=1_000, state_delta_limit=5_000, cache_dir=cache)
        out = work / "out"
    q = query()
    print("ready", flush=True)  # imports done: the parent's random kill delay starts now
    result = q.sink(dw.sinks.Parquet(out)).run(config)
    (work / "result.json").write_text(json.dumps({"resumed_from": result.resumed_from,
                                                  "metrics": result.metrics}))


if __name__ == "__main__":
    main()
