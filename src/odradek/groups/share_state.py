"""The share partitions of every share group on this broker (Kafka's SharePartitionManager) and where
their state is kept (Kafka's Persister).

`SharePartitionManager` holds one `odradek.groups.share_partition.SharePartition` per (group, topic id,
partition) that a ShareFetch has touched on this broker while it leads the topic partition: the first
ShareFetch reads the state from the persister at the partition's leader epoch (a state the group
coordinator initialized without a start offset, or none at all, starts from the group's
`share.auto.offset.reset`; `load_soon` reads it in the background for a fetch that already has records),
and a new
leader epoch reads it again, so a new leader continues where the old one stopped (what was acquired comes
back available, with its delivery count). It acquires and acknowledges through it, expires acquisition
locks on timers (`group.share.record.lock.duration.ms`), gives back what a member held when it leaves
the group or closes its share session, and wakes the ShareFetches parked on a partition when records
become available again (a release, an expiry).

The state is written whenever it changes in a way that must survive the leader: acknowledgements (once
per partition per ShareFetch or ShareAcknowledge, before the answer), releases and lock expiries, start
offset moves, and acquisitions of records delivered before (a delivery count past the first, written
before the records are handed out, so a crash loop cannot escape `group.share.delivery.count.limit`).
First deliveries are not written, as in Kafka. Writes of one partition are serialised and each writes the
state as it is when its turn comes, so they land in order. A write that fails drops the partition from
memory (the next ShareFetch reads the durable state again) and the acknowledgement answers the error.

The admin side (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups,
served by the group's coordinator) reads summaries, starts a partition afresh at a new start offset (its
state deleted and written again at the next state epoch, so the leader's writes of the old state are
fenced with FENCED_STATE_EPOCH and it reads the new one) and deletes partitions' state, all through the
persister. `ShareCounters` count what the partitions did, for the broker's metrics.

`ShareStatePersister` is the narrow, async contract: `odradek.groups.share_persister` implements it over
`__share_group_state` and the share coordinators (`odradek.groups.share_state_coordinator`);
`InMemoryShareStatePersister` keeps the snapshots in this process (unit tests).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from odradek.aio import TaskSet
from odradek.groups.configs import FixedGroupConfigs, GroupConfigLookup
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
from odradek.protocol.errors import ErrorCode, KafkaError

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
    leader_epoch: int = -1  # of the topic partition, as its leader wrote or read it
    state_epoch: int = 0


@dataclass(frozen=True, slots=True)
class ShareStateSummary:
    """What ReadShareGroupStateSummary answers of a share partition (for offsets and lag)."""

    start_offset: int
    state_epoch: int = 0
    leader_epoch: int = -1
    delivery_complete_count: int = 0  # acknowledged or archived records at or above the start offset


def delivery_complete_count(start_offset: int, batches: Iterable[StateBatch]) -> int:
    """Kafka's DeliveryCompleteCount (KIP-1226): the records of the state at or above the start offset that
    are done (acknowledged or archived)."""
    return sum(b.last_offset - max(b.first_offset, start_offset) + 1 for b in batches
               if b.state in (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED) and b.last_offset >= start_offset)


class ShareStatePersister(Protocol):
    """Where share-partition state lives between brokers and restarts (Kafka's Persister). Failures are
    KafkaErrors with the share coordinator's error code."""

    async def read_state(self, key: ShareKey, leader_epoch: int = -1) -> ShareSnapshot | None:
        """The partition's last written state, None if it has none (never initialised); a reader at a newer
        leader epoch fences the writes of older ones (FENCED_LEADER_EPOCH)."""
        ...

    async def write_state(self, key: ShareKey, state: ShareSnapshot) -> None: ...

    async def initialize_state(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        """InitializeShareGroupState: a fresh state at `state_epoch` (start offset -1: the leader takes it
        from `share.auto.offset.reset` on first read); a state at that epoch or later is kept."""
        ...

    async def delete_state(self, key: ShareKey) -> None: ...

    async def read_summary(self, key: ShareKey) -> ShareStateSummary | None:
        """The partition's start offset and how much of the state is done, None if it has no state; fences
        nobody (DescribeShareGroupOffsets)."""
        ...


class InMemoryShareStatePersister:
    """`ShareStatePersister` in this process's memory (lost with it)."""

    def __init__(self) -> None:
        self._states: dict[ShareKey, ShareSnapshot] = {}

    async def read_state(self, key: ShareKey, leader_epoch: int = -1) -> ShareSnapshot | None:
        return self._states.get(key)

    async def write_state(self, key: ShareKey, state: ShareSnapshot) -> None:
        self._states[key] = state

    async def initialize_state(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        current = self._states.get(key)
        if current is None or current.state_epoch < state_epoch:
            self._states[key] = ShareSnapshot(start_offset, (), -1, state_epoch)

    async def delete_state(self, key: ShareKey) -> None:
        self._states.pop(key, None)

    async def read_summary(self, key: ShareKey) -> ShareStateSummary | None:
        state = self._states.get(key)
        if state is None or state.start_offset < 0:
            return None
        return ShareStateSummary(state.start_offset, state.state_epoch, state.leader_epoch,
                                 delivery_complete_count(state.start_offset, state.batches))


# a persister's error -> what the client sees for the partition (as Kafka's SharePartition maps them)
_PERSIST_ERRORS = {
    ErrorCode.FENCED_LEADER_EPOCH: ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_STATE_EPOCH: ErrorCode.FENCED_STATE_EPOCH,
    ErrorCode.NOT_COORDINATOR: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
}


def persist_error(exc: KafkaError) -> ErrorCode:
    return _PERSIST_ERRORS.get(exc.code, ErrorCode.UNKNOWN_SERVER_ERROR)


@dataclass(slots=True)
class ShareCounters:
    """What the share partitions did, for the broker's metrics: records acknowledged by type (Kafka's
    ShareGroupMetrics RecordAcknowledgementsPerSec), acquisition locks that timed out per partition
    (SharePartitionMetrics AcquisitionLockTimeoutPerSec), and Odradek's own records redelivered (acquired
    again after a release, a timeout or a member leaving) and archived, per group."""

    acknowledged: Counter[int] = field(default_factory=Counter)  # AckType value -> records
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

    def __init__(self, settings: SharePartitionSettings, persister: ShareStatePersister,
                 configs: GroupConfigLookup | None = None) -> None:
        self.settings = settings
        self.persister = persister
        # each group's own configs (GROUP config resources) over the broker's; none: the settings for all
        self.configs = configs or FixedGroupConfigs({
            "share.record.lock.duration.ms": settings.lock_duration_ms,
            "share.auto.offset.reset": settings.auto_offset_reset, "share.isolation.level": "read_uncommitted"})
        self.partitions: dict[ShareKey, SharePartition] = {}
        self._epochs: dict[ShareKey, int] = {}  # the leader epoch each partition was read at
        self._state_epochs: dict[ShareKey, int] = {}  # the state epoch each partition's state was read at
        self.counters = ShareCounters()
        self._init_locks: dict[ShareKey, asyncio.Lock] = {}
        self._loading: set[ShareKey] = set()  # partitions being read in the background (`load_soon`)
        self._write_locks: dict[ShareKey, asyncio.Lock] = {}
        self._waiters: dict[ShareKey, list[asyncio.Future[None]]] = {}
        self._timers: dict[ShareKey, asyncio.TimerHandle] = {}
        self._tasks = TaskSet(log, "Share partition state write")

    def shutdown(self) -> None:
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
        self._tasks.close()

    def lock_duration_ms(self, group_id: str) -> int:
        """The group's `share.record.lock.duration.ms`."""
        return self.configs.value(group_id, "share.record.lock.duration.ms")

    def read_committed(self, group_id: str) -> bool:
        """Whether the group's `share.isolation.level` is read_committed."""
        return self.configs.value(group_id, "share.isolation.level") == "read_committed"

    async def archive(self, key: ShareKey, batches: list[tuple[int, int]]) -> None:
        """Archive records no fetch may deliver (SharePartition.archive); the new state is written."""
        sp = self.partitions.get(key)
        if sp is not None and sp.archive(batches):
            self._wake(key)
            await self._persist(key)

    async def partition(self, key: ShareKey, log_start: int, high_watermark: int, leader_epoch: int = -1,
                        offset_for_time: Callable[[int], int | None] | None = None) -> SharePartition:
        """The share partition, read from the persister on first use at this leader epoch (KafkaError if
        that fails), else initialised from the group's `share.auto.offset.reset` over the log's current
        bounds (`offset_for_time`: the log's first offset at or after a time, for `by_duration`). The
        group's lock duration is read at every call, so a change applies to the next acquisition."""
        sp = self.partitions.get(key)
        if sp is not None and self._epochs.get(key) == leader_epoch:
            sp.log_start_moved(log_start)
            sp.lock_duration_ms = self.lock_duration_ms(key.group_id)
            return sp
        lock = self._init_locks.setdefault(key, asyncio.Lock())
        async with lock:
            sp = self.partitions.get(key)
            if sp is None or self._epochs.get(key) != leader_epoch:
                self._drop(key)
                state = await self.persister.read_state(key, leader_epoch)
                s = self.settings
                limits = {"lock_duration_ms": self.lock_duration_ms(key.group_id),
                          "delivery_count_limit": s.delivery_count_limit, "max_in_flight": s.max_in_flight}
                # no state, or one the group coordinator initialised without a start offset (-1)
                fresh = state is None or state.start_offset < 0
                if fresh:
                    start = initial_start_offset(self.configs.value(key.group_id, "share.auto.offset.reset"),
                                                 log_start, high_watermark, offset_for_time, now_ms())
                    sp = SharePartition(start, **limits)
                else:
                    assert state is not None
                    sp = restore(state.start_offset, list(state.batches), **limits)
                self.partitions[key] = sp
                self._epochs[key] = leader_epoch
                self._state_epochs[key] = state.state_epoch if state is not None else 0
                if fresh:
                    err = await self._persist(key)
                    if err != ErrorCode.NONE:
                        raise KafkaError(err, "The share partition's state could not be written")
        self._init_locks.pop(key, None)
        sp.log_start_moved(log_start)
        return sp

    def loaded(self, key: ShareKey, leader_epoch: int = -1) -> bool:
        """Whether the share partition's state is in memory at this leader epoch (no read needed)."""
        return key in self.partitions and self._epochs.get(key) == leader_epoch

    def load_soon(self, key: ShareKey, log_start: int, high_watermark: int, leader_epoch: int = -1,
                  offset_for_time: Callable[[int], int | None] | None = None) -> None:
        """Read the share partition's state in the background (Kafka's SharePartition initialises
        asynchronously); the fetches parked on it are woken when it is in memory."""
        if key in self._loading:
            return
        self._loading.add(key)

        async def load() -> None:
            try:
                await self.partition(key, log_start, high_watermark, leader_epoch, offset_for_time)
            except KafkaError as exc:
                log.debug("Reading the state of share partition %s-%s-%d failed: %s", key.group_id,
                          key.topic_id.hex(), key.partition, exc)
            finally:
                self._loading.discard(key)
                self._wake(key)

        self._tasks.spawn(load())

    async def initialize(self, keys: Iterable[ShareKey], state_epoch: int) -> None:
        """The group coordinator's InitializeShareGroupState of share partitions newly subscribed to: each
        gets a state at `state_epoch` with no start offset (its leader takes it from `share.auto.offset.reset`
        on first read, as Kafka's does); one that already has a state keeps it. KafkaError if one fails."""
        for key in keys:
            if await self.persister.read_summary(key) is None:
                await self.persister.initialize_state(key, state_epoch, -1)

    async def acquire(self, key: ShareKey, member_id: str, batches: list[tuple[int, int]],
                      max_records: int, whole_batches: bool = False) -> list[Acquired]:
        """Acquire for the member (`SharePartition.acquire`); records delivered before have their delivery
        count written first (if that fails the partition is dropped and nothing is acquired)."""
        sp = self.partitions[key]
        start = sp.start_offset
        got = sp.acquire(member_id, batches, max_records, now_ms(), whole_batches)
        if got:
            self._arm(key)
            again = sum(a.last_offset - a.first_offset + 1 for a in got if a.delivery_count > 1)
            if again:
                self.counters.redelivered[key.group_id] += again
        redelivered = any(a.delivery_count > 1 for a in got) or sp.start_offset != start
        if redelivered and await self._persist(key) != ErrorCode.NONE:
            return []
        return got

    async def acknowledge(self, key: ShareKey, member_id: str, batches: list[AckBatch]) -> ErrorCode:
        """Apply a member's acknowledgements (SharePartition.acknowledge). A RENEW restarts the lock with the
        group's current `share.record.lock.duration.ms`; acknowledgements that only renew change nothing
        durable, so nothing is written for them (as in Kafka) and nobody is woken. The lock timer needs
        no re-arming: it fires at the earliest old deadline, finds it moved and arms for the new one."""
        sp = self.partitions.get(key)
        if sp is None:
            return ErrorCode.INVALID_RECORD_STATE  # nothing was ever acquired here
        archived = sp.archived
        sp.lock_duration_ms = self.lock_duration_ms(key.group_id)
        err = sp.acknowledge(member_id, batches, now_ms())
        if err == ErrorCode.NONE:
            self._count_acks(batches)
            if all(t == AckType.RENEW for b in batches for t in b.types):
                return err
            self._count_archived(key, sp, archived)
            self._wake(key)
            err = await self._persist(key)
        return err

    async def give_back(self, key: ShareKey, member_id: str, acquired: list[Acquired]) -> None:
        """Undo records just acquired for the member and never sent (a ShareFetch answered empty, throttled
        by its quota): available again at once, with the delivery counts they had."""
        sp = self.partitions.get(key)
        if sp is None:
            return
        redelivered = sp.unacquire(member_id, acquired)
        self._wake(key)
        if redelivered:
            await self._persist(key)

    def release(self, group_id: str, member_id: str, keys: Iterable[ShareKey] | None = None) -> int:
        """Give back what `member_id` holds, in `keys` (its share session's partitions) or everywhere in
        the group; the number of records released."""
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
        for key in [k for k in self.partitions if k.group_id == group_id]:
            self._drop(key)

    def forget_topic(self, topic_id: bytes) -> None:
        """The topic was deleted: its share partitions leave memory (their records cannot be fetched)."""
        for key in [k for k in self.partitions if k.topic_id == topic_id]:
            self._drop(key)

    # ---- the admin side (the group has no members when these run) ----
    async def summary(self, key: ShareKey) -> ShareStateSummary | None:
        return await self.persister.read_summary(key)

    async def reset(self, key: ShareKey, start_offset: int) -> None:
        """Start the partition afresh at `start_offset` (AlterShareGroupOffsets): its state is deleted and
        written again at the next state epoch, which fences the writes of a leader still holding the old one."""
        current = await self.persister.read_summary(key)
        state_epoch = current.state_epoch + 1 if current is not None else 0
        self._drop(key)
        await self.persister.delete_state(key)
        await self.persister.write_state(key, ShareSnapshot(start_offset, (), -1, state_epoch))

    async def delete(self, keys: Iterable[ShareKey]) -> None:
        """Forget the partitions' state (DeleteShareGroupOffsets, DeleteGroups)."""
        for key in keys:
            self._drop(key)
            await self.persister.delete_state(key)

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
                self.counters.acknowledged[b.types[0]] += b.last_offset - b.first_offset + 1
            else:
                self.counters.acknowledged.update(b.types)

    def _count_archived(self, key: ShareKey, sp: SharePartition, before: int) -> None:
        if sp.archived > before:
            self.counters.archived[key.group_id] += sp.archived - before

    def _drop(self, key: ShareKey) -> None:
        """Forget the partition's state in memory (the persister keeps it)."""
        self.partitions.pop(key, None)
        self._epochs.pop(key, None)
        self._state_epochs.pop(key, None)
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

    async def _persist(self, key: ShareKey) -> ErrorCode:
        """Write the partition's state as it is when this write's turn comes; on failure drop it."""
        lock = self._write_locks.setdefault(key, asyncio.Lock())
        async with lock:
            sp = self.partitions.get(key)
            if sp is None:
                return ErrorCode.NONE
            start, runs = snapshot(sp)
            try:
                await self.persister.write_state(key, ShareSnapshot(start, tuple(runs), self._epochs.get(key, -1),
                                                                    self._state_epochs.get(key, 0)))
            except KafkaError as exc:
                log.warning("Writing the state of share partition %s-%s-%d failed, dropping it: %s",
                            key.group_id, key.topic_id.hex(), key.partition, exc)
                if self.partitions.get(key) is sp:
                    self._drop(key)
                    self._wake(key)
                return persist_error(exc)
        return ErrorCode.NONE
