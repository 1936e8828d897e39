"""Fraud detection: transactions checked against a model that rule events retrain.

Transactions of many accounts arrive with, now and then, a ``rule`` event. A rule event is a
barrier: it closes the window of every account at once, and each account's summary of the
window (count and mean amount), kept by whichever worker owns the account, is joined into the
model that checks the transactions after it. A transaction is flagged when its account's model
has at least ``MIN_HISTORY`` transactions and the amount is more than ``FACTOR`` times their mean.
Run it with ``python examples/fraud_detection.py [parallelism]``.
"""

from __future__ import annotations

import random
import sys

import pyarrow as pa

import darwin as dw
from darwin import col

ACCOUNTS = 50
MIN_HISTORY, FACTOR = 3, 4.0


def events(n: int = 20_000, seed: int = 11) -> pa.Table:
    """Transactions of random accounts (each with its own usual amount, 1 in 200 a fraud of 10x
    to 30x that), with a rule event about every 2,000 events."""
    rng = random.Random(seed)
    usual = [rng.uniform(5, 200) for _ in range(ACCOUNTS)]
    kind, account, amount = [], [], []
    for _ in range(n):
        a = rng.randrange(ACCOUNTS)
        kind.append("rule" if rng.random() < 0.0005 else "tx")
        account.append(a)
        scale = rng.uniform(10, 30) if rng.random() < 0.005 else rng.uniform(0.5, 1.5)
        amount.append(round(usual[a] * scale, 2))
    return pa.table({"t": pa.array(range(0, n * 5, 5), pa.timestamp("ms")), "id": list(range(n)),
                     "kind": kind, "account": account, "amount": amount})


def query(table: pa.Table) -> dw.Table:
    events_ = dw.from_arrow(table, time="t", name="events")
    windows = events_.window(dw.Barrier(col("kind") == "rule", on="t"))
    # retrained at each rule: every account's summary of the window it closes, for the window after it
    model = windows.group_by("account").agg(history=dw.count(), mean=dw.avg("amount")) \
        .select("account", "history", "mean", applies_to=col("window_id") + 1)
    transactions = windows.table().filter(col("kind") == "tx").select("id", "account", "amount", "window_id")
    checked = transactions.join(model, on=[("account", "account"), ("window_id", "applies_to")])
    return checked.filter((col("history") >= MIN_HISTORY) & (col("amount") > col("mean") * FACTOR)) \
        .select("id", "account", "amount", "mean", "window_id")


def expected(table: pa.Table) -> list[int]:
    """The flagged transactions' ids, in plain Python."""
    flagged, model, window = [], {}, {}
    for row in table.to_pylist():
        if row["kind"] == "rule":
            model = {a: (len(xs), sum(xs) / len(xs)) for a, xs in window.items()}
            window = {}
            continue
        history, mean = model.get(row["account"], (0, 0.0))
        if history >= MIN_HISTORY and row["amount"] > mean * FACTOR:
            flagged.append(row["id"])
        window.setdefault(row["account"], []).append(row["amount"])
    return flagged


def main(parallelism: int = 1) -> tuple[list[int], list[int]]:
    """The ids of the transactions Darwin flags (in id order) and the plain-Python ones."""
    table = events()
    result = query(table).collect(dw.Config(parallelism=parallelism, batch_size=4096))
    return sorted(result.column("id").to_pylist()), expected(table)


if __name__ == "__main__":
    got, want = main(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
    print(f"{len(got)} transactions flagged, e.g. ids {got[:10]}")
    print("check against plain Python:", "OK" if got == want else "MISMATCH")
    sys.exit(0 if got == want else 1)
