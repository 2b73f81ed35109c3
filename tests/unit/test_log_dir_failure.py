"""Log dir failures (issue #29): the failure channel takes a dir offline once, from any thread, with one ERROR
line; an I/O error met by an append, a background flush or a checkpoint write (ENOSPC simulated on the
descriptors of one dir) takes that dir offline, its logs refuse everything with KAFKA_STORAGE_ERROR, the
other dir serves on, and nothing writes to the failed dir again."""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch
from odradek.storage.failure import LogDirFailureChannel, io_error_of
from odradek.storage.manager import (
    CLEAN_SHUTDOWN_FILE,
    RECOVERY_POINT_CHECKPOINT,
    LogManager,
    StorageError,
)


def batch(i: int) -> bytes:
    return build_batch([(f"k{i}".encode(), b"v" * 100)])


def in_dir(fd: int, d: Path) -> bool:
    try:
        return os.readlink(f"/proc/self/fd/{fd}").startswith(f"{d}/")
    except OSError:
        return False


def failing(real: Callable[..., Any], d: Path, err: int) -> Callable[..., Any]:
    """`real` (an os function taking a descriptor first) that fails with `err` on descriptors of files in `d`."""
    def call(fd: int, *args: Any) -> Any:
        if in_dir(fd, d):
            raise OSError(err, os.strerror(err))
        return real(fd, *args)
    return call


@pytest.fixture
def two_dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "d1", tmp_path / "d2"


def started(dirs: tuple[Path, Path], props: dict[str, str] | None = None) -> LogManager:
    manager = LogManager(list(dirs), props or {})
    manager.startup()
    return manager


def errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- the channel ------------------------------------------------------------------------------------


