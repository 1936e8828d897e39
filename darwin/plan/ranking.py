"""What a top-N and a deduplication compute, in one form both engines read.

A deduplication is a top-1: the first or the last row per key by its order (or by arrival). Rows
rank within their partition by the sort keys, rows tied on every key by arrival: the earlier
first, or for ``keep="last"`` the later first. How the kept rows' changes are emitted:

- with a rank column, per position: a position whose row changed emits the old row (-U, or -D if
  the position is now empty) and then the new one (+U, or +I if it was empty);
- without one, per row: the i-th row that left pairs with the i-th that entered (each in rank
  order) as -U/+U; rows left over leave with -D or enter with +I;
- a result that only appends (keeping the first arrival) emits its new rows without a change kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from darwin.plan import nodes as pn


@dataclass(frozen=True)
class Ranking:
    n: int
    partition: tuple[str, ...]  # the window bounds (if windowed) and the partition columns
    order: tuple[pn.SortKey, ...]
    latest_first: bool  # ties: the later row ranks first
    rank: str | None  # the column of each row's position, 1-based
    windowed: bool  # ranked per window, emitted when it closes
    updates: bool  # the output carries change kinds
    retracting: bool  # the input updates: retracted rows leave their partition

    @property
    def by_position(self) -> bool:
        return self.rank is not None


def ranking_of(node: pn.TopN | pn.Deduplicate) -> Ranking:
    retracting = pn.updating(node.input)
    if isinstance(node, pn.TopN):
        return Ranking(node.n, node.partition, node.order, False, node.rank, node.windowed, not node.windowed,
                       retracting)
    last = node.keep == "last"
    order = () if node.order is None else (pn.SortKey(node.order, descending=last),)
    return Ranking(1, node.on, order, last, None, False, not node.appends, retracting)
