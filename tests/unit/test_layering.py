"""Layers never import upwards (DESIGN.md §1): a lower layer works without any higher one.

Every import counts, including those inside functions: a deferred import is still a
dependency. Packages in one layer may import each other; ``darwin`` never imports
``nexmark``.
"""

import ast
from pathlib import Path

import pytest

from darwin.codegen.compiler import KERNEL_REACH

ROOT = Path(__file__).resolve().parents[2]
DARWIN = ROOT / "darwin"

# lowest first; a module may import its own layer and those below it
LAYERS = [
    {"darwin.errors", "darwin.types", "darwin.durations", "darwin.timestamps", "darwin.files", "darwin.config"},
    {"darwin.io"},
    {"darwin.plan"},
    {"darwin.graph"},
    {"darwin.codegen", "darwin.state"},
    {"darwin.runtime", "darwin.reference"},  # the reference interpreter is the runtime's other engine
    {"darwin.api", "darwin.expr", "darwin.testing", "darwin.sql", "darwin.spark", "darwin.deploy",
     "darwin.monitor"},
    {"darwin", "darwin.cli"},
]
LAYER = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def unit(module: str) -> str:
    """The layered unit of a module: its package under ``darwin``, or the top-level module."""
    return ".".join(module.split(".")[:2])


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(DARWIN.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out.append((".".join(parts[:-1] if parts[-1] == "__init__" else parts), path))
    return out


def test_every_darwin_unit_has_a_layer():
    assert sorted({unit(m) for m, _ in modules()} - set(LAYER)) == []


@pytest.mark.parametrize(("module", "path"), modules(), ids=[m for m, _ in modules()])
def test_no_module_imports_a_higher_layer(module, path):
    own = LAYER[unit(module)]
    upward = sorted(i for i in imports(path)
                    if i.split(".")[0] == "darwin" and LAYER.get(unit(i), own) > own)
    assert upward == [], f"{module} (layer {own}) imports higher layers"
    assert not [i for i in imports(path) if i.split(".")[0] == "nexmark"], f"{module} imports nexmark"


def test_the_check_sees_a_violation(tmp_path):
    """The test itself can fail: an upward import is found, also inside a function."""
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from darwin.runtime.compiled import run\n    import nexmark.queries\n")
    assert imports(bad) == {"darwin.runtime.compiled", "nexmark.queries"}
    assert LAYER[unit("darwin.runtime.compiled")] > LAYER["darwin.plan"]


def test_the_operator_graph_reads_state_traits_not_backend_names():
    """A stateful operator owns a state spec; which backend provides it is the runtime's business."""
    graph = (DARWIN / "graph").rglob("*.py")
    for path in graph:
        text = path.read_text()
        for name in ('"memory"', '"mmap"', '"rocksdb"', "config.state "):
            assert name not in text, f"{path.name} mentions {name}"


def test_a_kernels_cache_name_covers_every_layer_its_code_can_reach():
    """Kernels import code generation's helpers, which reach the layers below (darwin.codegen.compiler)."""
    reach = {name for name, level in LAYER.items() if level <= LAYER["darwin.codegen"]}
    assert set(KERNEL_REACH) == reach
