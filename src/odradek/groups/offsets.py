"""The offset store: group metadata and committed offsets as records in `__consumer_offsets`, on the
shared internal-topic machinery of `odradek.server.internal_topic` (placement by Kafka's hash of the group
id, writes through the partition leader returning once committed, loading a partition when this broker
becomes its leader and serving its groups only then; the topic created on first use with
`offsets.topic.*`). This module adds the group side: how records replay into groups, and telling the
coordinator (a `GroupOwner`) what was loaded or unloaded.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from odradek.groups import OFFSETS_TOPIC, consumer_schemas, schemas
from odradek.groups.store import GroupOwner, LoadedGroup
from odradek.server.internal_topic import (
    InternalTopicStore,
    TopicSettings,
    java_string_hash,
    kafka_abs,
    partition_for,
    read_partition,
)

if TYPE_CHECKING:
    from odradek.cluster.znodes import BrokerInfo
    from odradek.config import BrokerConfig

__all__ = ["OffsetStore", "java_string_hash", "kafka_abs", "partition_for", "read_partition", "replay"]

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


def offsets_topic_settings(cfg: BrokerConfig) -> TopicSettings:
    return TopicSettings(
        OFFSETS_TOPIC,
        int(cfg.get("offsets.topic.num.partitions")),
        int(cfg.get("offsets.topic.replication.factor")),
        int(cfg.get("offsets.topic.segment.bytes")),
        int(cfg.get("offsets.commit.timeout.ms")) / 1000,
        int(cfg.get("offsets.load.buffer.size")),
        key_prefix="offsets.topic",
    )


class OffsetStore(InternalTopicStore):
    """Persistence and ownership of groups for the coordinator of one broker (a `GroupStore`)."""

    what = "offsets and group metadata"

    def __init__(self, broker: Any) -> None:
        super().__init__(broker, offsets_topic_settings(broker.config))
        self._owner: GroupOwner | None = None

    @property
    def default_partitions(self) -> int:
        return self.settings.num_partitions

    # ---- the InternalTopicStore hooks ----
    def replay(self, records: Iterable[tuple[bytes | None, bytes | None]],
               open_txns: dict[int, list[tuple[bytes | None, bytes | None]]]) -> dict[str, LoadedGroup]:
        groups = replay(records)
        for pid, txn_records in open_txns.items():
            for gid, g in replay(txn_records).items():
                groups.setdefault(gid, LoadedGroup()).pending_txn[pid] = g.offsets
        return groups

    def installed(self, index: int, loaded: Any) -> None:
        self._group_owner.install(loaded)

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
        self.follow()

    async def shutdown(self) -> None:
        await super().shutdown()

    def partition_for(self, group_id: str) -> int:
        return super().partition_for(group_id)

    def check(self, group_id: str) -> None:  # type: ignore[override]
        super().check(group_id, "group")

    def loading(self) -> bool:
        return super().loading()

    async def wait_ready(self, group_id: str, create: bool = False) -> None:  # type: ignore[override]
        await super().wait_ready(group_id, create, "group")

    async def write(self, group_id: str, records: schemas.Records) -> None:  # type: ignore[override]
        await super().write(group_id, records, "group")

    async def write_transactional(self, group_id: str, records: schemas.Records, producer_id: int,
                                  producer_epoch: int) -> None:
        await self.write_to(self.partition_for(group_id), records, "group", group_id, (producer_id, producer_epoch))

    async def coordinator_node(self, group_id: str) -> BrokerInfo:
        return await super().coordinator_node(group_id)
