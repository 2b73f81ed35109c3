"""Groups in `__consumer_offsets`: how the partition's records replay into groups (Kafka's formats), and
the topic's settings. The partition itself (placement by Kafka's hash of the group id, writes through the
leader returning once committed, loading when this broker becomes its leader and serving its groups only
then; the topic created on first use with `offsets.topic.*`) is the coordinator runtime's
(`odradek.coordinator.runtime`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from odradek.coordinator.loader import read_partition
from odradek.coordinator.partitions import Replayed
from odradek.coordinator.placement import java_string_hash, kafka_abs, partition_for
from odradek.coordinator.runtime import TopicSettings
from odradek.groups import OFFSETS_TOPIC, consumer_schemas, schemas, share_schemas, streams_schemas
from odradek.groups.store import LoadedGroup

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

__all__ = ["java_string_hash", "kafka_abs", "partition_for", "read_partition", "replay",
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
            if g.metadata is not None or g.offsets or (g.consumer is not None and g.consumer.epoch is not None)
            or (g.share is not None and g.share.epoch is not None)
            or (g.streams is not None and g.streams.epoch is not None)}


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
    if record_type in share_schemas.RECORD_TYPES:
        if record_type == share_schemas.PARTITION_METADATA:
            return  # Kafka 4.0's topic metadata of a share group: recomputed (see share_schemas)
        skey = consumer_schemas.decode_key(record_type, bytes(raw_key))
        entry = groups.setdefault(skey.group, LoadedGroup())
        if entry.share is None:
            entry.share = share_schemas.LoadedShareGroup()
        entry.share.apply(skey, None if raw_value is None else bytes(raw_value))
        return
    if record_type in streams_schemas.RECORD_TYPES:
        tkey = consumer_schemas.decode_key(record_type, bytes(raw_key))
        entry = groups.setdefault(tkey.group, LoadedGroup())
        if entry.streams is None:
            entry.streams = streams_schemas.LoadedStreamsGroup()
        entry.streams.apply(tkey, None if raw_value is None else bytes(raw_value))
        if tkey.record_type == streams_schemas.GROUP_METADATA and raw_value is not None:
            entry.metadata = None  # a streams group replaced the (empty) classic group of this id
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
        if entry.metadata is not None and entry.streams is not None:
            entry.streams = None  # likewise a streams group


def offsets_topic_settings(cfg: BrokerConfig) -> TopicSettings:
    return TopicSettings.from_config(cfg, OFFSETS_TOPIC, "offsets.topic",
                                     write_timeout_ms=cfg.get("offsets.commit.timeout.ms"),
                                     load_buffer=cfg.get("offsets.load.buffer.size"), with_min_isr=False)


def replay_partition(records: Replayed, open_txns: dict[int, Replayed]) -> dict[str, LoadedGroup]:
    """A whole partition: its groups, with the offsets of still-open transactions pending by producer id."""
    groups = replay(records)
    for pid, txn_records in open_txns.items():
        for gid, g in replay(txn_records).items():
            groups.setdefault(gid, LoadedGroup()).pending_txn[pid] = g.offsets
    return groups
