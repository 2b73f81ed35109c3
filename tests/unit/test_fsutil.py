"""fsutil: a file is replaced whole or not at all, the directory is fsynced, no temporary file stays."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from odradek.fsutil import atomic_write, replacing


def test_atomic_write_replaces_the_content(tmp_path: Path) -> None:
    target = tmp_path / "checkpoint"
    atomic_write(target, "0\n1\nt 0 5\n")
    assert target.read_text() == "0\n1\nt 0 5\n"
    atomic_write(target, b"\x00binary")
    assert target.read_bytes() == b"\x00binary"
    assert os.listdir(tmp_path) == ["checkpoint"]


def test_old_content_stays_until_the_block_succeeds(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    with replacing(target) as tmp:
        tmp.write_text("new")
        assert tmp.parent == tmp_path and tmp.name.startswith(".state.json.")
        assert target.read_text() == "old"
    assert target.read_text() == "new"
    assert not tmp.exists()


def test_an_error_leaves_the_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    target.write_text("old")
    with pytest.raises(RuntimeError), replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_failed_rename_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()  # a file cannot replace a directory
    with pytest.raises(OSError):
        atomic_write(target, "data")
    assert os.listdir(tmp_path) == ["taken"]


def test_file_and_directory_are_fsynced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[tuple[str, bool]] = []
    real_fsync = os.fsync

    def recording_fsync(fd: int) -> None:
        info = os.fstat(fd)
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), stat.S_ISDIR(info.st_mode)))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    target = tmp_path / "checkpoint"
    atomic_write(target, "x")
    assert [is_dir for _, is_dir in synced] == [False, True]
    assert Path(synced[0][0]).name.endswith(".tmp") and synced[1][0] == str(tmp_path)


# --- a full disk (issue #29): every checkpoint and metadata file is replaced whole or not at all ---------


def fill_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on writes stop half way with ENOSPC, as on a file system that just filled up."""
    real = Path.write_bytes

    def half_then_enospc(self: Path, data: Any) -> int:
        real(self, bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device", str(self))

    monkeypatch.setattr(Path, "write_bytes", half_then_enospc)


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    fill_the_disk(monkeypatch)


def test_a_full_disk_leaves_the_old_file_whole(tmp_path: Path, full_disk: None) -> None:
    target = tmp_path / "meta.properties"
    target.write_text("broker.id=1\n")
    with pytest.raises(OSError) as failed:
        atomic_write(target, "broker.id=1\ncluster.id=abc\n")
    assert failed.value.errno == errno.ENOSPC
    assert target.read_text() == "broker.id=1\n"
    assert os.listdir(tmp_path) == ["meta.properties"]


def test_a_failed_fsync_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "checkpoint"
    target.write_text("old")

    def enospc(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", enospc)
    with pytest.raises(OSError):
        atomic_write(target, "new")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["checkpoint"]


def test_storage_checkpoints_survive_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The offset checkpoints, the leader epoch checkpoint (a new log's first one too), producer snapshots
    and .txnindex rewrites all keep their old content when the disk fills mid-write."""
    from odradek.storage.epoch_cache import LeaderEpochCache
    from odradek.storage.manager import read_checkpoint, write_checkpoint
    from odradek.storage.producer_state import ProducerStateManager
    from odradek.storage.txn_index import AbortedTxn, AbortedTxnIndex, index_name

    checkpoint = tmp_path / "recovery-point-offset-checkpoint"
    write_checkpoint(checkpoint, {("t", 0): 5})
    epochs = LeaderEpochCache(tmp_path)
    epochs.assign(1, 0)  # the first write of a new log (no fsync) goes through a temporary file too
    snapshot = tmp_path / "00000000000000000007.snapshot"
    ProducerStateManager().write_snapshot(snapshot)
    snapshot_bytes = snapshot.read_bytes()
    txns = AbortedTxnIndex(tmp_path)
    txns.entries = [AbortedTxn(3, 1, 0, 0)]
    txns.rewrite([0])
    txn_bytes = (tmp_path / index_name(0)).read_bytes()
    before = sorted(os.listdir(tmp_path))

    fill_the_disk(monkeypatch)
    with pytest.raises(OSError):
        write_checkpoint(checkpoint, {("t", 0): 9, ("t", 1): 3})
    with pytest.raises(OSError):
        epochs.assign(2, 10)
    with pytest.raises(OSError):
        ProducerStateManager().write_snapshot(snapshot)
    txns.entries.append(AbortedTxn(8, 2, 5, 5))
    with pytest.raises(OSError):
        txns.rewrite([0])
    monkeypatch.undo()

    assert read_checkpoint(checkpoint) == {("t", 0): 5}
    assert LeaderEpochCache(tmp_path).entries == [(1, 0)]
    assert snapshot.read_bytes() == snapshot_bytes
    assert (tmp_path / index_name(0)).read_bytes() == txn_bytes
    assert sorted(os.listdir(tmp_path)) == before  # no temporary file left behind
