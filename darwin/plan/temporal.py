"""Which joins are bounded in event time, read from the plan: interval joins and window joins.

A *time attribute* of a node is a timestamp column whose rows arrive no earlier than the node's
watermark, up to rows its own operators count as late: a scan's time column, the ``window_end``
a windowed aggregation emits or a window assignment attaches, carried through filters and
renaming projections, and through an interval or window join, which holds its watermark back
for them (``JoinTiming.output_watermark``). A join whose condition bounds one side's time
attribute by the other's from both sides (``r.t BETWEEN l.t + a AND l.t + b``) is an *interval
join*; one whose keys pair the windows of two sides windowed alike is a *window join*. Both
engines read this analysis: it decides when rows leave the state, which rows are late, when an
outer join's padded rows are emitted (when a row can no longer match, so the output only
appends) and the watermark the join passes on.
"""

from __future__ import annotations

from dataclasses import dataclass

from darwin.errors import CastError, DarwinTypeError
from darwin.plan import exprs as ex
from darwin.plan import nodes as pn
from darwin.plan.evaluate import compile_expr
from darwin.plan.window import Window
from darwin.timestamps import END_OF_INPUT, NO_WATERMARK
from darwin.types import DType, Schema


@dataclass(frozen=True)
class SideTiming:
    """When a row of one side is late and when it can no longer match.

    The row is late if its ``time`` (a time attribute) plus ``time_shift`` is below its own side's
    watermark, and leaves the state once its ``bound`` column plus ``bound_shift`` is below the
    other side's: every row the other side can still send is at or after that watermark.
    """

    time: str  # columns of the side's own schema
    bound: str
    bound_shift: int
    time_shift: int = 0

    def describe(self) -> str:
        return f"{self.bound}{self.bound_shift:+d}ms"


@dataclass(frozen=True)
class JoinTiming:
    kind: str  # "interval" | "window"
    left: SideTiming
    right: SideTiming
    span_ms: int = 0  # a window join's window size: each row's times lie within its window

    def describe(self) -> str:
        return f"{self.kind} join: a left row frees after {self.left.describe()}, a right row after " \
            f"{self.right.describe()}"

    def output_watermark(self, left_wm: int, right_wm: int) -> int:
        """The watermark the join passes on, given its sides': at or below every time attribute of
        every row it may still emit, so that no operator after it finds such a row late. A row it
        keeps can still be paired (or padded) until the other side's watermark passes its bound,
        so its time is held back by how far the bound lies ahead of it, as Flink holds back an
        interval join's output watermark by the interval: with ``r.t BETWEEN l.t + a AND l.t + b``,
        a left row waits for the right watermark to pass ``l.t + b`` and a right row for the left
        one to pass ``r.t - a``; a window join's rows wait for their window to end on both sides."""
        wm = min(left_wm, right_wm)
        if self.kind == "window":
            return _minus(wm, self.span_ms - 1)
        for side, own, other in ((self.left, left_wm, right_wm), (self.right, right_wm, left_wm)):
            if side.bound == side.time:  # otherwise its times are no time attributes of the output
                wm = min(wm, _minus(own, side.time_shift), _minus(other, side.bound_shift))
        return wm


def _minus(wm: int, ms: int) -> int:
    """``wm - ms``, where no watermark yet and the end of input stay what they are."""
    if wm in (NO_WATERMARK, END_OF_INPUT):
        return wm
    return max(NO_WATERMARK + 1, min(END_OF_INPUT - 1, wm - ms))


def join_timing(join: pn.Join) -> JoinTiming | None:
    """The event-time bounds of ``join``, or None for a regular join (rows kept, or kept for its TTL)."""
    return _window_join(join) or _interval_join(join)


def time_attributes(node: pn.PlanNode) -> frozenset[str]:
    if isinstance(node, pn.Scan):
        return frozenset({node.time_column} if node.time_column else ())
    if isinstance(node, pn.Filter):
        return time_attributes(node.input)
    if isinstance(node, pn.Project):
        inner = time_attributes(node.input)
        return frozenset(n for n, e in node.exprs if isinstance(e, ex.Column) and e.name in inner)
    if isinstance(node, pn.WindowAssign):
        return time_attributes(node.input) | {pn.WINDOW_END}
    if isinstance(node, pn.Aggregate):
        return frozenset({pn.WINDOW_END})
    if isinstance(node, pn.Join):
        timing = join_timing(node)
        if timing is None:
            return frozenset()  # a regular join: its output rows carry no bound on their times
        renamed = node.right_names
        left = time_attributes(node.left)
        right = frozenset(renamed[c] for c in time_attributes(node.right))
        if timing.kind == "interval":  # a row's time the join holds its watermark back for, if it is its bound
            left = left & {timing.left.time} if timing.left.bound == timing.left.time else frozenset()
            right = right & {renamed[timing.right.time]} if timing.right.bound == timing.right.time else frozenset()
        return left | right
    if isinstance(node, pn.LookupJoin):
        return time_attributes(node.input)
    if isinstance(node, pn.Union):
        common = time_attributes(node.parts[0])
        for p in node.parts[1:]:
            common &= time_attributes(p)
        return common
    return frozenset()  # a regular join: its output rows carry no bound on their times


