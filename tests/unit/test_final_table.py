"""final_table (a changelog's end state, computed on whole columns) against the rule it implements,
applied row by row: each -U/-D removes the latest equal row still present."""

import math

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from darwin.runtime.output import final_table

ROWS = st.tuples(st.sampled_from([1, 2, None]), st.sampled_from(["a", "b", None]),
                 st.sampled_from([0.0, -0.0, math.nan, 1.5, None]))


def _key(values):
    return tuple("NaN" if isinstance(v, float) and v != v else v for v in values)


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


@st.composite
def changelogs(draw):
    rows, live = [], []
    for _ in range(draw(st.integers(0, 40))):
        if live and draw(st.booleans()):
            row = live.pop(draw(st.integers(0, len(live) - 1)))
            rows.append((*row, draw(st.sampled_from(["-U", "-D"]))))
        else:
            row = draw(ROWS)
            live.append(row)
            rows.append((*row, draw(st.sampled_from(["+I", "+U"]))))
    return rows


@settings(max_examples=200, deadline=None)
@given(rows=changelogs())
def test_final_table_matches_the_row_by_row_rule(rows):
    columns = {"a": pa.int64(), "s": pa.string(), "f": pa.float64(), "op": pa.string()}
    table = pa.table({name: pa.array([r[i] for r in rows], t) for i, (name, t) in enumerate(columns.items())})
    assert [_key(r.values()) for r in final_table(table).to_pylist()] == _row_by_row(rows)
