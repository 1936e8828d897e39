"""The kernel signature is the one contract between generated code and the runtime."""

import ast
import dataclasses

import pyarrow as pa
import pytest

import darwin as dw
from darwin import col
from darwin.codegen.generate import generate_pipeline
from darwin.codegen.signature import Buffer, ColumnArg, ControlArg, Part, StateArg
from darwin.errors import DarwinError
from darwin.graph.translate import translate
from darwin.plan.rules import optimize
from darwin.runtime.encoding import StringPool, decode, encode
from darwin.runtime.pipeline import PipelineRunner
from darwin.state.memory import MemoryBackend


def query():
    t = pa.table({"ts": pa.array([0, 1500], pa.timestamp("ms")), "k": [1, None], "v": [2.0, 3.0]})
    return (dw.from_arrow(t, time="ts").filter(col("v") > 1).window(dw.Tumble("1s", on="ts"), late_output=True)
            .group_by("k").agg(n=dw.count(), s=dw.sum("v")))


def pipelines(config=None):
    config = config or dw.Config()
    return translate(optimize(query().plan), config).pipelines


def test_the_signature_names_are_the_generated_kernels_parameters():
    for p in pipelines():
        if not p.needs_kernel:
            continue
        ks = generate_pipeline(p)
        kernel = next(n for n in ast.walk(ast.parse(ks.source)) if isinstance(n, ast.FunctionDef))
        assert [a.arg for a in kernel.args.args] == ["start", "n", *ks.signature.names]
        args = ks.signature.args
        assert args.count(ControlArg()) == 1
        inputs = {(a.column, a.part) for a in args if isinstance(a, ColumnArg) and a.buffer is Buffer.INPUT}
        assert inputs == {(f.name, Part.VALUES) for f in p.input_schema.fields} | \
            {(f.name, Part.VALID) for f in p.input_schema.fields if f.nullable}
        assert any(isinstance(a, StateArg) for a in args)  # the aggregation's table
        assert any(isinstance(a, ColumnArg) and a.buffer is Buffer.LATE for a in args)  # late_output=True


def test_an_argument_the_runtime_cannot_bind_is_refused_by_name():
    (first, *_) = pipelines()
    runner = PipelineRunner(first, dw.Config(), StringPool(), MemoryBackend())

    @dataclasses.dataclass(frozen=True)
    class Mystery:
        name: str

    runner.ks = dataclasses.replace(runner.ks, signature=dataclasses.replace(runner.ks.signature,
                                                                          args=(Mystery("x"),)))
    with pytest.raises(DarwinError, match=r"cannot bind kernel argument .*Mystery\(name=.x.\)"):
        runner._args(None, None, None)


def test_a_batch_of_numbers_gets_its_texts_in_a_few_kernel_calls():
    """A number's text is made when a kernel meets a value its table lacks. One kernel stop per value (each a
    return to Python, ~30 us) made 200,000 distinct integers take 6 s; now the kernel runs on once as a scout
    (``ctl.SCOUT``) that records every missing value, and their texts are made at once."""
    from darwin.plan.casts import to_text
    from darwin.types import DType

    n = 3_000
    ints = [i * 7919 - 10**6 for i in range(n)]
    floats = [i / 7 * 10.0 ** (i % 30 - 15) for i in range(n)]
    table = pa.table({"i": pa.array(ints, pa.int64()), "f": pa.array(floats, pa.float64()),
                      "t": pa.array([v * 1_000_003 for v in ints], pa.timestamp("ms"))})
    q = dw.from_arrow(table).select(i=col("i").cast("string"), f=col("f").cast("string"), t=col("t").cast("string"))
    (p,) = translate(optimize(q.plan), dw.Config()).pipelines
    pool = StringPool()
    runner = PipelineRunner(p, dw.Config(), pool, MemoryBackend())
    kernel, calls = runner.kernel, []
    runner.kernel = lambda *args: (calls.append(args[0]), kernel(*args))[1]
    out, _, _ = runner.process(encode(table.to_batches()[0], p.input_schema, pool, "t"))
    assert len(calls) == 3  # the first row's miss, the scout from it, the rest of the batch
    rows = decode(out, p.output_schema, pool).to_pydict()
    assert rows["i"] == [to_text(DType.INT64, v) for v in ints]
    assert rows["f"] == [to_text(DType.FLOAT64, v) for v in floats]
    assert rows["t"] == [to_text(DType.TIMESTAMP, v * 1_000_003) for v in ints]