def checks_window_times(node: pn.PlanNode, column: str) -> bool:
    """Whether a window on ``column`` of ``node``'s rows must check each time against the supported event
    times (``MAX_EVENT_TIME_MS``): a time attribute is a source's event time, checked as the source is read,
    or a window's end over one (within 100 years of it), but another column (a second timestamp of the
    source's rows, one computed, a time attribute moved) may hold any int64."""
    return column not in time_attributes(node)


@dataclass(frozen=True)
class TimeLag:
    """How far a timestamp column's rows (up to those counted late) may lie below its node's
    watermark: each value is ``t - behind_ms`` for some ``t`` at or above the watermark that is a
    multiple of ``period_ms`` (a window's end is a multiple of its slide; 1: any millisecond)."""

    behind_ms: int
    period_ms: int = 1

    def shifted(self, ms: int) -> TimeLag:
        """The lag of this column plus ``ms``: a column ahead of the watermark lags by nothing."""
        behind = self.behind_ms - ms
        return TimeLag(behind, self.period_ms) if behind > 0 else TimeLag(0)

    def judged_alike(self, slide_ms: int | None) -> bool:
        """Whether a window over the column, fed by its node, finds the same rows late whatever the
        batches, its windows ending at multiples of ``slide_ms`` (None: sessions, ending anywhere).

        A row leaves its producer once the watermark reaches its ``t``, and reaches the window before
        that watermark does (an operator emits the rows a watermark releases before passing the
        watermark on). It is then late exactly when its window ended before ``t``: if a window end
        lies strictly between the value and ``t``, whether the watermark passed it before the row
        came depends on where batches ended. None does when the value lies at most 1 ms behind
        (Flink's window time, ``window_end - 1``), or when every ``t`` is a window end of the window
        and the value lies at most one slide behind it (``window_start`` into a window as long)."""
        if self.behind_ms <= 1:
            return True
        return slide_ms is not None and self.period_ms % slide_ms == 0 and self.behind_ms <= slide_ms


def time_lags(node: pn.PlanNode) -> dict[str, TimeLag]:
    """The timestamp columns of ``node`` that a watermark bounds, with how far they may lie below it:
    its time attributes (lag 0), a window's bounds (``window_start`` lies its size behind
    ``window_end``), and columns a constant away from those. A column not here carries no bound a
    watermark follows (a group key, an aggregate, a regular join's times)."""
    if isinstance(node, (pn.Scan, pn.Join, pn.Union)):
        return dict.fromkeys(time_attributes(node), TimeLag(0))
    if isinstance(node, (pn.Filter, pn.LookupJoin)):
        return time_lags(node.input)
    if isinstance(node, pn.Project):
        inner = time_lags(node.input)
        lags = {name: _lag_of(e, inner) for name, e in node.exprs}
        return {name: lag for name, lag in lags.items() if lag is not None}
    if isinstance(node, pn.WindowAssign):
        return {**time_lags(node.input), **_bound_lags(node.window)}
    if isinstance(node, pn.Aggregate):
        return _bound_lags(node.input.window)
    if isinstance(node, pn.SessionAggregate):  # a session's row, once the watermark passes its end
        return {pn.WINDOW_END: TimeLag(0)}
    if isinstance(node, pn.TopN) and isinstance(node.input, pn.WindowAssign):  # a window's rows, as it fires
        return _bound_lags(node.input.window)
    # A deduplication passes a row on with the watermark after its batch: its output bounds no
    # column row by row (docs/decisions.md).
    return {}


def _bound_lags(window: Window) -> dict[str, TimeLag]:
    return {pn.WINDOW_END: TimeLag(0, window.slide_ms), pn.WINDOW_START: TimeLag(window.size_ms, window.slide_ms)}


def _lag_of(e: ex.ExprNode, lags: dict[str, TimeLag]) -> TimeLag | None:
    """The lag of ``column``, ``column + n`` or ``column - n`` (n a constant number of ms) over ``lags``."""
    terms = _terms(e, set(lags))
    if terms is None or list(terms[0].values()) != [1] or abs(terms[1]) > _MAX_SHIFT_MS:
        return None
    (column,) = terms[0]
    return lags[column].shifted(terms[1]) if terms[1] else lags[column]


