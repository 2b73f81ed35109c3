"""fsutil: a file is replaced whole or not at all, the directory is fsynced, no temporary file stays."""

from __future__ import annotations

import os
import stat
from pathlib import Path

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
