"""Groups in `__consumer_offsets`: how the partition's records replay into groups (Kafka's formats), and
the topic's settings. The partition itself (placement by Kafka's hash of the group id, writes through the
leader returning once committed, loading when this broker becomes its leader and serving its groups only
then; the topic created on first use with `offsets.topic.*`) is the coordinator runtime's
(`odradek.coordinator.runtime`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from odradek.coordinator.loader import read_partition
from odradek.coordinator.partitions import Replayed
from odradek.coordinator.placement import java_string_hash, kafka_abs, partition_for
from odradek.coordinator.runtime import CoordinatorRuntime, TopicSettings
from odradek.groups import OFFSETS_TOPIC, consumer_schemas, schemas
from odradek.groups.store import GroupOwner, LoadedGroup

if TYPE_CHECKING:
    from odradek.cluster.znodes import BrokerInfo

__all__ = ["OffsetStore", "java_string_hash", "kafka_abs", "partition_for", "read_partition", "replay",
           "replay_partition"]

log = logging.getLogger("odradek.groups.offsets")


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, LoadedGroup]:
    """Fold a partition's records, oldest first, into the groups they leave behind."""
    groups: dict[str, LoadedGroup] = {}
    for raw_key, raw_value in records:
        try:
            _apply(groups, raw_key, raw_value)
        except schemas.SchemaError as exc:
            log.warning("Skipping malformed record in %s: %s", OFFSETS_TOPIC, exc)
    return {gid: g for gid, g in groups.items()
            if g.metadata is not None or g.offsets or (g.consumer is not None and g.consumer.epoch is not None)}


def _apply(groups: dict[str, LoadedGroup], raw_key: bytes | None, raw_value: bytes | None) -> None:
    if raw_key is None:
        return
    record_type = int.from_bytes(bytes(raw_key[:2]), "big", signed=True) if len(raw_key) >= 2 else -1
    if record_type in consumer_schemas.RECORD_TYPES:
        if record_type == consumer_schemas.PARTITION_METADATA:
            return  # recomputed from the cluster's metadata (see consumer_schemas)
        ckey = consumer_schemas.decode_key(record_type, bytes(raw_key))
        entry = groups.setdefault(ckey.group, LoadedGroup())
        if entry.consumer is None:
            entry.consumer = consumer_schemas.LoadedConsumerGroup()
        entry.consumer.apply(ckey, None if raw_value is None else bytes(raw_value))
        if ckey.record_type == consumer_schemas.GROUP_METADATA and raw_value is not None:
            entry.metadata = None  # a consumer group replaced the classic group of this id
        return
    key = schemas.decode_key(raw_key)
    if isinstance(key, schemas.OffsetKey):
        entry = groups.setdefault(key.group, LoadedGroup())
        value = schemas.decode_offset_value(raw_value)
        if value is None:
            entry.offsets.pop((key.topic, key.partition), None)
        else:
            entry.offsets[(key.topic, key.partition)] = value
    elif key is not None:
        entry = groups.setdefault(key.group, LoadedGroup())
        entry.metadata = schemas.decode_group_value(raw_value)
        if entry.metadata is not None and entry.consumer is not None:
            entry.consumer = None  # a classic group replaced the consumer group of this id


def offsets_topic_settings(cfg: Any) -> TopicSettings:
    return TopicSettings(
        OFFSETS_TOPIC,
        int(cfg.get("offsets.topic.num.partitions")),
        int(cfg.get("offsets.topic.replication.factor")),
        int(cfg.get("offsets.topic.segment.bytes")),
        int(cfg.get("offsets.commit.timeout.ms")) / 1000,
        int(cfg.get("offsets.load.buffer.size")),
        key_prefix="offsets.topic",
    )


def replay_partition(records: Replayed, open_txns: dict[int, Replayed]) -> dict[str, LoadedGroup]:
    """A whole partition: its groups, with the offsets of still-open transactions pending by producer id."""
    groups = replay(records)
    for pid, txn_records in open_txns.items():
        for gid, g in replay(txn_records).items():
            groups.setdefault(gid, LoadedGroup()).pending_txn[pid] = g.offsets
    return groups


GroupRuntime = CoordinatorRuntime[dict[str, LoadedGroup]]


class OffsetStore:
    """Persistence and ownership of groups for the coordinator of one broker (a `GroupStore`), on the
    coordinator runtime of `__consumer_offsets`."""

    def __init__(self, runtime: GroupRuntime) -> None:
        self.runtime = runtime
        self._owner: GroupOwner | None = None

    # ---- the CoordinatorShard the runtime loads into ----
    def replay(self, records: Replayed, open_txns: dict[int, Replayed]) -> dict[str, LoadedGroup]:
        return replay_partition(records, open_txns)

    def loaded(self, index: int, state: dict[str, LoadedGroup]) -> None:
        self._group_owner.install(state)

    def unloaded(self, index: int) -> None:
        self._group_owner.unload_partition(index)

    @property
    def _group_owner(self) -> GroupOwner:
        if self._owner is None:
            raise RuntimeError("OffsetStore.start() has not been called")
        return self._owner

    # ---- GroupStore ----
    async def start(self, owner: GroupOwner) -> None:
        self._owner = owner
        await self.runtime.start(self)

    async def shutdown(self) -> None:
        await self.runtime.shutdown()

    def partition_for(self, group_id: str) -> int:
        return self.runtime.partition_for(group_id)

    def check(self, group_id: str) -> None:
        self.runtime.check(group_id)

    def loading(self) -> bool:
        return self.runtime.loading()

    async def wait_ready(self, group_id: str, create: bool = False) -> None:
        await self.runtime.wait_ready(group_id, create)

    async def write(self, group_id: str, records: schemas.Records) -> None:
        await self.runtime.write(group_id, records)

    async def write_transactional(self, group_id: str, records: schemas.Records, producer_id: int,
                                  producer_epoch: int) -> None:
        await self.runtime.write_transactional(group_id, records, producer_id, producer_epoch)

    async def coordinator_node(self, group_id: str) -> BrokerInfo:
        return await self.runtime.coordinator_node(group_id)
