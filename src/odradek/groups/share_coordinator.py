"""Share groups (KIP-932): the membership side, ShareGroupHeartbeat and ShareGroupDescribe, beside the
classic and consumer group types of `odradek.groups.service.GroupCoordinatorService`.

A share group's members subscribe to topics; the coordinator assigns partitions server-side and, unlike
a consumer group, may give one partition to several members at once: the records of a partition are
shared out record by record by the share partitions (`odradek.groups.share_state`), not by ownership.
There is no reconciliation (nothing is revoked before it is given elsewhere), so a member's epoch is the
group's assignment epoch as soon as it heartbeats.

Assignment: `odradek.groups.share_assignor.simple_assign` (the `simple` assignor of
`group.share.assignors`), sticky, recomputed from each member's current target on every change, over the
partitions whose share-partition state is initialized only (Kafka 4.1+): a heartbeat marks the subscribed
partitions with no state as initializing and, once answered, initializes them through the persister
(InitializeShareGroupState) and records them initialized, so a new group's first heartbeat gets nothing
and the next one its share.

Members: join with epoch 0 naming their own member id (Kafka 4.1+: empty → INVALID_REQUEST) and their
subscribed topic names, leave with epoch -1, heartbeat with their current epoch or the previous one
(another epoch → FENCED_MEMBER_EPOCH, an unknown member → UNKNOWN_MEMBER_ID); the session is
`group.share.session.timeout.ms`, the interval `group.share.heartbeat.interval.ms`, at most
`group.share.max.size` members (GROUP_MAX_SIZE_REACHED). A member that leaves or whose session expires
keeps the records it holds until its share session closes or their locks run out (Kafka's group
coordinator does not release them either), so a leave cannot overtake final acknowledgements.

Group ids are shared with the other group types: a share heartbeat naming a classic or consumer group
gets GROUP_ID_NOT_FOUND; a JoinGroup or ConsumerGroupHeartbeat naming a share group gets
INCONSISTENT_GROUP_PROTOCOL or GROUP_ID_NOT_FOUND (`GroupCoordinatorService`), as Kafka answers.

Offsets (KIP-932's admin APIs): DescribeShareGroupOffsets reads each partition's summary from the
persister; AlterShareGroupOffsets (which creates the group if there is none, as Kafka does) and
DeleteShareGroupOffsets and DeleteGroups act only on a group without members (NON_EMPTY_GROUP).

State: a group is served while this broker leads the group's `__consumer_offsets` partition
(NOT_COORDINATOR elsewhere) and is written there in Kafka's share-group records (types 10-15,
`odradek.groups.share_schemas`) before a request that changed it is answered: each member's metadata
(rack, client, subscription), target assignment and current assignment (member epoch, previous epoch, the
partitions it was last told), then the group's assignment epoch, its share partitions
(ShareGroupStatePartitionMetadata: the partitions initialized, those the group reads or was given offsets
for, and those being initialized) and its epoch. Only what changed is written, member records before group records; a member
that leaves or expires is tombstoned, a deleted group entirely. When a broker loads the partition (restart,
coordinator fail-over) the groups come back with their members, epochs, subscriptions and assignments,
each member's session timer started afresh, so a member that keeps heartbeating with its epoch carries on.
The share partitions' record state is durable too: `__share_group_state`, behind `ShareStatePersister`
(`odradek.groups.share_state_coordinator`, `odradek.groups.share_persister`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from odradek.aio import TaskSet
from odradek.groups import consumer_schemas as cs
from odradek.groups import share_schemas as ss
from odradek.groups.configs import FixedGroupConfigs, GroupConfigLookup, bounded_ms
from odradek.groups.consumer_coordinator import (
    GroupDescription,
    Heartbeat,
    HeartbeatResult,
    MemberDescription,
    Topics,
)
from odradek.groups.schemas import Records
from odradek.groups.share_assignor import Assignment, simple_assign
from odradek.groups.share_state import ShareKey, SharePartitionManager, ShareStateSummary
from odradek.groups.store import GroupStore
from odradek.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.groups.share")

GROUP_TYPE_SHARE = "share"
JOIN_EPOCH, LEAVE_EPOCH = 0, -1
# how long a partition may stay initializing before a heartbeat initializes it again: Kafka's internal
# `group.share.initialize.retry.interval.ms` at its default (Kafka takes offsets.commit.timeout.ms if larger)
INITIALIZE_RETRY_MS = 30_000


@dataclass(frozen=True, slots=True)
class ShareGroupSettings:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ShareGroupSettings:
        get = config.get
        return cls(session_timeout_ms=bounded_ms(get, "share", "session.timeout.ms"),
                   heartbeat_interval_ms=bounded_ms(get, "share", "heartbeat.interval.ms"),
                   max_size=get("group.share.max.size"))


# A ShareGroupHeartbeat as the coordinator sees it: the fields of a ConsumerGroupHeartbeat's it carries
# (group, member, epoch, rack, subscribed topic names, client id and host); the others keep their defaults.
ShareHeartbeat = Heartbeat


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed: list[str]
    assignment: Assignment = field(default_factory=dict)
    sent: Assignment | None = None  # the assignment the member was last told
    timer: asyncio.TimerHandle | None = None
    previous_epoch: int = -1

    def current_value(self) -> ss.ShareCurrentValue:
        return ss.ShareCurrentValue(self.member_epoch, self.previous_epoch, ss.STABLE, dict(self.sent or {}))


@dataclass(slots=True)
class ShareGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    # the partitions whose share-partition state is initialized: those the group was assigned or given
    # offsets for, and those the coordinator initialized (written as Kafka's ShareGroupStatePartitionMetadata's
    # InitializedTopics): the only ones assigned; what DescribeShareGroupOffsets lists and DeleteGroups deletes
    partitions: set[tuple[bytes, int]] = field(default_factory=set)
    # the partitions being initialized (InitializeShareGroupState sent, InitializingTopics), with the time
    # it was sent (a partition initializing for longer than INITIALIZE_RETRY_MS is initialized again)
    initializing: dict[tuple[bytes, int], float] = field(default_factory=dict)
    # the group's records as last written to `__consumer_offsets` (what the next write is the difference to)
    written: dict[cs.ConsumerKey, bytes] = field(default_factory=dict)
    # the members whose records may differ from `written` (joined, heartbeated, reassigned, left): a write
    # encodes only theirs and the group's, so a heartbeat costs the same in a group of 2 or 200
    dirty: set[str] = field(default_factory=set)
    # what the target assignment was last computed from (subscriptions, topics): the same inputs give the
    # same assignment (the assignor is deterministic and keeps a balanced one as it is)
    assigned_from: object = None

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"

    def share_keys(self, topic_ids: set[bytes] | None = None) -> list[ShareKey]:
        return [ShareKey(self.group_id, t, p) for t, p in sorted(self.partitions | self.initializing.keys())
                if topic_ids is None or t in topic_ids]


class ShareGroupCoordinator:
    """Owns the share groups of the `__consumer_offsets` partitions this broker leads."""

    def __init__(self, settings: ShareGroupSettings, store: GroupStore, topics: Topics,
                 partitions: SharePartitionManager, configs: GroupConfigLookup | None = None) -> None:
        self.settings = settings
        # each group's own configs (GROUP config resources) over the broker's; none: the settings for all
        self.configs = configs or FixedGroupConfigs({"share.heartbeat.interval.ms": settings.heartbeat_interval_ms,
                                                     "share.session.timeout.ms": settings.session_timeout_ms})
        self.store = store
        self.topics = topics
        self.partitions = partitions
        self.groups: dict[str, ShareGroup] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.rebalances = 0  # assignment changes (Kafka's share-group-rebalance-count)
        self._tasks = TaskSet(log, "Share group coordinator task")

    async def shutdown(self) -> None:
        self._tasks.close()
        for g in self.groups.values():
            for m in g.members.values():
                if m.timer is not None:
                    m.timer.cancel()
        self.groups.clear()

    def unload_partition(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.store.partition_for(g) == partition]:
            self._drop(gid)
            self.partitions.forget_group(gid)

    def _drop(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        for m in group.members.values() if group is not None else ():
            if m.timer is not None:
                m.timer.cancel()

    # ---- loading (the service calls this when the runtime loads a partition) ----
    def install(self, loaded: dict[str, ss.LoadedShareGroup]) -> None:
        """The share groups replayed from a partition this broker now leads; their members' sessions start
        now (as Kafka's do on a fail-over)."""
        for gid, entry in loaded.items():
            if entry.epoch is None:
                continue
            self._drop(gid)
            group = ShareGroup(gid, entry.epoch, entry.assignment_epoch, partitions=entry.partitions(),
                               # retried at the next heartbeat: the broker that sent them may be gone
                               initializing=dict.fromkeys(entry.partitions(initializing=True), 0.0))
            for mid, meta in entry.members.items():
                current = entry.current.get(mid) or ss.ShareCurrentValue(0, -1)
                target = entry.targets.get(mid, current.assigned)
                group.members[mid] = ShareMember(mid, current.member_epoch, meta.rack_id, meta.client_id,
                                                 meta.client_host, list(meta.subscribed_topic_names), dict(target),
                                                 dict(current.assigned), previous_epoch=current.previous_member_epoch)
            group.written = self._image(group)
            self.groups[gid] = group
            for member in group.members.values():
                self._touch(group, member)
            log.debug("Loaded share group %s (epoch %d, %d members)", gid, group.group_epoch, len(group.members))

    # ---- records ----
    def _image(self, group: ShareGroup, members: Iterable[str] | None = None) -> dict[cs.ConsumerKey, bytes]:
        """The group's records as they should be now: the member records of `members` (None: every member)
        that are still members, then the group's."""
        gid, out = group.group_id, {}
        for mid in sorted(group.members if members is None else set(members) & group.members.keys()):
            m = group.members[mid]
            out[cs.ConsumerKey(ss.MEMBER_METADATA, gid, mid)] = ss.encode_member_metadata(
                ss.ShareMemberValue(m.rack_id, m.client_id, m.client_host, list(m.subscribed)))
            out[cs.ConsumerKey(ss.TARGET_ASSIGNMENT_MEMBER, gid, mid)] = cs.encode_target_member(m.assignment)
            out[cs.ConsumerKey(ss.CURRENT_MEMBER_ASSIGNMENT, gid, mid)] = ss.encode_current_assignment(
                m.current_value())
        def by_topic(tps: Iterable[tuple[bytes, int]]) -> ss.TopicPartitions:
            out: ss.TopicPartitions = {}
            for t, p in tps:
                name, ps = out.get(t, (self.topics.name_of(t) or "", frozenset()))
                out[t] = (name, ps | {p})
            return out

        out[cs.ConsumerKey(ss.TARGET_ASSIGNMENT_METADATA, gid)] = cs.encode_epoch(group.assignment_epoch)
        out[cs.ConsumerKey(ss.STATE_PARTITION_METADATA, gid)] = ss.encode_state_partition_metadata(
            ss.StatePartitionValue(initializing=by_topic(group.initializing), initialized=by_topic(group.partitions)))
        out[cs.ConsumerKey(ss.GROUP_METADATA, gid)] = ss.encode_group_metadata(group.group_epoch)
        return out

    @staticmethod
    def _changes(group: ShareGroup, image: dict[cs.ConsumerKey, bytes], keys: set[cs.ConsumerKey]) -> Records:
        """The records that take the group's written records of `keys` to `image`: member records first (the
        departed members' tombstones, each one's current assignment, target and metadata in Kafka's order,
        then the others' metadata, target and current assignment), the group's last, so that a reader
        never sees an epoch before the members it counts."""
        def order(k: cs.ConsumerKey) -> tuple[bool, bool, str, int]:
            types = ss.MEMBER_RECORD_TYPES if k not in image else ss.MEMBER_RECORD_TYPES[::-1]
            rank = types.index(k.record_type) if k.member is not None else ss.GROUP_RECORD_TYPES.index(k.record_type)
            return k.member is None, k in image, k.member or "", rank

        out: Records = []
        for k in sorted((k for k in keys if group.written.get(k) != image.get(k)), key=order):
            out += cs.record(k, image.get(k))
        return out

    async def _flush(self, group: ShareGroup, image: dict[cs.ConsumerKey, bytes] | None = None) -> None:
        """Write what changed in the group: the records of its dirty members and its own (or what takes it
        to `image`: {} deletes it); once committed it is what was written, else KafkaError and the next
        write carries the change again (the members stay dirty)."""
        gid = group.group_id
        if image is None:
            image = self._image(group, group.dirty)
            keys = {cs.ConsumerKey(t, gid, mid) for mid in group.dirty for t in ss.MEMBER_RECORD_TYPES}
            keys.update(cs.ConsumerKey(t, gid) for t in ss.GROUP_RECORD_TYPES)
        else:
            keys = group.written.keys() | image.keys()
        records = self._changes(group, image, keys)
        if records:
            await self.store.write(gid, records)
        for k in keys:
            if k in image:
                group.written[k] = image[k]
            else:
                group.written.pop(k, None)
        group.dirty.clear()

    def _lock(self, group_id: str) -> asyncio.Lock:
        lock = self._locks.get(group_id)
        if lock is None:
            lock = self._locks[group_id] = asyncio.Lock()
        return lock

    def is_share_group(self, group_id: str) -> bool:
        return group_id in self.groups

    def has_member(self, group_id: str, member_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and member_id in group.members

    # ---- ShareGroupHeartbeat ----
    async def heartbeat(self, hb: ShareHeartbeat, other_type: str | None) -> HeartbeatResult:
        """`other_type`: the type of a group of another kind with this id, if there is one."""
        try:
            self._validate(hb)
            await self.store.wait_ready(hb.group_id)
            async with self._lock(hb.group_id):
                if hb.member_epoch == LEAVE_EPOCH:
                    return await self._leave(hb)
                return await self._heartbeat(hb, other_type)
        except KafkaError as exc:
            return HeartbeatResult(exc.code, exc.message if exc.message != exc.code.name else None,
                                        hb.member_id or None, hb.member_epoch)

    @staticmethod
    def _validate(hb: ShareHeartbeat) -> None:
        def bad(message: str) -> KafkaError:
            return KafkaError(ErrorCode.INVALID_REQUEST, message)

        if not hb.group_id:
            raise bad("GroupId can't be empty.")
        if not hb.member_id:
            raise bad("MemberId can't be empty.")
        if hb.member_epoch < LEAVE_EPOCH:
            raise bad(f"MemberEpoch is {hb.member_epoch}, but must be greater than or equal to -1.")
        if hb.member_epoch == JOIN_EPOCH and not hb.subscribed_topic_names:
            raise bad("SubscribedTopicNames must be set in first request.")

    async def _heartbeat(self, hb: ShareHeartbeat, other_type: str | None) -> HeartbeatResult:
        group = self.groups.get(hb.group_id)
        if group is None:
            if other_type is not None:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {hb.group_id} is not a share group.")
            if hb.member_epoch != JOIN_EPOCH:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {hb.member_id} is not a member of group {hb.group_id}.")
            group = self.groups[hb.group_id] = ShareGroup(hb.group_id)
        member = group.members.get(hb.member_id)
        if hb.member_epoch == JOIN_EPOCH:
            if member is None and len(group.members) >= self.settings.max_size:
                raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The share group has reached its maximum capacity of {self.settings.max_size} "
                                 "members.")
            if member is None:
                member = ShareMember(hb.member_id, 0, hb.rack_id, hb.client_id, hb.client_host,
                                     list(hb.subscribed_topic_names or []))
                group.members[hb.member_id] = member
                group.group_epoch += 1
                log.info("Member %s joined share group %s", hb.member_id, hb.group_id)
            member.sent = None  # a (re)joining member is told its whole assignment
        elif member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {hb.member_id} is not a member of group "
                                                          f"{hb.group_id}.")
        elif hb.member_epoch > member.member_epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The share group member has a greater member epoch ({hb.member_epoch}) than the one "
                             f"known by the group coordinator ({member.member_epoch}). The member must abandon all "
                             "its partitions and rejoin.")
        elif hb.member_epoch < member.member_epoch:
            if hb.member_epoch != member.previous_epoch:
                raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The share group member has a smaller member epoch ({hb.member_epoch}) than the one "
                                 f"known by the group coordinator ({member.member_epoch}). The member must abandon "
                                 "all its partitions and rejoin.")
            member.sent = None  # the answer that bumped its epoch was lost (Kafka accepts the previous epoch)
        if hb.subscribed_topic_names is not None and list(hb.subscribed_topic_names) != member.subscribed:
            member.subscribed = list(hb.subscribed_topic_names)
            group.group_epoch += 1
        if hb.rack_id is not None:
            member.rack_id = hb.rack_id
        self._assign(group)
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
        self._touch(group, member)
        changed = member.sent is None or member.sent != member.assignment
        member.sent = dict(member.assignment)
        group.dirty.add(member.member_id)
        uninitialized = self._uninitialized(group)
        group.initializing.update(dict.fromkeys(uninitialized, time.monotonic()))
        try:
            await self._flush(group)
        except KafkaError:
            member.sent = None  # not told after all: the next heartbeat that gets through tells it again
            for tp in uninitialized:
                group.initializing.pop(tp, None)
            raise
        if uninitialized:  # after the answer's write, as Kafka's service sends it once the heartbeat is done
            self._tasks.spawn(self._initialize(group, uninitialized, group.group_epoch))
        interval = self.configs.value(group.group_id, "share.heartbeat.interval.ms")
        return HeartbeatResult(ErrorCode.NONE, None, member.member_id, member.member_epoch, interval,
                               dict(member.assignment) if changed else None)

    def _subscribed_topics(self, group: ShareGroup) -> dict[str, tuple[bytes, int]]:
        """Topic name → (topic id, partition count) of the existing topics the group's members subscribe to."""
        topics: dict[str, tuple[bytes, int]] = {}
        for name in {t for m in group.members.values() for t in m.subscribed}:
            info = self.topics.info(name)
            if info is not None:
                topics[name] = (info.topic_id, info.partitions)
        return topics

    def _uninitialized(self, group: ShareGroup) -> list[tuple[bytes, int]]:
        """The subscribed partitions whose share-partition state is neither initialized nor being initialized
        (or has been for longer than INITIALIZE_RETRY_MS): what the coordinator initializes next, as
        Kafka's GroupMetadataManager.subscribedTopicsChangeMap."""
        stale = time.monotonic() - INITIALIZE_RETRY_MS / 1000
        return [(t, p) for t, n in sorted(self._subscribed_topics(group).values()) for p in range(n)
                if (t, p) not in group.partitions and group.initializing.get((t, p), stale) <= stale]

    async def _initialize(self, group: ShareGroup, tps: list[tuple[bytes, int]], group_epoch: int) -> None:
        """InitializeShareGroupState for `tps` through the persister (state epoch: the group epoch, no start
        offset), then the partitions are recorded as initialized, and so assignable: the next heartbeat
        shares them out (Kafka's GroupCoordinatorService.persisterInitialize). A failure takes them out of
        initializing, so the next heartbeat tries again."""
        gid = group.group_id
        try:
            await self.partitions.initialize([ShareKey(gid, t, p) for t, p in tps], group_epoch)
            ok = True
        except KafkaError as exc:
            log.warning("Share group %s: initializing the state of %d partitions failed: %s", gid, len(tps), exc)
            ok = False
        async with self._lock(gid):
            if self.groups.get(gid) is not group:
                return
            for tp in tps:
                group.initializing.pop(tp, None)
            if ok:
                group.partitions.update(tps)
            try:
                await self._flush(group)
            except KafkaError as exc:  # the next write carries it
                log.warning("Share group %s: could not record initialized share partitions: %s", gid, exc)
        if ok:
            log.info("Share group %s: state of %d partitions initialized", gid, len(tps))

    def _assign(self, group: ShareGroup) -> None:
        """Recompute the target assignment over the initialized partitions (Kafka assigns only share
        partitions whose state is initialized); a change (new members, subscriptions, initialized partitions
        or topics) moves the group epoch and the assignment epoch with it."""
        topics = self._subscribed_topics(group)
        assignable = {(t, p) for t, p in group.partitions if any(t == tid for tid, _n in topics.values())}
        inputs = (tuple(sorted((mid, tuple(m.subscribed)) for mid, m in group.members.items())),
                  tuple(sorted(topics.items())), tuple(sorted(assignable)))
        if inputs == group.assigned_from:  # nothing the assignment depends on changed (most heartbeats)
            group.assignment_epoch = group.group_epoch
            return
        group.assigned_from = inputs
        target = simple_assign({mid: m.subscribed for mid, m in group.members.items()}, topics,
                               {mid: m.assignment for mid, m in group.members.items()}, assignable)
        if any(group.members[mid].assignment != a for mid, a in target.items()):
            if group.assignment_epoch >= group.group_epoch:
                group.group_epoch += 1
            self.rebalances += 1
            for mid, a in target.items():
                if group.members[mid].assignment != a:
                    group.members[mid].assignment = a
                    group.dirty.add(mid)
                group.partitions.update((t, p) for t, ps in a.items() for p in ps)
        group.assignment_epoch = group.group_epoch

    async def _leave(self, hb: ShareHeartbeat) -> HeartbeatResult:
        group = self.groups.get(hb.group_id)
        if group is None or hb.member_id not in group.members:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {hb.member_id} is not a member of group "
                                                          f"{hb.group_id}.")
        self._remove(group, hb.member_id, "left")
        await self._flush(group)
        return HeartbeatResult(ErrorCode.NONE, None, hb.member_id, LEAVE_EPOCH,
                               self.configs.value(hb.group_id, "share.heartbeat.interval.ms"))

    def _remove(self, group: ShareGroup, member_id: str, why: str) -> None:
        member = group.members.pop(member_id)
        group.dirty.add(member_id)
        if member.timer is not None:
            member.timer.cancel()
        group.group_epoch += 1
        self._assign(group)
        # the member's records stay acquired: they go back when its share session closes (its final
        # ShareFetch/ShareAcknowledge, or its connection ending) or their locks run out, as in Kafka, so
        # final acknowledgements sent on the data connection are never overtaken by this leave
        log.info("Member %s of share group %s %s", member_id, group.group_id, why)

    def _touch(self, group: ShareGroup, member: ShareMember) -> None:
        if member.timer is not None:
            member.timer.cancel()
        member.timer = asyncio.get_running_loop().call_later(
            self.configs.value(group.group_id, "share.session.timeout.ms") / 1000, self._expire, group, member.member_id)


    def _expire(self, group: ShareGroup, member_id: str) -> None:
        self._tasks.spawn(self._expire_now(group, member_id))

    async def _expire_now(self, group: ShareGroup, member_id: str) -> None:
        async with self._lock(group.group_id):
            if self.groups.get(group.group_id) is not group or member_id not in group.members:
                return
            self._remove(group, member_id, "session timed out")
            try:
                await self._flush(group)
            except KafkaError as exc:
                log.warning("Could not record the removal of member %s from share group %s: %s", member_id,
                            group.group_id, exc)

    # ---- ShareGroupDescribe, ListGroups ----
    async def describe(self, group_id: str, other_type: str | None) -> GroupDescription:
        try:
            await self.store.wait_ready(group_id)
        except KafkaError as exc:
            return GroupDescription(group_id, exc.code)
        group = self.groups.get(group_id)
        if group is None:
            message = (f"Group {group_id} is not a share group." if other_type is not None
                       else f"Group {group_id} not found.")
            return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)
        return GroupDescription(
            group_id, state=group.state, group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
            assignor="simple",
            members=[MemberDescription(m.member_id, None, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                                       list(m.subscribed), None, dict(m.assignment), dict(m.assignment))
                     for m in sorted(group.members.values(), key=lambda m: m.member_id)])

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every share group here."""
        return sorted((g.group_id, GROUP_TYPE_SHARE, g.state) for g in self.groups.values())

    # ---- offsets: DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups ----
    def _existing(self, group_id: str, other_type: str | None) -> ShareGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Group {group_id} is not a share group." if other_type is not None
                             else f"Group {group_id} not found.")
        return group

    @staticmethod
    def _require_empty(group: ShareGroup) -> None:
        if group.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"Share group {group.group_id} has active members.")

    async def describe_offsets(self, group_id: str, other_type: str | None,
                               partitions: dict[bytes, list[int]] | None) -> dict[ShareKey, ShareStateSummary | None]:
        """Each partition's summary (None: no state); `partitions` None means every partition with state.
        Raises KafkaError for the group as a whole."""
        await self.store.wait_ready(group_id)
        self._existing(group_id, other_type)
        if partitions is None:  # the group's partitions that have a state
            summaries = {key: await self.partitions.summary(key) for key in self.groups[group_id].share_keys()}
            return {key: summary for key, summary in summaries.items() if summary is not None}
        keys = [ShareKey(group_id, t, p) for t, ps in partitions.items() for p in ps]
        return {key: await self.partitions.summary(key) for key in keys}

    async def alter_offsets(self, group_id: str, other_type: str | None, offsets: dict[ShareKey, int]) -> None:
        await self.store.wait_ready(group_id)
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if group is None:
                if other_type is not None:
                    raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
                group = self.groups[group_id] = ShareGroup(group_id)
            self._require_empty(group)
            try:
                for key, offset in offsets.items():
                    await self.partitions.reset(key, offset)
                    group.partitions.add((key.topic_id, key.partition))
                    group.initializing.pop((key.topic_id, key.partition), None)
            finally:
                await self._flush(group)
            log.info("Share group %s: start offsets of %d partitions altered", group_id, len(offsets))

    async def delete_offsets(self, group_id: str, other_type: str | None, topic_ids: set[bytes]) -> None:
        await self.store.wait_ready(group_id)
        async with self._lock(group_id):
            group = self._existing(group_id, other_type)
            self._require_empty(group)
            await self.partitions.delete(group.share_keys(topic_ids))
            group.partitions = {(t, p) for t, p in group.partitions if t not in topic_ids}
            group.initializing = {(t, p): ts for (t, p), ts in group.initializing.items() if t not in topic_ids}
            await self._flush(group)

    def topic_deleted(self, topic_id: bytes) -> None:
        """A topic was deleted: the share groups this broker coordinates forget its partitions, whose state
        is deleted from `__share_group_state` (Kafka deletes a deleted topic's share-group state too)."""
        self.partitions.forget_topic(topic_id)
        for group_id, group in list(self.groups.items()):
            if any(t == topic_id for t, _p in [*group.partitions, *group.initializing]):
                self._tasks.spawn(self._forget_topic(group_id, topic_id))

    async def _forget_topic(self, group_id: str, topic_id: bytes) -> None:
        try:
            self.store.check(group_id)
        except KafkaError:
            return
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if group is None:
                return
            keys = group.share_keys({topic_id})
            try:
                await self.partitions.delete(keys)
            except KafkaError as exc:
                log.warning("Share group %s: could not delete the state of a deleted topic: %s", group_id, exc)
                return
            group.partitions = {(t, p) for t, p in group.partitions if t != topic_id}
            group.initializing = {(t, p): ts for (t, p), ts in group.initializing.items() if t != topic_id}
            await self._flush(group)
        log.info("Share group %s: state of %d partitions of a deleted topic deleted", group_id, len(keys))

    async def delete_group(self, group_id: str) -> ErrorCode:
        try:
            await self.store.wait_ready(group_id)
            async with self._lock(group_id):
                group = self._existing(group_id, None)
                self._require_empty(group)
                await self.partitions.delete(group.share_keys())
                await self._flush(group, {})  # every record of the group tombstoned
                del self.groups[group_id]
        except KafkaError as exc:
            return exc.code
        log.info("Share group %s deleted", group_id)
        return ErrorCode.NONE
