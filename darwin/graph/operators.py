"""Physical operators and pipelines.

A pipeline reads one typed input port (a source, the fired windows of an
aggregation, a join's output, the rows of a union), runs a chain of stateless
operators fused into one loop, and ends in a sink: it emits its rows, or builds
a windowed aggregation's state. Joins are operators between pipelines: they
read the rows two pipelines emit. The graph is a DAG of pipelines and joins.
"""

from __future__ import annotations

from dataclasses import dataclass

from darwin.plan import nodes as pn
from darwin.plan.exprs import ExprNode
from darwin.plan.temporal import JoinTiming, checks_window_times
from darwin.plan.window import Window
from darwin.types import Schema

# the largest event time of a source up to each row: a column of a keyed-parallel kernel's input, and
# of the rows a union of one source's branches passes on (``Pipeline.reads_progress``)
PROGRESS_COLUMN = "__darwin_progress"


@dataclass(frozen=True)
class SourcePort:
    """Rows read from a source (one reader per scan, whatever reads it)."""

    scan: pn.Scan
    delay_ms: int  # the source's watermark delay, or the config's default
    reader: int  # index of the source's reader in ``OperatorGraph.scans``

    def describe(self) -> str:
        return f"source {self.scan.source.name}"


@dataclass(frozen=True)
class FiredWindowsPort:
    """Rows of windows that fired in the aggregation built by pipeline ``producer``."""

    producer: int

    def describe(self) -> str:
        return f"fired windows of pipeline {self.producer}"


@dataclass(frozen=True)
class JoinPort:
    """Rows a join operator emits."""

    join: int

    def describe(self) -> str:
        return f"output of join {self.join}"


@dataclass(frozen=True)
class UnionPort:
    """Rows the pipelines ``producers`` emit, as they come (UNION ALL). ``source``: the one timed
    source every producer reads (``darwin.plan.temporal.union_source``), whose event-time progress a
    reader judging rows one by one gets with each row (``Pipeline.reads_progress``)."""

    producers: tuple[int, ...]
    source: SourcePort | None = None

    def describe(self) -> str:  # the layout a checkpoint records: the same with or without ``source``
        return "rows of pipelines " + " + ".join(str(p) for p in self.producers)


@dataclass(frozen=True)
class OperatorPort:
    """The rows a stream operator emits (``OperatorGraph.operators``)."""

    operator: int

    def describe(self) -> str:
        return f"output of operator {self.operator}"


Port = SourcePort | FiredWindowsPort | JoinPort | UnionPort | OperatorPort


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
    """Each row with its window's bounds (once per window of a sliding one). ``drops_late``: windows
    the watermark has closed are dropped here and their rows counted late, judged row by row as a
    windowed aggregation judges them, for an operator that keeps a window's rows until it fires (a
    window top-N): judged there, by its watermark after each batch, the verdict would depend on
    where batches end. ``checks_times``: its column is no time attribute, so each row's time is checked
    against the supported event times (``darwin.plan.temporal.checks_window_times``)."""

    window: Window
    drops_late: bool = False
    checks_times: bool = False

    def describe(self) -> str:
        return f"window-assign {self.window}" + (" dropping late windows" if self.drops_late else "")


@dataclass(frozen=True)
class LookupJoinOp:
    """Each row with the rows of a static table of its key (``LookupJoin``), probed in a compiled
    hash index built once; the kernel loops over a key's rows, so one row may become several."""

    lookup: int  # index of the lookup table in ``OperatorGraph.lookups``
    join: pn.LookupJoin

    def describe(self) -> str:
        j = self.join
        keys = ", ".join(pn.key_pairs(j, "="))
        return f"lookup-join {j.how} table {self.lookup} on [{keys}]" + (f" where {j.where}" if j.where else "")


StatelessOp = FilterOp | ProjectOp | WindowAssignOp | LookupJoinOp


