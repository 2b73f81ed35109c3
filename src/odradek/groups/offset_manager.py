"""Committed offsets of every group, whatever its type (Kafka's OffsetMetadataManager): OffsetCommit,
TxnOffsetCommit (pending until the transaction's marker), the markers' completion, OffsetFetch (with
KIP-447's unstable offsets), OffsetDelete, offsets retention and the offsets of deleted topics.

One implementation for classic and consumer (KIP-848) groups. What differs by group type is asked of the
type (`GroupType`, implemented by `odradek.groups.coordinator.GroupCoordinator` and
`odradek.groups.consumer_coordinator.ConsumerGroupCoordinator`), as Kafka asks the group: whether a commit
or a fetch may go ahead (generation and member, or member epoch), which topics a group subscribes to,
which offsets have expired, and whether a group left without offsets is deleted. The offsets themselves
stay in the group objects (`group.offsets`), which the type hands out (`offsets_of`).

Writes go to the group's `__consumer_offsets` partition through the `GroupStore` (the coordinator
runtime) and memory follows once they are committed, and only if the group is still the one written for.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from odradek.aio import TaskSet
from odradek.groups.group import now_ms
from odradek.groups.schemas import OffsetValue, TopicPartition, offset_records
from odradek.groups.store import GroupStore, LoadedGroup
from odradek.protocol.errors import ErrorCode, KafkaError

log = logging.getLogger("odradek.groups")

LATEST_OFFSET_COMMIT_VERSION = 9

Offsets = dict[TopicPartition, OffsetValue]


@dataclass(frozen=True, slots=True)
class OffsetSettings:
    metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms


class GroupType(Protocol):
    """A kind of group as the offset manager sees it. Every method names the group by id and concerns the
    live group of this type with that id (a Dead or unloaded group is none)."""

    @property
    def type_name(self) -> str:
        """"classic" or "consumer" (ListGroups v5's group type)."""
        ...

    def group_ids(self) -> list[str]:
        """The live groups of this type."""
        ...

    def offsets_of(self, group_id: str) -> Offsets | None:
        """The group's committed offsets (the group's own dict, changed in place), None if no such group."""
        ...

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None,
                               generation_or_epoch: int, api_version: int, transactional: bool) -> None:
        """Raise the error of an OffsetCommit (TxnOffsetCommit if `transactional`) the group refuses. A
        type may create the group here (a classic group for a consumer without group management)."""
        ...

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        """Raise the error of an OffsetFetch the group refuses (KIP-848: a member's fetch by its epoch)."""
        ...

    def validate_offset_delete(self, group_id: str) -> set[str]:
        """The topics the group subscribes to (their offsets cannot be deleted), or raise
        GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP."""
        ...

    def expired_offsets(self, group_id: str, now: int, retention_ms: int) -> list[TopicPartition]:
        """The group's offsets past retention (KIP-211)."""
        ...

    def lock(self, group_id: str) -> AbstractAsyncContextManager[Any]:
        """Held while retention changes the group (against the type's own changes to it)."""
        ...

    async def delete_if_unused(self, group_id: str) -> None:
        """After retention: delete the group if it is empty and has no offsets left."""
        ...


