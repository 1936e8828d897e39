"""min and max of booleans, FALSE before TRUE, as Flink and Spark order BOOLEAN: MIN is TRUE only if
every value is (an AND skipping NULLs), MAX is TRUE if any is (an OR). They were refused ('min needs
int64 or float64 or timestamp or string, got bool'). The oracle is Python's ``all``/``any``.
"""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col

RUNS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ROWS = st.lists(st.tuples(st.integers(0, 3), st.one_of(st.none(), st.booleans())), min_size=1, max_size=30)
EXTREMES = dict(lo=dw.min("b"), hi=dw.max("b"))


def oracle(values: list[bool | None]) -> tuple[bool | None, bool | None]:
    present = [v for v in values if v is not None]
    return (all(present), any(present)) if present else (None, None)


def expected(rows: list[tuple[int, bool | None]]) -> dict[int, tuple]:
    by_key: dict[int, list[bool | None]] = {}
    for k, b in rows:
        by_key.setdefault(k, []).append(b)
    return {k: oracle(vs) for k, vs in by_key.items()}


def arrow(rows: list[tuple[int, bool | None]]) -> pa.Table:
    n = len(rows)
    return pa.table({"ts": pa.array([0] * n, pa.timestamp("ms")), "k": [k for k, _ in rows],
                     "g": [f"key{k}" for k, _ in rows], "id": range(n), "b": pa.array([b for _, b in rows], pa.bool_()),
                     "cut": [False] * n})


def shapes(t: pa.Table) -> dict[str, dw.Table]:
    """Every state that folds min/max, each giving one row per k with lo and hi."""
    src = dw.from_arrow(t, time="ts")
    cut = pa.table({"ts": pa.array([0], pa.timestamp("ms")), "k": [-1], "g": [""], "id": [-1],
                    "b": pa.array([None], pa.bool_()), "cut": [True]})
    closed = dw.from_arrow(pa.concat_tables([t, cut.cast(t.schema)]), time="ts")  # a barrier after the rows
    return {
        "window ring": src.window(dw.Tumble("1h", on="ts")).group_by("k").agg(**EXTREMES),
        "window hash": src.window(dw.Tumble("1h", on="ts")).group_by("g").agg(k=dw.max("k"), **EXTREMES),
        "sliding": src.window(dw.Slide("2h", "1h", on="ts")).group_by("k").agg(**EXTREMES)
        .filter(col("window_start") == -3_600_000),
        "append-only group_by": src.group_by("k").agg(**EXTREMES),
        # an updating input (one group per row, each a +I): min/max keep every value
        "updating input": src.group_by("id").agg(k=dw.max("k"), b=dw.max("b")).group_by("k").agg(**EXTREMES),
        "session": src.window(dw.Session("1h", on="ts")).group_by("k").agg(**EXTREMES),
        "beside count_distinct": src.window(dw.Tumble("1h", on="ts")).group_by("k")
        .agg(d=dw.count_distinct("b"), **EXTREMES),
        "barrier": closed.window(dw.Barrier(col("cut"), on="ts")).group_by("k").agg(**EXTREMES),
    }


def assert_follows_the_order(rows: list[tuple[int, bool | None]], batch_size: int, parallelism: int = 1,
                             **config) -> None:
    want = expected(rows)
    for name, q in shapes(arrow(rows)).items():
        for mode in ("compiled", "interpreted"):
            if mode == "interpreted" and (parallelism > 1 or config):
                continue
            table = q.collect(dw.Config(batch_size=batch_size, mode=mode, parallelism=parallelism, **config))
            result = {r["k"]: (r["lo"], r["hi"]) for r in table.to_pylist()}
            assert len(result) == table.num_rows and result == want, (name, mode, parallelism)


@RUNS
@given(rows=ROWS, batch_size=st.integers(1, 8))
@example(rows=[(1, True), (1, None), (1, False), (2, True), (2, None), (3, None), (0, False)], batch_size=1)
def test_min_and_max_of_booleans_put_false_first(rows, batch_size):
    """Compiled and interpreted, in batches of any size, through every state that folds min/max."""
    assert_follows_the_order(rows, batch_size)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=ROWS, batch_size=st.integers(1, 8), backend=st.sampled_from(["mmap", "rocksdb"]))
@example(rows=[(1, True), (2, False), (1, False), (2, None), (1, True)], batch_size=2, backend="rocksdb")
def test_min_and_max_of_booleans_on_every_backend_and_workers(rows, batch_size, backend, tmp_path_factory):
    """On mmap and RocksDB (whose cache is written out past one entry), on two workers (merged partial
    extremes: a boolean's slot, 0 or 1, merges as an integer's)."""
    path = tmp_path_factory.mktemp("state")
    assert_follows_the_order(rows, batch_size, 2, state=backend, state_path=str(path), state_delta_limit=1)


def test_boolean_extremes_follow_retractions_and_over_frames():
    """Over an updating input a retracted extreme gives way to the next one; an OVER frame folds its rows."""
    rows = [(0, True), (1, False), (0, False), (1, True), (0, True)]  # (id, b): the last b of each id counts
    t = pa.table({"ts": pa.array(range(len(rows)), pa.timestamp("ms")), "id": [i for i, _ in rows],
                  "k": [1] * len(rows), "b": [b for _, b in rows]})
    src = dw.from_arrow(t, time="ts")
    latest = src.deduplicate("id", keep="last").group_by("k").agg(**EXTREMES)
    over = src.with_columns(lo=dw.min("b").over(partition_by="k", order_by="ts", rows=(1, 0)),
                            hi=dw.max("b").over(partition_by="k", order_by="ts", rows=(1, 0)))
    changelogs = []
    for mode in ("compiled", "interpreted"):
        config = dw.Config(batch_size=1, mode=mode)
        assert latest.collect(config).to_pylist() == [{"k": 1, "lo": True, "hi": True}], mode
        changelogs.append(latest.changelog(config).to_pylist())
        assert [(r["lo"], r["hi"]) for r in over.collect(config).to_pylist()] == \
            [(True, True), (False, True), (False, False), (False, True), (True, True)], mode
    assert changelogs[0] == changelogs[1]
    assert [(r["op"], r["lo"], r["hi"]) for r in changelogs[0]] == [
        ("+I", True, True), ("-U", True, True), ("+U", False, True), ("-U", False, True), ("+U", False, False),
        ("-U", False, False), ("+U", False, True), ("-U", False, True), ("+U", True, True)]
