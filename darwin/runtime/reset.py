"""``darwin reset``: discard a job so it can start over, deleting only what the job made.

The job record in ``checkpoint_dir`` (``JOB.json``) names the job, its state_path and its
output directories. Reset removes the job's marked checkpoint directories and record,
the tables it marked in state_path, and the part files in output directories marked
with its id; anything else in those directories stays. It refuses while the job runs.
"""

from __future__ import annotations

import os
import shutil
from contextlib import ExitStack
from pathlib import Path

from darwin.errors import CheckpointError
from darwin.files import exclusive_lock, remove_files
from darwin.io.sinks import remove_output
from darwin.state.checkpoint import JOB, LOCK, CheckpointStore
from darwin.state.ownership import LOCK as STATE_LOCK
from darwin.state.ownership import remove_state


def reset_job(checkpoint_dir: str | os.PathLike[str]) -> list[Path]:
    """Delete the job whose checkpoints are in ``checkpoint_dir``; the paths deleted."""
    root = Path(checkpoint_dir)
    if not root.is_dir():
        raise CheckpointError(f"checkpoint_dir {str(root)!r} does not exist or is not a directory")
    store = CheckpointStore(root, create=False)
    record = store.read_job()
    if record is None and not store.ids() and not (root / LOCK).exists():
        raise CheckpointError(f"{str(root)!r} holds no Darwin job (no {JOB}, no checkpoints): nothing to reset; give "
                              "the job's checkpoint_dir (config.checkpoint_dir of its deployment file)")
    removed: list[Path] = []
    with ExitStack() as held:  # no job may run meanwhile
        held.callback(exclusive_lock(root, LOCK, "checkpoint_dir", CheckpointError).close)
        state_path = Path(record["state_path"]) if record and record.get("state_path") else None
        if state_path is not None and state_path.is_dir():
            held.callback(exclusive_lock(state_path, STATE_LOCK, "state_path", CheckpointError).close)
        if record is not None:
            for output in record.get("outputs", []):
                if Path(output).is_dir():
                    removed += remove_output(Path(output), record["job"])
            if state_path is not None and state_path.is_dir():
                removed += remove_state(state_path, record["job"])
        for checkpoint_id in store.ids():
            path = root / f"chk-{checkpoint_id:06d}"
            shutil.rmtree(path)
            removed.append(path)
        removed += remove_files([root / JOB, root / LOCK])
    return removed
