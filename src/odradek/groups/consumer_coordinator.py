"""The coordinator of KIP-848 consumer groups (`group.protocol=consumer`), beside the classic one.

It serves ConsumerGroupHeartbeat and ConsumerGroupDescribe over the state in
`odradek.groups.consumer_group`, answers what the one offset manager (`odradek.groups.offset_manager`) asks
of a consumer group (commits and fetches validated by member epoch, subscribed topics, expired offsets),
and KIP-848's online migration (`group.consumer.migration.policy`): members using the classic protocol
inside a consumer group (their JoinGroup/SyncGroup/Heartbeat/LeaveGroup are served here, their assignments
computed by the server-side assignor), a classic group with or without members becoming a consumer group on
a consumer heartbeat, and a consumer group becoming a classic group on a JoinGroup when empty or when its
last consumer-protocol member leaves.

Timers: each member's session (`group.consumer.session.timeout.ms`, a classic member's own, restarted by
every heartbeat: a member that stops heartbeating is removed, its partitions freed; a dynamic
consumer-protocol member also when silent past its rebalance timeout, see `liveness_bound_ms`), while a
member owes a revocation its rebalance timeout (a member that does not revoke in time is removed too), and
a classic member's join and sync timeouts.

Every change is written to the group's `__consumer_offsets` partition in Kafka's record formats
(`odradek.groups.consumer_schemas`) before the heartbeat is answered, so a broker that loads the partition
(fail-over, restart) serves the group as it was. Memory is changed first and the records follow; a failed
write answers the heartbeat with the store's error (the member retries) and leaves memory ahead of the
log until the group's next successful write, which carries what the failed one did not (the records stay
dirty) — departure: Kafka rolls memory back (its timeline data structures).

Both group types share the broker's `GroupStore`; `odradek.groups.service.GroupCoordinatorService` hands
each the groups of its type when a partition loads, and routes the offsets and admin APIs by type.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from odradek.aio import TaskSet
from odradek.cluster.metadata import MetadataCache
from odradek.groups import consumer_schemas as cs
from odradek.groups.assignors import configured_assignors
from odradek.groups.configs import FixedGroupConfigs, GroupConfigLookup, bounded_ms, protocol_enabled
from odradek.groups.consumer_group import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ClassicProtocol,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    TopicInfo,
    classic_assignment_bytes,
    now_ms,
    parse_classic_assignment,
    parse_classic_subscription,
    reconcile,
    same_assignment,
    subscription_version,
)
from odradek.groups.coordinator import GroupCoordinator, group_record
from odradek.groups.group import (
    CONSUMER_PROTOCOL,
    Group,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    MemberProfile,
    SyncResult,
)
from odradek.groups.schemas import OffsetValue, Records, TopicPartition, group_records, offset_records
from odradek.groups.store import GroupStore, LoadedGroup, write_removal
from odradek.linear_regex import compile_pattern, matching, too_costly
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.ratelog import LimitedLog

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.groups.consumer")
limited = LimitedLog(log)  # lines a member's regex can make every refresh

Assignment = cs.Assignment
GROUP_TYPE_CONSUMER = "consumer"
# The member metadata cannot name a regex refresh interval; Kafka re-resolves regexes in the background
# every few seconds. Here a heartbeat re-resolves its group's regexes when they are older than this.
REGEX_REFRESH_MS = 1000
AUTHORIZE_CHUNK = 128  # topics a regex matched, authorized between two turns of the event loop


@dataclass(frozen=True, slots=True)
class ConsumerGroupSettings:
    enabled: bool = True
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    migration_policy: str = "bidirectional"

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ConsumerGroupSettings:
        get = config.get
        return cls(
            enabled=protocol_enabled(get, "consumer"),
            session_timeout_ms=bounded_ms(get, "consumer", "session.timeout.ms"),
            heartbeat_interval_ms=bounded_ms(get, "consumer", "heartbeat.interval.ms"),
            max_size=int(get("group.consumer.max.size")),
            assignors=tuple(configured_assignors(get("group.consumer.assignors"))),
            migration_policy=str(get("group.consumer.migration.policy")).lower(),
        )

    def upgrades(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    def downgrades(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")


TopicFilter = Callable[[frozenset[str]], frozenset[str]]


class Topics(Protocol):
    """The coordinator's view of the cluster's topics."""

    def info(self, name: str) -> TopicInfo | None: ...

    def names(self) -> Iterable[str]:
        """Every topic a regex may match (internal topics excluded)."""
        ...

    def name_of(self, topic_id: bytes) -> str | None: ...


class MetadataTopics:
    """`Topics` over the broker's metadata cache (`odradek.cluster.metadata.MetadataCache`)."""

    def __init__(self, metadata: MetadataCache, internal: Iterable[str] = ()) -> None:
        self.metadata = metadata
        self.internal = frozenset(internal)

    def info(self, name: str) -> TopicInfo | None:
        meta = self.metadata.topics.get(name)
        if meta is None or not meta.assignment:
            return None
        return TopicInfo(meta.topic_id, len(meta.assignment))

    def names(self) -> Iterable[str]:
        return [n for n in self.metadata.topics if n not in self.internal]

    def name_of(self, topic_id: bytes) -> str | None:
        name = self.metadata.by_id.get(topic_id)
        return None if name is None else str(name)


