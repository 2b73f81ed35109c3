"""Moving a replica between log dirs (KIP-113) at the storage level: the future log, the copy while the
current log keeps taking appends and truncations, the swap on the appending thread, and restarts at
each stage of a move."""

from __future__ import annotations

import queue
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch, decode_records
from odradek.storage.log import Log
from odradek.storage.log_validator import AppendOrigin
from odradek.storage.manager import LogManager
from tests.waiting import wait_until


def batch(i: int) -> bytes:
    return build_batch([(f"k{i}".encode(), f"v{i}".encode() * 20)])


class Appender:
    """The broker's event loop in miniature: the thread that appends also runs the swaps the mover asks
    for, between appends."""

    def __init__(self, manager: LogManager) -> None:
        self.manager = manager
        self.swaps: queue.Queue[Callable[[], None]] = queue.Queue()
        self.next = 0

    def run_swap(self, fn: Callable[[], None]) -> None:
        self.swaps.put(fn)

    def pump(self) -> None:
        while not self.swaps.empty():
            self.swaps.get()()

    def append(self, topic: str, count: int = 1) -> None:
        for _ in range(count):
            lg = self.manager.get_log(topic, 0)
            assert lg is not None
            lg.append_as_leader(batch(self.next), 0)
            lg.high_watermark = lg.log_end_offset
            self.next += 1
            self.pump()


def values(lg: Log) -> list[bytes]:
    out: list[bytes] = []
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        data = lg.read(offset, 1 << 20).records
        recs = list(decode_records(data))
        out += [r.value or b"" for r in recs]
        offset = recs[-1].offset + 1
    return out


