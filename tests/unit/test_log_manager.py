"""LogManager: log dirs, placement, checkpoints, clean-shutdown marker, recovery, retention, deletion."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch
from odradek.storage.manager import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    LogManager,
    StorageError,
    read_checkpoint,
    write_checkpoint,
)
from tests.storage_helpers import T0, Clock, crash_image


def batch(i: int, ts: int = T0) -> bytes:
    return build_batch([(f"k{i}".encode(), b"v" * 40)] * 2, timestamp=ts)


def started(dirs: list[Path], props: dict[str, str], **kw: Any) -> LogManager:
    """A LogManager over `dirs` with these broker properties, started up."""
    manager = LogManager(dirs, props, **kw)
    manager.startup()
    return manager


def fill(manager: LogManager, topic: str, partition: int, count: int, **props: str) -> None:
    log = manager.get_or_create_log(topic, partition, props or None)
    for i in range(count):
        log.append_as_leader(batch(i), 0)
    log.high_watermark = log.log_end_offset


def test_checkpoint_file_format(tmp_path: Path) -> None:
    path = tmp_path / RECOVERY_POINT_CHECKPOINT
    write_checkpoint(path, {("my-topic", 1): 42, ("a", 0): 7})
    assert path.read_text() == "0\n2\na 0 7\nmy-topic 1 42\n"
    assert read_checkpoint(path) == {("my-topic", 1): 42, ("a", 0): 7}
    path.write_text("0\n3\na 0 7\n")
    assert read_checkpoint(path) == {}
    assert read_checkpoint(tmp_path / "missing") == {}


def test_each_checkpoint_file_is_written_on_its_own(tmp_path: Path) -> None:
    """The broker writes the high watermarks, log start offsets and recovery points each on its own
    interval (Kafka's three keys): a checkpoint of one file leaves the others as they were."""
    d = tmp_path / "logs"
    manager = started([d], {"segment.bytes": "600"})
    fill(manager, "t", 0, 5)
    manager.checkpoint((REPLICATION_OFFSET_CHECKPOINT,))
    assert read_checkpoint(d / REPLICATION_OFFSET_CHECKPOINT) == {("t", 0): 10}
    assert ("t", 0) not in read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
    assert ("t", 0) not in read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
    manager.checkpoint((LOG_START_OFFSET_CHECKPOINT,))
    assert read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT) == {("t", 0): 0}
    assert ("t", 0) not in read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
    manager.checkpoint()
    assert ("t", 0) in read_checkpoint(d / RECOVERY_POINT_CHECKPOINT)
    manager.shutdown()


def test_startup_creates_dirs_and_places_by_partition_count(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "nested" / "d2"]
    manager = started(dirs, {"segment.bytes": "1000"})
    assert all(d.is_dir() for d in dirs)
    for p in range(4):
        manager.get_or_create_log("my-dashed-topic", p)
    placed = sorted(manager.log_dir_of("my-dashed-topic", p) for p in range(4))
    assert placed == sorted([dirs[0], dirs[0], dirs[1], dirs[1]])
    log = manager.get_log("my-dashed-topic", 3)
    assert log is not None and (log.topic, log.partition) == ("my-dashed-topic", 3)
    assert log.config.segment_bytes == 1000
    assert manager.get_or_create_log("my-dashed-topic", 3) is log
    assert manager.get_log("nope", 0) is None
    manager.shutdown()