def judged_by_source(node: pn.PlanNode) -> bool:
    """Whether a window over ``node``'s rows judges lateness row by row from its source's own
    event-time progress (a source's rows, through filters, projections and lookups, or a union of
    such branches of one source), so that any timestamp column of them is judged alike whatever
    the batches."""
    first = producer(node)
    return isinstance(first, pn.Scan) or (isinstance(first, pn.Union) and union_source(first) is not None)


def union_source(node: pn.Union) -> pn.Scan | None:
    """The one timed source every part of ``node`` passes on row by row, if there is one: its rows
    then carry that source's event-time progress through the union (``t.filter(a).union(t.filter(b))``
    is judged as ``t.filter(a | b)`` would be), not the union's watermark before their batch."""
    scans = {id(s): s for s in (producer(p) for p in node.parts)}
    if len(scans) != 1:
        return None
    scan = next(iter(scans.values()))
    return scan if isinstance(scan, pn.Scan) and scan.time_column is not None else None


def producer(node: pn.PlanNode) -> pn.PlanNode:
    """The node whose rows ``node`` passes on row by row (through filters, projections and lookups)."""
    while isinstance(node, (pn.Filter, pn.Project, pn.LookupJoin)):
        node = node.input
    return node


def window_of(node: pn.PlanNode, column: str) -> Window | None:
    """The window whose ``window_start``/``window_end`` ``column`` carries, if any."""
    if isinstance(node, pn.WindowAssign):
        return node.window if column in (pn.WINDOW_START, pn.WINDOW_END) else window_of(node.input, column)
    if isinstance(node, pn.Aggregate):
        return node.input.window if column in (pn.WINDOW_START, pn.WINDOW_END) else None
    if isinstance(node, pn.Filter):
        return window_of(node.input, column)
    if isinstance(node, pn.Project):
        e = dict(node.exprs).get(column)
        return window_of(node.input, e.name) if isinstance(e, ex.Column) else None
    return None


def _origin(node: pn.PlanNode, column: str) -> str | None:
    """Which of window_start/window_end ``column`` is, through renaming projections."""
    while isinstance(node, (pn.Filter, pn.Project)):
        if isinstance(node, pn.Project):
            e = dict(node.exprs).get(column)
            if not isinstance(e, ex.Column):
                return None
            column = e.name
        node = node.input
    return column if column in (pn.WINDOW_START, pn.WINDOW_END) else None


def _window_join(join: pn.Join) -> JoinTiming | None:
    """Keys pairing window_start (or window_end) of both sides, windowed alike."""
    for i, (lk, rk) in enumerate(zip(join.left_keys, join.right_keys)):
        if not (isinstance(lk, ex.Column) and isinstance(rk, ex.Column)) or i in join.null_safe:
            continue
        lw, rw = window_of(join.left, lk.name), window_of(join.right, rk.name)
        kind = _origin(join.left, lk.name)
        if lw is None or not lw.same_windows(rw) or kind is None or kind != _origin(join.right, rk.name):
            continue
        # a window's rows can match only rows of the same window: late once the window has fired
        # (its last millisecond below the watermark: a windowed aggregation emits it before the
        # watermark that fires it), freed once the other side's window has fired too
        shift = lw.size_ms - 1 if kind == pn.WINDOW_START else -1
        return JoinTiming("window", SideTiming(lk.name, lk.name, shift, shift),
                          SideTiming(rk.name, rk.name, shift, shift), lw.size_ms)
    return None


def _interval_join(join: pn.Join) -> JoinTiming | None:
    """A condition that bounds a right time attribute from above by a left timestamp column, and a
    left time attribute from below by a right one: each side's rows then leave the state once the
    other side's watermark passes their bound.

    ``r.t <= l.c + high``: a left row cannot match once the right watermark passes ``l.c + high``.
    ``r.c >= l.t + low``: a right row cannot match once the left watermark passes ``r.c - low``.

    The bounds are read from the condition's comparisons and from key pairs (``l.t = r.t`` is an
    interval of nothing, as in Flink), whatever side of the comparison each time is written on and
    however its constant is written (``INTERVAL '5' SECOND * 2``, ``lit(100).cast('int64')``).
    """
    left_times, right_times = time_attributes(join.left), time_attributes(join.right)
    right_by_output = {out: name for name, out in join.right_names.items()}
    left_stamps = {f.name for f in join.left.schema.fields if f.dtype is DType.TIMESTAMP}
    stamps = {f.name for f in join.schema.fields if f.dtype is DType.TIMESTAMP}
    upper: SideTiming | None = None  # how left rows free (bounded by the right time attribute)
    lower: SideTiming | None = None  # how right rows free
    for (a, b), low, high in _time_bounds(join, stamps):  # low <= b - a <= high
        right_col = right_by_output.get(b)
        if a not in left_stamps or right_col is None:
            continue
        if high is not None and right_col in right_times and upper is None:
            upper = SideTiming("", a, high)
            upper_time = right_col
        if low is not None and a in left_times and lower is None:
            lower = SideTiming(right_col, right_col, -low)
            lower_time = a
    if upper is None or lower is None:
        return None
    return JoinTiming("interval", SideTiming(lower_time, upper.bound, upper.bound_shift),
                      SideTiming(upper_time, lower.bound, lower.bound_shift))


