"""The share partitions of every share group on this broker (Kafka's SharePartitionManager) and where
their state is kept (Kafka's Persister).

`SharePartitionManager` holds one `odradek.groups.share_partition.SharePartition` per (group, topic id,
partition) that a ShareFetch has touched: it initialises a partition's start offset from the persister or
from `share.auto.offset.reset` (always `latest`: Odradek has no group configs yet), acquires and
acknowledges through it, expires acquisition locks on timers (`group.share.record.lock.duration.ms`),
gives back what a member held when it leaves the group or closes its share session, and wakes the
ShareFetches parked on a partition when records become available again (a release, an expiry).

`ShareStatePersister` is the narrow, async contract a later step implements over `__share_group_state`
and the share-coordinator APIs (Initialize/Read/Write/DeleteShareGroupState, ReadShareGroupStateSummary)
on the coordinator runtime (`odradek.coordinator`). For now `InMemoryShareStatePersister` keeps the
snapshots in this process: share-group state does not survive a broker restart or move with leadership.

The admin side (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups)
reads summaries (`ShareSummary`: the start offset and, KIP-1226, how many records past it are done),
resets a partition to a new start offset and deletes partitions' state, all through the persister; the
manager remembers which partitions of each group were initialised (Kafka keeps that in
`__consumer_offsets`, ShareGroupStatePartitionMetadata; here in memory, like the groups).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from odradek.aio import TaskSet
from odradek.groups.share_partition import (
    LATEST,
    AckBatch,
    AckType,
    Acquired,
    RecordState,
    SharePartition,
    StateBatch,
    initial_start_offset,
    restore,
    snapshot,
)
from odradek.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.groups.share")


@dataclass(frozen=True, slots=True)
class ShareKey:
    group_id: str
    topic_id: bytes
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshot:
    start_offset: int
    batches: tuple[StateBatch, ...]


@dataclass(frozen=True, slots=True)
class ShareSummary:
    """What ReadShareGroupStateSummary answers: the start offset and the number of records at or past it
    that are already acknowledged or archived (KIP-1226's delivery-complete count, for the lag)."""

    start_offset: int
    delivery_complete: int


def summary_of(state: ShareSnapshot) -> ShareSummary:
    done = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)
    return ShareSummary(state.start_offset, sum(
        b.last_offset - max(b.first_offset, state.start_offset) + 1
        for b in state.batches if b.state in done and b.last_offset >= state.start_offset))


class ShareStatePersister(Protocol):
    """Where share-partition state lives between brokers and restarts (Kafka's Persister)."""

    async def read_state(self, key: ShareKey) -> ShareSnapshot | None:
        """The partition's last written state, None if it has none (never initialised)."""
        ...

    async def read_summary(self, key: ShareKey) -> ShareSummary | None:
        """The partition's start offset and delivery-complete count, None if it has no state."""
        ...

    async def write_state(self, key: ShareKey, state: ShareSnapshot) -> None: ...

    async def delete_state(self, keys: Iterable[ShareKey]) -> None:
        """Forget these partitions' state (DeleteShareGroupState for some partitions of one group)."""
        ...

    async def delete_group(self, group_id: str) -> None: ...


class InMemoryShareStatePersister:
    """`ShareStatePersister` in this process's memory (lost with it)."""

    def __init__(self) -> None:
        self._states: dict[ShareKey, ShareSnapshot] = {}

    async def read_state(self, key: ShareKey) -> ShareSnapshot | None:
        return self._states.get(key)

    async def read_summary(self, key: ShareKey) -> ShareSummary | None:
        state = self._states.get(key)
        return None if state is None else summary_of(state)

    async def write_state(self, key: ShareKey, state: ShareSnapshot) -> None:
        self._states[key] = state

    async def delete_state(self, keys: Iterable[ShareKey]) -> None:
        for key in keys:
            self._states.pop(key, None)

    async def delete_group(self, group_id: str) -> None:
        for key in [k for k in self._states if k.group_id == group_id]:
            del self._states[key]


