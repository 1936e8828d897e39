"""A checkpointed SQL job reading a Kafka topic into a Parquet table (Flink's kafka and filesystem connectors)
or into another topic (at least once), run as a child process by the SIGKILL test.

    python kafka_sql_kill_job.py BOOTSTRAP IN_TOPIC WORK_DIR [OUT_TOPIC]

Writes WORK_DIR/out (the table, without OUT_TOPIC) and WORK_DIR/result.json when it finishes.
"""

import json
import sys
from pathlib import Path

import darwin as dw

SCRIPT = """
CREATE TABLE bids (
  auction BIGINT, price BIGINT, bidder STRING, ts TIMESTAMP(3) METADATA FROM 'timestamp',
  WATERMARK FOR ts AS ts - INTERVAL '0' SECOND
) WITH ('connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{servers}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json');
CREATE TABLE counts (auction BIGINT, n BIGINT, top BIGINT, bidders STRING, window_start TIMESTAMP(3),
  window_end TIMESTAMP(3))
WITH ({sink});
INSERT INTO counts
SELECT auction, COUNT(*), MAX(price), MAX(bidder), window_start, window_end
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '1' SECOND))
GROUP BY auction, window_start, window_end;
"""
FILE = "'connector' = 'filesystem', 'path' = '{out}', 'format' = 'parquet'"
TOPIC = "'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{servers}', 'format' = 'json'"


def main() -> None:
    bootstrap, topic, work = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    config = dw.Config(checkpoint_dir=str(work / "chk"), checkpoint_interval="2 batches", batch_size=500,
                       cache_dir=str(work.parent / "kernels"))
    print("ready", flush=True)
    sink = TOPIC.format(topic=sys.argv[4], servers=bootstrap) if len(sys.argv) > 4 else FILE.format(out=work / "out")
    [result] = dw.sql_job(SCRIPT.format(topic=topic, servers=bootstrap, sink=sink), config=config)
    (work / "result.json").write_text(json.dumps({"resumed_from": result.resumed_from, "metrics": result.metrics}))


if __name__ == "__main__":
    main()
