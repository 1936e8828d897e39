"""The checkpoint store on its own: atomic manifests, checksums, pruning."""

import json

import pytest

from darwin.state.checkpoint import MANIFEST, CheckpointStore


def write(store, checkpoint_id, payload=b"state"):
    d = store.directory(checkpoint_id)
    (d / "data.bin").write_bytes(payload)
    return store.commit(checkpoint_id, {"offset": checkpoint_id}, ["data.bin"])


def test_latest_is_the_newest_complete_checkpoint(tmp_path):
    store = CheckpointStore(tmp_path)
    assert store.latest() is None
    write(store, 1)
    write(store, 2)
    store.directory(3)  # being written when the process died: no manifest
    latest = store.latest()
    assert (latest.id, latest.body) == (2, {"offset": 2})


@pytest.mark.parametrize("damage", ["file", "manifest", "missing", "truncated"])
def test_damaged_checkpoints_are_skipped(tmp_path, damage):
    store = CheckpointStore(tmp_path)
    write(store, 1)
    newest = write(store, 2).path
    if damage == "file":
        (newest / "data.bin").write_bytes(b"stale")
    elif damage == "manifest":
        body = json.loads((newest / MANIFEST).read_text())
        body["body"]["offset"] = 99
        (newest / MANIFEST).write_text(json.dumps(body))
    elif damage == "missing":
        (newest / "data.bin").unlink()
    else:
        (newest / MANIFEST).write_text((newest / MANIFEST).read_text()[:20])
    assert store.latest().id == 1


def test_only_the_two_newest_are_kept(tmp_path):
    store = CheckpointStore(tmp_path)
    for i in range(1, 6):
        write(store, i)
    assert store.ids() == [4, 5]


def test_a_new_checkpoint_replaces_a_leftover_directory(tmp_path):
    store = CheckpointStore(tmp_path)
    write(store, 1)
    (store.directory(2) / "junk").write_text("from a crashed run")
    write(store, 2, b"fresh")
    assert not (tmp_path / "chk-000002" / "junk").exists()
    assert store.latest().id == 2