@dataclass(slots=True)
class ShareCounters:
    """What the share partitions did, for the broker's metrics: records acknowledged by type (Kafka's
    ShareGroupMetrics RecordAcknowledgementsPerSec), acquisition locks that timed out per partition
    (SharePartitionMetrics AcquisitionLockTimeoutPerSec), and Odradek's own records redelivered (acquired
    again after a release, a timeout or a member leaving) and archived, per group."""

    acknowledged: Counter[AckType] = field(default_factory=Counter)
    lock_timeouts: Counter[ShareKey] = field(default_factory=Counter)
    redelivered: Counter[str] = field(default_factory=Counter)
    archived: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class SharePartitionSettings:
    lock_duration_ms: int = 30_000  # group.share.record.lock.duration.ms
    delivery_count_limit: int = 5  # group.share.delivery.count.limit
    max_in_flight: int = 2000  # group.share.partition.max.record.locks
    auto_offset_reset: str = LATEST

    @classmethod
    def from_config(cls, config: BrokerConfig) -> SharePartitionSettings:
        get = config.get
        lock = min(max(get("group.share.record.lock.duration.ms"), get("group.share.min.record.lock.duration.ms")),
                   get("group.share.max.record.lock.duration.ms"))
        return cls(lock_duration_ms=lock, delivery_count_limit=get("group.share.delivery.count.limit"),
                   max_in_flight=get("group.share.partition.max.record.locks"))


def now_ms() -> int:
    return int(time.time() * 1000)