def records(lg: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    out: list[tuple[int, bytes | None, bytes | None]] = []
    offset = lg.log_start_offset
    while offset < lg.log_end_offset:
        recs = list(decode_records(lg.read(offset, 1 << 20).records))
        out += [(r.offset, r.key, r.value) for r in recs]
        offset = recs[-1].offset + 1
    return out


def expected(n: int, start: int = 0) -> list[bytes]:
    return [f"v{i}".encode() * 20 for i in range(start, n)]


def two_dirs(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "a", tmp_path / "b"


def moved(manager: LogManager, topic: str, dest: Path) -> bool:
    lg = manager.get_log(topic, 0)
    return (lg is not None and manager.log_dir_of(topic, 0) == dest and lg.dir == dest / f"{topic}-0"
            and manager.future_log(topic, 0) is None)


def test_move_while_appending_keeps_every_record_in_order(tmp_path: Path) -> None:
    a, b = two_dirs(tmp_path)
    manager = LogManager([a, b], {"segment.bytes": "4096"})
    manager.startup()
    app = Appender(manager)
    manager.start_moves(app.run_swap)
    manager.get_or_create_log("t", 0)
    assert manager.log_dir_of("t", 0) == a  # the emptier dir, the first
    app.append("t", 300)
    old = manager.get_log("t", 0)
    assert old is not None
    assert manager.alter_log_dir("t", 0, b) == ErrorCode.NONE
    future = manager.future_log("t", 0)
    assert future is not None and future.dir.parent == b and future.dir.name.endswith("-future")

    def appended_until_moved() -> bool:
        app.append("t", 5)
        return moved(manager, "t", b)

    wait_until(appended_until_moved, 60, "the move to b", interval=0.01)
    new = manager.get_log("t", 0)
    assert new is not None
    app.append("t", 10)
    assert values(new) == expected(app.next)
    assert old.closed and old.read(0, 1 << 20).records == new.read(0, 1 << 20).records  # a stale reader's
    wait_until(lambda: [p.name for p in a.iterdir() if p.is_dir()] == [], 30, "the old directory removed")
    assert len(list((b / "t-0").glob("*.log"))) > 1  # rolled by segment.bytes in the new dir too
    manager.shutdown()

    again = LogManager([a, b], {"segment.bytes": "4096"})
    again.startup()
    lg = again.get_log("t", 0)
    assert lg is not None and again.log_dir_of("t", 0) == b and values(lg) == expected(app.next)
    again.shutdown()


def test_current_log_truncated_during_the_move(tmp_path: Path) -> None:
    a, b = two_dirs(tmp_path)
    manager = LogManager([a, b], {})
    manager.startup()
    app = Appender(manager)
    manager.start_moves(app.run_swap)
    manager.get_or_create_log("t", 0)
    app.append("t", 50)
    assert manager.alter_log_dir("t", 0, b) == ErrorCode.NONE
    future = manager.future_log("t", 0)
    assert future is not None
    wait_until(lambda: future.log_end_offset == 50, 30, "the future log caught up")
    current = manager.get_log("t", 0)
    assert current is not None
    current.truncate_to(20)  # a follower's truncation after a leader change
    app.next = 20
    wait_until(lambda: (app.append("t"), moved(manager, "t", b))[1], 60, "the move", interval=0.01)
    new = manager.get_log("t", 0)
    assert new is not None and values(new) == expected(app.next)
    manager.shutdown()


def test_errors_cancel_and_preferred_dir(tmp_path: Path) -> None:
    a, b = two_dirs(tmp_path)
    c = tmp_path / "c"
    manager = LogManager([a, b, c], {})
    manager.startup()
    manager.start_moves(lambda fn: None)  # swaps never run: the move stays under way
    manager.get_or_create_log("t", 0)
    assert manager.log_dir_named(str(b)) == b and manager.log_dir_named(str(tmp_path / "x")) is None
    assert manager.alter_log_dir("t", 0, a) == ErrorCode.NONE  # already there: nothing to do
    assert manager.future_log("t", 0) is None
    assert manager.alter_log_dir("t", 0, b) == ErrorCode.NONE
    first = manager.future_log("t", 0)
    assert first is not None and first.dir.parent == b
    assert manager.alter_log_dir("t", 0, c) == ErrorCode.NONE  # another target: the first move stops
    second = manager.future_log("t", 0)
    assert second is not None and second.dir.parent == c and first.closed
    wait_until(lambda: not first.dir.exists(), 30, "the abandoned future log deleted")
    assert manager.alter_log_dir("t", 0, a) == ErrorCode.NONE  # back where it is: the move stops
    assert manager.future_log("t", 0) is None and manager.log_dir_of("t", 0) == a
    # a replica not created yet: remembered, and created there
    assert manager.alter_log_dir("t", 1, c) == ErrorCode.REPLICA_NOT_AVAILABLE
    manager.get_or_create_log("t", 1)
    assert manager.log_dir_of("t", 1) == c
    assert manager.alter_log_dir("t" * 249, 0, c) == ErrorCode.INVALID_TOPIC_EXCEPTION
    manager.shutdown()


def test_restart_mid_move_resumes(tmp_path: Path) -> None:
    a, b = two_dirs(tmp_path)
    manager = LogManager([a, b], {})
    manager.startup()
    manager.start_moves(lambda fn: None)  # never swaps: the broker stops with the move under way
    manager.get_or_create_log("t", 0)
    app = Appender(manager)
    app.append("t", 100)
    assert manager.alter_log_dir("t", 0, b) == ErrorCode.NONE
    future = manager.future_log("t", 0)
    assert future is not None
    wait_until(lambda: future.log_end_offset == 100, 30, "the future log caught up")
    app.append("t", 20)
    manager.shutdown()
    assert {p.name for p in a.iterdir() if p.is_dir()} == {"t-0"}
    assert [p.name.endswith("-future") for p in b.iterdir() if p.is_dir()] == [True]

    again = LogManager([a, b], {})
    again.startup()
    assert again.log_dir_of("t", 0) == a and again.future_log("t", 0) is not None
    app2 = Appender(again)
    app2.next = app.next
    again.start_moves(app2.run_swap)
    wait_until(lambda: (app2.pump(), moved(again, "t", b))[1], 60, "the resumed move", interval=0.01)
    lg = again.get_log("t", 0)
    assert lg is not None and values(lg) == expected(app.next)
    again.shutdown()


def test_restart_after_the_commit_promotes_the_future_log(tmp_path: Path) -> None:
    """A crash after the current directory was renamed -delete and before the future one took its
    name: the future log holds everything and becomes the log."""
    a, b = two_dirs(tmp_path)
    manager = LogManager([a, b], {})
    manager.startup()
    manager.get_or_create_log("t", 0)
    app = Appender(manager)
    app.append("t", 40)
    manager.shutdown()
    assert b.is_dir()  # made by start-up
    shutil.copytree(a / "t-0", b / f"t-0.{uuid.uuid4().hex}-future")
    (a / "t-0").rename(a / f"t-0.{uuid.uuid4().hex}-delete")

    again = LogManager([a, b], {})
    again.startup()
    lg = again.get_log("t", 0)
    assert lg is not None and again.log_dir_of("t", 0) == b and lg.dir == b / "t-0"
    assert values(lg) == expected(40)
    assert [p for p in a.iterdir() if p.is_dir()] == [] and again.future_log("t", 0) is None
    again.shutdown()


def test_log_dirs_handlers_report_the_future_log_and_kafkas_errors(tmp_path: Path) -> None:
    """DescribeLogDirs and AlterReplicaLogDirs as the handlers answer them, with a move held under way."""
    import asyncio
    from types import SimpleNamespace

    from kafka.protocol.admin import AlterReplicaLogDirsRequest as Alter
    from kafka.protocol.admin import DescribeLogDirsRequest

    from odradek.server.handlers.log_dirs import alter_replica_log_dirs, describe_log_dirs

    a, b = two_dirs(tmp_path)
    manager = LogManager([a, b], {})
    manager.startup()
    manager.start_moves(lambda fn: None)  # no swap: the future log stays
    app = Appender(manager)
    manager.get_or_create_log("t", 0)
    app.append("t", 30)
    meta = SimpleNamespace(assignment={0: [0], 1: [0]})
    ctx: Any = SimpleNamespace(broker=SimpleNamespace(logs=manager, authorizer=None, metadata=SimpleNamespace(
        topics={"t": meta})))

    def alter(path: str, topic: str, partitions: list[int]) -> dict[tuple[str, int], int]:
        req = Alter(dirs=[Alter.AlterReplicaLogDir(path=path, topics=[
            Alter.AlterReplicaLogDir.AlterReplicaLogDirTopic(name=topic, partitions=partitions)])])
        resp = asyncio.run(alter_replica_log_dirs(ctx, req))
        return {(t.topic_name, p.partition_index): p.error_code for t in resp.results for p in t.partitions}

    assert alter(str(tmp_path / "elsewhere"), "t", [0]) == {("t", 0): ErrorCode.LOG_DIR_NOT_FOUND}
    assert alter(str(b), "t", [0, 1, 7]) == {("t", 0): 0, ("t", 1): ErrorCode.REPLICA_NOT_AVAILABLE,
                                             ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert alter(str(b), "nope", [0]) == {("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    future = manager.future_log("t", 0)
    assert future is not None
    wait_until(lambda: future.log_end_offset == 30, 30, "the future log caught up")
    app.append("t", 5)  # the mover copies it, but no swap comes
    wait_until(lambda: future.log_end_offset == 35, 30, "the future log caught up again")
    resp = asyncio.run(describe_log_dirs(ctx, DescribeLogDirsRequest(topics=None)))
    seen = {(r.log_dir, t.name, p.partition_index, p.is_future_key): p.offset_lag
            for r in resp.results for t in r.topics for p in t.partitions}
    assert seen == {(str(a), "t", 0, False): 0, (str(b), "t", 0, True): 0}

    ctx.broker.authorizer = SimpleNamespace(authorize=lambda *args: False)
    ctx.decisions, ctx.header = None, SimpleNamespace(api_key=34)
    ctx.connection = SimpleNamespace(principal="User:alice", host="127.0.0.1", security=SimpleNamespace(name="PLAIN"))
    assert alter(str(a), "t", [0]) == {("t", 0): ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    manager.shutdown()


def test_move_of_a_compacted_log_with_gaps(tmp_path: Path) -> None:
    a, b = two_dirs(tmp_path)
    props = {"cleanup.policy": "compact", "segment.bytes": "2048", "min.cleanable.dirty.ratio": "0.01"}
    manager = LogManager([a, b], {})
    manager.startup()
    app = Appender(manager)
    manager.start_moves(app.run_swap)
    lg = manager.get_or_create_log("c", 0, props)
    for i in range(300):
        lg.append_as_leader(build_batch([(f"k{i % 7}".encode(), f"v{i}".encode())]), 0)
    lg.roll()
    lg.high_watermark = lg.log_end_offset
    assert manager.run_cleaner() == 1
    before = records(lg)
    assert 0 < len(before) < 300 and before[0][0] > 0  # compacted: offsets with gaps, from the start
    assert manager.alter_log_dir("c", 0, b) == ErrorCode.NONE
    wait_until(lambda: (app.pump(), moved(manager, "c", b))[1], 60, "the move", interval=0.01)
    new = manager.get_log("c", 0)
    assert new is not None and new.cleaner_checkpoint is not None
    assert records(new) == before and new.log_start_offset == lg.log_start_offset == 0
    manager.shutdown()
    again = LogManager([a, b], {})
    again.startup({"c": props})
    reloaded = again.get_log("c", 0)
    assert reloaded is not None and reloaded.log_end_offset == new.log_end_offset
    again.shutdown()


def test_move_keeps_transactions_and_producer_state(tmp_path: Path) -> None:
    """An aborted transaction stays indexed, an open one keeps holding the last stable offset, and an
    idempotent producer's retry is still recognised, after the move and after a restart."""
    from odradek.protocol.records import build_marker

    def txn(pid: int, seq: int) -> bytes:
        return build_batch([(None, b"t%d" % seq)], producer_id=pid, producer_epoch=0, base_sequence=seq,
                           is_transactional=True)

    a, b = two_dirs(tmp_path)
    manager = LogManager([a, b], {})
    manager.startup()
    app = Appender(manager)
    manager.start_moves(app.run_swap)
    lg = manager.get_or_create_log("x", 0)
    lg.append_as_leader(txn(1, 0), 0)  # 0: aborted below
    lg.append_as_leader(build_marker(1, 0, False, coordinator_epoch=1), 0, origin=AppendOrigin.COORDINATOR)  # 1
    lg.append_as_leader(txn(2, 0), 0)  # 2: left open
    idempotent = build_batch([(None, b"i")], producer_id=3, producer_epoch=0, base_sequence=0)
    first = lg.append_as_leader(idempotent, 0)  # 3
    lg.high_watermark = lg.log_end_offset
    assert lg.last_stable_offset == 2 and lg.collect_aborted(0, 4) == [(1, 0)]
    assert manager.alter_log_dir("x", 0, b) == ErrorCode.NONE
    wait_until(lambda: (app.pump(), moved(manager, "x", b))[1], 60, "the move", interval=0.01)
    new = manager.get_log("x", 0)
    assert new is not None and new is not lg
    assert new.last_stable_offset == 2 and new.collect_aborted(0, 4) == [(1, 0)]
    retry = new.append_as_leader(idempotent, 0)
    assert (retry.first_offset, new.log_end_offset) == (first.first_offset, 4)  # a duplicate, not rewritten
    new.append_as_leader(build_marker(2, 0, True, coordinator_epoch=1), 0, origin=AppendOrigin.COORDINATOR)
    new.high_watermark = new.log_end_offset
    assert new.last_stable_offset == 5
    manager.shutdown()
    again = LogManager([a, b], {})
    again.startup()
    lg2 = again.get_log("x", 0)
    assert lg2 is not None and lg2.collect_aborted(0, 5) == [(1, 0)] and lg2.last_stable_offset == 5
    again.shutdown()
