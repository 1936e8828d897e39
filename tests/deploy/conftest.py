"""The example deployments of configs/, copied into a temporary directory so runs write there."""

import shutil

import pytest
from example_files import CONFIGS


@pytest.fixture
def examples(tmp_path):
    """A copy of configs/ (examples, their data and Python query modules) in tmp_path."""
    for p in CONFIGS.glob("*.yaml"):
        shutil.copy(p, tmp_path / p.name)
    for d in ("data", "darwin_examples"):
        shutil.copytree(CONFIGS / d, tmp_path / d, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path
