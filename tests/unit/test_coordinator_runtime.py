"""The coordinator runtime (`odradek.coordinator.runtime`) over fakes of its two protocols and real logs:
loading by replay, serving only loaded partitions, writing through the partition, fencing on leadership
changes, creating the topic, mapping write errors."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator import loader
from odradek.coordinator import runtime as runtime_mod
from odradek.coordinator.partitions import ProducerIdAndEpoch, ReadableLog, Records, Replayed
from odradek.coordinator.placement import partition_for
from odradek.coordinator.runtime import CoordinatorRuntime, TopicSettings
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_batch
from odradek.storage.log import Log

E = ErrorCode
TOPIC = "__state"
SETTINGS = TopicSettings(TOPIC, 2, 3, 1 << 20, 1.0, 64, min_isr=2, key_prefix="state.log")


def key_in(index: int) -> str:
    return next(k for k in (f"k{i}" for i in range(100)) if partition_for(k, 2) == index)


class FakePartitions:
    """`PartitionWriter` and `CoordinatorMetadata` of one broker holding both partitions of the topic."""

    def __init__(self, tmp: Path, exists: bool = True) -> None:
        self.logs = {i: Log(tmp / f"{TOPIC}-{i}") for i in (0, 1)}
        self.epochs: dict[int, int | None] = {0: None, 1: None}
        self.exists = exists
        self.created: list[tuple[str, int, int, dict[str, str]]] = []
        self.appended: list[tuple[int, Records, ProducerIdAndEpoch | None]] = []
        self.fail: BaseException | None = None
        self.on_partition: Callable[[int], None] | None = None
        self.on_removed: Callable[[], None] | None = None

    def close(self) -> None:
        for log in self.logs.values():
            log.close()

    # ---- PartitionWriter ----
    def leader_epoch(self, topic: str, index: int) -> int | None:
        assert topic == TOPIC
        return self.epochs.get(index)

    def log(self, topic: str, index: int) -> ReadableLog | None:
        return self.logs.get(index)

    async def append(self, topic: str, index: int, records: Records, producer: ProducerIdAndEpoch | None,
                     timeout_s: float) -> None:
        await asyncio.sleep(0)
        if self.fail is not None:
            raise self.fail
        self.logs[index].append_as_leader(build_batch(records), self.epochs[index] or 0)
        self.appended.append((index, records, producer))

    # ---- CoordinatorMetadata ----
    def topic_exists(self, topic: str) -> bool:
        return self.exists

    def partitions(self, topic: str) -> Iterable[int]:
        return list(self.logs) if self.exists else []

    def live_brokers(self) -> int:
        return 1

    def leader(self, topic: str, index: int) -> BrokerInfo | None:
        return None

    async def create_topic(self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str],
                           wait_s: float) -> None:
        self.created.append((topic, partitions, replication_factor, configs))
        self.exists = True

    def subscribe(self, topic: str, on_partition: Callable[[int], None],
                  on_removed: Callable[[], None]) -> Callable[[], None]:
        self.on_partition, self.on_removed = on_partition, on_removed

        def cancel() -> None:
            self.on_partition = self.on_removed = None

        return cancel

    # ---- what the controller would do ----
    def lead(self, index: int, epoch: int | None) -> None:
        self.epochs[index] = epoch
        if self.on_partition is not None:
            self.on_partition(index)


class Shard:
    """Replays records into {key: value} and remembers what the runtime told it."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.state: dict[int, dict[str, bytes | None]] = {}

    def replay(self, records: Replayed, open_txns: dict[int, Replayed]) -> dict[str, bytes | None]:
        out: dict[str, bytes | None] = {}
        for k, v in records:
            if k is not None:
                out[bytes(k).decode()] = None if v is None else bytes(v)
        return out

    def loaded(self, index: int, state: dict[str, bytes | None]) -> None:
        self.events.append(("loaded", index))
        self.state[index] = state

    def unloaded(self, index: int) -> None:
        self.events.append(("unloaded", index))
        self.state.pop(index, None)


def rec(key: str, value: bytes | None) -> Records:
    return [(key.encode(), value)]


def make(tmp: Path, exists: bool = True) -> tuple[CoordinatorRuntime[dict[str, bytes | None]], FakePartitions, Shard]:
    parts = FakePartitions(tmp, exists)
    return CoordinatorRuntime(SETTINGS, parts, parts, what="test state", kind="thing"), parts, Shard()


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0.01)


