"""Updating aggregations (group_by without a window): the compiled engine against the reference
interpreter, changelogs compared in order; and the final table against a plain Python group-by."""

from __future__ import annotations

import math
from functools import partial

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_joins import HOW, SETTINGS, STATES, assert_agree, streams

import darwin as dw
from darwin import col
from darwin.errors import PlanError
from darwin.runtime import kept_values

AGGS = {"n": dw.count(), "nv": dw.count("v"), "total": dw.sum("v"), "mean": dw.avg("v"), "low": dw.min("v"),
        "high": dw.max("v")}


@st.composite
def floats(draw) -> dw.Table:
    """Float keys and values with NULLs, NaN, -0.0 and 0.0."""
    n = draw(st.integers(0, 25))
    pick = st.sampled_from([None, math.nan, -0.0, 0.0, 1.5, -2.25, 7.0])
    keys = draw(st.lists(pick, min_size=n, max_size=n))
    values = draw(st.lists(pick, min_size=n, max_size=n))
    return dw.from_arrow(pa.table({"f": pa.array(keys, pa.float64()), "x": pa.array(values, pa.float64())}),
                         name="F")


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_group_aggregations_agree(left, batch):
    assert_agree(left.group_by("k").agg(**AGGS), batch)
    assert_agree(left.group_by("s", "k").agg(n=dw.count(), high=dw.max("t")), batch)
    assert_agree(left.agg(n=dw.count(), total=dw.sum("v")), batch)  # one global row, updated


@SETTINGS
@given(table=floats(), batch=st.integers(1, 6))
def test_float_keys_and_values_agree(table, batch):
    assert_agree(table.group_by("f").agg(n=dw.count(), s=dw.sum("x"), a=dw.avg("x"), lo=dw.min("x"),
                                         hi=dw.max("x")), batch)


@SETTINGS
@given(left=streams("L"), right=streams("R"), how=st.sampled_from(HOW[1:]), batch=st.integers(1, 8),
       state=st.sampled_from(STATES))
def test_aggregations_over_an_outer_join_retract(left, right, how, batch, state):
    """An outer join retracts its NULL-padded rows: every aggregate takes them back."""
    joined = left.join(right, on=[("k", "k")], how=how)
    assert_agree(joined.group_by("k").agg(n=dw.count(), nv=dw.count("v_right"), total=dw.sum("v_right"),
                                          mean=dw.avg("v_right"), low=dw.min("v_right"), high=dw.max("v_right")),
                 batch, state)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_aggregation_over_an_updating_aggregation_agrees(left, batch):
    """q4's shape: a maximum per key, then the average (and the extremes) of those maxima per group."""
    best = left.group_by("k", "s").agg(high=dw.max("v"))
    assert_agree(best.group_by("s").agg(mean=dw.avg("high"), n=dw.count(), low=dw.min("high"),
                                        high=dw.max("high")), batch)
    assert_agree(best.filter(col("high") > 0).select("s", "high"), batch)


@st.composite
def moving_values(draw) -> dw.Table:
    """Rows of up to 40 keys with an integer, a float (NaN, both zeros, infinities), a string (a
    prefix, the empty string, code points past the BMP) and a boolean: a count per key moves each
    key's row from group to group, taking its values out of one (often its extreme) into another."""
    n = draw(st.integers(0, 60))
    column = partial(st.lists, min_size=n, max_size=n)
    keys = draw(column(st.integers(0, 39)))
    ints = draw(column(st.one_of(st.none(), st.integers(-3, 3))))
    floats = draw(column(st.sampled_from([None, math.nan, -0.0, 0.0, 1.5, -2.25, math.inf, -math.inf])))
    texts = draw(column(st.sampled_from([None, "", "a", "ab", "b", "é", "\U0001F600", "\uffff", "a\x00"])))
    flags = draw(column(st.sampled_from([None, True, False])))
    return dw.from_arrow(pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(ints, pa.int64()),
                                   "f": pa.array(floats, pa.float64()), "s": pa.array(texts, pa.string()),
                                   "b": pa.array(flags, pa.bool_())}), name="M")


@SETTINGS
@given(table=moving_values(), batch=st.integers(1, 8), state=st.sampled_from(STATES),
       entries=st.sampled_from([4, 2048]))
def test_extremes_over_an_updating_input_find_the_next_one_when_theirs_is_taken_back(table, batch, state, entries):
    """min/max over an updating input keep every value of a group with its count; a retraction of
    the extreme walks the group's values for the next one. With a table of 4 entries the kept values
    are rebuilt (and grown) within batches, with values left at a count of 0 among them."""
    per_key = table.group_by("k").agg(n=dw.count(), v=dw.max("v"), f=dw.min("f"), s=dw.max("s"), b=dw.min("b"))
    q = per_key.group_by(c=col("n") % 3).agg(
        lo=dw.min("k"), hi=dw.max("k"), lv=dw.min("v"), hv=dw.max("v"), lf=dw.min("f"), hf=dw.max("f"),
        ls=dw.min("s"), hs=dw.max("s"), lb=dw.min("b"), hb=dw.max("b"), n=dw.count())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(kept_values, "INITIAL_ENTRIES", entries)
        assert_agree(q, batch, state)


