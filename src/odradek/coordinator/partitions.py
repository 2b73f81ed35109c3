"""What the coordinator runtime needs from the broker, and nothing more (Kafka's `PartitionWriter` and the
metadata image a coordinator sees). `odradek.server.coordinator_partitions` implements both over the
replica manager and the metadata cache."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Protocol

from odradek.cluster.znodes import BrokerInfo

Records = list[tuple[bytes, bytes | None]]
"""Records a coordinator writes: (key, value), a None value being a tombstone."""

Replayed = list[tuple[bytes | None, bytes | None]]
"""Records as a partition's replay sees them."""

ProducerIdAndEpoch = tuple[int, int]


class FetchedRecords(Protocol):
    @property
    def records(self) -> bytes | memoryview | bytearray | list[bytes] | tuple[bytes, ...]: ...


class ReadableLog(Protocol):
    """The read side of a partition's log (`odradek.storage.log.Log`)."""

    @property
    def log_start_offset(self) -> int: ...

    @property
    def log_end_offset(self) -> int: ...

    def read(self, start_offset: int, max_bytes: int, max_offset: int | None = None) -> FetchedRecords: ...


class PartitionWriter(Protocol):
    """The partitions of an internal topic as this broker holds them."""

    def leader_epoch(self, topic: str, index: int) -> int | None:
        """The partition's leader epoch while this broker leads it, else None."""
        ...

    def log(self, topic: str, index: int) -> ReadableLog | None:
        """The partition's local log (to replay), None if this broker holds no replica of it."""
        ...

    async def append(self, topic: str, index: int, records: Records, producer: ProducerIdAndEpoch | None,
                     timeout_s: float) -> None:
        """Append one batch as the partition's leader (with `producer`, a transactional batch of it) and
        return once the high watermark passed it. Raises KafkaError with the append's or replication's
        error code, TimeoutError after `timeout_s`, OSError when the disk failed."""
        ...


class CoordinatorMetadata(Protocol):
    """The cluster metadata a coordinator needs: its topic, the brokers, leadership notifications."""

    def topic_exists(self, topic: str) -> bool: ...

    def partitions(self, topic: str) -> Iterable[int]:
        """The topic's partitions (none if the topic does not exist)."""
        ...

    def live_brokers(self) -> int: ...

    def leader(self, topic: str, index: int) -> BrokerInfo | None:
        """The registered broker leading the partition, if any."""
        ...

    async def create_topic(self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str],
                           wait_s: float) -> None:
        """Create the topic; KafkaError (TOPIC_ALREADY_EXISTS...) if it cannot."""
        ...

    def subscribe(self, topic: str, on_partition: Callable[[int], None],
                  on_removed: Callable[[], None]) -> Callable[[], None]:
        """Call `on_partition(index)` after every change of a partition's state (leadership included, once
        the replica has its new role) and `on_removed()` when the topic is deleted; returns the
        function that cancels the subscription."""
        ...