@dataclass(slots=True)
class Heartbeat:
    """A ConsumerGroupHeartbeat as the coordinator sees it (None: unchanged since the last one)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    owned: Assignment | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1
    # The topics among these the member's principal may DESCRIBE (Kafka resolves a regex for the member
    # whose heartbeat triggers the resolution: a topic it may not describe is left out of the result).
    describable: TopicFilter = field(default=lambda names: names)


@dataclass(slots=True)
class HeartbeatResult:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(slots=True)
class MemberDescription:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target: Assignment
    classic: bool = False  # the member uses the classic protocol (online migration)


@dataclass(slots=True)
class GroupDescription:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor: str = ""
    members: list[MemberDescription] = field(default_factory=list)


@dataclass(slots=True)
class _Timers:
    session: asyncio.TimerHandle | None = None
    rebalance: asyncio.TimerHandle | None = None
    # a classic member's join timeout (told to rejoin) or sync timeout (joined, SyncGroup due)
    classic: asyncio.TimerHandle | None = None

    def cancel(self) -> None:
        for t in (self.session, self.rebalance, self.classic):
            if t is not None:
                t.cancel()
        self.session = self.rebalance = self.classic = None


def new_member_id() -> str:
    """Kafka's form: a random UUID in URL-safe base64 without padding (22 characters)."""
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def liveness_bound_ms(member: ConsumerMember, heartbeat_interval_ms: int) -> int | None:
    """How long a dynamic member may stay silent before it is removed, besides the session timeout: its
    rebalance timeout (the client's `max.poll.interval.ms`), and never less than one and a half heartbeat
    intervals (a live member heartbeats every interval, the half is slack for a slow network). librdkafka 2.16
    stops heartbeating when the application exceeds `max.poll.interval.ms` and sends its leave only once
    the application polls again (the revocation of its partitions waits for the rebalance callback), so
    the member's partitions would otherwise stay held until the session timeout. A live client
    heartbeats every interval whatever its application does, so a member silent for that long has given
    up. Static members keep their partitions until the session timeout (KIP-345: no leave on a poll
    timeout). None: no bound beyond the session."""
    if (member.instance_id is not None or member.classic is not None or member.rebalance_timeout_ms <= 0
            or member.member_epoch < 0):
        return None
    return max(member.rebalance_timeout_ms, heartbeat_interval_ms + heartbeat_interval_ms // 2)


class ConsumerGroupCoordinator:
    """Owns the consumer groups of the `__consumer_offsets` partitions this broker leads."""

    type_name = GROUP_TYPE_CONSUMER

    def __init__(self, settings: ConsumerGroupSettings, store: GroupStore, topics: Topics,
                 classic: GroupCoordinator, configs: GroupConfigLookup | None = None) -> None:
        self.settings = settings
        # each group's own configs (GROUP config resources) over the broker's; none: the settings for all
        self.configs = configs or FixedGroupConfigs({
            "consumer.session.timeout.ms": settings.session_timeout_ms,
            "consumer.heartbeat.interval.ms": settings.heartbeat_interval_ms})
        self.store = store
        self.topics = topics
        self.classic = classic  # for the migration of empty groups between the two types
        self.groups: dict[str, ConsumerGroup] = {}
        self._timers: dict[tuple[str, str], _Timers] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._regex_refreshed: dict[str, int] = {}
        self._resolving: set[str] = set()  # groups with a regex resolution under way
        self._tasks = TaskSet(log, "Consumer group coordinator task")

    # ---- life cycle ----
    async def shutdown(self) -> None:
        self._tasks.close()
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
        for g in self.groups.values():
            g.dead = True
        self.groups.clear()

    def _lock(self, group_id: str) -> asyncio.Lock:
        lock = self._locks.get(group_id)
        if lock is None:
            lock = self._locks[group_id] = asyncio.Lock()
        return lock

    @asynccontextmanager
    async def _locked_consumer_group(self, group_id: str) -> AsyncIterator[ConsumerGroup | None]:
        """The consumer group `group_id`, loaded and under its lock; None (at once) when it is not one, as
        for a classic group's requests, which the classic type serves."""
        if self._consumer_group(group_id) is None:
            yield None
            return
        await self.store.wait_ready(group_id)
        async with self._lock(group_id):
            yield self._consumer_group(group_id)

    # ---- loading (the service calls these when the runtime loads or unloads a partition) ----
    def install(self, loaded: dict[str, LoadedGroup]) -> None:
        for gid, entry in loaded.items():
            c = entry.consumer
            if c is None or c.epoch is None:
                continue
            self._drop(gid)
            group = ConsumerGroup.restore(gid, c.epoch, c.assignment_epoch, c.members, c.targets, c.current,
                                          entry.offsets, {p: frozenset(v.topics) for p, v in c.regexes.items()})
            group.assignor = group.preferred_assignor(self.settings.assignors[0])
            self.groups[gid] = group
            for mid in group.members:
                self._touch(group, mid)
            log.debug("Loaded consumer group %s (epoch %d, %d members, %d offsets)", gid, group.group_epoch,
                      len(group.members), len(group.offsets))

    def unload_partition(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.store.partition_for(g) == partition]:
            self._drop(gid)

    def _drop(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if group is None:
            return
        group.dead = True
        for mid in list(group.members):
            self._cancel_timers(group_id, mid)

    # ---- timers ----
    def _touch(self, group: ConsumerGroup, member_id: str) -> None:
        timers = self._timers.setdefault((group.group_id, member_id), _Timers())
        if timers.session is not None:
            timers.session.cancel()
        timeout_ms, reason = self.configs.value(group.group_id, "consumer.session.timeout.ms"), "session timeout"
        member = group.members.get(member_id)
        if member is not None and member.classic is not None:
            timeout_ms = member.classic.session_timeout_ms  # a classic member keeps its own session timeout
        elif member is not None:
            silent_ms = liveness_bound_ms(member, self.configs.value(group.group_id, "consumer.heartbeat.interval.ms"))
            if silent_ms is not None and silent_ms < timeout_ms:
                timeout_ms, reason = silent_ms, "no heartbeat within its rebalance timeout (max.poll.interval.ms)"
        timers.session = asyncio.get_running_loop().call_later(
            timeout_ms / 1000, self._expire, group, member_id, reason, None)

    def _rebalance_timer(self, group: ConsumerGroup, member: ConsumerMember, before: ConsumerMember | None) -> None:
        timers = self._timers.setdefault((group.group_id, member.member_id), _Timers())
        owing = member.state is MemberState.UNREVOKED_PARTITIONS
        was_owing = (before is not None and before.state is MemberState.UNREVOKED_PARTITIONS
                     and before.member_epoch == member.member_epoch)
        if owing and was_owing and timers.rebalance is not None:
            return
        if timers.rebalance is not None:
            timers.rebalance.cancel()
            timers.rebalance = None
        if owing:
            timers.rebalance = asyncio.get_running_loop().call_later(
                max(member.rebalance_timeout_ms, 1) / 1000, self._expire, group, member.member_id,
                "rebalance timeout (partitions not revoked in time)", member.member_epoch)

    def _cancel_timers(self, group_id: str, member_id: str) -> None:
        timers = self._timers.pop((group_id, member_id), None)
        if timers is not None:
            timers.cancel()

    def _expire(self, group: ConsumerGroup, member_id: str, reason: str, epoch: int | None) -> None:
        self._tasks.spawn(self._fence(group, member_id, reason, epoch))

    async def _fence(self, group: ConsumerGroup, member_id: str, reason: str, epoch: int | None) -> None:
        async with self._lock(group.group_id):
            if self.groups.get(group.group_id) is not group:
                return
            member = group.members.get(member_id)
            if member is None or (epoch is not None and (member.member_epoch != epoch
                                                         or member.state is not MemberState.UNREVOKED_PARTITIONS)):
                return
            log.info("Member %s in consumer group %s has failed, removing it from the group (%s)", member_id,
                     group.group_id, reason)
            try:
                await self._remove_and_flush(group, member_id)
            except KafkaError as exc:
                log.warning("Could not record the removal of member %s from group %s: %s", member_id,
                            group.group_id, exc)

    def _remove(self, group: ConsumerGroup, member_id: str) -> None:
        self._cancel_timers(group.group_id, member_id)
        group.remove_member(member_id)

    async def _remove_and_flush(self, group: ConsumerGroup, member_id: str) -> None:
        """Remove a member and write it; when the last member using the consumer protocol goes and classic
        members remain, the group becomes a classic group again (Kafka's online downgrade)."""
        member = group.members.get(member_id)
        downgrade = (member is not None and member.classic is None and self.settings.downgrades()
                     and len(group.members) > 1
                     and all(m.classic is not None for mid, m in group.members.items() if mid != member_id)
                     and len(group.members) - 1 <= self.classic.settings.max_size)
        epoch = group.group_epoch  # the classic members' generation (the removal's bump is not theirs)
        self._remove(group, member_id)
        if not downgrade:
            await self._flush(group)
            return
        records = self._records(group) + self._tombstones(group, offsets=False)
        classic = self._to_classic(group, epoch)
        self._drop(group.group_id)
        self.classic.adopt(classic, f"Downgrade group {group.group_id} from consumer to classic.")
        log.info("Converted consumer group %s to a classic group: its last consumer-protocol member left",
                 group.group_id)
        await self.store.write(group.group_id, records + group_record(classic))

    def _to_classic(self, group: ConsumerGroup, generation: int) -> Group:
        """Kafka's ClassicGroup.fromConsumerGroup: a Stable classic group at the group epoch from before the
        leaving member went, whose members are the classic members with their target assignments."""
        classic = Group(group.group_id, GroupState.STABLE)
        classic.generation = generation
        classic.offsets = dict(group.offsets)
        for m in group.members.values():
            assert m.classic is not None
            profile = MemberProfile(m.client_id, m.client_host, m.classic.session_timeout_ms, m.rebalance_timeout_ms,
                                    CONSUMER_PROTOCOL, list(m.classic.protocols))
            classic.add(Member(m.member_id, m.instance_id, profile))
        classic.protocol_type = CONSUMER_PROTOCOL
        classic.protocol_name = classic.select_protocol()
        for m in group.members.values():
            assert m.classic is not None
            version = subscription_version(m.classic.protocols[0][1]) if m.classic.protocols else 0
            classic.members[m.member_id].assignment = classic_assignment_bytes(
                version, self._names(group.target_of(m.member_id)))
        return classic

    def _names(self, a: Assignment) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for topic_id, ps in a.items():
            name = self.topics.name_of(topic_id)
            if name is not None and ps:
                out[name] = sorted(ps)
        return out

    def _ids(self, partitions: dict[str, list[int]]) -> Assignment:
        out: dict[bytes, frozenset[int]] = {}
        for name, ps in partitions.items():
            info = self.topics.info(name)
            if info is not None and ps:
                out[info.topic_id] = frozenset(p for p in ps if 0 <= p < info.partitions)
        return {t: ps for t, ps in out.items() if ps}

    # ---- records ----
    def _records(self, group: ConsumerGroup, extra: Records | None = None) -> Records:
        gid = group.group_id
        out: Records = list(extra or [])
        dirty = group.dirty
        group.dirty = set()
        # member-level records first, group-level after (Kafka's order: a reader never sees an epoch before
        # the members it counts)
        for kind, *rest in sorted(dirty, key=lambda d: (len(d) == 1, d)):
            if kind == "member":
                m = group.members.get(rest[0])
                out += cs.record(cs.ConsumerKey(cs.MEMBER_METADATA, gid, rest[0]),
                                 None if m is None else cs.encode_member_metadata(m.metadata_value()))
            elif kind == "target":
                has = rest[0] in group.members
                out += cs.record(cs.ConsumerKey(cs.TARGET_ASSIGNMENT_MEMBER, gid, rest[0]),
                                 cs.encode_target_member(group.target_of(rest[0])) if has else None)
            elif kind == "current":
                m = group.members.get(rest[0])
                out += cs.record(cs.ConsumerKey(cs.CURRENT_MEMBER_ASSIGNMENT, gid, rest[0]),
                                 None if m is None else cs.encode_current_assignment(m.assignment_value()))
            elif kind == "regex":
                topics = group.regex_topics.get(rest[0])
                out += cs.record(cs.ConsumerKey(cs.REGULAR_EXPRESSION, gid, rest[0]),
                                 None if topics is None else cs.encode_regex(cs.RegexValue(tuple(topics), 0,
                                                                                           now_ms())))
        if ("target_meta",) in dirty:
            out += cs.record(cs.ConsumerKey(cs.TARGET_ASSIGNMENT_METADATA, gid), cs.encode_epoch(group.assignment_epoch))
        if ("group",) in dirty:
            out += cs.record(cs.ConsumerKey(cs.GROUP_METADATA, gid), cs.encode_epoch(group.group_epoch))
        return out

    async def _flush(self, group: ConsumerGroup, extra: Records | None = None) -> None:
        """Write the group's dirty records (and `extra`); if the write fails they stay dirty, so the next
        write of the group carries them even when nothing changes them again."""
        dirty = group.dirty
        records = self._records(group, extra)
        if records:
            try:
                await self.store.write(group.group_id, records)
            except BaseException:
                group.dirty |= dirty
                raise

    # ---- ConsumerGroupHeartbeat ----
    def _validate(self, hb: Heartbeat) -> None:
        def bad(message: str) -> KafkaError:
            return KafkaError(ErrorCode.INVALID_REQUEST, message)

        if not hb.group_id:
            raise bad("GroupId can't be empty.")
        if hb.instance_id == "":
            raise bad("InstanceId can't be empty.")
        if hb.rack_id == "":
            raise bad("RackId can't be empty.")
        if hb.member_epoch == JOIN_EPOCH:
            if hb.rebalance_timeout_ms == -1:
                raise bad("RebalanceTimeoutMs must be provided in first request.")
            if hb.owned is None or any(hb.owned.values()):
                raise bad("TopicPartitions must be empty when (re-)joining.")
            if hb.subscribed_topic_names is None and hb.subscribed_topic_regex is None:
                raise bad("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif hb.member_epoch < STATIC_LEAVE_EPOCH:
            raise bad(f"MemberEpoch {hb.member_epoch} is invalid.")
        elif not hb.member_id:
            raise bad("MemberId can't be empty.")
        if hb.version >= 1 and not hb.member_id:
            raise bad("MemberId can't be empty.")
        if hb.member_epoch == STATIC_LEAVE_EPOCH and hb.instance_id is None:
            raise bad("InstanceId can't be null.")
        if hb.server_assignor is not None and hb.server_assignor not in self.settings.assignors:
            raise KafkaError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                             f"ServerAssignor {hb.server_assignor} is not supported. Supported assignors: "
                             f"{', '.join(self.settings.assignors)}.")
        if hb.subscribed_topic_regex is not None:
            compile_pattern(hb.subscribed_topic_regex)

    async def heartbeat(self, hb: Heartbeat) -> HeartbeatResult:
        try:
            if not self.settings.enabled:  # the handler answers first; this serves callers without one
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                                 "The consumer rebalance protocol is not enabled (group.coordinator.rebalance.protocols)")
            self._validate(hb)
            await self.store.wait_ready(hb.group_id)
            async with self._lock(hb.group_id):
                if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                    return await self._leave(hb)
                return await self._heartbeat(hb)
        except KafkaError as exc:
            return HeartbeatResult(exc.code, exc.message if exc.message != exc.code.name else None,
                                   hb.member_id or None, hb.member_epoch)

    def _group_for_join(self, group_id: str) -> tuple[ConsumerGroup, Records]:
        """The consumer group, created (or converted from an empty classic group) if need be; the second
        item is the records that retire the classic group."""
        group = self.groups.get(group_id)
        if group is not None and not group.dead:
            return group, []
        classic = self.classic.groups.get(group_id)
        retire: Records = []
        group = ConsumerGroup(group_id)
        if classic is not None and not classic.is_(GroupState.DEAD):
            empty = classic.is_(GroupState.EMPTY) and not classic.members and not classic.pending_members
            if not self.settings.upgrades():
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            if not empty:
                return self._from_classic(classic), group_records(group_id, None)
            del self.classic.groups[group_id]
            classic.state = GroupState.DEAD
            group.offsets = dict(classic.offsets)
            retire = group_records(group_id, None)
            log.info("Converted empty classic group %s to a consumer group", group_id)
        self.groups[group_id] = group
        group.dirty.add(("group",))
        return group, retire

    def _from_classic(self, classic: Group) -> ConsumerGroup:
        """Kafka's online upgrade (ConsumerGroup.fromClassicGroup): a classic group with members becomes a
        consumer group at its generation; each member keeps the classic protocol, its subscription and
        its last assignment (as its target too), all Stable. Their pending JoinGroup/SyncGroup requests
        are answered REBALANCE_IN_PROGRESS, so they rejoin into the consumer group."""
        gid = classic.group_id
        if classic.protocol_type != CONSUMER_PROTOCOL or classic.protocol_name is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {gid} to a consumer group: it does not use the "
                             f"consumer embedded protocol.")
        if len(classic.members) >= self.settings.max_size:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                             f"Cannot upgrade classic group {gid}: the group size exceeds the consumer group "
                             f"maximum size.")
        group = ConsumerGroup(gid)
        group.group_epoch = group.assignment_epoch = classic.generation
        group.offsets = dict(classic.offsets)
        for m in classic.members.values():
            try:
                sub = parse_classic_subscription(m.metadata(classic.protocol_name))
                assigned = self._ids(parse_classic_assignment(m.assignment))
            except KafkaError:
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade classic group {gid}: the embedded consumer protocol is "
                                 f"malformed.") from None
            p = m.profile
            member = ConsumerMember(
                m.member_id, m.group_instance_id, sub.rack_id, p.client_id, p.client_host,
                sorted(set(sub.topics)), None, p.rebalance_timeout_ms, None, MemberState.STABLE,
                classic.generation, classic.generation, assigned, {},
                ClassicProtocol(p.session_timeout_ms, tuple((n, bytes(b)) for n, b in p.protocols)))
            group.put_member(member)
            group.targets[m.member_id] = dict(assigned)
            group.dirty.update({("member", m.member_id), ("target", m.member_id), ("current", m.member_id)})
        group.dirty.update({("group",), ("target_meta",)})
        self.classic.release(classic)
        self.groups[gid] = group
        for mid in group.members:
            self._touch(group, mid)
        log.info("Converted classic group %s (generation %d, %d members) to a consumer group", gid,
                 classic.generation, len(classic.members))
        return group

    async def _heartbeat(self, hb: Heartbeat) -> HeartbeatResult:
        if hb.member_epoch == JOIN_EPOCH:
            group, retire = self._group_for_join(hb.group_id)
        else:
            g = self.groups.get(hb.group_id)
            if g is None or g.dead:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {hb.member_id} is not a member of group "
                                                              f"{hb.group_id}.")
            group, retire = g, []
        member, before = self._member_for(group, hb)
        updated = self._with_request(member, hb)
        if updated.subscribed_topic_regex is not None:  # refused since it was taken: too costly to match
            compile_pattern(updated.subscribed_topic_regex)
        if before is None or _subscription(updated) != _subscription(member):
            group.bump_epoch()
        if before is None or updated.metadata_value() != member.metadata_value():
            group.dirty.add(("member", updated.member_id))
        group.put_member(updated)
        await self._refresh_regexes(group, hb.describable)
        group.refresh_metadata(self.topics.info)
        if group.group_epoch > group.assignment_epoch:
            group.compute_target(self.settings.assignors[0])
        current = group.members[updated.member_id]
        reconciled = reconcile(current, group.target_of(current.member_id), group.assignment_epoch,
                               group.partition_epoch, hb.owned)
        if reconciled is not current or before is None or before.assignment_value() != reconciled.assignment_value():
            group.put_member(reconciled)
            group.dirty.add(("current", reconciled.member_id))
        self._rebalance_timer(group, reconciled, before)
        self._touch(group, reconciled.member_id)
        await self._flush(group, retire)
        full = hb.member_epoch == JOIN_EPOCH or (hb.rebalance_timeout_ms != -1 and hb.subscribed_topic_names is not None
                                                 and hb.owned is not None)
        changed = before is None or not same_assignment(before.assigned, reconciled.assigned)
        return HeartbeatResult(ErrorCode.NONE, None, reconciled.member_id, reconciled.member_epoch,
                               self.configs.value(hb.group_id, "consumer.heartbeat.interval.ms"),
                               dict(reconciled.assigned) if full or changed else None)

    async def _refresh_regexes(self, group: ConsumerGroup, describable: TopicFilter | None) -> None:
        """Regexes as Kafka resolves them: a regex new to the group is resolved in the background (the
        heartbeat that brings it is answered with the literal topics alone; the resolution bumps the group
        epoch and a later heartbeat brings the matched topics); resolved ones are re-matched at most every
        REGEX_REFRESH_MS. Right after a load nothing is resolved yet and everything is resolved at once, so
        that members keep the partitions their target gave them. Each resolution keeps only the topics
        `describable` (the principal of the heartbeat at hand) may DESCRIBE; without one (a classic
        member's join) nothing is resolved."""
        if describable is None:
            return
        now = now_ms()
        if group.subscribed is None:
            await self._resolve(group, group.regexes_to_refresh(), describable)
            self._regex_refreshed[group.group_id] = now
        elif now - self._regex_refreshed.get(group.group_id, 0) >= REGEX_REFRESH_MS:
            await self._resolve(group, group.regexes_to_refresh(only_resolved=True), describable)
            self._regex_refreshed[group.group_id] = now
        if group.unresolved_regexes() and group.group_id not in self._resolving:
            self._resolving.add(group.group_id)
            self._tasks.spawn(self._resolve_regexes(group, describable))

    async def _resolve(self, group: ConsumerGroup, regexes: set[str], describable: TopicFilter) -> bool:
        """Match `regexes` against the topics (the loop gets turns meanwhile) and keep what `describable`
        allows; True if a result changed."""
        patterns = []
        for regex in regexes:
            try:
                patterns.append(compile_pattern(regex))
            except KafkaError as exc:  # validated when received; a record or a costly match may still hold one
                limited.error("Consumer group %s: ignoring regex: %s", group.group_id, exc.message)
        resolved = await matching(patterns, list(self.topics.names())) if patterns else {}
        for p in patterns:
            if (why := too_costly(p.pattern)) is not None:
                limited.warning("Consumer group %s: regex %.200s refused: %s", group.group_id, p.pattern, why)
        matched = sorted(frozenset().union(*resolved.values()))
        if matched:
            allowed: set[str] = set()
            for i in range(0, len(matched), AUTHORIZE_CHUNK):  # an authorizer call each: the loop gets turns
                allowed |= describable(frozenset(matched[i:i + AUTHORIZE_CHUNK]))
                await asyncio.sleep(0)
            resolved = {p: ts & allowed for p, ts in resolved.items()}
        return group.take_regex_topics(resolved)

    async def _resolve_regexes(self, group: ConsumerGroup, describable: TopicFilter) -> None:
        try:
            async with self._lock(group.group_id):
                self._resolving.discard(group.group_id)
                if self.groups.get(group.group_id) is not group or not group.unresolved_regexes():
                    return
                await self._resolve(group, group.regexes_to_refresh(), describable)
                self._regex_refreshed[group.group_id] = now_ms()
                if group.refresh_metadata(self.topics.info):
                    log.info("Consumer group %s: regex subscriptions resolved, group epoch %d", group.group_id,
                             group.group_epoch)
                await self._flush(group)
        except KafkaError as exc:
            log.warning("Could not resolve the regex subscriptions of group %s: %s", group.group_id, exc)
        finally:
            self._resolving.discard(group.group_id)

    def _member_for(self, group: ConsumerGroup, hb: Heartbeat) -> tuple[ConsumerMember, ConsumerMember | None]:
        """The member the heartbeat is from (a fresh one for a new member) and its state before (None for a
        new member). Checks the member epoch and the static membership rules."""
        if hb.member_epoch == JOIN_EPOCH:
            member_id = hb.member_id or new_member_id()
            if hb.instance_id is not None:
                old_id = group.static_members.get(hb.instance_id)
                if old_id is not None and old_id != member_id:
                    old = group.members[old_id]
                    if old.member_epoch != STATIC_LEAVE_EPOCH:
                        raise KafkaError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                         f"Static member {old_id} with instance id {hb.instance_id} is not released yet.")
                    new = ConsumerMember(**{f: getattr(old, f) for f in ConsumerMember.__dataclass_fields__})
                    new.member_id = member_id
                    new.member_epoch = old.previous_member_epoch
                    self._cancel_timers(group.group_id, old_id)
                    group.replace_static(old_id, new)
                    log.info("Static member %s of group %s rejoined as %s", hb.instance_id, group.group_id, member_id)
                    return new, new
            existing = group.members.get(member_id)
            if existing is not None and existing.classic is not None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} uses the classic protocol.")
            if existing is None:
                if len(group.members) >= self.settings.max_size:
                    raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                     f"The consumer group has reached its maximum capacity of "
                                     f"{self.settings.max_size} members.")
                return ConsumerMember(member_id), None
            # a known member joining again (after a fence on its side): it has given up its partitions
            fresh = ConsumerMember(**{f: getattr(existing, f) for f in ConsumerMember.__dataclass_fields__})
            fresh.assigned, fresh.pending_revocation, fresh.state = {}, {}, MemberState.STABLE
            fresh.member_epoch = fresh.previous_member_epoch = 0
            return fresh, existing
        member = group.members.get(hb.member_id)
        if member is None or member.classic is not None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {hb.member_id} is not a member of group {hb.group_id} using the consumer "
                             f"protocol.")
        if hb.instance_id is not None and member.instance_id != hb.instance_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Instance id {hb.instance_id} does not belong to member {hb.member_id}.")
        if hb.member_epoch > member.member_epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The consumer group member has a greater member epoch ({hb.member_epoch}) than the "
                             f"one known by the group coordinator ({member.member_epoch}). The member must abandon "
                             f"all its partitions and rejoin.")
        if hb.member_epoch < member.member_epoch:
            lost_response = (hb.member_epoch == member.previous_member_epoch and hb.owned is not None
                             and all(ps <= member.assigned.get(t, frozenset()) for t, ps in hb.owned.items()))
            if not lost_response:
                raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({hb.member_epoch}) than "
                                 f"the one known by the group coordinator ({member.member_epoch}). The member must "
                                 f"abandon all its partitions and rejoin.")
        return member, member

    def _with_request(self, member: ConsumerMember, hb: Heartbeat) -> ConsumerMember:
        m = ConsumerMember(**{f: getattr(member, f) for f in ConsumerMember.__dataclass_fields__})
        if hb.instance_id is not None:
            m.instance_id = hb.instance_id
        if hb.rack_id is not None:
            m.rack_id = hb.rack_id
        if hb.rebalance_timeout_ms > 0:
            m.rebalance_timeout_ms = hb.rebalance_timeout_ms
        if hb.subscribed_topic_names is not None:
            m.subscribed_topic_names = sorted(set(hb.subscribed_topic_names))
        if hb.subscribed_topic_regex is not None:
            m.subscribed_topic_regex = hb.subscribed_topic_regex or None
        if hb.server_assignor is not None:
            m.server_assignor = hb.server_assignor or None
        if hb.client_id:
            m.client_id = hb.client_id
        if hb.client_host:
            m.client_host = hb.client_host
        return m

    async def _leave(self, hb: Heartbeat) -> HeartbeatResult:
        group = self.groups.get(hb.group_id)
        member = group.members.get(hb.member_id) if group is not None and not group.dead else None
        if group is None or member is None or member.classic is not None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {hb.member_id} is not a member of group {hb.group_id}.")
        if hb.instance_id is not None and member.instance_id != hb.instance_id:
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Instance id {hb.instance_id} does not belong to member {hb.member_id}.")
        if hb.member_epoch == STATIC_LEAVE_EPOCH:
            # a static member going away for a while: it keeps its partitions until its session times out
            # or its instance rejoins under a new member id
            left = ConsumerMember(**{f: getattr(member, f) for f in ConsumerMember.__dataclass_fields__})
            left.previous_member_epoch, left.member_epoch = member.member_epoch, STATIC_LEAVE_EPOCH
            group.put_member(left)
            group.dirty.add(("current", left.member_id))
            log.info("Static member %s (instance %s) of group %s left temporarily", hb.member_id, hb.instance_id,
                     hb.group_id)
            await self._flush(group)
        else:
            log.info("Member %s has left consumer group %s", hb.member_id, hb.group_id)
            await self._remove_and_flush(group, hb.member_id)
        return HeartbeatResult(ErrorCode.NONE, None, hb.member_id, hb.member_epoch, 0, None)

    # ---- ConsumerGroupDescribe / ListGroups ----
    async def describe(self, group_id: str) -> GroupDescription:
        try:
            if not group_id:
                raise KafkaError(ErrorCode.INVALID_GROUP_ID, "The group id must not be empty")
            await self.store.wait_ready(group_id)
        except KafkaError as exc:
            return GroupDescription(group_id, exc.code, exc.message)
        group = self.groups.get(group_id)
        if group is None or group.dead:
            classic = self.classic.groups.get(group_id)
            if classic is not None and not classic.is_(GroupState.DEAD):
                return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            return GroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        members = [MemberDescription(m.member_id, m.instance_id, m.rack_id, m.member_epoch, m.client_id, m.client_host,
                                     list(m.subscribed_topic_names), m.subscribed_topic_regex, dict(m.assigned),
                                     dict(group.target_of(m.member_id)), m.classic is not None)
                   for m in group.members.values()]
        return GroupDescription(group_id, ErrorCode.NONE, None, group.state.value, group.group_epoch,
                                group.assignment_epoch, group.assignor or self.settings.assignors[0], members)

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every consumer group here."""
        return sorted((g.group_id, "consumer", g.state.value) for g in self.groups.values() if not g.dead)

    def topic_name(self, topic_id: bytes) -> str:
        return self.topics.name_of(topic_id) or ""

    # ---- the classic protocol meeting a consumer group ----
    def _consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return None if group is None or group.dead else group

    async def classic_join(self, req: JoinRequest) -> JoinResult | None:
        """A JoinGroup for `req.group_id`. None: not a consumer group, the classic type serves it (an empty
        consumer group is first converted to a classic group, keeping its offsets). Otherwise the member
        joins the consumer group with the classic protocol (Kafka's classicGroupJoinToConsumerGroup)."""
        try:
            async with self._locked_consumer_group(req.group_id) as group:
                if group is None:
                    return None
                if not group.members:
                    await self._downgrade_empty(group)
                    return None
                return await self._classic_join(group, req)
        except KafkaError as exc:
            return JoinResult(exc.code, req.member_id)

    async def _downgrade_empty(self, group: ConsumerGroup) -> None:
        if not self.settings.downgrades():
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                             f"Group {group.group_id} is a consumer group: its members use the consumer protocol")
        records = self._tombstones(group, offsets=False)
        classic = Group(group.group_id)
        classic.offsets = dict(group.offsets)
        self._drop(group.group_id)
        self.classic.groups[group.group_id] = classic
        log.info("Converted empty consumer group %s to a classic group", group.group_id)
        await self.store.write(group.group_id, records)

    async def _classic_join(self, group: ConsumerGroup, req: JoinRequest) -> JoinResult:
        s = self.classic.settings
        profile = req.profile
        if not s.min_session_timeout_ms <= profile.session_timeout_ms <= s.max_session_timeout_ms:
            raise KafkaError(ErrorCode.INVALID_SESSION_TIMEOUT)
        member_id = req.member_id or str(uuid.uuid4())
        if not group.supports_classic(profile.protocol_type, [n for n, _ in profile.protocols]):
            raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported.")
        iid = req.group_instance_id
        if not req.member_id and iid is None and req.require_known_member_id:
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        existing = group.members.get(member_id)
        if existing is not None and existing.classic is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} does not use the classic protocol.")
        if iid is not None:
            old_id = group.static_members.get(iid)
            if old_id is not None and old_id != member_id:
                if req.member_id:
                    raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
                old = group.members[old_id]
                existing = ConsumerMember(**{f: getattr(old, f) for f in ConsumerMember.__dataclass_fields__})
                existing.member_id = member_id
                self._cancel_timers(group.group_id, old_id)
                group.replace_static(old_id, existing)
        if existing is None and len(group.members) >= self.settings.max_size:
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"The consumer group has reached its maximum capacity of {self.settings.max_size} members.")
        sub = parse_classic_subscription(profile.protocols[0][1])
        base = existing or ConsumerMember(member_id)
        updated = ConsumerMember(**{f: getattr(base, f) for f in ConsumerMember.__dataclass_fields__})
        updated.instance_id, updated.rack_id = iid, sub.rack_id
        updated.rebalance_timeout_ms = profile.rebalance_timeout_ms
        updated.server_assignor, updated.subscribed_topic_regex = None, None
        updated.subscribed_topic_names = sorted(set(sub.topics))
        updated.client_id, updated.client_host = profile.client_id, profile.client_host
        updated.classic = ClassicProtocol(profile.session_timeout_ms,
                                          tuple((n, bytes(b)) for n, b in profile.protocols))
        if existing is None or _subscription(updated) != _subscription(existing):
            group.bump_epoch()
        if existing is None or updated.metadata_value() != existing.metadata_value():
            group.dirty.add(("member", member_id))
        group.put_member(updated)
        await self._refresh_regexes(group, None)
        group.refresh_metadata(self.topics.info)
        if group.group_epoch > group.assignment_epoch:
            group.compute_target(self.settings.assignors[0])
        current = group.members[member_id]
        reconciled = reconcile(current, group.target_of(member_id), group.assignment_epoch, group.partition_epoch,
                               self._ids(sub.owned))
        if reconciled is not current or existing is None or existing.assignment_value() != reconciled.assignment_value():
            group.put_member(reconciled)
            group.dirty.add(("current", member_id))
        self._touch(group, member_id)
        self._classic_timer(group, member_id, "the classic member did not send SyncGroup within the rebalance timeout",
                            replace=True)
        await self._flush(group)
        log.info("Classic member %s joined consumer group %s at epoch %d", member_id, group.group_id,
                 reconciled.member_epoch)
        return JoinResult(ErrorCode.NONE, member_id, reconciled.member_epoch, CONSUMER_PROTOCOL,
                          profile.protocols[0][0], "", [])

    def _classic_timer(self, group: ConsumerGroup, member_id: str, reason: str, replace: bool) -> None:
        """The join timeout (a classic member told to rejoin must within its rebalance timeout; kept if
        one runs) or, `replace`, the sync timeout (a classic member that joined must send SyncGroup)."""
        member = group.members.get(member_id)
        timers = self._timers.setdefault((group.group_id, member_id), _Timers())
        if member is None or (timers.classic is not None and not replace):
            return
        if timers.classic is not None:
            timers.classic.cancel()
        timers.classic = asyncio.get_running_loop().call_later(
            max(member.rebalance_timeout_ms, 1) / 1000, self._expire, group, member_id, reason, None)

    def _cancel_classic_timer(self, group_id: str, member_id: str) -> None:
        timers = self._timers.get((group_id, member_id))
        if timers is not None and timers.classic is not None:
            timers.classic.cancel()
            timers.classic = None

    def _classic_member(self, group: ConsumerGroup, member_id: str, instance_id: str | None,
                        generation: int) -> ConsumerMember:
        """Kafka's validateConsumerGroupMember, throwIfMemberDoesNotUseClassicProtocol and the generation
        check: the member a SyncGroup or Heartbeat names."""
        if instance_id is not None:
            mid = group.static_members.get(instance_id)
            if mid is None:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            if mid != member_id:
                raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != member.member_epoch:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
        return member

    async def classic_sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                           protocol_type: str | None, protocol_name: str | None) -> SyncResult | None:
        """A SyncGroup of a classic member of a consumer group: its current assignment, serialized with
        the version of its subscription (None: not a consumer group)."""
        try:
            async with self._locked_consumer_group(group_id) as group:
                if group is None:
                    return None
                member = self._classic_member(group, member_id, instance_id, generation)
                assert member.classic is not None
                name = member.classic.protocols[0][0] if member.classic.protocols else ""
                if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL) or (
                        protocol_name is not None and protocol_name != name):
                    raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
                self._check_rebalance(group, member)
                self._cancel_classic_timer(group_id, member_id)
                self._touch(group, member_id)
                version = subscription_version(member.classic.protocols[0][1]) if member.classic.protocols else 0
                return SyncResult(ErrorCode.NONE, classic_assignment_bytes(version, self._names(member.assigned)),
                                  CONSUMER_PROTOCOL, name)
        except KafkaError as exc:
            return SyncResult(exc.code)

    def _check_rebalance(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        """REBALANCE_IN_PROGRESS (and the join timeout) when the group moved past the member's epoch, unless
        it still has partitions to revoke (it rejoins once it has)."""
        if group.group_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            self._classic_timer(group, member.member_id, "the classic member did not rejoin within the rebalance "
                                                         "timeout", replace=False)
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)

    async def classic_heartbeat(self, group_id: str, generation: int, member_id: str,
                                instance_id: str | None) -> ErrorCode | None:
        """A Heartbeat of a classic member of a consumer group (None: not a consumer group).
        REBALANCE_IN_PROGRESS tells it to rejoin: the group epoch moved past its epoch, it has partitions
        to revoke, or the partitions it waits for are free now."""
        try:
            async with self._locked_consumer_group(group_id) as group:
                if group is None:
                    return None
                member = self._classic_member(group, member_id, instance_id, generation)
                self._touch(group, member_id)
                if (member.member_epoch < group.group_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                        or (member.state is MemberState.UNRELEASED_PARTITIONS
                            and not group.waiting_on_unreleased(member))):
                    self._classic_timer(group, member_id, "the classic member did not rejoin within the "
                                                          "rebalance timeout", replace=False)
                    return ErrorCode.REBALANCE_IN_PROGRESS
                return ErrorCode.NONE
        except KafkaError as exc:
            return exc.code

    async def classic_leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode] | None:
        """A LeaveGroup for classic members of a consumer group (None: not a consumer group)."""
        async with self._locked_consumer_group(group_id) as group:
            if group is None:
                return None
            out = []
            for member_id, instance_id in members:
                mid = member_id
                if instance_id is not None:
                    known = group.static_members.get(instance_id)
                    if known is None:
                        out.append(ErrorCode.UNKNOWN_MEMBER_ID)
                        continue
                    if member_id and member_id != known:
                        out.append(ErrorCode.FENCED_INSTANCE_ID)
                        continue
                    mid = known
                member = group.members.get(mid)
                if member is None or member.classic is None:
                    out.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                log.info("Classic member %s has left consumer group %s through explicit LeaveGroup", mid, group_id)
                self._remove(group, mid)
                out.append(ErrorCode.NONE)
            await self._flush(group)
            return out

    def _tombstones(self, group: ConsumerGroup, offsets: bool) -> Records:
        gid = group.group_id
        out: Records = []
        for mid in group.members:
            for t in (cs.CURRENT_MEMBER_ASSIGNMENT, cs.TARGET_ASSIGNMENT_MEMBER, cs.MEMBER_METADATA):
                out += cs.record(cs.ConsumerKey(t, gid, mid), None)
        for pattern in group.regex_topics:
            out += cs.record(cs.ConsumerKey(cs.REGULAR_EXPRESSION, gid, pattern), None)
        out += cs.record(cs.ConsumerKey(cs.TARGET_ASSIGNMENT_METADATA, gid), None)
        out += cs.record(cs.ConsumerKey(cs.GROUP_METADATA, gid), None)
        if offsets:
            out = offset_records(gid, dict.fromkeys(group.offsets)) + out
        return out

    # ---- what the offset manager asks of a consumer group (GroupType) ----
    def group_ids(self) -> list[str]:
        return [gid for gid, g in self.groups.items() if not g.dead]

    def offsets_of(self, group_id: str) -> dict[TopicPartition, OffsetValue] | None:
        group = self.groups.get(group_id)
        return None if group is None or group.dead else group.offsets

    def _member_epoch_check(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> None:
        member = group.members.get(member_id or "")
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                          f"{group.group_id}.")
        if member.classic is not None:
            if epoch != member.member_epoch:  # a classic member commits at its generation
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION,
                                 f"The received generation id {epoch} does not match the expected generation id "
                                 f"{member.member_epoch}.")
            return
        if epoch > member.member_epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The received member epoch {epoch} is larger than the expected member epoch "
                             f"{member.member_epoch}.")
        if epoch < member.member_epoch:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH,
                             f"The received member epoch {epoch} is smaller than the expected member epoch "
                             f"{member.member_epoch}.")

    def _owned(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None or group.dead:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"Group {group_id} is being unloaded")
        return group

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None,
                               generation_or_epoch: int, api_version: int, transactional: bool) -> None:
        """Kafka's ConsumerGroup.validateOffsetCommit: a member commits at its current member epoch; a
        client outside the group may commit only while the group has no members."""
        group = self._owned(group_id)
        if transactional:
            if generation_or_epoch >= 0 or member_id:
                self._member_epoch_check(group, member_id, generation_or_epoch)
            return
        if generation_or_epoch < 0 and not group.members:
            return
        member = group.members.get(member_id or "")
        if api_version < 9 and member is not None and member.classic is None:
            raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                             "OffsetCommit version 9 or above must be used by members using the consumer "
                             "group protocol")
        self._member_epoch_check(group, member_id, generation_or_epoch)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        group = self._owned(group_id)
        if not (member_epoch < 0 and member_id is None):
            self._member_epoch_check(group, member_id, member_epoch)

    def validate_offset_delete(self, group_id: str) -> set[str]:
        return self._owned(group_id).subscribed_names()

    def expired_offsets(self, group_id: str, now: int, retention_ms: int) -> list[TopicPartition]:
        group = self.groups.get(group_id)
        return [] if group is None or group.dead else group.expired_offsets(now, retention_ms)

    def lock(self, group_id: str) -> AbstractAsyncContextManager[Any]:
        return self._lock(group_id)

    async def delete_if_unused(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and not group.dead and not group.members and not group.offsets:
            await self._delete(group)

    async def delete_group(self, group_id: str) -> ErrorCode:
        try:
            await self.store.wait_ready(group_id)
        except KafkaError as exc:
            return exc.code
        async with self._lock(group_id):
            group = self.groups.get(group_id)
            if group is None or group.dead:
                return ErrorCode.GROUP_ID_NOT_FOUND
            if group.members:
                return ErrorCode.NON_EMPTY_GROUP
            return await self._delete(group)

    async def _delete(self, group: ConsumerGroup) -> ErrorCode:
        records = self._tombstones(group, offsets=True)
        self._drop(group.group_id)
        return await write_removal(self.store, group.group_id, records, log, "Consumer group", len(group.offsets))


def _subscription(m: ConsumerMember) -> tuple[Any, ...]:
    return (tuple(m.subscribed_topic_names), m.subscribed_topic_regex, m.server_assignor)