class OffsetManager:
    """The offsets of the groups of the `__consumer_offsets` partitions this broker leads."""

    def __init__(self, settings: OffsetSettings, store: GroupStore, types: Sequence[GroupType]) -> None:
        """`types` in the order a group id is looked up; the last is also the type of a group that does
        not exist yet (classic: a consumer without group management commits into a new classic group)."""
        if not types:
            raise ValueError("at least one group type")
        self.settings = settings
        self.store = store
        self.types = tuple(types)
        # TxnOffsetCommit offsets of transactions still open: group -> producer id -> offsets
        self.pending: dict[str, dict[int, Offsets]] = {}
        self._tasks = TaskSet(log, "Offset manager task")

    # ---- life cycle ----
    def start(self) -> None:
        self._tasks.every(max(self.settings.retention_check_interval_ms, 10) / 1000,
                          lambda: self.expire(now_ms()), "Offset expiration")

    def shutdown(self) -> None:
        self._tasks.close()
        self.pending.clear()

    def loaded(self, groups: dict[str, LoadedGroup]) -> None:
        """A partition was loaded: the offsets of its open transactions are pending again."""
        for group_id, entry in groups.items():
            if entry.pending_txn:
                self.pending[group_id] = {pid: dict(o) for pid, o in entry.pending_txn.items()}

    def unloaded(self, partition: int) -> None:
        for gid in [g for g in self.pending if self.store.partition_for(g) == partition]:
            del self.pending[gid]

    # ---- which group ----
    def type_of(self, group_id: str) -> GroupType:
        """The type of the live group named so; the default type if there is none."""
        for t in self.types:
            if t.offsets_of(group_id) is not None:
                return t
        return self.types[-1]

    def group_type(self, group_id: str) -> str | None:
        """The type name of the live group named so, None if there is none."""
        return next((t.type_name for t in self.types if t.offsets_of(group_id) is not None), None)

    async def _ready(self, group_id: str, create: bool = False) -> None:
        """Raise unless this broker coordinates `group_id` and has loaded it. Like Kafka, the offset APIs
        accept the empty group id (old simple consumers committed under it)."""
        if group_id is None:
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "The group id must not be empty")
        await self.store.wait_ready(group_id, create)

    # ---- OffsetCommit / TxnOffsetCommit ----
    def metadata_too_large(self, metadata: str | None) -> bool:
        return metadata is not None and len(metadata) > self.settings.metadata_max_bytes

    async def commit(self, group_id: str, generation_or_epoch: int, member_id: str, instance_id: str | None,
                     offsets: Offsets, api_version: int = LATEST_OFFSET_COMMIT_VERSION) -> ErrorCode:
        """Commit all offsets or none; returns the error for every partition."""
        try:
            await self._ready(group_id, create=True)
            gtype = self.type_of(group_id)
            gtype.validate_offset_commit(group_id, member_id, instance_id, generation_or_epoch, api_version, False)
            committed = gtype.offsets_of(group_id)
            if offsets:
                await self.store.write(group_id, offset_records(group_id, dict(offsets)))
        except KafkaError as exc:
            return exc.code
        if committed is not None and gtype.offsets_of(group_id) is committed:  # still the group written for
            committed.update(offsets)
        return ErrorCode.NONE

    async def txn_commit(self, group_id: str, producer_id: int, producer_epoch: int, generation_or_epoch: int,
                         member_id: str, instance_id: str | None, offsets: Offsets) -> ErrorCode:
        """TxnOffsetCommit: the offsets are written as part of the producer's transaction and become the
        group's committed offsets only when its commit marker reaches the group's partition."""
        try:
            await self._ready(group_id, create=True)
            self.type_of(group_id).validate_offset_commit(group_id, member_id, instance_id, generation_or_epoch,
                                                          LATEST_OFFSET_COMMIT_VERSION, True)
            if offsets:
                await self.store.write_transactional(group_id, offset_records(group_id, dict(offsets)), producer_id,
                                                     producer_epoch)
        except KafkaError as exc:
            return exc.code
        self.pending.setdefault(group_id, {}).setdefault(producer_id, {}).update(offsets)
        return ErrorCode.NONE

    def complete_transaction(self, partition: int, producer_id: int, commit: bool) -> None:
        """A marker of the producer's transaction reached `__consumer_offsets` partition `partition`."""
        for gid in [g for g, by_pid in self.pending.items()
                    if producer_id in by_pid and self.store.partition_for(g) == partition]:
            pending = self.pending[gid].pop(producer_id)
            if not self.pending[gid]:
                del self.pending[gid]
            committed = self.type_of(gid).offsets_of(gid)
            if commit and committed is not None:
                committed.update(pending)

    def unstable(self, group_id: str, tp: TopicPartition) -> bool:
        """Whether an open transaction holds an offset of the partition (OffsetFetch require_stable)."""
        return any(tp in offsets for offsets in self.pending.get(group_id, {}).values())

    # ---- OffsetFetch ----
    async def fetch(self, group_id: str, partitions: list[TopicPartition] | None, member_id: str | None = None,
                    member_epoch: int = -1) -> list[tuple[TopicPartition, OffsetValue | None]]:
        """Committed offsets (None where nothing is committed); all of the group's if partitions is None."""
        await self._ready(group_id)
        gtype = self.type_of(group_id)
        gtype.validate_offset_fetch(group_id, member_id, member_epoch)
        committed = gtype.offsets_of(group_id) or {}
        if partitions is None:
            return sorted(committed.items())
        return [(tp, committed.get(tp)) for tp in partitions]

    # ---- OffsetDelete ----
    async def delete(self, group_id: str, partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        await self._ready(group_id)
        gtype = self.type_of(group_id)
        subscribed = gtype.validate_offset_delete(group_id)
        committed = gtype.offsets_of(group_id)
        if committed is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND)
        result = {tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if tp[0] in subscribed else ErrorCode.NONE
                  for tp in partitions}
        gone = {tp: None for tp, err in result.items() if err == ErrorCode.NONE and tp in committed}
        if gone:
            try:
                await self.store.write(group_id, offset_records(group_id, gone))
            except KafkaError as exc:
                return {tp: (exc.code if tp in gone else err) for tp, err in result.items()}
            for tp in gone:
                committed.pop(tp, None)
        return result

    # ---- retention ----
    async def expire(self, now: int) -> int:
        """One retention pass over every group; returns how many offsets were removed."""
        return await self._remove_where(
            lambda gtype, gid, _committed: gtype.expired_offsets(gid, now, self.settings.retention_ms),
            "expired offsets")

    async def _remove_where(self, select: Callable[[GroupType, str, Offsets], list[TopicPartition]],
                            why: str) -> int:
        """Remove, from each group this broker coordinates, the offsets `select` names; returns how many."""
        removed = 0
        for gtype in self.types:
            for group_id in gtype.group_ids():
                try:
                    self.store.check(group_id)
                except KafkaError:
                    continue
                async with gtype.lock(group_id):
                    committed = gtype.offsets_of(group_id)
                    if committed is not None:  # else gone (unloaded, deleted, converted) since the pass began
                        removed += await self._remove(gtype, group_id, committed,
                                                      select(gtype, group_id, committed), why)
        return removed

    async def _remove(self, gtype: GroupType, group_id: str, committed: Offsets, gone: list[TopicPartition],
                      why: str) -> int:
        """Tombstone `gone` and drop them from the group once written; a group left without offsets is
        deleted if nothing else holds it. Returns how many were removed."""
        if gone:
            try:
                await self.store.write(group_id, offset_records(group_id, dict.fromkeys(gone)))
            except KafkaError as exc:
                log.warning("Could not remove %s of group %s: %s", why, group_id, exc)
                return 0
            for tp in gone:
                committed.pop(tp, None)
            log.info("Removed %d %s of group %s", len(gone), why, group_id)
        if gtype.offsets_of(group_id) is committed and not committed:
            await gtype.delete_if_unused(group_id)
        return len(gone)

    # ---- deleted topics ----
    def topic_deleted(self, topic: str) -> asyncio.Task[int] | None:
        """A topic was deleted: its committed offsets leave every group this broker coordinates, with
        tombstones (Kafka's onPartitionsDeleted), so a topic created again under that name (a new topic id)
        is not read from the old topic's positions. The offsets are the ones committed now: one committed
        later (the topic created again meanwhile) stays."""
        seen = {(gid, tp): value for gtype in self.types for gid in gtype.group_ids()
                for tp, value in (gtype.offsets_of(gid) or {}).items() if tp[0] == topic}

        def then_committed(_t: GroupType, gid: str, committed: Offsets) -> list[TopicPartition]:
            return [tp for tp, value in committed.items() if seen.get((gid, tp)) is value]

        return self._tasks.spawn(self._remove_where(then_committed, f"offsets of deleted topic {topic}")) if seen else None