@dataclass(frozen=True)
class EmitRows:
    """The pipeline's rows leave it: to the query's output, a join, or a union."""

    def describe(self) -> str:
        return "emit"


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
    # a sliding window's rows fold once, into the pane of one slide they fall in (keyed by the pane's
    # start); a window's entries are its panes' combined when it fires (Flink's slice sharing)
    panes: bool = False

    def describe(self) -> str:
        return (("ring" if self.ring is not None else "hash") + (" panes" if self.panes else "")
                + (" undo-log" if self.undo_log else ""))


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
    def checks_times(self) -> bool:
        """Whether each row's time is checked against the supported event times (not a time attribute)."""
        return checks_window_times(self.aggregate.input.input, self.window.on)

    @property
    def undo_log(self) -> bool:
        return self.state.undo_log

    @property
    def panes(self) -> bool:
        return self.state.panes

    def describe(self) -> str:
        a = self.aggregate
        kind = "window-hash-aggregate" if self.ring is None else (
            f"window-ring-aggregate slots={self.ring.slots} domain=[{self.ring.low}, "
            f"{self.ring.low + self.ring.size})")
        return (f"{kind} {self.window} keys=[{', '.join(a.keys)}] "
                f"aggs=[{', '.join(f'{n}={c}' for n, c in a.aggs)}] state={self.state.describe()}"
                + (" late-output" if self.late_output else "")
                + (" second-step" if a.second_step else ""))


Sink = EmitRows | WindowAggregateSink

KEY_GROUPS = 128  # keys hash into this many groups (Flink's default max parallelism); workers own whole groups


@dataclass(frozen=True)
class Parallel:
    """How a pipeline's rows are shared among ``workers`` threads.

    With ``keys`` (input columns that reach the sink's group keys unchanged) each row goes to the
    worker owning its key group, and each worker keeps the state of its groups: the kernel walks a
    selection of the batch's rows. Without, the batch is cut into contiguous slices, one per worker,
    and the slices' output joined in order (a pipeline without state).
    """

    workers: int
    keys: tuple[str, ...] = ()
    # each worker first folds a contiguous slice of the batch into partial entries, which then go to
    # the workers owning their keys (local/global aggregation): a hot key's rows are spread over
    # every worker instead of all landing on its owner
    pre_aggregate: bool = False
    # a window ring (DRAM, dense key domain) per worker over every key, for its contiguous slice of
    # each batch; when a window fires the workers' entries of it are merged (every aggregate merges
    # exactly). No rows move between workers, so a hot key costs nothing more than a cold one
    merged_rings: bool = False

    @property
    def keyed(self) -> bool:
        return bool(self.keys)

    def describe(self) -> str:
        if self.merged_rings:
            return "parallel in slices, local/global: window rings merged as windows fire"
        how = f"by key groups of [{', '.join(self.keys)}]" if self.keyed else "in slices"
        return f"parallel {how}" + (", local/global pre-aggregation" if self.pre_aggregate else "")


