"""Physical operators and pipelines.

A pipeline is a source of rows, a chain of stateless operators fused into one
loop, and a sink. A windowed hash aggregation breaks the plan into two
pipelines: one builds its state, the next drains fired windows.
"""

from __future__ import annotations

from dataclasses import dataclass

from darwin.plan import nodes as pn
from darwin.plan.exprs import ExprNode
from darwin.plan.window import Window
from darwin.types import Schema


@dataclass(frozen=True)
class ScanInput:
    scan: pn.Scan
    delay_ms: int  # the source's watermark delay, or the config's default

    def describe(self) -> str:
        return f"scan {self.scan.source.name}"


@dataclass(frozen=True)
class FiredWindowsInput:
    """Rows of windows that fired in the aggregation built by pipeline ``producer``."""

    producer: int

    def describe(self) -> str:
        return f"fired windows of pipeline {self.producer}"


@dataclass(frozen=True)
class FilterOp:
    predicate: ExprNode

    def describe(self) -> str:
        return f"filter {self.predicate}"


@dataclass(frozen=True)
class ProjectOp:
    exprs: tuple[tuple[str, ExprNode], ...]

    def describe(self) -> str:
        return "project " + ", ".join(name for name, _ in self.exprs)


@dataclass(frozen=True)
class WindowAssignOp:
    window: Window

    def describe(self) -> str:
        return f"window-assign {self.window}"


StatelessOp = FilterOp | ProjectOp | WindowAssignOp


@dataclass(frozen=True)
class CollectSink:
    def describe(self) -> str:
        return "collect"


@dataclass(frozen=True)
class Ring:
    """Window-ring state: ``slots`` windows open at once, entry = key - ``low`` in [0, ``size``)."""

    slots: int
    low: int
    size: int
    keyed: bool = True  # False: a global aggregation, the domain is the single entry 0


@dataclass(frozen=True)
class StateSpec:
    """What a stateful operator asks of the state backend: a keyed hash table, or (in DRAM) a window
    ring; and whether its kernels keep an undo log for checkpoints taken without copying."""

    ring: Ring | None = None
    undo_log: bool = False

    def describe(self) -> str:
        return ("ring" if self.ring is not None else "hash") + (" undo-log" if self.undo_log else "")


@dataclass(frozen=True)
class WindowAggregateSink:
    """Windowed aggregation with watermark-triggered firing.

    Its state is a hash table keyed by (window start, keys), or a ring of per-window slots whose
    entries a dense key indexes directly (``state.ring``).
    """

    aggregate: pn.Aggregate
    state: StateSpec

    @property
    def ring(self) -> Ring | None:
        return self.state.ring

    @property
    def window(self) -> Window:
        return self.aggregate.input.window

    @property
    def late_output(self) -> bool:
        return self.aggregate.input.late_output

    @property
    def undo_log(self) -> bool:
        return self.state.undo_log

    def describe(self) -> str:
        a = self.aggregate
        kind = "window-hash-aggregate" if self.ring is None else (
            f"window-ring-aggregate slots={self.ring.slots} domain=[{self.ring.low}, "
            f"{self.ring.low + self.ring.size})")
        return (f"{kind} {self.window} keys=[{', '.join(a.keys)}] "
                f"aggs=[{', '.join(f'{n}={c}' for n, c in a.aggs)}] state={self.state.describe()}"
                + (" late-output" if self.late_output else ""))


Sink = CollectSink | WindowAggregateSink


@dataclass(frozen=True)
class Pipeline:
    id: int
    input: ScanInput | FiredWindowsInput
    input_schema: Schema
    operators: tuple[StatelessOp, ...]
    sink: Sink
    output_schema: Schema  # of the rows reaching the sink
    # string columns only moved, never inspected: (output column, input column). The kernel carries
    # their row index instead of a dictionary code, and the sink takes the values from the input batch.
    moved_strings: tuple[tuple[str, str], ...] = ()
    # string functions computed on whole Arrow columns as the batch is read: (input column it becomes,
    # function, arguments, source column); the operators read the first name instead of the call
    computed_inputs: tuple[tuple[str, str, tuple, str], ...] = ()

    @property
    def moved_inputs(self) -> frozenset[str]:
        return frozenset(source for _, source in self.moved_strings)

    @property
    def needs_kernel(self) -> bool:
        """A pipeline that only passes fired windows to the output needs no compiled loop."""
        return bool(self.operators) or not isinstance(self.sink, CollectSink) or isinstance(self.input, ScanInput)

    @property
    def rows_per_input(self) -> int:
        """Upper bound of rows reaching the sink per input row (sliding windows repeat rows)."""
        n = 1
        for op in self.operators:
            if isinstance(op, WindowAssignOp):
                n *= op.window.windows_per_row
        return n

    def describe(self) -> str:
        source = self.input.describe()
        if self.computed_inputs:
            source += " + arrow[" + ", ".join(f"{f}({c})" for _, f, _, c in self.computed_inputs) + "]"
        steps = [source, *(op.describe() for op in self.operators), self.sink.describe()]
        moved = f" (moved as row indices: {', '.join(s for _, s in self.moved_strings)})" \
            if self.moved_strings else ""
        return f"pipeline {self.id}: " + " -> ".join(steps) + moved


@dataclass(frozen=True)
class OperatorGraph:
    pipelines: tuple[Pipeline, ...]  # producers before consumers

    def describe(self) -> str:
        return "\n".join(p.describe() for p in self.pipelines)
