"""min and max of strings, as Flink orders VARCHAR (``BinaryStringData.compareTo``): by UTF-8 bytes,
unsigned, a prefix before the longer string. They were refused ('max needs int64 or float64 or
timestamp, got string'). Compiled code holds strings as codes of an append-only pool, in the order
they came, so a kernel compares two codes by their bytes; strings that arrive later sort among the
earlier ones.

The oracle here compares the UTF-8 bytes, apart from the registry and Python's ``str`` order.
"""

from __future__ import annotations

import random

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col

# equal prefixes, the empty string, NUL, Latin-1, the last BMP character and one past it (4 UTF-8 bytes,
# a surrogate pair in UTF-16: Java's String.compareTo would put it below U+FFFF, Flink does not)
TEXTS = st.text(alphabet=st.sampled_from(["a", "b", "Z", "\x00", "é", "ÿ", "Ā", "\uffff", "\U0001F600"]), max_size=4)
VALUES = st.one_of(st.none(), TEXTS)
RUNS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def oracle(values: list[str | None]) -> tuple[str | None, str | None]:
    """(min, max) of the non-NULL values by their UTF-8 bytes; NULLs for a group of NULLs."""
    present = [v for v in values if v is not None]
    if not present:
        return None, None
    key = lambda v: v.encode("utf-8")  # noqa: E731
    return min(present, key=key), max(present, key=key)


def expected(rows: list[tuple[int, str | None]]) -> dict[int, tuple]:
    by_key: dict[int, list[str | None]] = {}
    for k, s in rows:
        by_key.setdefault(k, []).append(s)
    return {k: oracle(vs) for k, vs in by_key.items()}


def got(table: pa.Table, key: str = "k") -> dict:
    out = {}
    for r in table.to_pylist():
        assert r[key] not in out, f"key {r[key]} twice"
        out[r[key]] = (r["lo"], r["hi"])
    return out


def arrow(rows: list[tuple[int, str | None]]) -> pa.Table:
    n = len(rows)
    return pa.table({"ts": pa.array([0] * n, pa.timestamp("ms")), "k": [k for k, _ in rows],
                     "g": [f"key{k}" for k, _ in rows], "s": pa.array([s for _, s in rows], pa.string())})


EXTREMES = dict(lo=dw.min("s"), hi=dw.max("s"))


def shapes(t: pa.Table) -> dict[str, tuple[dw.Table, str]]:
    src = dw.from_arrow(t, time="ts")
    keyed_ids = dw.from_arrow(t.append_column("id", pa.array(range(t.num_rows))), time="ts")
    return {
        "window ring": (src.window(dw.Tumble("1h", on="ts")).group_by("k").agg(**EXTREMES), "k"),
        "window hash": (src.window(dw.Tumble("1h", on="ts")).group_by("g").agg(**EXTREMES), "g"),
        "sliding": (src.window(dw.Slide("2h", "1h", on="ts")).group_by("k").agg(**EXTREMES)
                    .filter(col("window_start") == -3_600_000), "k"),
        "append-only group_by": (src.group_by("k").agg(**EXTREMES), "k"),
        # an updating input (one group per row, each a +I): min/max keep every value
        "updating input": (keyed_ids.group_by("id").agg(k=dw.max("k"), s=dw.max("s")).group_by("k")
                           .agg(**EXTREMES), "k"),
        "session": (src.window(dw.Session("1h", on="ts")).group_by("k").agg(**EXTREMES), "k"),
        "beside count_distinct": (src.window(dw.Tumble("1h", on="ts")).group_by("k")
                                  .agg(d=dw.count_distinct("s"), **EXTREMES), "k"),
    }


def assert_follows_the_order(rows: list[tuple[int, str | None]], batch_size: int, parallelism: int = 1,
                             **config) -> None:
    want = expected(rows)
    for name, (q, key) in shapes(arrow(rows)).items():
        for mode in ("compiled", "interpreted"):
            if mode == "interpreted" and (parallelism > 1 or config):
                continue
            table = q.collect(dw.Config(batch_size=batch_size, mode=mode, parallelism=parallelism, **config))
            result = got(table, key)
            if key == "g":
                result = {int(k[3:]): v for k, v in result.items()}
            assert result == want, (name, mode, parallelism)


@RUNS
@given(rows=st.lists(st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=30),
       batch_size=st.integers(1, 8), seed=st.integers(0, 1000))
