"""Where the example deployments live, and which files of configs/ are engine settings only."""

from pathlib import Path

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
ENGINE_ONLY = ("local.yaml", "mmap.yaml", "rocksdb.yaml")  # Config.from_yaml files, not deployments
EXAMPLES = sorted(p.name for p in CONFIGS.glob("*.yaml") if p.name not in ENGINE_ONLY)