def test_a_string_function_of_new_strings_interns_its_results_at_once():
    """A string function's lookup table covers the strings the pool gains (a cast's texts, a concatenation's).
    Its results were interned one pool call each (~14 us): upper() of 20,000 new texts took 0.26 s against
    0.006 s for the cast alone; they are interned in one call now."""
    n = 3_000
    table = pa.table({"i": pa.array([i * 7919 for i in range(n)], pa.int64())})
    padded = col("i").cast("string").str.lpad(9, "é")
    q = dw.from_arrow(table).select(p=padded, up=padded.str.upper(), n=padded.str.upper().str.length())
    (p,) = translate(optimize(q.plan), dw.Config()).pipelines
    pool = StringPool()
    runner = PipelineRunner(p, dw.Config(), pool, MemoryBackend())
    intern, interned = pool.encode, []
    pool.encode = lambda arr: (interned.append(len(arr)), intern(arr))[1]
    out, _, _ = runner.process(encode(table.to_batches()[0], p.input_schema, pool, "t"))
    assert len(interned) < 20  # the texts, then each table's results over the strings the pool gained
    rows = decode(out, p.output_schema, pool).to_pydict()
    assert rows["p"] == [str(i * 7919).rjust(9, "é") for i in range(n)]
    assert rows["up"] == [str(i * 7919).rjust(9, "É") for i in range(n)]
    assert rows["n"] == [9] * n


def test_a_batch_of_new_strings_is_made_in_a_few_kernel_calls():
    """CONCAT, CONCAT_WS and a string function that expands strings make a string per distinct pair of codes.
    One kernel stop per pair (a return to Python, ~55 us) made 20,000 distinct strings take a second and a
    stream of random ones minutes; a scout now records every pair a batch lacks and their strings are made at
    once, and the functions of the new strings (upper) are interned at once too, not one pool call each."""
    from darwin.plan.strings import apply

    n = 3_000
    strings = [f"é{i * 7919 % 100_003}😀" for i in range(n)]
    table = pa.table({"s": pa.array(strings, pa.string()), "i": pa.array(range(n), pa.int64())})
    s = col("s")
    q = dw.from_arrow(table).select(c=dw.concat(s, dw.lit("x")), w=dw.concat_ws("-", s, s, dw.lit("y")),
                                    up=dw.concat(s, dw.lit("x")).str.upper(), r=s.str.replace("é", "ée"),
                                    t=col("i").cast("string").str.lower())
    (p,) = translate(optimize(q.plan), dw.Config()).pipelines
    pool = StringPool()
    runner = PipelineRunner(p, dw.Config(), pool, MemoryBackend())
    kernel, calls = runner.kernel, []
    runner.kernel = lambda *args: (calls.append(args[0]), kernel(*args))[1]
    intern, interned = pool.encode, []
    pool.encode = lambda arr: (interned.append(len(arr)), intern(arr))[1]
    out, _, _ = runner.process(encode(table.to_batches()[0], p.input_schema, pool, "t"))
    # the first row's miss, the scout from it, the first row's next miss (CONCAT_WS's second pair, of a
    # string the first scout found missing itself), the scout from it, the rest of the batch
    assert len(calls) == 5
    assert len(interned) < 50  # the batch, the strings each scout made, the functions' results: not one a string
    rows = decode(out, p.output_schema, pool).to_pydict()
    assert rows["c"] == [v + "x" for v in strings]
    assert rows["w"] == [f"{v}-{v}-y" for v in strings]
    assert rows["up"] == [(v + "x").upper() for v in strings]
    assert rows["r"] == [apply("replace", ("é", "ée"), v) for v in strings]
    assert rows["t"] == [str(i) for i in range(n)]


def test_a_batch_of_timestamps_is_formatted_in_a_few_kernel_calls():
    """strftime's strings are made by time unit, as kernels meet units. One kernel stop per unit (formatting
    it and the 63 after it) made 20,000 random timestamps formatted to the second take 11 s, 200,000 83 s;
    a scout now records every unit a batch lacks and they are formatted at once."""
    from darwin.plan.timeformat import strftime

    n = 3_000
    times = [(i * 7_919_993_917) % (400 * 86_400_000) - 10**9 for i in range(n)]
    table = pa.table({"t": pa.array(times, pa.timestamp("ms"))})
    q = dw.from_arrow(table).select(s=col("t").dt.strftime("%F %T"), h=col("t").dt.strftime("at %H:%M"),
                                    d=col("t").dt.strftime("%j"))
    (p,) = translate(optimize(q.plan), dw.Config()).pipelines
    runner = PipelineRunner(p, dw.Config(), pool := StringPool(), MemoryBackend())
    kernel, calls = runner.kernel, []
    runner.kernel = lambda *args: (calls.append(args[0]), kernel(*args))[1]
    out, _, _ = runner.process(encode(table.to_batches()[0], p.input_schema, pool, "t"))
    assert len(calls) == 3  # the first row's miss, the scout from it, the rest of the batch
    rows = decode(out, p.output_schema, pool).to_pydict()
    assert rows["s"] == [strftime("%F %T", t) for t in times]
    assert rows["h"] == [strftime("at %H:%M", t) for t in times]
    assert rows["d"] == [strftime("%j", t) for t in times]
