"""min and max of floats follow one total order on every engine, state layout and input kind: Java's
``Double.compare``, as Spark orders doubles -- NaN above every number (every NaN equal), -0.0 below
0.0. So the result does not depend on the order rows arrive in, on batch boundaries or on the number
of workers. (The append-only fold kept a NaN seen first, and the first of two equal zeros: the
answer depended on row order, and differed from the updating input's and Spark's.)

The oracle here is written apart from the registry's ``order_key``: NaN-free values sorted by
(value, sign), NaN handled first.
"""

from __future__ import annotations

import math
import random
import struct

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import darwin as dw
from darwin import col

NAN = float("nan")
NEGATIVE_NAN = struct.unpack("<d", struct.pack("<Q", 0xFFF8_0000_0000_0001))[0]  # sign bit set, a payload
INF = float("inf")
SPECIAL = [NAN, NEGATIVE_NAN, -0.0, 0.0, INF, -INF, 1.0, -1.0, 2.5, 5e-324, -5e-324]
VALUES = st.one_of(st.sampled_from(SPECIAL), st.floats(allow_nan=True, allow_infinity=True))
RUNS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def oracle(values: list[float], smaller: bool) -> float:
    """min: the least number, NaN only if every value is one; max: NaN if any value is, else the
    greatest number; -0.0 below 0.0 in both."""
    numbers = [v for v in values if not math.isnan(v)]
    if smaller and not numbers or not smaller and len(numbers) < len(values):
        return NAN
    return (min if smaller else max)(numbers, key=lambda v: (v, math.copysign(1.0, v)))


def exact(v):
    """A value as written out: every NaN one, -0.0 apart from 0.0."""
    return v if not isinstance(v, float) else "nan" if math.isnan(v) else repr(v)


def expected(rows: list[tuple[int, float]]) -> dict[int, tuple]:
    by_key: dict[int, list[float]] = {}
    for k, f in rows:
        by_key.setdefault(k, []).append(f)
    return {k: (exact(oracle(vs, True)), exact(oracle(vs, False))) for k, vs in by_key.items()}


def got(table: pa.Table, key: str = "k") -> dict:
    out = {}
    for r in table.to_pylist():
        assert r[key] not in out, f"key {r[key]} twice"
        out[r[key]] = (exact(r["lo"]), exact(r["hi"]))
    return out


def arrow(rows: list[tuple[int, float]], times: list[int] | None = None) -> pa.Table:
    n = len(rows)
    return pa.table({"ts": pa.array(times if times is not None else [0] * n, pa.timestamp("ms")),
                     "k": [k for k, _ in rows], "s": [f"key{k}" for k, _ in rows], "f": [f for _, f in rows]})


EXTREMES = dict(lo=dw.min("f"), hi=dw.max("f"))


def windowed(t: pa.Table, key: str = "k") -> dw.Table:
    """One tumbling window: an int key gets a window ring (merged rings on workers), a string key a hash
    table (pre-aggregated slices on workers)."""
    return dw.from_arrow(t, time="ts").window(dw.Tumble("1h", on="ts")).group_by(key).agg(**EXTREMES)


def shapes(t: pa.Table) -> dict[str, tuple[dw.Table, str]]:
    src = dw.from_arrow(t, time="ts")
    keyed_ids = dw.from_arrow(t.append_column("id", pa.array(range(t.num_rows))), time="ts")
    return {
        "window ring": (windowed(t), "k"),
        "window hash": (windowed(t, "s"), "s"),
        # every row is in two windows: sliding windows fold a row into its pane, and combine panes
        "sliding panes": (src.window(dw.Slide("2h", "1h", on="ts")).group_by("k").agg(**EXTREMES)
                          .filter(col("window_start") == -3_600_000), "k"),
        "append-only group_by": (src.group_by("k").agg(**EXTREMES), "k"),
        # an updating input (one group per row, each a +I): min/max keep every value
        "updating input": (keyed_ids.group_by("id").agg(k=dw.max("k"), f=dw.max("f")).group_by("k")
                           .agg(**EXTREMES), "k"),
        "session": (src.window(dw.Session("1h", on="ts")).group_by("k").agg(**EXTREMES), "k"),
    }


def assert_follows_the_order(rows: list[tuple[int, float]], batch_size: int, parallelism: int = 1) -> None:
    want = expected(rows)
    for name, (q, key) in shapes(arrow(rows)).items():
        for mode in ("compiled", "interpreted"):
            if mode == "interpreted" and parallelism > 1:
                continue
            config = dw.Config(batch_size=batch_size, mode=mode, parallelism=parallelism)
            table = q.collect(config)
            result = got(table, key)
            if key == "s":
                result = {int(k[3:]): v for k, v in result.items()}
            assert result == want, (name, mode, parallelism)


@RUNS
@given(rows=st.lists(st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=30),
       batch_size=st.integers(1, 8), seed=st.integers(0, 1000))
