"""The broker side of the coordinator runtime (`odradek.coordinator`): its `PartitionWriter` and
`CoordinatorMetadata` over this broker's replica manager, metadata cache and topic administration.
Nothing else of the broker reaches the coordinators' persistence."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from odradek.cluster.metadata import MetadataCache, TopicMeta
from odradek.cluster.topic_admin import TopicAdmin
from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.partitions import ProducerIdAndEpoch, ReadableLog, Records
from odradek.protocol.records import build_batch
from odradek.replication.manager import ReplicaManager
from odradek.storage.log_validator import AppendOrigin


class BrokerPartitions:
    """`PartitionWriter` and `CoordinatorMetadata` of one broker."""

    def __init__(self, metadata: MetadataCache, replicas: ReplicaManager, topic_admin: TopicAdmin) -> None:
        self.metadata = metadata
        self.replicas = replicas
        self.topic_admin = topic_admin

    # ---- PartitionWriter ----
    def leader_epoch(self, topic: str, index: int) -> int | None:
        part = self.replicas.get(topic, index)
        return part.leader_epoch if part is not None and part.is_leader else None

    def log(self, topic: str, index: int) -> ReadableLog | None:
        part = self.replicas.get(topic, index)
        return None if part is None else part.log

    async def append(self, topic: str, index: int, records: Records, producer: ProducerIdAndEpoch | None,
                     timeout_s: float) -> None:
        part = self.replicas.leader_partition(topic, index)
        if producer is None:
            info = part.append_as_leader(memoryview(build_batch(records)), -1)
        else:
            batch = build_batch(records, producer_id=producer[0], producer_epoch=producer[1], is_transactional=True)
            info = part.append_as_leader(memoryview(batch), -1, origin=AppendOrigin.COORDINATOR)
        target = part.log.log_end_offset
        if info.durable is not None:
            await asyncio.wrap_future(info.durable)
        await asyncio.wait_for(part.hw_waiter(target), timeout_s)

    # ---- CoordinatorMetadata ----
    def topic_exists(self, topic: str) -> bool:
        return topic in self.metadata.topics

    def partitions(self, topic: str) -> Iterable[int]:
        meta = self.metadata.topics.get(topic)
        return list(meta.assignment) if meta is not None else []

    def live_brokers(self) -> int:
        return len(self.metadata.brokers)

    def leader(self, topic: str, index: int) -> BrokerInfo | None:
        return self.metadata.brokers.get(self.metadata.leader_of(topic, index))

    async def create_topic(self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str],
                           wait_s: float) -> None:
        await self.topic_admin.create_topic(topic, partitions, replication_factor, configs, wait_s=wait_s)

    def subscribe(self, topic: str, on_partition: Callable[[int], None],
                  on_removed: Callable[[], None]) -> Callable[[], None]:
        def partition_changed(name: str, index: int, meta: TopicMeta) -> None:
            if name == topic:
                on_partition(index)

        def topic_removed(name: str, meta: TopicMeta) -> None:
            if name == topic:
                on_removed()

        self.metadata.partition_listeners.append(partition_changed)
        self.metadata.topic_removed_listeners.append(topic_removed)

        def cancel() -> None:
            if partition_changed in self.metadata.partition_listeners:
                self.metadata.partition_listeners.remove(partition_changed)
            if topic_removed in self.metadata.topic_removed_listeners:
                self.metadata.topic_removed_listeners.remove(topic_removed)

        return cancel
