"""Where Nexmark q6's CPU goes: the CPU seconds of the thread running ``OverRunner.push`` (the OVER
window) and ``RankRunner.push`` (the top-1 per auction, q9's core), beside the whole process's, in
one run into a discarding sink. Thread CPU time is what a loaded machine disturbs least.

    PYTHONPATH=$PWD python benchmarks/over_cpu.py --events 10M

Run it with another checkout's ``darwin`` on ``PYTHONPATH`` to compare two versions.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import darwin as dw
from darwin.cli import parse_count
from darwin.runtime.over import OverRunner
from darwin.runtime.rank import RankRunner
from nexmark.bench import darwin_query


def timed(cls: type, name: str, spent: dict[str, float]) -> None:
    push: Callable[..., Any] = cls.push  # type: ignore[attr-defined]

    def push_timed(self: Any, batch: Any) -> Any:
        started = time.thread_time()
        try:
            return push(self, batch)
        finally:
            spent[name] += time.thread_time() - started

    cls.push = push_timed  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", default="10M")
    events = parse_count(parser.parse_args().events)
    spent = {"over": 0.0, "top-1": 0.0}
    timed(OverRunner, "over", spent)
    timed(RankRunner, "top-1", spent)
    query = darwin_query("q6", events, 0, False)
    wall, cpu = time.perf_counter(), time.process_time()
    hole = dw.sinks.Blackhole()
    query.sink(hole).run(dw.Config())
    print(f"q6 {events:,} events: {time.perf_counter() - wall:.2f} s, process CPU {time.process_time() - cpu:.2f} s, "
          + ", ".join(f"{k} CPU {v:.2f} s" for k, v in spent.items()) + f", {hole.rows:,} rows")


if __name__ == "__main__":
    main()
