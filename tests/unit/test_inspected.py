"""Which string columns only move: those are appended to the pool, never interned, so their codes
must never be compared. A column some operator looks into, anywhere above its scan, is interned."""

import pyarrow as pa

import darwin as dw
from darwin import col
from darwin.graph.translate import translate
from darwin.plan.rules import optimize


def table(name: str) -> dw.Table:
    return dw.from_arrow(pa.table({"t": pa.array([0], pa.timestamp("ms")), "k": [1], "s": ["a"], "x": ["b"]}),
                         time="t", name=name)


def payload(query: dw.Table) -> dict[str, set[str]]:
    graph = translate(optimize(query.plan), dw.Config())
    return {scan.source.name: set(moved) for scan, moved in zip(graph.scans, graph.payload)}


def test_strings_a_join_only_carries_are_appended():
    q = table("L").join(table("R"), on=[("k", "k")])
    assert payload(q) == {"L": {"s", "x"}, "R": {"s", "x"}}
    assert "strings only moved, appended uninterned: s, x" in q.explain()


def test_a_string_looked_into_above_a_join_is_interned_on_its_side_only():
    q = table("L").join(table("R"), on=[("k", "k")]).filter(col("s_right") != "a").select("x", "s", "s_right")
    assert payload(q) == {"L": {"s", "x"}, "R": set()}  # the filter is pushed into R, which reads no x
    bounded = col("t_right").between(col("t") - 1000, col("t") + 1000)  # an interval join: windows may follow
    grouped = table("L").join(table("R"), on=[("k", "k")], where=bounded).window(dw.Tumble("1s", on="t")) \
        .group_by("x_right").agg(n=dw.count())
    assert payload(grouped) == {"L": {"x"}, "R": set()}  # L's x stays (it names x_right), only moved; s goes


def test_join_keys_conditions_groups_and_functions_are_looked_into():
    keyed = table("L").join(table("R"), on=[("s", "s")], where=col("x") == col("x_right"))
    assert payload(keyed) == {"L": set(), "R": set()}
    grouped = table("L").window(dw.Tumble("1s", on="t")).group_by("s").agg(n=dw.count())
    assert payload(grouped) == {"L": set()}
    upper = table("L").join(table("R"), on=[("k", "k")]).select(u=col("s").str.upper(), x=col("x"))
    assert payload(upper) == {"L": {"x"}, "R": set()}


def test_a_union_passes_what_is_looked_into_to_every_part():
    q = table("L").union(table("R").filter(col("x") == "b")).window(dw.Tumble("1s", on="t")).group_by("s") \
        .agg(n=dw.count())
    assert payload(q) == {"L": set(), "R": set()}
    moved = table("L").union(table("R").filter(col("x") == "b"))
    assert payload(moved) == {"L": {"s", "x"}, "R": {"s"}}