@example(rows=[(1, 1.0), (1, NAN), (1, 5.0), (2, NAN), (2, 1.0), (2, 5.0)], batch_size=8, seed=0)
@example(rows=[(1, 0.0), (1, -0.0), (2, -0.0), (2, 0.0)], batch_size=1, seed=0)
def test_min_and_max_of_floats_do_not_depend_on_row_order(rows, batch_size, seed):
    """The rows as given and shuffled, in batches of any size, compiled and interpreted, through every
    state that folds min/max: the same answer, the oracle's."""
    assert_follows_the_order(rows, batch_size)
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    assert_follows_the_order(shuffled, max(1, batch_size // 2))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(st.integers(0, 3), VALUES), min_size=1, max_size=40),
       batch_size=st.integers(1, 8), parallelism=st.sampled_from([2, 3, 4]))
@example(rows=[(1, 1.0), (2, -0.0), (1, NAN), (2, 0.0), (1, 5.0)], batch_size=2, parallelism=2)
def test_min_and_max_of_floats_do_not_depend_on_the_workers(rows, batch_size, parallelism):
    """Merged window rings, pre-aggregated slices and routed rows combine partial extremes: the
    answer is one fold's."""
    assert_follows_the_order(rows, batch_size, parallelism)


def test_float_extremes_merge_exactly_so_workers_pre_aggregate_and_windows_share_panes():
    t = dw.from_arrow(arrow([(1, 0.5), (2, 1.5)]), time="ts")
    two = dw.Config(parallelism=2)
    hashed = t.window(dw.Tumble("1s", on="ts")).group_by("s")
    assert "local/global pre-aggregation" in hashed.agg(**EXTREMES).explain(two)
    assert "window rings merged" in t.window(dw.Tumble("1s", on="ts")).group_by("k").agg(**EXTREMES).explain(two)
    assert "panes" in t.window(dw.Slide("2s", "1s", on="ts")).group_by("s").agg(**EXTREMES).explain()
    # a float sum still rounds by how rows were grouped
    assert "local/global" not in hashed.agg(total=dw.sum("f"), **EXTREMES).explain(two)


@pytest.mark.parametrize("first, rows", [
    ("min", [(0, -0.0), (1, 0.0)]),  # the second level's max moves from -0.0 to 0.0, and its last change
    ("min", [(0, -0.0), (1, 0.0), (1, -5.0)]),  # 0.0 is taken back: max is -0.0 again
    ("min", [(0, 0.0), (1, -0.0), (0, -3.0)]),
    ("max", [(0, 0.0), (1, -0.0), (1, NAN), (0, NAN)]),
])
def test_an_updating_extreme_that_changes_only_its_sign_is_emitted(first, rows):
    """Over an updating input (a first aggregation per id, whose rows change), -0.0 and 0.0 are two
    values of min/max: a group whose extreme moves from one to the other emits the change (NaN
    still equals NaN), so the final table holds the extreme of what is left."""
    t = pa.table({"ts": pa.array([0] * len(rows), pa.timestamp("ms")), "id": [i for i, _ in rows],
                  "k": [1] * len(rows), "f": [f for _, f in rows]})
    per_id = dw.from_arrow(t, time="ts").group_by("id").agg(k=dw.max("k"), f=getattr(dw, first)("f"))
    q = per_id.group_by("k").agg(**EXTREMES)
    values: dict[int, list[float]] = {}
    for i, f in rows:
        values.setdefault(i, []).append(f)
    firsts = [oracle(vs, first == "min") for vs in values.values()]
    want = {1: (exact(oracle(firsts, True)), exact(oracle(firsts, False)))}
    changelogs = []
    for mode in ("compiled", "interpreted"):
        config = dw.Config(batch_size=1, mode=mode)
        assert got(q.collect(config)) == want, mode
        changelogs.append([tuple(exact(v) for v in r.values()) for r in q.changelog(config).to_pylist()])
    assert changelogs[0] == changelogs[1]


def _floats(n=4000):
    """Rows whose extremes are NaN or a zero of either sign in many windows."""
    rng = random.Random(11)
    return pa.table({"ts": pa.array([i * 37 % 100_000 + i * 20 for i in range(n)], pa.timestamp("ms")),
                     "k": [i % 41 for i in range(n)], "j": [i % 5 for i in range(n)],
                     "f": [rng.choice([0.0, -0.0, NAN, -1.0, -INF, NEGATIVE_NAN]) for _ in range(n)]})


RESCALED = {  # what one thread keeps, what two workers keep: now that float extremes merge exactly
    "merged rings": (lambda t: t.window(dw.Tumble("2s", on="ts")).group_by("k"), "state=ring", "window rings merged"),
    "ring panes": (lambda t: t.window(dw.Slide("4s", every="1s", on="ts")).group_by("k"), "state=ring panes",
                   "window rings merged"),
    "pre-aggregated": (lambda t: t.window(dw.Tumble("2s", on="ts")).group_by("k", "j"), "state=hash",
                       "local/global pre-aggregation"),
}


@pytest.mark.parametrize("name", sorted(RESCALED))
def test_float_extremes_resume_at_other_parallelisms_to_the_one_thread_output(name, tmp_path, monkeypatch):
    """Checkpoints of merged rings, panes and pre-aggregated tables of float extremes, resumed at
    1, 2, 1, 3 and 1 workers, commit the uninterrupted one-thread rows, zero signs and NaNs included."""
    import pyarrow.parquet as pq
    from crashes import run_rescaled

    group, one, two = RESCALED[name]
    plan = group(dw.from_arrow(_floats(), time="ts", max_delay="5s")).agg(**EXTREMES)
    assert one in plan.explain(dw.Config(parallelism=1)) and two in plan.explain(dw.Config(parallelism=2))
    expected = plan.collect(dw.Config(batch_size=250))
    runs = [(1, 4), (2, 5), (1, 3), (3, 4), (1, None)]
    result = run_rescaled(plan, tmp_path / "out", tmp_path / "chk", monkeypatch, runs)
    assert result.resumed_from is not None
    got = pq.read_table(tmp_path / "out")
    assert [tuple(map(exact, r.values())) for r in got.to_pylist()] == \
        [tuple(map(exact, r.values())) for r in expected.to_pylist()]
    assert {exact(v) for v in expected.column("hi").to_pylist()} >= {"nan", "-0.0", "0.0"}