@dataclass(frozen=True)
class Pipeline:
    id: int
    input: Port
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
    parallel: Parallel | None = None  # None: one thread runs it
    # rows of a union of one source's branches, each with that source's event-time progress at it
    # (column PROGRESS_COLUMN of the producers' output), which judges them as the source's reader would
    reads_progress: bool = False
    # a union producer whose reader reads the progress: its output carries the progress at each row
    writes_progress: bool = False

    @property
    def timing(self) -> SourcePort | None:
        """The source whose event-time progress judges this pipeline's rows one by one: the timed
        source it reads, or the one a union's producers read (``reads_progress``)."""
        if isinstance(self.input, SourcePort):
            return self.input if self.input.scan.time_column is not None else None
        if self.reads_progress:
            assert isinstance(self.input, UnionPort)
            return self.input.source
        return None

    @property
    def source_timed(self) -> bool:
        """Whether its kernel judges lateness by the source's event-time progress (``max_time``), not
        by the watermark of the input it reads."""
        return self.timing is not None

    @property
    def keyed_parallel(self) -> bool:
        """Whether the kernel walks a selection of rows routed to it by key, judging lateness by the
        batch's progress column (merged rings run contiguous slices, as one thread would)."""
        return self.parallel is not None and self.parallel.keyed and not self.parallel.merged_rings

    @property
    def numbers_rows(self) -> bool:
        """Whether state entries carry the serial of the row that made them: several workers' entries
        are merged into one thread's order, and a window's panes combine in the order one fold takes."""
        return (self.parallel is not None and self.parallel.keyed) or (
            isinstance(self.sink, WindowAggregateSink) and self.sink.panes)

    @property
    def checked_times(self) -> tuple[str, ...]:
        """The columns of the windows that check each row's time, in the order of the pipeline's steps: a
        kernel that meets one beyond the supported times names it by its place here (``ctl.FORMAT_SITE``)."""
        windows = [o.window for o in self.operators if isinstance(o, WindowAssignOp) and o.checks_times]
        if isinstance(self.sink, WindowAggregateSink) and self.sink.checks_times:
            windows.append(self.sink.window)
        return tuple(w.on for w in windows)

    @property
    def moved_inputs(self) -> frozenset[str]:
        return frozenset(source for _, source in self.moved_strings)

    @property
    def needs_kernel(self) -> bool:
        """A pipeline that only passes fired windows to the output needs no compiled loop."""
        return bool(self.operators) or not isinstance(self.sink, EmitRows) or isinstance(self.input, SourcePort)

    @property
    def rows_per_input(self) -> int:
        """Upper bound of rows reaching the sink per input row (sliding windows repeat rows)."""
        n = 1
        for op in self.operators:
            if isinstance(op, WindowAssignOp):
                n *= op.window.windows_per_row
        return n  # a lookup join's rows per key are known when its table is loaded: the runtime multiplies

    def describe(self) -> str:
        source = self.input.describe()
        if self.computed_inputs:
            source += " + arrow[" + ", ".join(f"{f}({c})" for _, f, _, c in self.computed_inputs) + "]"
        steps = [source, *(op.describe() for op in self.operators), self.sink.describe()]
        if self.parallel is not None:
            steps.append(self.parallel.describe())
        moved = f" (moved as row indices: {', '.join(s for _, s in self.moved_strings)})" \
            if self.moved_strings else ""
        return f"pipeline {self.id}: " + " -> ".join(steps) + moved


@dataclass(frozen=True)
class JoinOperator:
    """A join of the rows two pipelines emit; both sides' rows are kept in its state.

    The side pipelines append the join keys as columns ``keys`` (one per key pair, the same
    names on both sides). ``timing`` says when rows are late and when they leave the state.
    """

    id: int
    join: pn.Join
    left: int
    right: int
    keys: tuple[str, ...]
    timing: JoinTiming | None
    state: StateSpec
    # per side, whether no two of its rows ever have equal keys (darwin.plan.keys.unique_on): a row of
    # the other side (not outer) that has found its match there is not kept
    unique: tuple[bool, bool] = (False, False)

    def describe(self) -> str:
        j = self.join
        pairs = ", ".join(pn.key_pairs(j, "="))
        kind = "regular" if self.timing is None else self.timing.describe()
        ttl = f" state_ttl={j.state_ttl_ms}ms" if j.state_ttl_ms is not None else ""
        if j.side_ttl_ms != (None, None):
            ttl += f" state_ttl left={j.ttl_of(0)} right={j.ttl_of(1)}"
        where = f" where {j.where}" if j.where is not None else ""
        unique = "".join(f" {side} unique on the keys" for side, u in zip(("left", "right"), self.unique) if u)
        return (f"join {self.id}: {j.how} of pipelines {self.left} and {self.right} on [{pairs}]{where} ({kind})"
                f"{unique}{ttl} state={self.state.describe()}")


