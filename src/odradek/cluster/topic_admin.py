"""Topic administration as a broker serves it (CreateTopics, DeleteTopics, CreatePartitions, config changes,
topic auto-creation, `__consumer_offsets`): checks against the live cluster, the znode writes of
cluster/admin.py, then a bounded wait until this broker's metadata cache shows the result."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence

from odradek.cluster import admin
from odradek.cluster.assignment import assign_replicas, validate_topic_name
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.partition_limits import PartitionLimits
from odradek.cluster.store import MetadataStore, StoreError
from odradek.config import ConfigError, validate_topic_configs
from odradek.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("odradek.server")


@contextlib.contextmanager
def _store_errors_as_kafka_errors() -> Iterator[None]:
    """If the metadata store is unreachable (ZooKeeper without quorum), the client gets REQUEST_TIMED_OUT
    with the reason instead of a dropped connection."""
    try:
        yield
    except StoreError as exc:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"The metadata store (ZooKeeper) is unavailable: {exc}") from None


def _validate_configs(configs: dict[str, str], defaults: dict[str, str]) -> dict[str, str]:
    try:
        return validate_topic_configs(configs, defaults)
    except ConfigError as exc:
        raise KafkaError(ErrorCode.INVALID_CONFIG, str(exc)) from None


def _check_assignment(assignment: dict[int, list[int]], live: list[int], start: int = 0) -> None:
    if sorted(assignment) != list(range(start, start + len(assignment))):
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Partitions must be consecutive from 0")
    sizes = {len(r) for r in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "All partitions must have the same replication factor")
    for p, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Duplicate brokers in assignment of partition {p}")
        unknown = [b for b in replicas if b not in live]
        if unknown:
            raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unknown broker(s) {unknown} in assignment")


class TopicAdmin:
    def __init__(self, store: MetadataStore, metadata: MetadataCache, delete_topic_enable: bool,
                 topic_defaults: dict[str, str], limits: PartitionLimits) -> None:
        self.store = store
        self.metadata = metadata
        self.delete_topic_enable = delete_topic_enable
        self.topic_defaults = topic_defaults
        self.limits = limits

    def _check_limits(self, partitions: int, added: int, replication_factor: int | None,
                      assignment: Mapping[int, Sequence[int]] | None) -> None:
        """Before any work: the partition counts and limits (INVALID_PARTITIONS, POLICY_VIOLATION)."""
        live = sorted(self.metadata.brokers)
        self.limits.check_size(partitions, replication_factor, len(live))
        if added > 0:
            existing = (t.assignment for t in self.metadata.topics.values())
            self.limits.check_room(existing, live, added, replication_factor or 0, assignment)

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str],
        assignment: dict[int, list[int]] | None = None, validate_only: bool = False, wait_s: float = 30.0,
    ) -> bytes:
        """Returns the new topic's id (b"" when only validating)."""
        validate_topic_name(name)
        if name in self.metadata.topics:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        if assignment is None:
            self._check_limits(partitions, partitions, replication_factor, None)
        else:
            self._check_limits(len(assignment), len(assignment), None, assignment)
        configs = _validate_configs(configs, self.topic_defaults)
        live = sorted(self.metadata.brokers)
        if assignment is None:
            assignment = assign_replicas(live, partitions, replication_factor)
        else:
            _check_assignment(assignment, live)
        if validate_only:
            return b""
        with _store_errors_as_kafka_errors():
            topic_id = await admin.create_topic(self.store, name, assignment, configs)
        log.info("Creating topic %s with configuration %s and initial partition assignment %s",
                 name, configs, assignment)
        await self.metadata.wait_for(lambda: self.metadata.topic_ready(name), wait_s)
        return topic_id

    async def delete_topic(self, name: str, wait_s: float = 30.0) -> None:
        if name not in self.metadata.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        if not self.delete_topic_enable:
            raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled (delete.topic.enable=false)")
        with _store_errors_as_kafka_errors():
            await admin.mark_topic_for_deletion(self.store, name)
        if not await self.metadata.wait_for(lambda: name not in self.metadata.topics, wait_s):
            raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"Deletion of topic {name} did not complete in time")

    async def create_partitions(
        self, name: str, count: int, assignments: list[list[int]] | None, validate_only: bool, wait_s: float
    ) -> None:
        meta = self.metadata.topics.get(name)
        if meta is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
        current = len(meta.assignment)
        rf = len(meta.assignment[0]) if meta.assignment else 1
        explicit = None if assignments is None else dict(enumerate(assignments))
        self._check_limits(count, count - current, rf if explicit is None else None, explicit)
        if count <= current:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS,
                             f"Topic currently has {current} partitions, {count} would not be an increase.")
        live = sorted(self.metadata.brokers)
        if assignments is not None:
            if len(assignments) != count - current:
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"Increasing the number of partitions by {count - current} but "
                                 f"{len(assignments)} assignments provided.")
            new = {current + i: list(a) for i, a in enumerate(assignments)}
            _check_assignment(new, live, start=current)
        else:
            new = assign_replicas(live, count - current, rf, start_partition=current)
        if validate_only:
            return
        with _store_errors_as_kafka_errors():
            await admin.add_partitions(self.store, name, new)
        await self.metadata.wait_for(lambda: self.metadata.topic_ready(name)
                                     and len(self.metadata.topics[name].assignment) >= count, wait_s)

    async def alter_topic_config(self, name: str, configs: dict[str, str], validate_only: bool = False) -> None:
        configs = _validate_configs(configs, self.topic_defaults)
        if validate_only:
            return
        with _store_errors_as_kafka_errors():
            await admin.set_topic_config(self.store, name, configs)
        await self.metadata.wait_for(lambda: name in self.metadata.topics
                                     and self.metadata.topics[name].config == configs, 5.0)
