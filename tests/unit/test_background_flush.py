"""Disk work off the appending thread: a roll, a flush.messages flush and the cleaner's swap never fsync
on the thread that appends nor while holding the log's lock; the recovery point moves only once the disk
worker's fsyncs are done (and not past a truncation that happened meanwhile)."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from odradek.protocol.records import build_batch
from odradek.storage.cleaner import compact
from odradek.storage.log import Log
from odradek.storage.log_config import LogConfig
from tests.storage_helpers import T0, fixed_clock
from tests.waiting import wait_until

SMALL = {"segment.bytes": "600", "index.interval.bytes": "100"}


def open_log(path: Path, props: dict[str, str], **kw: Any) -> Log:
    return Log(path, LogConfig.from_props(props), time_ms=fixed_clock, **kw)


def batch(i: int, key: bytes | None = None) -> bytes:
    return build_batch([(key or b"k%d" % i, b"value-%d" % i * 8)], timestamp=T0)


class FsyncGate:
    """os.fsync, recorded per thread; with `hold()`, fsyncs from other threads than the test's wait at a
    gate until it opens (a disk that is slow on demand)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, only_dirs: bool = False) -> None:
        self.real = os.fsync
        self.only_dirs = only_dirs
        self.threads: list[int] = []
        self.held = threading.Event()
        self.held.set()
        self.waiting = threading.Event()
        self.under_lock: list[bool] = []
        self.watched: Log | None = None
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd: int) -> None:
        self.threads.append(threading.get_ident())
        if self.watched is not None:
            self.under_lock.append(self.watched.lock._is_owned())  # type: ignore[attr-defined]
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        if threading.get_ident() != MAIN and (is_dir or not self.only_dirs) and not self.held.is_set():
            self.waiting.set()
            self.held.wait()
        self.real(fd)

    @contextmanager
    def hold(self) -> Iterator[None]:
        self.waiting.clear()
        self.held.clear()
        try:
            yield
        finally:
            self.held.set()


MAIN = threading.get_ident()


@pytest.fixture
def worker() -> Iterator[ThreadPoolExecutor]:
    """A disk worker of the test's own (holding its fsyncs must not hold up other tests' logs)."""
    pool = ThreadPoolExecutor(max_workers=1)
    yield pool
    pool.shutdown(wait=True)


def test_rolls_never_fsync_on_the_appending_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gate = FsyncGate(monkeypatch)
    log = open_log(tmp_path / "t-0", SMALL)
    for i in range(40):
        log.append_as_leader(batch(i), 1)
    assert len(log.segments) >= 4
    assert MAIN not in gate.threads
    log.wait_for_background()
    assert gate.threads and MAIN not in gate.threads  # the disk worker did them
    assert log.recovery_point == log.active_segment.base_offset
    log.close()


def test_recovery_point_moves_only_once_the_rolled_segment_is_fsynced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: ThreadPoolExecutor
) -> None:
    gate = FsyncGate(monkeypatch)
    log = open_log(tmp_path / "t-0", SMALL, background=worker)
    with gate.hold():
        i = 0
        while len(log.segments) < 2:
            log.append_as_leader(batch(i), 1)
            i += 1
        wait_until(gate.waiting.is_set, 10, "the disk worker to fsync the rolled segment")
        # the fsync is stuck: appends and more rolls go on, the recovery point stays
        while len(log.segments) < 4:
            log.append_as_leader(batch(i), 1)
            i += 1
        assert log.recovery_point == 0
    log.wait_for_background()
    assert log.recovery_point == log.active_segment.base_offset
    log.close()


def test_a_truncation_meanwhile_keeps_the_recovery_point_down(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: ThreadPoolExecutor
) -> None:
    """A flush that planned before a truncation must not move the recovery point over records written at
    the same offsets after it (they are not the ones it fsynced)."""
    gate = FsyncGate(monkeypatch)
    log = open_log(tmp_path / "t-0", {}, background=worker)
    for i in range(5):
        log.append_as_leader(batch(i), 1)
    with gate.hold():
        log.roll()  # its flush plans the segment [0, 5) and waits at the gate
        wait_until(gate.waiting.is_set, 10, "the disk worker to fsync the rolled segment")
        log.truncate_to(2)
        for i in range(4):
            log.append_as_leader(batch(10 + i), 2)
        assert log.log_end_offset == 6 and len(log.segments) == 1
    log.wait_for_background()
    assert log.recovery_point == 0 and log.active_segment.dirty
    log.flush()
    assert log.recovery_point == 6 and not log.active_segment.dirty
    log.close()


def test_flush_messages_flushes_on_the_disk_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: ThreadPoolExecutor
) -> None:
    gate = FsyncGate(monkeypatch)
    log = open_log(tmp_path / "t-0", {"flush.messages": "1"}, background=worker)
    with gate.hold():
        first = log.append_as_leader(batch(0), 1)
        assert first.durable is not None
        wait_until(gate.waiting.is_set, 10, "the disk worker to fsync")
        second = log.append_as_leader(batch(1), 1)  # not covered by the flush under way: another one
        assert second.durable is not None and second.durable is not first.durable
        third = log.append_as_leader(batch(2), 1)  # joins the queued one
        assert third.durable is second.durable
        assert not first.durable.done() and log.recovery_point == 0
    first.durable.result(10)
    second.durable.result(10)
    assert log.recovery_point == 3
    assert MAIN not in gate.threads
    log.close()


def compacted(tmp_path: Path, **kw: Any) -> Log:
    log = open_log(tmp_path / "t-0", {**SMALL, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"},
                   **kw)
    for i in range(60):
        log.append_as_leader(batch(i, b"key-%d" % (i % 5)), 1)
    log.high_watermark = log.log_end_offset
    log.wait_for_background()
    return log


def test_cleaner_never_fsyncs_holding_the_log_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = compacted(tmp_path)
    segments = len(log.segments)
    gate = FsyncGate(monkeypatch)
    gate.watched = log
    assert compact(log, T0) is not None
    assert len(log.segments) < segments and gate.under_lock and not any(gate.under_lock)
    assert not list(log.dir.glob("*.swap")) and not list(log.dir.glob("*.cleaned"))
    log.close()


def test_appends_go_on_while_the_cleaner_fsyncs_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, worker: ThreadPoolExecutor
) -> None:
    log = compacted(tmp_path, background=worker)
    gate = FsyncGate(monkeypatch, only_dirs=True)
    cleaner = ThreadPoolExecutor(max_workers=1)
    producer = ThreadPoolExecutor(max_workers=1)

    def produce() -> None:
        for i in range(60, 70):  # rolls included: the disk worker's directory fsyncs wait too
            log.append_as_leader(batch(i, b"key-%d" % (i % 5)), 1)

    try:
        with gate.hold():
            cleaning = cleaner.submit(compact, log, T0)
            wait_until(gate.waiting.is_set, 10, "the cleaner to fsync the directory")
            appends = producer.submit(produce)
            wait_until(appends.done, 10, "appends while the cleaner's fsync is stuck")
            appends.result()
            assert not cleaning.done()
        assert cleaning.result(30) is not None
    finally:
        cleaner.shutdown(wait=True)
        producer.shutdown(wait=True)
    log.close()
    reopened = open_log(log.dir, {**SMALL, "cleanup.policy": "compact"}, clean_shutdown=False)
    assert reopened.log_end_offset == 70
    reopened.close()
