"""Chart of `nexmark run --json` measurements: events/s per core of every query on every engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NEEDED = ("query", "engine", "events", "cores", "events_per_second_per_core")


def read_measurements(path: Path) -> list[dict[str, Any]]:
    """The rows of a measurements file; a ValueError naming the file and what is wrong with it."""
    try:
        rows = json.loads(Path(path).read_text())
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON written by `nexmark run --json`: {str(path)!r} ({e})") from None
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"no measurements in {str(path)!r}: `nexmark run --json` writes a list of rows")
    for i, row in enumerate(rows):
        missing = [k for k in NEEDED if not isinstance(row, dict) or k not in row]
        if missing:
            raise ValueError(f"row {i} lacks {missing} in {str(path)!r}; write the file with `nexmark run --json`")
    return rows


def plot_measurements(path: Path, out: Path) -> None:
    """Grouped bars, one group per query and one bar per engine, on a log scale; each Darwin bar is
    labelled with its speed-up per core over Spark. Runs that failed have no bar."""
    rows = read_measurements(path)
    queries = list(dict.fromkeys(r["query"] for r in rows))
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    cores = {r["engine"]: r["cores"] for r in rows}
    width = 0.8 / len(engines)
    fig, ax = plt.subplots(figsize=(max(6.0, len(queries) * 0.8), 4.5))
    for i, engine in enumerate(engines):
        done = {r["query"]: r for r in rows if r["engine"] == engine and r["events_per_second_per_core"]}
        xs = [x for x, q in enumerate(queries) if q in done]
        label = f"{engine} ({cores[engine]} core{'s' if cores[engine] != 1 else ''})"
        bars = ax.bar([x + i * width for x in xs], [done[queries[x]]["events_per_second_per_core"] for x in xs],
                      width, label=label)
        speedups = [done[queries[x]].get("speedup_per_core") for x in xs]
        if any(speedups):
            ax.bar_label(bars, [f"{s:.1f}x" if s else "" for s in speedups], fontsize=7, rotation=90, padding=2)
    ax.set_yscale("log")
    ax.set_ylabel("events/s per core (log scale)")
    ax.set_xticks([x + width * (len(engines) - 1) / 2 for x in range(len(queries))], queries)
    rates = [r["events_per_second_per_core"] for r in rows if r["events_per_second_per_core"]]
    if rates:
        ax.set_ylim(min(rates) / 3, max(rates) * 20)  # room above the bars for their labels
    ax.set_title(f"Nexmark, {rows[0]['events']:,} events: events/s per core"
                 + ("\nlabels: Darwin's events/s per core over Spark's" if "spark" in engines else ""), fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