@SETTINGS
@given(left=streams("L"), batch=st.integers(1, 8))
def test_the_final_table_is_the_group_by_of_all_rows(left, batch):
    result = left.group_by("k").agg(n=dw.count(), total=dw.sum("v")).collect(dw.Config(batch_size=batch))
    rows = left.plan.source.table.to_pylist()
    expected: dict = {}
    for r in rows:
        n, total = expected.get(r["k"], (0, 0))
        expected[r["k"]] = (n + 1, total + r["v"])
    assert {r["k"]: (r["n"], r["total"]) for r in result.to_pylist()} == expected


def test_changes_follow_each_batch():
    t = dw.from_arrow(pa.table({"k": [1, 2, 1, 1], "v": [10, 20, 30, 5]}))
    q = t.group_by("k").agg(total=dw.sum("v"), high=dw.max("v"))
    changes = q.changelog(dw.Config(batch_size=2)).to_pylist()
    assert [(c["op"], c["k"], c["total"], c["high"]) for c in changes] == [
        ("+I", 1, 10, 10), ("+I", 2, 20, 20), ("-U", 1, 10, 10), ("+U", 1, 45, 30)]
    # the final table: rows still standing, in the order they were last inserted or updated
    assert q.collect(dw.Config(batch_size=2)).to_pylist() == [{"k": 2, "total": 20, "high": 20},
                                                             {"k": 1, "total": 45, "high": 30}]
    # an unchanged result emits nothing; an emptied group is deleted
    counted = q.group_by("high").agg(n=dw.count())
    assert [c["op"] for c in counted.changelog(dw.Config(batch_size=2)).to_pylist()] == ["+I", "+I", "-D", "+I"]


def test_group_by_takes_named_expressions():
    t = dw.from_arrow(pa.table({"v": [1, 12, 25, 3]}))
    out = t.group_by(tens=col("v") // 10).agg(n=dw.count()).collect()
    assert sorted(out.to_pylist(), key=lambda r: r["tens"]) == [{"tens": 0, "n": 2}, {"tens": 1, "n": 1},
                                                                 {"tens": 2, "n": 1}]


def test_windowed_aggregation_over_an_updating_result_is_refused():
    t = dw.from_arrow(pa.table({"k": [1], "t": pa.array([0], pa.timestamp("ms"))}), time="t")
    best = t.group_by("k").agg(last=dw.max("t"))
    with pytest.raises(dw.errors.UnsupportedError, match="updating result"):
        best.window(dw.Tumble("1s", on="last")).agg(n=dw.count())
    with pytest.raises(PlanError, match="also a group key"):
        t.group_by("k").agg(k=dw.count())



@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
@pytest.mark.parametrize(("later", "expected"), [
    ([math.nan, 0.0], 5.0),  # a NaN taken back leaves the sum of the values still held
    ([math.inf, 0.0], 5.0),
    ([-math.inf, 1.0], 6.0),
    ([math.inf, -math.inf], -math.inf),  # the group still holds an infinity
    ([math.nan, math.inf], math.inf),
    ([math.inf, math.nan, 2.0], 7.0),
    ([math.nan, math.inf, -math.inf, 2.5, -1.0], 4.0),
])
def test_a_float_sum_over_an_updating_input_forgets_a_retracted_nan_or_infinity(mode, later, expected):
    """Key 2 keeps 5.0; key 1's latest value changes (-U the old one, +U the new): the sum and average
    of the latest values are those of the values held, as a fresh sum gives. Subtracting a retracted
    NaN or infinity (``x - nan``, ``inf - inf``) had left NaN for good."""
    t = dw.from_arrow(pa.table({"k": [2] + [1] * len(later), "f": [5.0, *later]}), name="T")
    latest = t.deduplicate(on="k", keep="last")
    q = latest.agg(total=dw.sum("f"), mean=dw.avg("f"), n=dw.count(), lo=dw.min("f"))
    rows = q.collect(dw.Config(batch_size=1, mode=mode)).to_pylist()
    assert [(r["n"], r["lo"]) for r in rows] == [(2, min(5.0, later[-1]))]
    assert (rows[0]["total"], rows[0]["mean"]) == (expected, expected / 2)


@pytest.mark.parametrize("mode", ["compiled", "interpreted"])
@pytest.mark.parametrize("state", ["memory", "rocksdb"])
def test_an_integer_average_takes_back_exactly_what_it_added(mode, state, tmp_path):
    """Sums per k are 2**62 + ... : k=1 holds 2**62 then 0 (its -2**62 arrives), k=2 holds 1. The
    average of the sums is 0.5. It summed in float64, where 2**62 + 1 is 2**62: read one row at a
    time it gave 0.0 (the 1 was absorbed, then 2**62 taken back), read whole 0.5. A windowed
    average of 2**62, 1, -2**62 gave 0.0 for 1/3 the same way."""
    t = pa.table({"ts": pa.array(range(3), pa.timestamp("ms")), "k": [1, 2, 1], "a": pa.array([2**62, 1, -2**62])})
    source = dw.from_arrow(t, time="ts", name="T")
    sums = source.group_by("k").agg(s=dw.sum("a")).agg(av=dw.avg("s"))
    windowed = source.window(dw.Tumble("10s", on="ts")).agg(av=dw.avg("a"))
    for batch in (1, 2, 3):
        config = dw.Config(batch_size=batch, mode=mode, state=state,
                           state_path=None if state == "memory" else str(tmp_path / f"s{batch}"))
        assert sums.collect(config).to_pylist() == [{"av": 0.5}]
        assert windowed.collect(config.replace(state_path=None if state == "memory" else
                                               str(tmp_path / f"w{batch}"))).column("av").to_pylist() == [1 / 3]
