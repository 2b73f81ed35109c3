"""A fake of the coordinator runtime's two protocols for the unit tests of its shards: one broker leading
both partitions of a coordinator topic, each a real `Log`; the test plays the controller (`lead`) and can
make appends fail."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.partitions import ProducerIdAndEpoch, ReadableLog, Records
from odradek.coordinator.runtime import TopicSettings
from odradek.protocol.records import build_batch
from odradek.storage.log import Log

TOPIC = "__state"
SETTINGS = TopicSettings(TOPIC, 2, 3, 1 << 20, 1.0, 64, min_isr=2, key_prefix="state.log")


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
