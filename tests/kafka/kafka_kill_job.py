"""A checkpointed Kafka -> Darwin -> Kafka job (exactly-once), run as a child process by the SIGKILL test.

    python kafka_kill_job.py BOOTSTRAP IN_TOPIC OUT_TOPIC WORK_DIR

Writes WORK_DIR/result.json when it finishes.
"""

import json
import sys
from pathlib import Path

import pyarrow as pa

import darwin as dw

BIDS = pa.schema([("auction", pa.int64()), ("price", pa.int64()), ("bidder", pa.string())])


def query(bootstrap: str, topic: str) -> dw.Table:
    bids = dw.read_kafka(topic, bootstrap, BIDS, time="timestamp", max_delay="0s")
    return bids.window(dw.Tumble("1s", on="timestamp")).group_by("auction").agg(n=dw.count(), top=dw.max("price"))


def main() -> None:
    bootstrap, source, sink, work = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])
    config = dw.Config(checkpoint_dir=str(work / "chk"), checkpoint_interval="2 batches", batch_size=500,
                       cache_dir=str(work.parent / "kernels"))
    q = query(bootstrap, source)
    print("ready", flush=True)
    target = dw.sinks.Kafka(sink, bootstrap, key="auction", guarantee="exactly_once", staging_dir=work / "stage")
    result = q.sink(target).run(config)
    (work / "result.json").write_text(json.dumps({"resumed_from": result.resumed_from, "metrics": result.metrics}))


if __name__ == "__main__":
    main()
