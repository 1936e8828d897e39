"""Chart of `nexmark run --json` measurements."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_measurements(path: Path, out: Path) -> None:
    rows = json.loads(Path(path).read_text())
    queries = list(dict.fromkeys(r["query"] for r in rows))
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    width = 0.8 / max(len(engines), 1)
    fig, ax = plt.subplots(figsize=(max(6, len(queries) * 1.2), 4))
    for i, engine in enumerate(engines):
        rate = {r["query"]: r["events_per_second"] for r in rows if r["engine"] == engine}
        xs = [q for q in range(len(queries)) if queries[q] in rate]
        ax.bar([x + i * width for x in xs], [rate[queries[x]] for x in xs], width, label=engine)
    ax.set_yscale("log")
    ax.set_ylabel("events/s (log scale)")
    ax.set_xticks([x + width * (len(engines) - 1) / 2 for x in range(len(queries))], queries)
    ax.set_title(f"Nexmark, {rows[0]['events']:,} events" if rows else "Nexmark")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
