"""The contract between the group coordinator and its persistence, in both directions.

`GroupStore` is what the group coordinator calls: the coordinator runtime of `__consumer_offsets` in the
broker (`odradek.coordinator.runtime.CoordinatorRuntime`, which the broker builds and hands over), an
in-memory fake in unit tests. The store calls back the `GroupShard` that `start` gave it: replay a
partition's records, serve the groups loaded from a partition this broker now leads, drop those of a
partition it no longer leads.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.runtime import CoordinatorShard
from odradek.groups.consumer_schemas import LoadedConsumerGroup
from odradek.groups.schemas import GroupValue, OffsetValue, Records, TopicPartition
from odradek.groups.share_schemas import LoadedShareGroup
from odradek.groups.streams_schemas import LoadedStreamsGroup
from odradek.protocol.errors import ErrorCode, KafkaError


@dataclass(slots=True)
class LoadedGroup:
    """What a `__consumer_offsets` partition holds for one group once its records are replayed."""

    metadata: GroupValue | None = None
    offsets: dict[TopicPartition, OffsetValue] = field(default_factory=dict)
    # offsets of transactions not yet committed or aborted, by producer id (TxnOffsetCommit)
    pending_txn: dict[int, dict[TopicPartition, OffsetValue]] = field(default_factory=dict)
    # the records of a KIP-848 consumer group (`odradek.groups.consumer_schemas`), if any
    consumer: LoadedConsumerGroup | None = None
    # the records of a KIP-932 share group (`odradek.groups.share_schemas`), if any
    share: LoadedShareGroup | None = None
    # the records of a KIP-1071 streams group (`odradek.groups.streams_schemas`), if any
    streams: LoadedStreamsGroup | None = None


GroupShard = CoordinatorShard[dict[str, LoadedGroup]]
"""What `__consumer_offsets` partitions load into: `odradek.groups.service.GroupCoordinatorService`."""


class GroupStore(Protocol):
    """The group coordinator's view of persistence (`odradek.coordinator.runtime.CoordinatorRuntime`)."""

    async def start(self, shard: GroupShard) -> None:
        """Begin following leadership of `__consumer_offsets`, loading partitions into `shard`."""
        ...

    async def shutdown(self) -> None: ...

    def partition_for(self, key: str) -> int:
        """The `__consumer_offsets` partition that holds the group."""
        ...

    def check(self, key: str) -> None:
        """Raise NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS unless this broker serves the group now."""
        ...

    async def wait_ready(self, key: str, create: bool = False) -> None:
        """Like `check`, after waiting a little for a load under way (creating the topic if `create`)."""
        ...

    def loading(self) -> bool:
        """Whether any partition this broker leads is still being loaded."""
        ...

    async def write(self, key: str, records: Records) -> None:
        """Append records to the group's partition; returns once they are committed, else KafkaError."""
        ...

    async def coordinator_node(self, key: str) -> BrokerInfo:
        """The broker that coordinates the group (creating `__consumer_offsets` on first use)."""
        ...

    async def write_transactional(self, key: str, records: Records, producer_id: int, producer_epoch: int) -> None:
        """Like `write`, as a batch of the producer's transaction (visible once its commit marker is)."""
        ...


async def write_removal(store: GroupStore, group_id: str, records: Records, logger: logging.Logger, kind: str,
                        offsets: int) -> ErrorCode:
    """Write the tombstones of a deleted group (DeleteGroups) and, once they are committed, say so in
    Kafka's words; the write's error code if it fails."""
    try:
        await store.write(group_id, records)
    except KafkaError as exc:
        return exc.code
    logger.info("%s %s removed (%d offsets deleted)", kind, group_id, offsets)
    return ErrorCode.NONE