class SharePartitionManager:
    """Every share partition of this broker; see the module docstring."""

    def __init__(self, settings: SharePartitionSettings, persister: ShareStatePersister) -> None:
        self.settings = settings
        self.persister = persister
        self.partitions: dict[ShareKey, SharePartition] = {}
        self._init_locks: dict[ShareKey, asyncio.Lock] = {}
        self._waiters: dict[ShareKey, list[asyncio.Future[None]]] = {}
        self._timers: dict[ShareKey, asyncio.TimerHandle] = {}
        self._tasks = TaskSet(log, "Share partition state write")
        self._initialised: dict[str, set[ShareKey]] = {}  # group id -> its partitions with state
        self.counters = ShareCounters()

    def shutdown(self) -> None:
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
        self._tasks.close()

    async def partition(self, key: ShareKey, log_start: int, high_watermark: int) -> SharePartition:
        """The share partition, initialised on first use from the persister, else from
        `share.auto.offset.reset` over the log's current bounds."""
        sp = self.partitions.get(key)
        if sp is not None:
            sp.log_start_moved(log_start)
            return sp
        lock = self._init_locks.setdefault(key, asyncio.Lock())
        async with lock:
            sp = self.partitions.get(key)
            if sp is None:
                state = await self.persister.read_state(key)
                s = self.settings
                limits = {"lock_duration_ms": s.lock_duration_ms, "delivery_count_limit": s.delivery_count_limit,
                          "max_in_flight": s.max_in_flight}
                if state is None:
                    sp = SharePartition(initial_start_offset(s.auto_offset_reset, log_start, high_watermark), **limits)
                else:
                    sp = restore(state.start_offset, list(state.batches), **limits)
                self.partitions[key] = sp
                self._initialised.setdefault(key.group_id, set()).add(key)
                await self._persist(key)
        self._init_locks.pop(key, None)
        sp.log_start_moved(log_start)
        return sp

    def acquire(self, key: ShareKey, member_id: str, batches: list[tuple[int, int]], max_records: int) -> list[Acquired]:
        sp = self.partitions[key]
        got = sp.acquire(member_id, batches, max_records, now_ms())
        if got:
            self._arm(key)
            again = sum(a.last_offset - a.first_offset + 1 for a in got if a.delivery_count > 1)
            if again:
                self.counters.redelivered[key.group_id] += again
        return got

    async def acknowledge(self, key: ShareKey, member_id: str, batches: list[AckBatch]) -> ErrorCode:
        sp = self.partitions.get(key)
        if sp is None:
            return ErrorCode.INVALID_RECORD_STATE  # nothing was ever acquired here
        archived = sp.archived
        err = sp.acknowledge(member_id, batches)
        if err == ErrorCode.NONE:
            self._count_acks(batches)
            self._count_archived(key, sp, archived)
            self._wake(key)
            await self._persist(key)
        return err

    def release(self, group_id: str, member_id: str, keys: Iterable[ShareKey] | None = None) -> int:
        """Give back what `member_id` holds, in `keys` (its share session's partitions) or everywhere in
        the group (it left); the number of records released."""
        n = 0
        for key in list(keys if keys is not None else self.partitions):
            sp = self.partitions.get(key)
            if sp is None or key.group_id != group_id:
                continue
            archived = sp.archived
            released = sp.release_member(member_id)
            self._count_archived(key, sp, archived)
            if released:
                n += released
                self._wake(key)
                self._tasks.spawn(self._persist(key))
        return n

    def forget_group(self, group_id: str) -> None:
        self._drop([k for k in self.partitions if k.group_id == group_id])
        self._initialised.pop(group_id, None)

    # ---- the admin side (the group has no members when these run) ----
    def initialised(self, group_id: str) -> list[ShareKey]:
        """The group's partitions that have state, sorted."""
        return sorted(self._initialised.get(group_id, ()), key=lambda k: (k.topic_id, k.partition))

    async def summary(self, key: ShareKey) -> ShareSummary | None:
        return await self.persister.read_summary(key)

    async def reset(self, key: ShareKey, start_offset: int) -> None:
        """Start the partition afresh at `start_offset` (AlterShareGroupOffsets)."""
        self._drop([key])
        await self.persister.write_state(key, ShareSnapshot(start_offset, ()))
        self._initialised.setdefault(key.group_id, set()).add(key)

    async def delete(self, keys: list[ShareKey]) -> None:
        """Forget the partitions' state (DeleteShareGroupOffsets)."""
        self._drop(keys)
        await self.persister.delete_state(keys)
        for key in keys:
            self._initialised.get(key.group_id, set()).discard(key)

    async def delete_group(self, group_id: str) -> None:
        """Forget every partition of the group (DeleteGroups)."""
        self.forget_group(group_id)
        await self.persister.delete_group(group_id)

    def waiter(self, key: ShareKey) -> asyncio.Future[None]:
        """Resolves when records of the share partition may have become acquirable again."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = [f for f in self._waiters.get(key, ()) if not f.done()]  # long polls that ended
        waiting.append(fut)
        self._waiters[key] = waiting
        return fut

    # ---- internals ----
    def _count_acks(self, batches: list[AckBatch]) -> None:
        for b in batches:
            if len(b.types) == 1:
                self.counters.acknowledged[AckType(b.types[0])] += b.last_offset - b.first_offset + 1
            else:
                self.counters.acknowledged.update(AckType(t) for t in b.types)

    def _count_archived(self, key: ShareKey, sp: SharePartition, before: int) -> None:
        if sp.archived > before:
            self.counters.archived[key.group_id] += sp.archived - before

    def _drop(self, keys: Iterable[ShareKey]) -> None:
        for key in keys:
            self.partitions.pop(key, None)
            timer = self._timers.pop(key, None)
            if timer is not None:
                timer.cancel()

    def _wake(self, key: ShareKey) -> None:
        for fut in self._waiters.pop(key, []):
            if not fut.done():
                fut.set_result(None)

    def _arm(self, key: ShareKey) -> None:
        """Schedule the expiry of the earliest acquisition lock of the partition."""
        sp = self.partitions.get(key)
        deadline = sp.next_deadline() if sp is not None else None
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, (deadline - now_ms()) / 1000)
        self._timers[key] = loop.call_later(delay, self._expire, key)

    def _expire(self, key: ShareKey) -> None:
        self._timers.pop(key, None)
        sp = self.partitions.get(key)
        if sp is None:
            return
        archived = sp.archived
        expired = sp.expire_locks(now_ms())
        if expired:
            self.counters.lock_timeouts[key] += expired
            self._count_archived(key, sp, archived)
            self._wake(key)
            self._tasks.spawn(self._persist(key))
        self._arm(key)

    async def _persist(self, key: ShareKey) -> None:
        sp = self.partitions.get(key)
        if sp is None:
            return
        start, runs = snapshot(sp)
        await self.persister.write_state(key, ShareSnapshot(start, tuple(runs)))
