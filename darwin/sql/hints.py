"""Flink's hints: the query hints of a SELECT (``SELECT /*+ STATE_TTL('orders' = '1d') */ ...``) and
the table hints of a table's name (``FROM t /*+ OPTIONS('path' = '...') */``).

STATE_TTL (Flink 1.18+, "State TTL Hints") gives the regular joins and the aggregations without a
window of its query block a TTL per input, named by the input's alias where it has one, else by
its table's or view's name: a join's two sides each keep their own, an aggregation takes its input's.
It wins over ``table.exec.state.ttl``; a side it does not name keeps the session's. Operators that
free their state as time passes (windows, interval and window joins, lookup joins) read no TTL, in
Flink as here. docs/decisions.md ("SQL", STATE_TTL hints) says what Darwin refuses and why.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from sqlglot import exp

from darwin.errors import DarwinError
from darwin.plan import nodes as pn
from darwin.plan.temporal import join_timing
from darwin.sql.dialect import TABLE_HINTS
from darwin.sql.errors import Located
from darwin.sql.settings import BadValue, duration_ms

# Flink's join strategy hints choose how a batch job joins; a streaming job ignores them, as Darwin does.
JOIN_STRATEGIES = ("BROADCAST", "SHUFFLE_HASH", "SHUFFLE_MERGE", "NEST_LOOP")


@dataclass
class StateTtlHint:
    """The TTLs a SELECT's STATE_TTL hints give, by input name, and the names an operator took."""

    ttl_ms: dict[str, tuple[int, exp.Expr]] = field(default_factory=dict)  # name -> (ms, where it is named)
    used: set[str] = field(default_factory=set)
    inputs: list[str] = field(default_factory=list)  # the names of the block's joins' and aggregation's inputs

    def of(self, name: str | None) -> int | None:
        """The TTL hinted for the input ``name`` (0: none, the state kept for ever); None where no
        hint names it."""
        if name is None:
            return None
        self.inputs.append(name)
        if name not in self.ttl_ms:
            return None
        self.used.add(name)
        return self.ttl_ms[name][0]

    def join(self, plan: pn.PlanNode, left: str | None, right: str | None, where: Located) -> pn.PlanNode:
        """``plan`` (a join of inputs named ``left`` and ``right``) with the TTLs hinted for its sides."""
        sides = (self.of(left), self.of(right))
        if sides == (None, None) or not isinstance(plan, pn.Join) or join_timing(plan) is not None:
            return plan  # an interval or window join frees its rows as time passes: Flink reads no TTL there
        named = left if sides[0] is not None else right
        return self._replaced(plan, named, where, side_ttl_ms=sides)

    def aggregate(self, plan: pn.PlanNode, name: str | None, where: Located) -> pn.PlanNode:
        """``plan`` (an aggregation without a window over the input ``name``) with its hinted TTL."""
        ms = self.of(name)
        if ms is None or not isinstance(plan, pn.GroupAggregate):
            return plan
        return self._replaced(plan, name, where, state_ttl_ms=ms or None, ttl_given=True)

    def _replaced(self, plan: pn.PlanNode, name: str | None, where: Located, **changes: object) -> pn.PlanNode:
        assert name is not None
        try:
            return dataclasses.replace(plan, **changes)  # type: ignore[arg-type]
        except DarwinError as e:
            raise where.error(self.ttl_ms[name][1], f"STATE_TTL for '{name}': {e}") from None

    def check_used(self, where: Located) -> None:
        """Refuse a name no join or aggregation of the block reads, as Flink does (at its position)."""
        for name, (_, node) in self.ttl_ms.items():
            if name not in self.used:
                known = ", ".join(dict.fromkeys(self.inputs)) or "none: it has no join and no GROUP BY"
                raise where.error(node, f"STATE_TTL names '{name}', which is no input of a join or an aggregation "
                                        f"of this query (an input is named by its alias where it has one, else by "
                                        f"its table's or view's name; here: {known})")


