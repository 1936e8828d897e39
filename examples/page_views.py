"""The page-view join: every page view with the latest metadata of its page.

Nearly all views go to two pages, so splitting the work by page would leave all but two workers
idle: the parallelism has to come from within a key. A metadata update of a page is a barrier of
that page only (``dw.Barrier(..., by="page")``): it closes the page's window, and every view of
the next window reads the metadata that update carries (``.table(page_category="category")``).
The state is one metadata row per page, not the views: between two updates the views of a page
are independent of each other. Run it with ``python examples/page_views.py [parallelism]``.

On several workers each batch is cut into slices and every worker numbers its slice's views from
a fork of the per-page metadata (the state before the batch moved on by the updates of the slices
before its own), so the views of one hot page are processed by all workers at once
(docs/decisions.md, "Barrier windows").
"""

from __future__ import annotations

import random
import sys

import pyarrow as pa

import darwin as dw
from darwin import col

PAGES, CATEGORIES = 100, ["news", "sport", "music", "travel", "food"]
HOT = (0, 1)  # the two pages nearly every view goes to


def events(n: int = 10_000, seed: int = 5) -> pa.Table:
    """Views (95% on the two hot pages) with, about every 500 events, a metadata update of a page
    (half of them of a hot page); every page's first metadata comes before the views."""
    rng = random.Random(seed)
    kind: list[str] = []
    page: list[int] = []
    category: list[str | None] = []
    user: list[int | None] = []

    def add(k: str, p: int, c: str | None, u: int | None) -> None:
        kind.append(k)
        page.append(p)
        category.append(c)
        user.append(u)

    for p in range(PAGES):
        add("meta", p, rng.choice(CATEGORIES), None)
    for _ in range(n):
        if rng.random() < 0.002:
            add("meta", rng.choice(HOT) if rng.random() < 0.5 else rng.randrange(PAGES), rng.choice(CATEGORIES), None)
        else:
            add("view", rng.choice(HOT) if rng.random() < 0.95 else rng.randrange(PAGES), None, rng.randrange(1000))
    rows = len(kind)
    return pa.table({"t": pa.array(range(rows), pa.timestamp("ms")), "id": list(range(rows)), "kind": kind,
                     "page": page, "category": pa.array(category, pa.string()), "user": pa.array(user, pa.int64())})


def query(table: pa.Table) -> dw.Table:
    events_ = dw.from_arrow(table, time="t", name="events")
    rows = events_.window(dw.Barrier(col("kind") == "meta", by="page")).table(page_category="category")
    views = rows.filter((col("kind") == "view") & col("page_category").is_not_null())  # a page with metadata
    return views.select("id", "page", "user", category=col("page_category"))


def expected(table: pa.Table) -> list[tuple[int, str]]:
    """(view id, category of its page when it was viewed), in plain Python."""
    current: dict[int, str] = {}
    out = []
    for row in table.to_pylist():
        if row["kind"] == "meta":
            current[row["page"]] = row["category"]
        elif row["page"] in current:
            out.append((row["id"], current[row["page"]]))
    return out


def main(parallelism: int = 1) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """Each view's (id, category) as Darwin joins them (in id order), and the plain-Python ones."""
    table = events()
    result = query(table).collect(dw.Config(parallelism=parallelism, batch_size=4096))
    got = sorted(zip(result.column("id").to_pylist(), result.column("category").to_pylist()))
    return got, expected(table)


if __name__ == "__main__":
    got, want = main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    print(f"{len(got)} views joined with their page's latest category; the first: {got[:3]}")
    print("check against plain Python:", "OK" if got == want else "MISMATCH")
    sys.exit(0 if got == want else 1)