def test_a_dir_is_reported_offline_once_from_any_thread(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    channel = LogDirFailureChannel()
    told: list[Path] = []
    channel.listeners.append(told.append)
    d = tmp_path / "d"
    start = threading.Barrier(8)

    def report(i: int) -> None:
        start.wait()
        channel.report(d, f"Error while appending records to t-{i} in dir {d}: [Errno 28] No space left on device")

    threads = [threading.Thread(target=report, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert told == [d]
    assert channel.is_offline(d) and channel.offline_dirs() == [d]
    assert not channel.is_offline(tmp_path / "other")
    assert len(errors(caplog)) == 1 and f"in dir {d}: [Errno 28]" in errors(caplog)[0].getMessage()
    assert channel.report(d, "again") is False and told == [d]


def test_what_counts_as_an_io_error() -> None:
    enospc = OSError(errno.ENOSPC, "No space left on device")
    assert io_error_of(enospc) is enospc
    wrapped = StorageError(message="Error while appending")
    wrapped.__cause__ = enospc
    assert io_error_of(wrapped) is enospc
    assert io_error_of(OSError(errno.EMFILE, "Too many open files")) is None  # the process's, not the dir's
    assert io_error_of(StorageError(message="Log t-0 is closed")) is None
    assert io_error_of(ValueError("x")) is None


# --- the log manager ----------------------------------------------------------------------------------


def test_an_append_that_meets_enospc_takes_its_dir_offline(
        two_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    d1, d2 = two_dirs
    manager = started(two_dirs)
    a = manager.get_or_create_log("a", 0)  # placement: the dir with the fewest partitions, d1 first
    b = manager.get_or_create_log("b", 0)
    c = manager.get_or_create_log("c", 0)
    assert (a.dir.parent, b.dir.parent, c.dir.parent) == (d1, d2, d1)
    for lg in (a, b, c):
        lg.append_as_leader(batch(0), 0)
    manager.checkpoint()
    d1_checkpoint = (d1 / RECOVERY_POINT_CHECKPOINT).read_text()

    monkeypatch.setattr(os, "pwrite", failing(os.pwrite, d1, errno.ENOSPC))
    with pytest.raises(StorageError) as failed:
        a.append_as_leader(batch(1), 0)
    assert failed.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert failed.value.message.startswith(f"Error while appending records to a-0 in dir {d1}: [Errno 28]")
    assert manager.failures.is_offline(d1) and manager.online_dirs == [d2]
    assert [r.getMessage() for r in errors(caplog)] == [failed.value.message]
    assert all(r.exc_info is None for r in caplog.records)  # one line, no traceback

    # at once, before the broker handles the failure: every log in d1 refuses, d2 serves on
    for lg in (a, c):
        with pytest.raises(StorageError, match="offline"):
            lg.append_as_leader(batch(2), 0)
        with pytest.raises(StorageError, match="offline"):
            lg.read(0, 1000)
    assert b.append_as_leader(batch(1), 0).first_offset == 1
    assert b.read(0, 10_000).records

    assert manager.handle_dir_failure(d1) == [("a", 0), ("c", 0)]
    assert manager.get_log("a", 0) is None and manager.offline_partitions() == {("a", 0): d1, ("c", 0): d1}
    with pytest.raises(StorageError, match="offline"):
        manager.get_or_create_log("a", 0)
    assert manager.get_or_create_log("e", 0).dir.parent == d2  # new logs avoid the failed dir
    assert manager.alter_log_dir("b", 0, d1) == ErrorCode.KAFKA_STORAGE_ERROR

    monkeypatch.undo()  # the disk has room again: still nothing is written to d1 until a restart
    manager.checkpoint()
    assert (d1 / RECOVERY_POINT_CHECKPOINT).read_text() == d1_checkpoint
    assert "b 0 " in (d2 / RECOVERY_POINT_CHECKPOINT).read_text()
    manager.shutdown()
    assert not (d1 / CLEAN_SHUTDOWN_FILE).exists() and (d2 / CLEAN_SHUTDOWN_FILE).exists()
    assert len(errors(caplog)) == 1

    restarted = started(two_dirs)  # the next start-up recovers d1 and serves its logs again
    assert restarted.get_log("a", 0).log_end_offset == 1 and restarted.get_log("c", 0).log_end_offset == 1
    restarted.shutdown()


def test_a_failed_background_flush_fails_its_waiter_and_takes_the_dir_offline(
        two_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    d1, _ = two_dirs
    manager = started(two_dirs)
    lg = manager.get_or_create_log("a", 0, {"flush.messages": "1"})
    monkeypatch.setattr(os, "fsync", failing(os.fsync, d1, errno.EIO))
    info = lg.append_as_leader(batch(0), 0)  # the append itself succeeds; its flush runs on the disk worker
    assert info.durable is not None
    with pytest.raises(StorageError, match=f"Error while flushing log for a-0 in dir {d1}: \\[Errno 5\\]"):
        info.durable.result(10)
    assert manager.failures.is_offline(d1)
    assert len(errors(caplog)) == 1 and all(r.exc_info is None for r in caplog.records)
    with pytest.raises(StorageError):
        lg.append_as_leader(batch(1), 0)
    monkeypatch.undo()
    manager.handle_dir_failure(d1)
    manager.shutdown()


def test_a_failed_leader_epoch_checkpoint_write_takes_the_dir_offline_without_a_traceback(
        two_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The traceback of issue #29: `OSError: [Errno 28]` from the leader-epoch checkpoint's write, in the
    background, logged and forgotten."""
    d1, _ = two_dirs
    manager = started(two_dirs)
    lg = manager.get_or_create_log("a", 0)
    lg.append_as_leader(batch(0), 0)
    lg.wait_for_background()
    before = (lg.dir / "leader-epoch-checkpoint").read_text()

    def full(path: Path, data: bytes | str, durable: bool = True) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("odradek.storage.epoch_cache.atomic_write", full)
    lg.epochs.assign(3, lg.log_end_offset)  # a new leader epoch: its checkpoint goes to the disk worker
    lg.wait_for_background()
    assert manager.failures.is_offline(d1)
    assert [r.getMessage() for r in errors(caplog)] == [
        f"Error while writing the leader-epoch-checkpoint of a-0 in dir {d1}: [Errno 28] No space left on device"]
    assert all(r.exc_info is None for r in caplog.records)
    assert (lg.dir / "leader-epoch-checkpoint").read_text() == before
    monkeypatch.undo()
    manager.handle_dir_failure(d1)
    manager.shutdown()


def test_a_failed_checkpoint_file_takes_only_its_dir_offline(
        two_dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    d1, d2 = two_dirs
    manager = started(two_dirs)
    manager.get_or_create_log("a", 0).append_as_leader(batch(0), 0)
    manager.get_or_create_log("b", 0).append_as_leader(batch(0), 0)
    monkeypatch.setattr(os, "fsync", failing(os.fsync, d1, errno.ENOSPC))
    manager.checkpoint()  # no exception: the failure goes to the channel
    assert manager.failures.offline_dirs() == [d1]
    assert "a 0" not in (d1 / RECOVERY_POINT_CHECKPOINT).read_text()  # the old file, whole
    assert [p.name for p in d1.iterdir() if p.name.endswith(".tmp")] == []
    assert "b 0" in (d2 / RECOVERY_POINT_CHECKPOINT).read_text()
    monkeypatch.undo()
    manager.handle_dir_failure(d1)
    manager.shutdown()


def test_a_disk_job_overtaken_by_a_rename_runs_again_at_the_new_path(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    """A moved log takes its final name while a disk job (its leader-epoch checkpoint) is writing at the
    old path: the FileNotFoundError is the rename's doing, not the disk's. The job runs again at the new
    path and the dir stays online (a race the log mover's tests met under load)."""
    from odradek.storage.log import Log

    lg = Log(tmp_path / "d" / "t-0")
    seen: list[Path] = []

    def job() -> None:
        target = lg.dir / "probe"
        seen.append(target)
        if len(seen) == 1:
            lg.rename_dir(tmp_path / "d" / "t-1")  # overtakes the write below
        target.write_text("x")

    lg._submit(job).result(10)
    assert seen == [tmp_path / "d" / "t-0" / "probe", tmp_path / "d" / "t-1" / "probe"]
    assert (tmp_path / "d" / "t-1" / "probe").read_text() == "x"
    assert not lg.offline and errors(caplog) == []
    lg.close()
