"""A second process running the same query compiles nothing; targets are honoured."""

import json
import os
import subprocess
import sys
import textwrap
import time

from darwin.codegen.compiler import IN_USE, LOOKED, UNUSED_BUILD_DAYS

SCRIPT = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    import darwin as dw
    from darwin import col
    t = pa.table({"ts": pa.array([0, 1500, 2500, 7000], pa.timestamp("ms")), "k": [1, 2, 1, 2], "v": [1.5, 2, 3, 4]})
    q = (dw.from_arrow(t, time="ts").filter(col("v") > 1.0)
           .window(dw.Tumble("2s", on="ts")).group_by("k").agg(s=dw.sum("v"), n=dw.count()))
    r = q.execute(dw.Config(cache_dir=sys.argv[1], target=sys.argv[2]))
    print(json.dumps({"rows": r.table.to_pydict()["s"], "compiled": r.metrics["kernels_compiled"],
                      "cached": r.metrics["kernels_from_cache"]}))
""")


def _run(cache_dir, target="host"):
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(cache_dir), target], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing(tmp_path):
    first = _run(tmp_path)
    second = _run(tmp_path)
    assert first["compiled"] >= 1 and first["cached"] == 0
    assert second["compiled"] == 0 and second["cached"] >= 1
    assert first["rows"] == second["rows"] == [1.5, 2.0, 3.0, 4.0]
    assert list((tmp_path / "kernels").glob("*/k_*.py"))  # in this Darwin build's directory


def test_generic_target_gives_the_same_result(tmp_path):
    host = _run(tmp_path / "h", "host")
    generic = _run(tmp_path / "g", "generic")
    assert host["rows"] == generic["rows"]
    assert generic["compiled"] >= 1  # a separate cache entry: generic code is not host code


def test_switching_target_in_one_process_is_a_clear_error(tmp_path):
    code = SCRIPT.replace("r = q.execute", "q.collect(dw.Config(cache_dir=sys.argv[1]))\nr = q.execute")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path), "generic"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "fixes the CPU target per process" in proc.stderr


def test_another_darwin_does_not_load_this_ones_machine_code(tmp_path):
    """Numba's cache would not notice that a helper the kernel inlined has changed (an upgrade): a Darwin whose
    source differs compiles the same query again, beside the other's kernels."""
    first = _run(tmp_path)
    code = SCRIPT.replace("import darwin as dw", "import darwin as dw\nimport darwin.codegen.compiler as compiler\n"
                          "compiler.darwin_fingerprint = lambda: 'another Darwin'")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path), "host"], check=True, capture_output=True,
                         text=True)
    other = json.loads(out.stdout.strip().splitlines()[-1])
    assert first["compiled"] >= 1 and other["compiled"] == first["compiled"] and other["cached"] == 0
    assert other["rows"] == first["rows"]
    assert _run(tmp_path)["compiled"] == 0


def _kernels_of_a_build(kernels, name, last_used):
    build = kernels / name
    (build / "__pycache__").mkdir(parents=True)
    (build / "k_0.py").write_text("kernel = None\n")
    (build / IN_USE).touch()
    os.utime(build / IN_USE, (last_used, last_used))
    return build


def _written_at(path, when):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")
    os.utime(path, (when, when))
    return path


def test_kernels_of_builds_unused_for_a_week_are_removed(tmp_path):
    """Every Darwin upgrade compiles its own kernels: the old ones go once no process has used them for
    UNUSED_BUILD_DAYS, looked for at most once a day; a build used since stays."""
    kernels, now, days = tmp_path / "kernels", time.time(), UNUSED_BUILD_DAYS * 86_400
    unused = _kernels_of_a_build(kernels, "0123456789abcdef", now - days - 60)
    used = _kernels_of_a_build(kernels, "fedcba9876543210", now - days + 3_600)
    flat_old = [_written_at(kernels / "k_1.py", now - days - 60),
                _written_at(kernels / "__pycache__" / "k_1.kernel-3.py311.nbi", now - days - 60)]
    flat_recent = [_written_at(kernels / "k_2.py", now - 60),
                   _written_at(kernels / "__pycache__" / "k_2.kernel-3.py311.nbi", now - 60)]
    assert _run(tmp_path)["compiled"] >= 1
    assert not unused.exists() and used.exists() and not any(p.exists() for p in flat_old)
    assert all(p.exists() for p in flat_recent)
    assert [p.parent.name for p in kernels.glob("*/k_*.py") if p.parent != used]  # this build's own
    later = _kernels_of_a_build(kernels, "00112233445566aa", now - days - 60)
    assert _run(tmp_path)["compiled"] == 0 and later.exists()  # looked today already
    os.utime(kernels / LOOKED, (now - 86_500, now - 86_500))
    assert _run(tmp_path)["compiled"] == 0 and not later.exists() and used.exists()