def gate_loads(monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Hold every partition load (`loader.read_partition`, run off the event loop) until the event returned
    is set."""
    gate = asyncio.Event()
    real = loader.read_partition

    def gated(*args: Any) -> Any:
        import time

        while not gate.is_set():
            time.sleep(0.005)
        return real(*args)

    monkeypatch.setattr(loader, "read_partition", gated)
    return gate


def test_loads_a_partition_by_replay_when_it_leads_it_and_serves_only_then(tmp_path: Path) -> None:
    async def main() -> None:
        rt, parts, shard = make(tmp_path)
        k0 = key_in(0)
        parts.logs[0].append_as_leader(build_batch(rec(k0, b"old") + rec(k0, b"new") + rec("gone", b"x")), 0)
        parts.logs[0].append_as_leader(build_batch(rec("gone", None)), 0)
        await rt.start(shard)
        with pytest.raises(KafkaError) as info:
            rt.check(k0)
        assert info.value.code == E.NOT_COORDINATOR and "thing" in str(info.value)
        parts.lead(0, 3)
        await rt.wait_ready(k0)
        assert shard.events == [("loaded", 0)] and shard.state[0] == {k0: b"new", "gone": None}
        assert rt.led_partitions() == [0] and rt.leader_epoch_of(0) == 3 and rt.leader_epoch_of(1) == -1
        await rt.write(k0, rec(k0, b"newer"))
        assert parts.appended == [(0, rec(k0, b"newer"), None)]
        await rt.write_transactional(k0, rec(k0, b"txn"), 7, 1)
        assert parts.appended[-1] == (0, rec(k0, b"txn"), (7, 1))
        with pytest.raises(KafkaError) as info:
            await rt.write(key_in(1), rec("x", b""))
        assert info.value.code == E.NOT_COORDINATOR
        await rt.shutdown()
        parts.close()

    asyncio.run(main())


def test_load_in_progress_until_the_replay_is_done(tmp_path: Path, monkeypatch: Any) -> None:
    gate = gate_loads(monkeypatch)
    monkeypatch.setattr(runtime_mod, "LOAD_WAIT_S", 0.05)

    async def main() -> None:
        rt, parts, shard = make(tmp_path)
        await rt.start(shard)
        parts.lead(1, 0)
        assert rt.loading()
        with pytest.raises(KafkaError) as info:
            await rt.wait_ready(key_in(1))
        assert info.value.code == E.COORDINATOR_LOAD_IN_PROGRESS
        with pytest.raises(KafkaError) as info:
            await rt.write(key_in(1), rec("x", b""))
        assert info.value.code == E.NOT_COORDINATOR  # nothing is written to a partition not yet loaded
        gate.set()
        await settle()
        assert not rt.loading() and rt.is_loaded(1)
        await rt.shutdown()
        parts.close()

    asyncio.run(main())


def test_leadership_changes_fence_the_loaded_state(tmp_path: Path) -> None:
    """A new leader epoch (the partition moved away and back) unloads before loading again; losing
    leadership unloads; a load never serves an epoch it was not loaded at."""

    async def main() -> None:
        rt, parts, shard = make(tmp_path)
        k0 = key_in(0)
        await rt.start(shard)
        parts.lead(0, 1)
        await settle()
        await rt.write(k0, rec(k0, b"v1"))
        parts.lead(0, 1)  # the same epoch again (an ISR change): nothing happens
        await settle()
        assert shard.events == [("loaded", 0)]
        parts.lead(0, 5)
        await settle()
        assert shard.events == [("loaded", 0), ("unloaded", 0), ("loaded", 0)] and rt.leader_epoch_of(0) == 5
        assert shard.state[0] == {k0: b"v1"}  # replayed again from the log
        parts.lead(0, None)
        assert shard.events[-1] == ("unloaded", 0) and rt.led_partitions() == []
        with pytest.raises(KafkaError) as info:
            rt.check(k0)
        assert info.value.code == E.NOT_COORDINATOR
        parts.lead(1, 2)
        await settle()
        assert parts.on_removed is not None
        parts.on_removed()  # the topic was deleted
        assert shard.events[-1] == ("unloaded", 1) and rt.led_partitions() == []
        await rt.shutdown()
        assert parts.on_partition is None  # unsubscribed
        parts.close()

    asyncio.run(main())


def test_a_load_overtaken_by_a_leadership_change_is_dropped(tmp_path: Path, monkeypatch: Any) -> None:
    release = gate_loads(monkeypatch)

    async def main() -> None:
        rt, parts, shard = make(tmp_path)
        await rt.start(shard)
        parts.lead(0, 1)
        await asyncio.sleep(0.01)
        parts.epochs[0] = None  # deposed while loading, before any notification
        release.set()
        await settle()
        assert ("loaded", 0) not in shard.events and not rt.is_loaded(0)
        await rt.shutdown()
        parts.close()

    asyncio.run(main())


@pytest.mark.parametrize(("raised", "seen"), [
    (KafkaError(E.NOT_LEADER_OR_FOLLOWER), E.NOT_COORDINATOR),
    (KafkaError(E.NOT_ENOUGH_REPLICAS), E.COORDINATOR_NOT_AVAILABLE),
    (KafkaError(E.MESSAGE_TOO_LARGE), E.INVALID_COMMIT_OFFSET_SIZE),
    (KafkaError(E.KAFKA_STORAGE_ERROR), E.NOT_COORDINATOR),
    (TimeoutError(), E.REQUEST_TIMED_OUT),
    (OSError("disk"), E.NOT_COORDINATOR),
    (ValueError("bug"), E.UNKNOWN_SERVER_ERROR),
])
def test_write_errors_become_coordinator_errors(tmp_path: Path, raised: BaseException, seen: ErrorCode) -> None:
    async def main() -> None:
        rt, parts, shard = make(tmp_path)
        await rt.start(shard)
        parts.lead(0, 0)
        await rt.wait_ready(key_in(0))
        parts.fail = raised
        with pytest.raises(KafkaError) as info:
            await rt.write(key_in(0), rec("x", b""))
        assert info.value.code == seen
        await rt.shutdown()
        parts.close()

    asyncio.run(main())


def test_the_topic_is_created_on_first_use(tmp_path: Path) -> None:
    async def main() -> None:
        rt, parts, shard = make(tmp_path, exists=False)
        await rt.start(shard)
        assert rt.num_partitions() == 2  # the configured count until the topic exists
        parts.epochs[0] = 0
        await rt.wait_ready(key_in(0), create=True)
        assert parts.created == [(TOPIC, 2, 1, {"cleanup.policy": "compact", "compression.type": "producer",
                                                "segment.bytes": str(1 << 20), "min.insync.replicas": "1"})]
        assert rt.is_loaded(0)
        await rt.shutdown()
        parts.close()

    asyncio.run(main())
