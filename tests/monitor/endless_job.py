"""Runs the endless job until SIGTERM, serving its metrics: ``python endless_job.py DIR``.

Prints the metrics port once it listens, then, after the signal, the run's result as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from endless import query  # noqa: E402

import darwin as dw  # noqa: E402
from darwin.monitor import serve_metrics, stop_on_signals  # noqa: E402
from darwin.runtime.control import JobControl  # noqa: E402


def main(directory: Path) -> None:
    control = JobControl()
    server = serve_metrics(control, 0)
    print(server.port, flush=True)
    config = dw.Config(checkpoint_dir=str(directory / "checkpoints"), checkpoint_interval="20 batches",
                       batch_size=1_000)
    with stop_on_signals(control):
        result = query().sink(dw.sinks.Parquet(directory / "out")).run(config, control)
    server.close()
    print(json.dumps({"stopped": result.stopped, "input_rows": result.metrics["input_rows"],
                      "checkpoints": result.metrics["checkpoints"]}), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
