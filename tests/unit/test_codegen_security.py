"""Generated code never contains user text: names and literals cannot inject code."""

import pyarrow as pa

import darwin as dw
from darwin import col
from darwin.codegen.generate import generate_pipeline
from darwin.graph.translate import translate
from darwin.plan.rules import optimize
from darwin.testing import assert_engines_agree

EVIL_COLUMN = 'x"]; import os; os.system("echo pwned") #\n\'\'\''
EVIL_KEY = "k = __import__('os').getcwd()\n\"\"\"'"
EVIL_LITERAL = "'); os.remove('/tmp/x') #\n\"\"\"\\"


def test_hostile_names_and_literals_run_correctly_and_stay_out_of_source():
    table = pa.table({
        "ts": pa.array([0, 10, 1200, 1300, 2500], pa.timestamp("ms")),
        EVIL_COLUMN: [1, 2, 3, 4, 5],
        EVIL_KEY: [EVIL_LITERAL, "plain", EVIL_LITERAL, "plain", EVIL_LITERAL],
    })
    t = dw.from_arrow(table, time="ts")
    q = (t.filter((col(EVIL_KEY) == EVIL_LITERAL) | (col(EVIL_COLUMN) > 3))
          .with_columns(**{EVIL_COLUMN + "2": col(EVIL_COLUMN) * 2})
          .window(dw.Tumble("1s", on="ts")).group_by(EVIL_KEY)
          .agg(**{"s" + EVIL_COLUMN: dw.sum(EVIL_COLUMN + "2"), "n": dw.count()}))
    out = assert_engines_agree(q).table
    assert out.column_names == ["window_start", "window_end", EVIL_KEY, "s" + EVIL_COLUMN, "n"]
    assert out[EVIL_KEY].to_pylist() == [EVIL_LITERAL, EVIL_LITERAL, "plain", EVIL_LITERAL]
    assert out["n"].to_pylist() == [1, 1, 1, 1]
    sources = [generate_pipeline(p).source for p in translate(optimize(q.plan), dw.Config()).pipelines
               if p.needs_kernel]
    assert sources
    for text in sources:
        for fragment in ("pwned", "os.system", "__import__", "remove", "getcwd", "plain", EVIL_COLUMN, EVIL_KEY):
            assert fragment not in text
        compile(text, "<generated>", "exec")  # and it is still valid Python
