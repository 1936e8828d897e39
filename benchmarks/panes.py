"""Sliding windows from panes against the per-window fold, side by side in one run: Nexmark queries
with a sliding window (SWA: ten windows per bid; q5: five), into a discarding sink, alternating
``Config(panes=True)`` and ``Config(panes=False)`` so that both see the same machine.

    python benchmarks/panes.py --events 10M --runs 3 --queries swa q5 --parallelism 1

Each query first runs once untimed on each setting (compiling its kernels), then ``--runs`` rounds.
The figure is the median of each setting, and their ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import darwin as dw
from darwin.cli import parse_count
from nexmark.bench import darwin_query


def timed(query: str, events: int, config: dw.Config) -> tuple[float, int]:
    table = darwin_query(query, events, 0)
    hole = dw.sinks.Blackhole()
    started = time.perf_counter()
    table.sink(hole).run(config)
    return time.perf_counter() - started, hole.rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", default="10M")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--queries", nargs="+", default=["swa", "q5"])
    parser.add_argument("--parallelism", type=int, default=1)
    args = parser.parse_args()
    events = parse_count(args.events)
    settings = {"panes": dw.Config(parallelism=args.parallelism),
                "per-window fold": dw.Config(parallelism=args.parallelism, panes=False)}
    print(f"{events:,} events, parallelism {args.parallelism}, median of {args.runs} runs")
    for query in args.queries:
        rows = {}
        for name, config in settings.items():  # warm-up: compile, and touch the memory once
            _, rows[name] = timed(query, events, config)
        if len(set(rows.values())) != 1:
            raise SystemExit(f"{query}: the settings emitted different row counts {rows}")
        seconds: dict[str, list[float]] = {name: [] for name in settings}
        for _ in range(args.runs):
            for name, config in settings.items():
                seconds[name].append(timed(query, events, config)[0])
        median = {name: statistics.median(s) for name, s in seconds.items()}
        print(f"{query}: panes {median['panes']:.2f} s, per-window fold {median['per-window fold']:.2f} s, "
              f"{median['per-window fold'] / median['panes']:.2f}x ({rows['panes']:,} rows)")


if __name__ == "__main__":
    main()
