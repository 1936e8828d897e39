"""A checkpointed Nexmark job, run as a child process by the SIGKILL tests.

    python kill_job.py BACKEND WORK_DIR QUERY [--plain] [--parallelism N]

QUERY is ``aggregate`` (a windowed aggregation), ``join`` (a regular join of two sources),
``updating`` (an updating aggregation into an upsert sink) or ``partitioned`` (bids into a
partitioned sink). Writes committed output to WORK_DIR/out (or WORK_DIR/plain with --plain: no
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
    s = source(events=2_000_000, seed=7, rate=20_000, max_delay="2s")
    auctions = s.auction.filter(col("category") == 10).select("id", "seller", "reserve")
    return s.bid.select("auction", "bidder", "price", "date_time").join(auctions, left_on="auction", right_on="id")


def updating() -> dw.Table:
    """Bids and top price per auction, updated as bids arrive; auctions leave (a filter) and come back."""
    bids = source(events=1_000_000, seed=7, rate=20_000, max_delay="2s").bid
    per_auction = bids.group_by("auction").agg(bids=dw.count(), volume=dw.sum("price"), top=dw.max("price"))
    return per_auction.filter(col("bids") % 4 != 0)


def partitioned() -> dw.Table:
    """Nexmark q10's shape: bids into directories by a key and a time part."""
    bids = source(events=2_000_000, seed=7, rate=20_000, max_delay="2s").bid
    return bids.select("auction", "bidder", "price", "date_time", "extra", p=col("auction") % 4,
                       s=col("date_time").dt.second() // 10)


def parquet(out: Path, query: str) -> dw.sinks.Parquet:
    if query == "updating":
        return dw.sinks.Parquet(out, mode="upsert")
    if query == "partitioned":
        return dw.sinks.Parquet(out, partition_by=["p", "s"])
    return dw.sinks.Parquet(out)


# (query, checkpoint interval): a join's checkpoint copies its kept rows, so it checkpoints less often
QUERIES = {"aggregate": (aggregate, "3 batches"), "join": (join, "25 batches"), "updating": (updating, "10 batches"),
           "partitioned": (partitioned, "10 batches")}


def main() -> None:
    backend, work = sys.argv[1], Path(sys.argv[2])
    name = sys.argv[3]
    query, interval = QUERIES[name]
    plain = "--plain" in sys.argv
    workers = int(sys.argv[sys.argv.index("--parallelism") + 1]) if "--parallelism" in sys.argv else 1
    cache = str(work.parent / "kernels")
    if plain:
        config = dw.Config(batch_size=1_000, cache_dir=cache)  # the batches of the checkpointed run
        out = work / "plain"
    else:
        config = dw.Config(state=backend, state_path=str(work / "state"), checkpoint_dir=str(work / "chk"),
                           checkpoint_interval=interval, batch_size=1_000, state_delta_limit=5_000, cache_dir=cache,
                           parallelism=workers)
        out = work / "out"
    q = query()
    print("ready", flush=True)  # imports done: the parent's random kill delay starts now
    result = q.sink(parquet(out, name)).run(config)
    (work / "result.json").write_text(json.dumps({"resumed_from": result.resumed_from,
                                                  "metrics": result.metrics}))


if __name__ == "__main__":
    main()
