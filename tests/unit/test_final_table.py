"""final_table (a changelog's end state, computed on whole columns) and net_changes (what a stretch
of changes adds up to) against the rule they implement, applied row by row: each -U/-D removes the
latest equal row still present."""

import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from darwin.plan.nodes import CHANGE_KIND, ChangeKind
from darwin.runtime.output import final_table, net_changes

ROWS = st.tuples(st.sampled_from([1, 2, None]), st.sampled_from(["a", "b", None]),
                 st.sampled_from([0.0, -0.0, math.nan, 1.5, None]))


def _key(values):
    """Values as the rule compares them: NaN equal to NaN, -0.0 apart from 0.0."""
    return tuple("NaN" if isinstance(v, float) and v != v else
                 "-0.0" if isinstance(v, float) and v == 0 and math.copysign(1, v) < 0 else v for v in values)


def _row_by_row(rows):
    keep, present = [True] * len(rows), {}
    for i, (*values, op) in enumerate(rows):
        if op in ("+I", "+U"):
            present.setdefault(_key(values), []).append(i)
        else:
            keep[i] = False
            stack = present.get(_key(values))
            if stack:
                keep[stack.pop()] = False
    return [_key(r[:-1]) for r, k in zip(rows, keep) if k]


def _changes(draw, live, most):
    """Up to ``most`` valid changes to the rows ``live`` (changed in place): retractions of rows
    standing, additions of drawn ones."""
    rows = []
    for _ in range(draw(st.integers(0, most))):
        if live and draw(st.booleans()):
            row = live.pop(draw(st.integers(0, len(live) - 1)))
            rows.append((*row, draw(st.sampled_from(["-U", "-D"]))))
        else:
            row = draw(ROWS)
            live.append(row)
            rows.append((*row, draw(st.sampled_from(["+I", "+U"]))))
    return rows


@st.composite
def changelogs(draw):
    return _changes(draw, [], 40)


@settings(max_examples=200, deadline=None)
@given(rows=changelogs())
def test_final_table_matches_the_row_by_row_rule(rows):
    columns = {"a": pa.int64(), "s": pa.string(), "f": pa.float64(), "op": pa.string()}
    table = pa.table({name: pa.array([r[i] for r in rows], t) for i, (name, t) in enumerate(columns.items())})
    assert [_key(r.values()) for r in final_table(table).to_pylist()] == _row_by_row(rows)


@st.composite
def windows(draw):
    """Changes after a point where the rows ``before`` stood (a flush): they may retract those."""
    before = draw(st.lists(ROWS, max_size=6))
    rows = _changes(draw, list(before), 30)
    return before, rows


@settings(max_examples=200, deadline=None)
@given(case=windows())
def test_net_changes_take_the_table_where_the_changes_do(case):
    """Applied after the rows that stood before, the net changes end where all the changes end, and
    a row is never both retracted and added."""
    before, rows = case
    kinds = {"+I": ChangeKind.INSERT, "-U": ChangeKind.UPDATE_BEFORE, "+U": ChangeKind.UPDATE_AFTER,
             "-D": ChangeKind.DELETE}
    columns = {"a": pa.int64(), "s": pa.string(), "f": pa.float64()}
    changes = pa.table({**{name: pa.array([r[i] for r in rows], t) for i, (name, t) in enumerate(columns.items())},
                        CHANGE_KIND: pa.array([kinds[r[3]] for r in rows], pa.int64())})
    net = net_changes(changes, ("a",)).to_pylist()
    labels = {v: k for k, v in kinds.items()}
    replayed = [(*r, "+I") for r in before] + [(*(x[c] for c in columns), labels[x[CHANGE_KIND]]) for x in net]
    everything = [(*r, "+I") for r in before] + rows
    assert sorted(_row_by_row(replayed), key=str) == sorted(_row_by_row(everything), key=str)
    assert len(net) <= len(rows)
    gone = {_key((x["a"], x["s"], x["f"])) for x in net if x[CHANGE_KIND] in (1, 3)}
    came = {_key((x["a"], x["s"], x["f"])) for x in net if x[CHANGE_KIND] in (0, 2)}
    assert not gone & came
