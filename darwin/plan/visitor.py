"""The shape of every translation of a logical plan: one ``visit_<Node>`` method per node type.

``explain``, the optimizer's projection pruning, the reference interpreter and (in the
layers above) the operator-graph translation are visitors. A translation that has no
rule for a node raises ``UnsupportedError`` naming the node and the translation, instead
of doing something wrong; adding a node type means adding one method per translation.

Examples
--------
>>> class Count(PlanVisitor[int]):
...     translation = "node counting"
...     def visit_Scan(self, node): return 1
>>> Count().visit(some_scan)  # doctest: +SKIP
1
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from darwin.errors import UnsupportedError

R = TypeVar("R")


class PlanVisitor(Generic[R]):
    """Dispatches ``visit(node, *args)`` to ``visit_<type of node>(node, *args)``."""

    translation = "this translation"  # names the visitor in errors, e.g. "the compiled engine"

    def visit(self, node: Any, *args: Any) -> R:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is None:
            raise UnsupportedError(f"{self.translation} has no rule for plan node {type(node).__name__}")
        result: R = method(node, *args)
        return result


class SharedNodeVisitor(PlanVisitor[R]):
    """A visitor that translates each node once: a node several parents read (a DAG's shared input)
    gives all of them the same result. ``results`` maps a node's id to it."""

    def __init__(self) -> None:
        self.results: dict[int, tuple[Any, R]] = {}  # id -> (node, result): the node stays alive, its id unique

    def visit(self, node: Any, *args: Any) -> R:
        done = self.results.get(id(node))
        if done is None:
            done = self.results[id(node)] = (node, super().visit(node, *args))
        return done[1]