def test_unusable_log_dir_is_named(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a dir")
    manager = LogManager([tmp_path / "ok", blocker / "logs"], {})
    with pytest.raises(StorageError, match="file/logs"):
        manager.startup()


def test_log_dir_lock_prevents_a_second_manager(tmp_path: Path) -> None:
    first = started([tmp_path / "logs"], {})
    with pytest.raises(StorageError, match="lock"):
        started([tmp_path / "logs"], {})
    first.shutdown()
    again = started([tmp_path / "logs"], {})
    again.shutdown()


def test_clean_shutdown_and_restart(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "logs"
    manager = started([d], {"segment.bytes": "600"})
    fill(manager, "orders", 0, 20)
    fill(manager, "orders", 1, 3)
    assert manager.get_log("orders", 0).delete_records_before(15) == 15  # type: ignore[union-attr]
    manager.shutdown()
    assert (d / CLEAN_SHUTDOWN_FILE).exists()
    assert read_checkpoint(d / RECOVERY_POINT_CHECKPOINT) == {("orders", 0): 40, ("orders", 1): 6}
    assert read_checkpoint(d / LOG_START_OFFSET_CHECKPOINT) == {("orders", 0): 15, ("orders", 1): 0}
    (d / "stray-file").write_text("ignored")
    (d / "gone-0.0123abcd-delete").mkdir()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="odradek.storage"):
        restarted = started([d], {"segment.bytes": "600"})
    assert "Loading logs from log dirs" in caplog.text
    assert "Completed load of log with" in caplog.text
    assert "Recovering" not in caplog.text
    assert not (d / CLEAN_SHUTDOWN_FILE).exists()
    assert not (d / "gone-0.0123abcd-delete").exists()
    log = restarted.get_log("orders", 0)
    assert log is not None and (log.log_start_offset, log.log_end_offset) == (15, 40)
    assert sorted((lg.topic, lg.partition) for lg in restarted.logs()) == [("orders", 0), ("orders", 1)]
    restarted.shutdown()


def test_unclean_restart_recovers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    d = tmp_path / "logs"
    manager = started([d], {"segment.bytes": "600"})
    fill(manager, "t", 0, 12)
    manager.checkpoint()
    fill(manager, "t", 0, 3)  # beyond the checkpointed recovery point
    image = tmp_path / "image"
    crash_image(d, image, ignore=shutil.ignore_patterns(".lock"))
    manager.shutdown()
    log_files = sorted(image.glob("t-0/*.log"))
    with open(log_files[-1], "r+b") as f:  # tear the last batch
        f.truncate(log_files[-1].stat().st_size - 3)
    with caplog.at_level(logging.INFO, logger="odradek.storage"):
        recovered = started([image], {"segment.bytes": "600"})
    assert "no clean shutdown file was found" in caplog.text
    assert "Recovering unflushed segment" in caplog.text
    assert "Truncating segment" in caplog.text
    log = recovered.get_log("t", 0)
    assert log is not None and log.log_end_offset == 28
    assert log.append_as_leader(batch(0), 0).first_offset == 28
    recovered.shutdown()


def test_topic_overrides_and_config_updates(tmp_path: Path) -> None:
    manager = started([tmp_path], {"retention.ms": "1000"})
    a = manager.get_or_create_log("a", 0, {"retention.ms": "5000"})
    a1 = manager.get_or_create_log("a", 1)
    b = manager.get_or_create_log("b", 0)
    assert (a.config.retention_ms, a1.config.retention_ms, b.config.retention_ms) == (5000, 5000, 1000)
    manager.update_topic_config("a", {"retention.bytes": "100"})
    assert (a.config.retention_ms, a.config.retention_bytes, a1.config.retention_bytes) == (1000, 100, 100)
    with pytest.raises(KafkaError) as info:
        manager.update_topic_config("a", {"retention.bytes": "lots"})
    assert info.value.code == ErrorCode.INVALID_CONFIG
    assert a.config.retention_bytes == 100
    manager.shutdown()


def test_delete_log(tmp_path: Path) -> None:
    manager = started([tmp_path], {})
    fill(manager, "t", 0, 3)
    lg = manager.get_log("t", 0)
    assert lg is not None
    path = lg.dir
    assert manager.delete_log("t", 0)
    lg.wait_for_background()  # the directory is removed by the disk worker
    assert not path.exists() and not list(tmp_path.glob("t-0*"))
    assert manager.get_log("t", 0) is None and not manager.delete_log("t", 0)
    manager.checkpoint()
    assert read_checkpoint(tmp_path / RECOVERY_POINT_CHECKPOINT) == {}
    manager.shutdown()


def test_run_retention(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    manager = started([tmp_path], {"segment.bytes": "500", "retention.ms": "60000"}, time_ms=clock)
    fill(manager, "old", 0, 20)
    fill(manager, "sized", 0, 20, **{"retention.bytes": "1000", "retention.ms": "-1"})
    with caplog.at_level(logging.INFO, logger="odradek.storage"):
        deleted_size = manager.run_retention()
        assert deleted_size > 0 and "due to retention size in bytes 1000 breach" in caplog.text
        clock.now = T0 + 60_001
        deleted_time = manager.run_retention()
    assert deleted_time > 0 and "due to retention time 60000ms breach" in caplog.text
    old = manager.get_log("old", 0)
    assert (
        old is not None and len(old.segments) == 1 and old.log_start_offset == old.active_segment.base_offset
    )
    manager.shutdown()


def test_flush_dirty(tmp_path: Path) -> None:
    clock = Clock()
    manager = started([tmp_path], {"flush.ms": "1000"}, time_ms=clock)
    fill(manager, "t", 0, 2)
    log = manager.get_log("t", 0)
    assert log is not None and log.recovery_point == 0
    assert manager.flush_dirty(T0 + 999) == 0
    assert manager.flush_dirty(T0 + 1000) == 1
    assert log.recovery_point == 4
    manager.shutdown()


def test_duplicate_partition_dirs_are_refused(tmp_path: Path) -> None:
    manager = started([tmp_path / "a"], {})
    fill(manager, "t", 0, 1)
    manager.shutdown()
    shutil.copytree(tmp_path / "a" / "t-0", tmp_path / "b" / "t-0")
    with pytest.raises(StorageError, match="Duplicate log directories"):
        started([tmp_path / "a", tmp_path / "b"], {})


def test_create_logs_in_batches(tmp_path: Path) -> None:
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    manager = LogManager(dirs, {"segment.bytes": "1000"})
    manager.startup()
    existing = manager.get_or_create_log("t", 3)
    manager.create_logs("t", range(10), {"cleanup.policy": "compact"}, chunk=4)
    assert manager.get_log("t", 3) is existing  # kept, not created again
    assert sorted(manager.log_dir_of("t", p) for p in range(10)) == sorted(dirs * 5)
    assert all(manager.get_log("t", p).config.compact for p in range(10) if p != 3)  # type: ignore[union-attr]
    assert manager.topic_props("t") == {"cleanup.policy": "compact"}
    manager.delete_log("t", 0)
    manager.create_logs("t", [0, 10])
    assert manager.log_dir_of("t", 0) != manager.log_dir_of("t", 10)  # placement still balances
    manager.shutdown()
    again = LogManager(dirs)
    again.startup()
    assert sorted(p for t, p in ((lg.topic, lg.partition) for lg in again.logs())) == list(range(11))
    again.shutdown()