StreamNode = (pn.GroupAggregate | pn.SessionAggregate | pn.TopN | pn.Deduplicate | pn.Over | pn.BarrierAggregate
              | pn.BarrierAssign)


@dataclass(frozen=True)
class StreamOperator:
    """A stateful operator over the rows pipeline ``input`` emits, run between pipelines: an updating
    aggregation, a top-N or a deduplication (``node`` says which and what it computes). The input
    pipeline ends with the columns it reads under their names, the change kind if the input
    updates, and for an aggregation each argument as ``args[i]`` (None for count())."""

    id: int
    node: StreamNode
    input: int
    args: tuple[str | None, ...] = ()
    # the source whose event-time progress each input row comes with (``PROGRESS_COLUMN``): a session
    # window over a source's rows judges them one by one, as a windowed aggregation does
    timing: SourcePort | None = None

    def describe(self) -> str:
        from darwin.plan.explain import describe

        updating = " (updating)" if pn.updating(self.node) else ""
        return f"operator {self.id}: {describe(self.node)} of pipeline {self.input}{updating}"


@dataclass(frozen=True)
class UnionOperator:
    """Where a union's watermark is kept: the minimum of its producers'."""

    id: int
    producers: tuple[int, ...]


@dataclass(frozen=True)
class Stateful:
    """One step of advancing the watermark: an aggregation (by pipeline), a join or a union."""

    kind: str  # "aggregate" | "join" | "union" | "operator"
    id: int


@dataclass(frozen=True)
class LookupTableSpec:
    """A lookup join's static side: the plan that loads it (its columns then the keys, named ``keys``)."""

    plan: pn.PlanNode
    keys: tuple[str, ...]
    columns: tuple[str, ...]


@dataclass(frozen=True)
class OperatorGraph:
    pipelines: tuple[Pipeline, ...]  # producers before consumers
    joins: tuple[JoinOperator, ...]
    unions: tuple[UnionOperator, ...]
    scans: tuple[pn.Scan, ...]  # one reader each, in plan order
    lookups: tuple[LookupTableSpec, ...]
    advance_order: tuple[Stateful, ...]  # inputs before the operators reading them
    output: int  # the pipeline whose rows are the query's result
    # per scan: its string columns no operator looks into (``darwin.plan.inspected``), appended to
    # the string pool as they are read instead of interned
    payload: tuple[frozenset[str], ...] = ()
    operators: tuple[StreamOperator, ...] = ()

    def consumers(self, pipeline: int) -> list[tuple[str, int, int]]:
        """Who reads the rows pipeline ``pipeline`` emits: ("pipeline", id, 0), ("join", id, side),
        ("operator", id, 0)."""
        out: list[tuple[str, int, int]] = []
        for p in self.pipelines:
            if isinstance(p.input, UnionPort) and pipeline in p.input.producers:
                out.append(("pipeline", p.id, 0))
        for j in self.joins:
            if j.left == pipeline:
                out.append(("join", j.id, 0))
            if j.right == pipeline:
                out.append(("join", j.id, 1))
        out += [("operator", o.id, 0) for o in self.operators if o.input == pipeline]
        return out

    def columns_read(self, port: Port) -> frozenset[str]:
        """The input columns of the pipelines reading ``port``: what its producer must make."""
        return frozenset(name for p in self.pipelines if p.input == port for name in p.input_schema.names)

    def describe(self) -> str:
        lines = [p.describe() for p in self.pipelines] + [j.describe() for j in self.joins]
        lines += [o.describe() for o in self.operators]
        lines += [f"lookup table {i}: {', '.join(t.columns)} keyed by [{', '.join(t.keys)}]"
                  for i, t in enumerate(self.lookups)]
        lines += [f"source {scan.source.name}: strings only moved, appended uninterned: {', '.join(sorted(moved))}"
                  for scan, moved in zip(self.scans, self.payload) if moved]
        lines.append(f"output: pipeline {self.output}")
        return "\n".join(lines)
