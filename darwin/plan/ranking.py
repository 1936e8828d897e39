"""What a top-N and a deduplication compute, in one form both engines read.

A deduplication is a top-1: the first or the last row per key by its order (or by arrival). Rows
rank within their partition by the sort keys, rows tied on every key by arrival: the earlier
first, or for ``keep="last"`` the later first. How the kept rows' changes are emitted:

- with a rank column, per position: a position whose row changed emits the old row (-U, or -D if
  the position is now empty) and then the new one (+U, or +I if it was empty);
- without one, per row: the i-th row that left pairs with the i-th that entered (each in rank
  order) as -U/+U; rows left over leave with -D or enter with +I. Over an updating input, where a
  key's old and new rows may be two rows of one partition (``n`` > 1) or sit in two partitions
  (the input's unique key does not fix the partition), every row that left, of every partition
  the batch touched, comes before every row that entered (``retractions_first``): a key's old row
  is withdrawn before its new one is added, as an upsert by the key needs (paired per partition,
  a key that moved to another partition, or overtook another row, was added before it was
  withdrawn). A deduplication, or a top-1 whose partition the key fixes, keeps each partition's
  -U next to its +U;
- a result that only appends (keeping the first arrival) emits its new rows without a change kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from darwin.plan import nodes as pn
from darwin.plan.keys import unique_key


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
    retractions_first: bool = False  # per row: a batch's rows that left all go before those that entered

    @property
    def by_position(self) -> bool:
        return self.rank is not None


def ranking_of(node: pn.TopN | pn.Deduplicate) -> Ranking:
    retracting = pn.updating(node.input)
    if isinstance(node, pn.TopN):
        updates = not node.windowed
        return Ranking(node.n, node.partition, node.order, False, node.rank, node.windowed, updates, retracting,
                       updates and node.rank is None and retracting and _rows_of_a_key_may_move(node))
    last = node.keep == "last"
    order = () if node.order is None else (pn.SortKey(node.order, descending=last),)
    return Ranking(1, node.on, order, last, None, False, not node.appends, retracting)


def _rows_of_a_key_may_move(node: pn.TopN) -> bool:
    """Over an updating input (an appending one never replaces a key's row), whether a key's old
    and new rows may be two rows of one partition or sit in two partitions: with room for several
    rows, or when the input's unique key (the result's, ``plan.keys``) does not fix the partition.
    A top-1 over an input without a known key is keyed by its partition."""
    if node.n > 1:
        return True
    key = unique_key(node.input)
    return key is not None and not set(node.partition) <= set(key)
