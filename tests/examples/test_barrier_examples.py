"""The barrier-window examples (``examples/``): each one's result equals the plain-Python
computation, and is the same at parallelism 1 and 2."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _example(name: str):
    spec = importlib.util.spec_from_file_location(f"darwin_example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["event_windows", "fraud_detection", "page_views"])
def test_example_matches_plain_python_at_parallelism_1_and_2(name):
    example = _example(name)
    one, want = example.main(parallelism=1)
    two, _ = example.main(parallelism=2)
    assert len(want) > 0
    assert one == want
    assert two == one


def test_the_fraud_model_flags_transactions_only_after_the_first_rule():
    example = _example("fraud_detection")
    table = example.events()
    first_rule = table.column("kind").to_pylist().index("rule")
    flagged, _ = example.main()
    assert flagged and min(flagged) > first_rule
