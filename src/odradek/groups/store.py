"""The contract between the group coordinator and its persistence, in both directions.

`GroupStore` is what the coordinator calls: `odradek.groups.offsets.OffsetStore` in the broker (the
broker builds it and hands it to the coordinator), an in-memory fake in unit tests. `GroupOwner` is what
the store calls back once `start` gave it the coordinator: groups loaded from a partition this broker now
leads, and partitions whose groups must be dropped. Neither side imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from odradek.cluster.znodes import BrokerInfo
from odradek.groups.consumer_schemas import LoadedConsumerGroup
from odradek.groups.schemas import GroupValue, OffsetValue, Records, TopicPartition


@dataclass(slots=True)
class LoadedGroup:
    """What a `__consumer_offsets` partition holds for one group once its records are replayed."""

    metadata: GroupValue | None = None
    offsets: dict[TopicPartition, OffsetValue] = field(default_factory=dict)
    # offsets of transactions not yet committed or aborted, by producer id (TxnOffsetCommit)
    pending_txn: dict[int, dict[TopicPartition, OffsetValue]] = field(default_factory=dict)
    # the records of a KIP-848 consumer group (`odradek.groups.consumer_schemas`), if any
    consumer: LoadedConsumerGroup | None = None


class GroupOwner(Protocol):
    """The store's view of the coordinator."""

    def install(self, groups: dict[str, LoadedGroup]) -> None:
        """Serve these groups (replacing any in memory under the same id)."""
        ...

    def unload_partition(self, partition: int) -> None:
        """Drop every group of this `__consumer_offsets` partition: this broker no longer leads it."""
        ...


class GroupStore(Protocol):
    """The coordinator's view of persistence."""

    async def start(self, owner: GroupOwner) -> None:
        """Begin following leadership of `__consumer_offsets`, reporting loads and unloads to `owner`."""
        ...

    async def shutdown(self) -> None: ...

    def partition_for(self, group_id: str) -> int:
        """The `__consumer_offsets` partition that holds the group."""
        ...

    def check(self, group_id: str) -> None:
        """Raise NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS unless this broker serves the group now."""
        ...

    async def wait_ready(self, group_id: str, create: bool = False) -> None:
        """Like `check`, after waiting a little for a load under way (creating the topic if `create`)."""
        ...

    def loading(self) -> bool:
        """Whether any partition this broker leads is still being loaded."""
        ...

    async def write(self, group_id: str, records: Records) -> None:
        """Append records to the group's partition; returns once they are committed, else KafkaError."""
        ...

    async def coordinator_node(self, group_id: str) -> BrokerInfo:
        """The broker that coordinates the group (creating `__consumer_offsets` on first use)."""
        ...

    async def write_transactional(self, group_id: str, records: Records, producer_id: int,
                                  producer_epoch: int) -> None:
        """Like `write`, as a batch of the producer's transaction (visible once its commit marker is)."""
        ...
