"""A stateful operator owns a state spec chosen from the backend's traits, shown by explain()."""

import re

import pyarrow as pa
import pytest

import darwin as dw


@pytest.mark.parametrize(("state", "spec"), [("memory", "state=ring"), ("mmap", "state=hash undo-log"),
                                             ("rocksdb", "state=hash")])
def test_each_backend_gets_the_state_its_traits_allow(state, spec, tmp_path):
    t = pa.table({"ts": pa.array([0, 1500], pa.timestamp("ms")), "k": [1, 2]})
    q = dw.from_arrow(t, time="ts").window(dw.Tumble("1s", on="ts")).group_by("k").agg(n=dw.count())
    text = q.explain(dw.Config(state=state, state_path=str(tmp_path)))
    assert re.search(rf"window-\w+-aggregate .* {re.escape(spec)}$", text, re.MULTILINE), text