def state_ttl_hint(select: exp.Select, where: Located) -> StateTtlHint:
    """The STATE_TTL hints of ``select``: in one hint the last value given for a name wins, across
    hints the first (Flink's rule). Another hint is refused, but Flink's batch join strategies."""
    hint = select.args.get("hint")
    found = StateTtlHint()
    if hint is None:
        return found
    for item in hint.expressions:
        name = hint_name(item) if isinstance(item, (exp.Anonymous, str)) else item.name.upper()
        if name in JOIN_STRATEGIES:
            continue
        if name != "STATE_TTL" or not isinstance(item, exp.Anonymous):
            raise where.error(hint_node(hint, item), f"the hint {hint_text(item)} is not supported: Darwin takes "
                                                     f"STATE_TTL('input' = 'duration', ...) and ignores the batch join "
                                                     f"strategies ({', '.join(JOIN_STRATEGIES)}), as Flink's "
                                                     "streaming jobs do")
        if not item.expressions:
            raise where.error(item, "STATE_TTL needs at least one 'input' = 'duration' pair, e.g. "
                                    "STATE_TTL('orders' = '1d')")
        given: dict[str, tuple[int, exp.Expr]] = {}
        for option in item.expressions:
            key, value = string_pair(option, where, "STATE_TTL takes 'input' = 'duration' pairs, e.g. "
                                                    "STATE_TTL('orders' = '1d', 'customers' = '20h')")
            try:
                given[key.name] = (duration_ms(value.name), key)
            except BadValue as e:
                raise where.error(value, f"STATE_TTL('{key.name}' = '{value.name}'): {e}") from None
        for input_name, ttl in given.items():
            found.ttl_ms.setdefault(input_name, ttl)
    return found


def input_name(item: exp.Expr) -> str | None:
    """The name a hint gives a FROM item by: its alias, else its table's or view's name."""
    if item.alias:
        return item.alias
    if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier):
        return item.name
    return None


@dataclass(frozen=True)
class TableOptions:
    """The options a table reference's OPTIONS hints give (Flink's dynamic table options:
    ``FROM t /*+ OPTIONS('path' = '...') */``), each with the ``'key' = 'value'`` pair that gives it."""

    values: dict[str, str]
    pairs: dict[str, exp.Expr]
    hint: exp.Expr  # the first hint: where a problem of the table it makes is reported

    def sql(self) -> str:
        return "OPTIONS(" + ", ".join(f"'{k}' = '{v}'" for k, v in self.values.items()) + ")"


def table_options(table: exp.Expr, where: Located) -> TableOptions | None:
    """The OPTIONS hint written after ``table``'s name, None where it has none: a key given twice
    takes its last value, as in Flink. A second OPTIONS hint is refused (Flink reads the first and
    drops the others unread), and so is any other table hint."""
    hints = table.args.get(TABLE_HINTS) or []
    values: dict[str, str] = {}
    pairs: dict[str, exp.Expr] = {}
    first: exp.Expr | None = None
    for hint, item in ((h, i) for h in hints for i in h.expressions):
        if not isinstance(item, exp.Anonymous) or str(item.this).upper() != "OPTIONS":
            advice = ("STATE_TTL is a query hint: write it after SELECT (SELECT /*+ STATE_TTL('t' = '1d') */ ...)"
                      if hint_name(item) == "STATE_TTL" else "a table takes OPTIONS('key' = 'value', ...), Flink's "
                                                             "dynamic table options, and no other hint")
            raise where.error(hint_node(hint, item), f"the table hint {hint_text(item)} is not supported: {advice}")
        if first is not None:
            raise where.error(item, "a second OPTIONS hint of one table: Flink reads only the first and drops the "
                                    "others unread; give every option in one OPTIONS('key' = 'value', ...)")
        first = item
        if not item.expressions:
            raise where.error(item, "OPTIONS needs at least one 'key' = 'value' pair, e.g. OPTIONS('path' = '...')")
        for option in item.expressions:
            key, value = string_pair(option, where, "OPTIONS takes 'key' = 'value' pairs of strings, e.g. "
                                                    "OPTIONS('format' = 'csv')")
            values[key.name], pairs[key.name] = value.name, option
    if first is None:
        return None
    return TableOptions(values, pairs, hints[0])


def string_pair(option: exp.Expr, where: Located, usage: str) -> tuple[exp.Expr, exp.Literal]:
    """A hint's ``'key' = 'value'`` (the key quoted or not, the value a string), else ``usage`` as the
    error at the option."""
    key, value = (option.this, option.expression) if isinstance(option, exp.EQ) else (None, None)
    if not isinstance(key, (exp.Literal, exp.Column)) or not isinstance(value, exp.Literal) or not value.is_string:
        raise where.error(option, usage)
    return key, value


def hint_name(item: exp.Expr | str) -> str:
    """The name of one hint of a ``/*+ ... */`` (``OPTIONS`` of ``OPTIONS('k' = 'v')``), in capitals."""
    if isinstance(item, str):  # sqlglot keeps a hint it cannot parse as its text
        return item.strip().upper()
    return str(item.this).upper() if isinstance(item, exp.Anonymous) else item.sql().upper()


def hint_text(item: exp.Expr | str) -> str:
    return item.strip() if isinstance(item, str) else item.sql()


def hint_node(hint: exp.Expr, item: exp.Expr | str) -> exp.Expr:
    """Where to report ``item``: itself, or the hint holding it where it is text."""
    return hint if isinstance(item, str) else item
