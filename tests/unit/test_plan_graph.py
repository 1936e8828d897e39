"""Plans as DAGs: inputs, with_inputs, the shared traversal, and visitors that fail loudly."""

import dataclasses

import pyarrow as pa
import pytest

import darwin as dw
from darwin import col
from darwin.errors import PlanError, UnsupportedError
from darwin.plan import nodes as pn
from darwin.plan.explain import describe
from darwin.plan.rules import prune_projections
from darwin.plan.visitor import PlanVisitor
from darwin.reference.interpreter import run as interpret
from darwin.runtime.progress import Metrics


def plan():
    t = dw.from_arrow(pa.table({"ts": pa.array([0, 1], pa.timestamp("ms")), "k": [1, 2], "v": [3, 4]}), time="ts")
    return (t.filter(col("v") > 0).with_columns(w=col("v") * 2).window(dw.Tumble("1s", on="ts"))
            .group_by("k").agg(n=dw.count(), s=dw.sum("w"))).plan


def test_every_node_has_inputs_and_rebuilds_over_new_ones():
    agg = plan()
    chain = list(pn.walk(agg))
    assert [type(n).__name__ for n in chain] == ["Scan", "Filter", "Project", "WindowAssign", "Aggregate"]
    assert chain[0].inputs == () and all(n.inputs == (chain[i],) for i, n in enumerate(chain[1:]))
    assert agg.with_inputs(agg.input) is agg
    other = dataclasses.replace(agg.input, late_output=True)
    assert agg.with_inputs(other).input is other
    with pytest.raises(PlanError, match="Aggregate takes 1 input"):
        agg.with_inputs(agg.input, agg.input)


def test_transform_rewrites_bottom_up_and_visits_a_shared_node_once():
    agg = plan()
    seen = []

    def rule(n):
        seen.append(type(n).__name__)
        return n

    assert pn.transform(agg, rule) == agg
    assert seen == ["Scan", "Filter", "Project", "WindowAssign", "Aggregate"]


@dataclasses.dataclass(frozen=True)
class Pair:
    """A two-input node (as a join or union is), to show what a DAG traversal does with sharing."""

    left: object
    right: object

    @property
    def inputs(self):
        return (self.left, self.right)

    def with_inputs(self, left, right):
        return Pair(left, right)


def test_a_node_shared_by_two_parents_is_walked_and_rewritten_once():
    scan = plan().input.input.input.input
    shared = pn.Filter(scan, (col("v") > 1).node)
    dag = Pair(shared, pn.Project(shared, (("v", col("v").node),)))
    assert [type(n).__name__ for n in pn.walk(dag)] == ["Scan", "Filter", "Project", "Pair"]
    rewritten = pn.transform(dag, lambda n: pn.Filter(n.input, (col("v") > 2).node) if isinstance(n, pn.Filter)
                             else n)
    assert rewritten.left is rewritten.right.input  # still one node, rewritten once
    assert str(rewritten.left.predicate) == "(col('v') > 2)"


class Unknown:
    """A node type no translation knows, over a scan."""

    def __init__(self):
        self.input = plan().input.input.input.input
        self.inputs = (self.input,)
        self.schema = self.input.schema


@pytest.mark.parametrize("translation", [
    lambda n: describe(n),
    lambda n: prune_projections(n),
    lambda n: list(interpret(n, dw.Config(), Metrics())),
], ids=["explain", "pruning", "reference interpreter"])
def test_a_translation_without_a_rule_names_the_node(translation):
    with pytest.raises(UnsupportedError, match="no rule for plan node Unknown"):
        translation(Unknown())


def test_visitor_dispatch_passes_arguments():
    class Depth(PlanVisitor[int]):
        def visit_Scan(self, node, d):
            return d

        def visit_Filter(self, node, d):
            return self.visit(node.input, d + 1)

    scan = plan().input.input.input.input
    twice = pn.Filter(pn.Filter(scan, (col("v") > 1).node), (col("k") > 0).node)
    assert Depth().visit(twice, 0) == 2