Bounds = list[tuple[tuple[str, str], int | None, int | None]]


def _time_bounds(join: pn.Join, stamps: set[str]) -> Bounds:
    """Every bound ``low <= b - a <= high`` on two columns of the join's output that its condition's
    conjuncts and its key pairs state."""
    found: Bounds = []
    left_stamps = {f.name for f in join.left.schema.fields if f.dtype is DType.TIMESTAMP}
    for conjunct in ex.conjuncts(join.where) if join.where is not None else ():
        if isinstance(conjunct, ex.Binary) and conjunct.op in _COMPARISONS:
            found += _difference_bounds(conjunct.op, _terms(conjunct.left, stamps), _terms(conjunct.right, stamps))
    right_stamps = {c for c, out in join.right_names.items() if out in stamps}
    for i, (lk, rk) in enumerate(zip(join.left_keys, join.right_keys)):
        if i in join.null_safe:  # NULL times meet: not a bound on the times (Calcite's filterNulls=false key)
            continue
        right = _terms(rk, right_stamps)
        renamed = None if right is None else ({join.right_names[c]: k for c, k in right[0].items()}, right[1])
        found += _difference_bounds("eq", _terms(lk, left_stamps), renamed)
    return found


_COMPARISONS = ("lt", "le", "gt", "ge", "eq")
_MAX_SHIFT_MS = 2**62  # a bound past this could overflow the condition's int64 arithmetic


def _constant_ms(e: ex.ExprNode) -> int | None:
    """The value of an integer expression without columns (a number of milliseconds, as an
    interval is), evaluated as the engines evaluate it; None for anything else."""
    if ex.columns_of(e):
        return None
    try:
        if ex.type_of(e, _NO_COLUMNS).dtype is not DType.INT64:
            return None
        value = compile_expr(e, _NO_COLUMNS)({})
    except (DarwinTypeError, ArithmeticError, CastError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


_NO_COLUMNS = Schema(())

Terms = tuple[dict[str, int], int]


def _terms(e: ex.ExprNode, stamps: set[str]) -> Terms | None:
    """``e`` as a sum of timestamp columns, each counted +1 or -1 times, plus a constant number of
    milliseconds: ``({column: count}, constant)``; None if it is not one."""
    constant = _constant_ms(e)
    if constant is not None:
        return {}, constant
    if isinstance(e, ex.Column):
        return ({e.name: 1}, 0) if e.name in stamps else None
    if isinstance(e, ex.Cast) and e.dtype is DType.TIMESTAMP:  # a timestamp cast to one is itself
        inner = _terms(e.operand, stamps)
        return inner if inner is not None and list(inner[0].values()) == [1] else None
    if isinstance(e, ex.Binary) and e.op in ("add", "sub"):
        x, y = _terms(e.left, stamps), _terms(e.right, stamps)
        if x is None or y is None:
            return None
        return _combined(x, y, 1 if e.op == "add" else -1)
    return None


def _combined(x: Terms, y: Terms, sign: int) -> Terms:
    """``x + sign * y``, columns whose counts cancel left out."""
    counts = dict(x[0])
    for column, count in y[0].items():
        counts[column] = counts.get(column, 0) + sign * count
    return {c: n for c, n in counts.items() if n}, x[1] + sign * y[1]


def _difference_bounds(op: str, x: Terms | None, y: Terms | None) -> Bounds:
    """The comparison ``x OP y`` of two sums of time terms as ((a, b), low, high), low <= b - a <= high,
    once for each order of the two columns, if it compares one column with another plus a constant."""
    if x is None or y is None:
        return []
    counts, constant = _combined(x, y, -1)  # x - y = b - a + constant  OP  0
    if sorted(counts.values()) != [-1, 1] or abs(constant) > _MAX_SHIFT_MS:
        return []
    a, b = sorted(counts, key=counts.__getitem__)  # a counted -1, b +1
    c = -constant  # b - a  OP  c
    low, high = {"le": (None, c), "lt": (None, c - 1), "ge": (c, None), "gt": (c + 1, None), "eq": (c, c)}[op]
    flipped = (None if high is None else -high, None if low is None else -low)
    return [((a, b), low, high), ((b, a), *flipped)]