@example(rows=[(1, "b"), (1, "a"), (1, "ab"), (2, None), (2, ""), (3, None)], batch_size=1, seed=0)
@example(rows=[(1, "\uffff"), (1, "\U0001F600"), (1, "é"), (1, "Z")], batch_size=8, seed=0)
def test_min_and_max_of_strings_order_by_their_utf8_bytes(rows, batch_size, seed):
    """The rows as given and shuffled (so codes come in another order), in batches of any size,
    compiled and interpreted, through every state that folds min/max: the oracle's answer."""
    assert_follows_the_order(rows, batch_size)
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    assert_follows_the_order(shuffled, max(1, batch_size // 2))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=40),
       batch_size=st.integers(1, 8), parallelism=st.sampled_from([1, 2]),
       backend=st.sampled_from(["mmap", "rocksdb"]))
@example(rows=[(1, "b"), (2, "é"), (1, "a"), (2, ""), (1, "c")], batch_size=2, parallelism=2, backend="rocksdb")
def test_min_and_max_of_strings_on_every_backend_and_workers(rows, batch_size, parallelism, backend, tmp_path_factory):
    """On mmap and RocksDB (whose cache is written out past one entry), on one and two workers."""
    path = tmp_path_factory.mktemp("state")
    assert_follows_the_order(rows, batch_size, parallelism, state=backend, state_path=str(path),
                             state_delta_limit=1)
    assert_follows_the_order(rows, batch_size, 2)


def test_string_extremes_are_folded_row_by_row_not_merged():
    """A string's slot holds a pool code, which a merge of partial states cannot order: no
    pre-aggregation, no panes, no merged rings (rows go to their key's worker)."""
    t = dw.from_arrow(arrow([(1, "a"), (2, "b")]), time="ts")
    two = dw.Config(parallelism=2)
    assert "local/global" not in t.window(dw.Tumble("1s", on="ts")).group_by("g").agg(**EXTREMES).explain(two)
    assert "merged" not in t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(**EXTREMES).explain(two)
    assert "panes" not in t.window(dw.Slide("2s", "1s", on="ts")).group_by("g").agg(**EXTREMES).explain()


def test_an_updating_string_extreme_follows_retractions():
    """Over an updating input the values are kept per group: retracting the extreme gives the next
    one in text order, not in the order codes were given."""
    rows = [(0, "m"), (1, "b"), (2, "z"), (0, "a"), (2, "c"), (1, "y")]
    t = pa.table({"ts": pa.array([0] * len(rows), pa.timestamp("ms")), "id": [i for i, _ in rows],
                  "k": [1] * len(rows), "s": [s for _, s in rows]})
    latest = dw.from_arrow(t, time="ts").deduplicate("id", keep="last")
    q = latest.group_by("k").agg(**EXTREMES)
    changelogs = []
    for mode in ("compiled", "interpreted"):
        config = dw.Config(batch_size=1, mode=mode)
        assert got(q.collect(config)) == {1: ("a", "y")}, mode
        changelogs.append(q.changelog(config).to_pylist())
    assert changelogs[0] == changelogs[1]


def test_string_extremes_over_rows_and_in_barrier_windows():
    """OVER frames (folded afresh per frame) and barrier windows (folded per open window)."""
    texts = ["b", "", "é", None, "\U0001F600", "ab", "a", "\uffff"] * 3
    n = len(texts)
    t = dw.from_arrow(pa.table({"ts": pa.array(range(n), pa.timestamp("ms")), "k": [i % 2 for i in range(n)],
                                "s": texts, "cut": [i % 5 == 4 for i in range(n)]}), time="ts")
    over = t.with_columns(lo=dw.min("s").over(partition_by="k", order_by="ts", rows=(2, 0)),
                          hi=dw.max("s").over(partition_by="k", order_by="ts", rows=(2, 0)))
    barrier = t.window(dw.Barrier(col("cut"), on="ts")).group_by("k").agg(**EXTREMES)
    results = []
    for mode in ("compiled", "interpreted"):
        rows = over.collect(dw.Config(mode=mode, batch_size=3)).to_pylist()
        assert len(rows) == n
        for r in rows:
            i = int(r["ts"].timestamp() * 1000)
            assert (r["lo"], r["hi"]) == oracle([texts[j] for j in range(i + 1) if j % 2 == i % 2][-3:]), (mode, i)
        results.append(barrier.collect(dw.Config(mode=mode, batch_size=2)).to_pylist())
    assert results[0] == results[1]
    # before the first cut: "b", "é" of k=0 and "", NULL of k=1
    assert [(w["lo"], w["hi"]) for w in results[0]][:2] == [("b", "é"), ("", "")]


def _texts(n=4000):
    rng = random.Random(7)
    words = ["", "a", "ab", "b", "é", "\U0001F600", "\uffff", "zz", "a\x00"]
    return pa.table({"ts": pa.array([i * 37 % 100_000 + i * 20 for i in range(n)], pa.timestamp("ms")),
                     "k": [i % 23 for i in range(n)], "j": [i % 4 for i in range(n)],
                     "s": [None if rng.random() < 0.1 else rng.choice(words) + str(rng.randrange(50))
                           for _ in range(n)]})


@pytest.mark.parametrize("backend", ["memory", "rocksdb"])
def test_string_extremes_resume_at_other_parallelisms_to_the_one_thread_output(backend, tmp_path, monkeypatch):
    """Checkpoints of string extremes (codes in state, the pool beside them), resumed at 1, 2, 1, 3
    and 1 workers, commit the uninterrupted one-thread rows."""
    import pyarrow.parquet as pq
    from crashes import run_rescaled

    plan = dw.from_arrow(_texts(), time="ts", max_delay="5s").window(dw.Tumble("2s", on="ts")) \
        .group_by("k", "j").agg(**EXTREMES)
    expected = plan.collect(dw.Config(batch_size=250))
    runs = [(1, 4), (2, 5), (1, 3), (3, 4), (1, None)]
    settings = {} if backend == "memory" else {"state": backend, "state_path": str(tmp_path / "state")}
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, runs, **settings)
    assert result.resumed_from is not None
    assert pq.read_table(tmp_path / "out").to_pylist() == expected.to_pylist()
