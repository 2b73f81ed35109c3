"""Streams groups (KIP-1071, `group.protocol=streams` of Kafka Streams 4.x): StreamsGroupHeartbeat and
StreamsGroupDescribe, beside the classic, consumer and share group types of
`odradek.groups.service.GroupCoordinatorService`.

A member joins with epoch 0, its own member id, its process id and the application's topology; the group
keeps the first topology it is given (`odradek.groups.streams_topology`: validated, then configured
against the cluster's topics on every heartbeat, the internal repartition and changelog topics it lacks
created here). While the topology is ready, the `sticky` assignor (`odradek.groups.streams_assignor`)
gives each member active tasks and, per the group config `streams.num.standby.replicas`, standby tasks;
otherwise the heartbeat carries the topology's status (missing source or internal topics, ...) and no
tasks are assigned.

Member epochs and rebalances follow KIP-848: every change of members, topology or task counts bumps the
group epoch, the target assignment is recomputed at that epoch, and each member is reconciled towards its
target: a member that holds tasks it is no longer assigned is first told to give them up (its epoch stays;
UNREVOKED_TASKS, bounded by its rebalance timeout) and reaches the new epoch once its heartbeat no longer
reports them; a member is given an active task only once no other member holds it (UNRELEASED_TASKS until
then). Heartbeats carry the member's tasks only when they changed. A member that stops heartbeating for
`streams.session.timeout.ms` is removed; one leaving sends epoch -1 (static members -2).

Offsets: a streams group commits and fetches offsets through the one offset manager like a consumer group
(a member at its current epoch; `GroupType`).

State: every change is written to the group's `__consumer_offsets` partition in Kafka's streams group
records (`odradek.groups.streams_schemas`: members, targets, current assignments, topology, epochs) before
the heartbeat is answered (a failed write answers with the store's error; memory stays ahead until the next
write succeeds, as for consumer groups); a broker that loads the partition (restart, fail-over) serves the
group as it was, each member's session restarted, so members carry on with their epochs.

A new group's first assignment of tasks waits `streams.initial.rebalance.delay.ms` (Kafka's initial
rebalance delay; status ASSIGNMENT_DELAYED meanwhile), so instances started together are balanced at once.

Not implemented: warm-up tasks, rack-aware standbys, topology updates while members run the old one
(STREAMS_INVALID_TOPOLOGY_EPOCH until they have left), static membership beyond recording the instance id.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from odradek.aio import TaskSet
from odradek.groups import consumer_schemas as cs
from odradek.groups import streams_schemas as ss
from odradek.groups.configs import FixedGroupConfigs, GroupConfigLookup, bounded_ms, protocol_enabled
from odradek.groups.consumer_coordinator import Topics
from odradek.groups.coordinator import GROUP_TYPE_CLASSIC, GroupCoordinator
from odradek.groups.group import GroupState
from odradek.groups.schemas import OffsetValue, Records, TopicPartition, group_records, offset_records
from odradek.groups.store import GroupStore, LoadedGroup
from odradek.groups.streams_assignor import AssignorMember, Tasks, sticky_assign, task_list
from odradek.groups.streams_topology import (
    ASSIGNMENT_DELAYED,
    MISSING_INTERNAL_TOPICS,
    SHUTDOWN_APPLICATION,
    STALE_TOPOLOGY,
    Configured,
    Topology,
    configure,
    validate,
)
from odradek.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.groups.streams")

GROUP_TYPE_STREAMS = "streams"
JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH = 0, -1, -2
ASSIGNOR = "sticky"

CreateTopic = Callable[[str, int, int, dict[str, str]], Awaitable[None]]
TopicTasks = dict[str, frozenset[int]]  # topic -> partitions
Endpoint = tuple[tuple[str, int], TopicTasks, TopicTasks]  # (host, port), its active and standby partitions


@dataclass(frozen=True, slots=True)
class StreamsGroupSettings:
    enabled: bool = True
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    num_standby_replicas: int = 0
    max_size: int = 2**31 - 1
    initial_rebalance_delay_ms: int = 3_000

    @classmethod
    def from_config(cls, config: BrokerConfig) -> StreamsGroupSettings:
        get = config.get
        return cls(enabled=protocol_enabled(get, "streams"),
                   session_timeout_ms=bounded_ms(get, "streams", "session.timeout.ms"),
                   heartbeat_interval_ms=bounded_ms(get, "streams", "heartbeat.interval.ms"),
                   num_standby_replicas=min(int(get("group.streams.num.standby.replicas")),
                                            int(get("group.streams.max.standby.replicas"))),
                   max_size=int(get("group.streams.max.size")),
                   initial_rebalance_delay_ms=int(get("group.streams.initial.rebalance.delay.ms")))


@dataclass(slots=True)
class StreamsHeartbeat:
    """A StreamsGroupHeartbeat as the coordinator sees it (None: unchanged since the last one)."""

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology: Topology | None = None
    active: Tasks | None = None
    standby: Tasks | None = None
    warmup: Tasks | None = None
    process_id: str | None = None
    user_endpoint: tuple[str, int] | None = None
    endpoint_epoch: int = 0  # the endpoint map epoch the member knows
    client_tags: dict[str, str] | None = None
    shutdown_application: bool = False
    # whether the member may have the broker create an internal topic of this name (None: any)
    may_create: Callable[[str], bool] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(slots=True)
class StreamsResult:
    error: ErrorCode
    message: str | None = None
    member_id: str = ""
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    status: list[tuple[int, str]] | None = None
    # the member's tasks (active, standby, warmup), None when unchanged since it was last told
    tasks: tuple[Tasks, Tasks, Tasks] | None = None
    # interactive queries: the group's endpoint map and its epoch; the map only when the member's epoch differs
    endpoint_epoch: int = 0
    endpoints: list[Endpoint] | None = None


class MemberState(Enum):
    STABLE = "stable"
    UNREVOKED_TASKS = "unrevoked_tasks"
    UNRELEASED_TASKS = "unreleased_tasks"


@dataclass(slots=True)
class StreamsMember:
    member_id: str
    process_id: str
    member_epoch: int = 0
    previous_epoch: int = -1
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)
    client_id: str = ""
    client_host: str = ""
    state: MemberState = MemberState.STABLE
    active: Tasks = field(default_factory=dict)  # what the member holds (as last told)
    standby: Tasks = field(default_factory=dict)
    revoking: Tasks = field(default_factory=dict)  # active tasks it was told to give up and still holds
    sent: tuple[Tasks, Tasks, Tasks] | None = None
    session: asyncio.TimerHandle | None = None
    rebalance: asyncio.TimerHandle | None = None

    def cancel_timers(self) -> None:
        for t in (self.session, self.rebalance):
            if t is not None:
                t.cancel()
        self.session = self.rebalance = None


@dataclass(slots=True)
class StreamsGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsMember] = field(default_factory=dict)
    targets: dict[str, tuple[Tasks, Tasks]] = field(default_factory=dict)
    configured: Configured = field(default_factory=Configured)
    task_counts: dict[str, int] = field(default_factory=dict)
    offsets: dict[TopicPartition, OffsetValue] = field(default_factory=dict)
    shutdown_requested: bool = False
    dead: bool = False
    # the endpoint map of interactive queries as last computed, and its epoch (bumped when it changes)
    endpoints: list[Endpoint] = field(default_factory=list)
    endpoint_epoch: int = 0
    # tasks were ever assigned (the initial rebalance delay is over); when the delay ends (loop time)
    assigned_tasks: bool = False
    delay_until: float | None = None
    # the group's records as last written to `__consumer_offsets` (what the next write is the difference to)
    written: dict[cs.ConsumerKey, bytes] = field(default_factory=dict)
    retire: Records = field(default_factory=list)  # the tombstone of the classic group it replaced

    @property
    def state(self) -> str:
        if not self.members:
            return "Empty"
        if self.topology is None or not self.configured.ready:
            return "NotReady"
        if self.assignment_epoch < self.group_epoch:
            return "Assigning"
        if any(m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
               for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def held_elsewhere(self, member_id: str) -> set[tuple[str, int]]:
        """Active tasks another member holds or has yet to give up."""
        out: set[tuple[str, int]] = set()
        for mid, m in self.members.items():
            if mid != member_id:
                out.update(task_list(m.active))
                out.update(task_list(m.revoking))
        return out


@dataclass(slots=True)
class StreamsMemberDescription:
    member: StreamsMember
    target: tuple[Tasks, Tasks]


@dataclass(slots=True)
class StreamsGroupDescription:
    group_id: str
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: Topology | None = None
    members: list[StreamsMemberDescription] = field(default_factory=list)


def _minus(a: Tasks, b: Tasks) -> Tasks:
    out = {s: ps - b.get(s, frozenset()) for s, ps in a.items()}
    return {s: ps for s, ps in out.items() if ps}


def _intersect(a: Tasks, b: Tasks) -> Tasks:
    out = {s: ps & b.get(s, frozenset()) for s, ps in a.items()}
    return {s: ps for s, ps in out.items() if ps}


def _clean(t: Tasks) -> Tasks:
    return {s: frozenset(ps) for s, ps in sorted(t.items()) if ps}


class StreamsGroupCoordinator:
    """Owns the streams groups of the `__consumer_offsets` partitions this broker leads."""

    type_name = GROUP_TYPE_STREAMS

    def __init__(self, settings: StreamsGroupSettings, store: GroupStore, topics: Topics, classic: GroupCoordinator,
                 create_topic: CreateTopic | None = None, configs: GroupConfigLookup | None = None) -> None:
        self.settings = settings
        self.classic = classic  # an empty classic group (offsets only, as after a restart) becomes a streams group
        self.configs = configs or FixedGroupConfigs({
            "streams.session.timeout.ms": settings.session_timeout_ms,
            "streams.heartbeat.interval.ms": settings.heartbeat_interval_ms,
            "streams.num.standby.replicas": settings.num_standby_replicas,
            "streams.initial.rebalance.delay.ms": settings.initial_rebalance_delay_ms})
        self.store = store
        self.topics = topics
        self.create_topic = create_topic
        self.groups: dict[str, StreamsGroup] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._creating: set[str] = set()
        self._tasks = TaskSet(log, "Streams group coordinator task")

    # ---- life cycle ----
    async def shutdown(self) -> None:
        self._tasks.close()
        for gid in list(self.groups):
            self._drop(gid)

    def unload_partition(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.store.partition_for(g) == partition]:
            self._drop(gid)

    def _drop(self, group_id: str) -> None:
        group = self.groups.pop(group_id, None)
        if group is not None:
            group.dead = True
            for m in group.members.values():
                m.cancel_timers()

    def _lock(self, group_id: str) -> asyncio.Lock:
        lock = self._locks.get(group_id)
        if lock is None:
            lock = self._locks[group_id] = asyncio.Lock()
        return lock

    def is_streams_group(self, group_id: str) -> bool:
        group = self.groups.get(group_id)
        return group is not None and not group.dead

    # ---- StreamsGroupHeartbeat ----
    async def heartbeat(self, hb: StreamsHeartbeat, other_type: str | None) -> StreamsResult:
        """`other_type`: the type of a group of another kind with this id, if there is one."""
        try:
            if not self.settings.enabled:
                raise KafkaError(ErrorCode.UNSUPPORTED_VERSION,
                                 "The streams rebalance protocol is not enabled (group.coordinator.rebalance.protocols).")
            self._validate(hb)
            await self.store.wait_ready(hb.group_id, create=True)
            async with self._lock(hb.group_id):
                if hb.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
                    result = self._leave(hb)
                else:
                    result = self._heartbeat(hb, other_type)
                group = self.groups.get(hb.group_id)
                if group is not None:
                    await self._flush(group)
                return result
        except KafkaError as exc:
            group = self.groups.get(hb.group_id)
            if group is not None and not (group.members or group.written or group.offsets):
                self._drop(hb.group_id)  # a group the refused heartbeat would have created
            return StreamsResult(exc.code, exc.message if exc.message != exc.code.name else None,
                                 hb.member_id, hb.member_epoch)

    @staticmethod
    def _validate(hb: StreamsHeartbeat) -> None:
        """Kafka's checks of a StreamsGroupHeartbeat, in its order and words (INVALID_REQUEST), then the
        topology's (STREAMS_INVALID_TOPOLOGY)."""
        def bad(message: str) -> KafkaError:
            return KafkaError(ErrorCode.INVALID_REQUEST, message)

        if not hb.member_id:
            raise bad("MemberId can't be empty.")
        if not hb.group_id:
            raise bad("GroupId can't be empty.")
        if hb.instance_id is not None and not hb.instance_id:
            raise bad("InstanceId can't be empty.")
        if hb.rack_id is not None and not hb.rack_id:
            raise bad("RackId can't be empty.")
        if hb.member_epoch == JOIN_EPOCH:
            if hb.rebalance_timeout_ms <= 0:
                raise bad("RebalanceTimeoutMs must be provided in first request.")
            for name, tasks in (("ActiveTasks", hb.active), ("StandbyTasks", hb.standby), ("WarmupTasks", hb.warmup)):
                if tasks:
                    raise bad(f"{name} must be empty when (re-)joining.")
            if hb.topology is None:
                raise bad("Topology must be non-null when (re-)joining.")
            validate(hb.topology)
            if not hb.process_id:
                raise bad("ProcessId can't be empty.")
        elif hb.member_epoch == STATIC_LEAVE_EPOCH:
            if hb.instance_id is None:
                raise bad("InstanceId can't be null.")
        elif hb.member_epoch < STATIC_LEAVE_EPOCH:
            raise bad(f"MemberEpoch is {hb.member_epoch}, but must be greater than or equal to -2.")
        elif hb.member_epoch > 0:
            if len({hb.active is None, hb.standby is None, hb.warmup is None}) > 1:
                raise bad("If one task-type is non-null, all must be non-null.")
            if hb.topology is not None:
                raise bad("Topology can only be provided when (re-)joining.")

    def _leave(self, hb: StreamsHeartbeat) -> StreamsResult:
        group = self.groups.get(hb.group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {hb.group_id} not found.")
        member = group.members.get(hb.member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {hb.member_id} is not a member of group {hb.group_id}.")
        log.info("Member %s has left streams group %s through explicit leave", hb.member_id, hb.group_id)
        self._remove(group, hb.member_id)
        return StreamsResult(ErrorCode.NONE, None, hb.member_id, hb.member_epoch)

    def _heartbeat(self, hb: StreamsHeartbeat, other_type: str | None) -> StreamsResult:
        group = self.groups.get(hb.group_id)
        if group is None:
            if hb.member_epoch != JOIN_EPOCH:  # Kafka: only a joining member creates the group
                raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {hb.group_id} not found.")
            group = StreamsGroup(hb.group_id, offsets=self._from_empty_classic(hb.group_id, other_type))
            if other_type is not None:
                group.retire = group_records(hb.group_id, None)
            self.groups[hb.group_id] = group
        member = group.members.get(hb.member_id)
        status: list[tuple[int, str]] = []
        if hb.member_epoch == JOIN_EPOCH:
            if member is None and len(group.members) >= self.settings.max_size:
                raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The streams group has reached its maximum capacity of {self.settings.max_size} "
                                 "members.")
            if member is None:
                member = StreamsMember(hb.member_id, hb.process_id or "")
                group.members[hb.member_id] = member
                group.group_epoch += 1
                log.info("Member %s joined streams group %s", hb.member_id, hb.group_id)
            else:  # a member that rejoins starts over
                self._release(group, member)
                member.member_epoch, member.state, member.sent = 0, MemberState.STABLE, None
        elif member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {hb.member_id} is not a member of group {hb.group_id}.")
        elif hb.member_epoch != member.member_epoch and not (
                hb.member_epoch == member.previous_epoch and self._reports_subset(hb, member)):
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The streams group member has a smaller or larger member epoch ({hb.member_epoch}) "
                             f"than the one known by the group coordinator ({member.member_epoch}).")
        if hb.topology is not None:
            status += self._topology(group, member, hb.topology)
        self._update_member(group, member, hb)
        if hb.shutdown_application:
            group.shutdown_requested = True
        self._configure(group, hb.may_create)
        if group.group_epoch > group.assignment_epoch:
            if self._delayed(group):
                status.append((ASSIGNMENT_DELAYED, "The assignment is delayed for more members to join "
                                                   "(streams.initial.rebalance.delay.ms)."))
            else:
                self._assign(group)
        self._reconcile(group, member, hb)
        self._touch(group, member)
        status += group.configured.status
        if group.shutdown_requested:
            status.append((SHUTDOWN_APPLICATION,
                           f"Streams group {group.group_id} is shutting down on request of a member."))
        tasks: tuple[Tasks, Tasks, Tasks] = (dict(member.active), dict(member.standby), {})
        send = tasks if member.sent != tasks or hb.member_epoch == JOIN_EPOCH else None
        member.sent = tasks
        self._refresh_endpoints(group)
        return StreamsResult(ErrorCode.NONE, None, member.member_id, member.member_epoch,
                             self.configs.value(group.group_id, "streams.heartbeat.interval.ms"), status or None, send,
                             group.endpoint_epoch,
                             group.endpoints if hb.endpoint_epoch != group.endpoint_epoch else None)

    @staticmethod
    def _refresh_endpoints(group: StreamsGroup) -> None:
        """Interactive queries (`application.server`): which partitions of the topology's source topics
        each member with an endpoint holds, active and standby; its epoch moves when it changes."""
        sources: dict[str, list[str]] = {}
        if group.topology is not None:
            for s in group.topology.subtopologies:
                sources[s.subtopology_id] = [*s.source_topics, *(t.name for t in s.repartition_source_topics)]

        def partitions(tasks: Tasks) -> TopicTasks:
            out: dict[str, set[int]] = {}
            for sub, ps in tasks.items():
                for topic in sources.get(sub, ()):
                    out.setdefault(topic, set()).update(ps)
            return {t: frozenset(ps) for t, ps in sorted(out.items())}

        endpoints = [(m.user_endpoint, partitions(m.active), partitions(m.standby))
                     for _mid, m in sorted(group.members.items()) if m.user_endpoint is not None]
        if endpoints != group.endpoints:
            group.endpoints = endpoints
            group.endpoint_epoch += 1

    def _from_empty_classic(self, group_id: str, other_type: str | None) -> dict[TopicPartition, OffsetValue]:
        """The offsets of the empty classic group of this id, which the new streams group takes over (as
        Kafka converts an empty classic group); GROUP_ID_NOT_FOUND for a group of another type."""
        if other_type is None:
            return {}
        classic = self.classic.groups.get(group_id)
        if other_type != GROUP_TYPE_CLASSIC or classic is None or classic.members or classic.pending_members \
                or not classic.is_(GroupState.EMPTY):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a streams group.")
        del self.classic.groups[group_id]
        classic.state = GroupState.DEAD
        log.info("Converted empty classic group %s to a streams group", group_id)
        return dict(classic.offsets)

    # ---- persistence ----
    def install(self, loaded: dict[str, LoadedGroup]) -> None:
        """The streams groups replayed from a partition this broker now leads; their members' sessions
        start now, as Kafka's do on a fail-over."""
        for gid, entry in loaded.items():
            st = entry.streams
            if st is None or st.epoch is None:
                continue
            self._drop(gid)
            group = StreamsGroup(gid, st.epoch, st.assignment_epoch, st.topology, offsets=entry.offsets)
            group.targets = dict(st.targets)
            # the task counts the target was computed for (not recorded): the tasks it assigns, every one
            # of them to some member; the first heartbeat bumps the epoch only if the topics changed since
            assigned: dict[str, set[int]] = {}
            for active, _standby in group.targets.values():
                for sub, ps in active.items():
                    assigned.setdefault(sub, set()).update(ps)
            group.task_counts = {sub: len(ps) for sub, ps in assigned.items()}
            group.assigned_tasks = bool(assigned)
            for mid, meta in st.members.items():
                cur = st.current.get(mid) or ss.StreamsCurrentValue(0, -1, ss.STATE_STABLE)
                state = {ss.STATE_UNREVOKED_TASKS: MemberState.UNREVOKED_TASKS,
                         ss.STATE_UNRELEASED_TASKS: MemberState.UNRELEASED_TASKS}.get(cur.state, MemberState.STABLE)
                group.members[mid] = StreamsMember(
                    mid, meta.process_id, cur.member_epoch, cur.previous_member_epoch, meta.instance_id, meta.rack_id,
                    meta.rebalance_timeout_ms, meta.topology_epoch, meta.user_endpoint, dict(meta.client_tags),
                    meta.client_id, meta.client_host, state, dict(cur.active), dict(cur.standby),
                    dict(cur.active_revoking))
            group.written = self._image(group)
            self.groups[gid] = group
            for member in group.members.values():
                self._touch(group, member)
            log.debug("Loaded streams group %s (epoch %d, %d members)", gid, group.group_epoch, len(group.members))

    @staticmethod
    def _image(group: StreamsGroup) -> dict[cs.ConsumerKey, bytes]:
        """The group's records as they should be now (streams groups are small: all of them)."""
        gid, out = group.group_id, {}
        for mid, m in sorted(group.members.items()):
            out[cs.ConsumerKey(ss.MEMBER_METADATA, gid, mid)] = ss.encode_member_metadata(ss.StreamsMemberValue(
                m.instance_id, m.rack_id, m.client_id, m.client_host, m.rebalance_timeout_ms, m.topology_epoch,
                m.process_id, m.user_endpoint, dict(m.client_tags)))
            active, standby = group.targets.get(mid, ({}, {}))
            out[cs.ConsumerKey(ss.TARGET_ASSIGNMENT_MEMBER, gid, mid)] = ss.encode_target_member(active, standby)
            state = {MemberState.UNREVOKED_TASKS: ss.STATE_UNREVOKED_TASKS,
                     MemberState.UNRELEASED_TASKS: ss.STATE_UNRELEASED_TASKS}.get(m.state, ss.STATE_STABLE)
            out[cs.ConsumerKey(ss.CURRENT_MEMBER_ASSIGNMENT, gid, mid)] = ss.encode_current_assignment(
                ss.StreamsCurrentValue(m.member_epoch, m.previous_epoch, state, m.active, m.standby, {}, m.revoking))
        if group.topology is not None:
            out[cs.ConsumerKey(ss.TOPOLOGY, gid)] = ss.encode_topology(group.topology)
        out[cs.ConsumerKey(ss.TARGET_ASSIGNMENT_METADATA, gid)] = cs.encode_epoch(group.assignment_epoch)
        out[cs.ConsumerKey(ss.GROUP_METADATA, gid)] = ss.encode_group_metadata(group.group_epoch)
        return out

    async def _flush(self, group: StreamsGroup, image: dict[cs.ConsumerKey, bytes] | None = None,
                     first: Records | None = None) -> None:
        """Write what changed since the last write (or what takes the group to `image`: {} deletes it),
        member records first, the group's last; raise the store's KafkaError if the write fails (the next
        write carries the change again)."""
        image = self._image(group) if image is None else image

        def order(k: cs.ConsumerKey) -> tuple[bool, bool, str, int]:
            if k.member is None:
                return True, False, "", ss.GROUP_RECORD_TYPES.index(k.record_type)
            types = ss.MEMBER_RECORD_TYPES if k not in image else ss.MEMBER_RECORD_TYPES[::-1]
            return False, k in image, k.member, types.index(k.record_type)

        changed = [k for k in group.written.keys() | image.keys() if group.written.get(k) != image.get(k)]
        records: Records = list(first or []) + list(group.retire)
        for k in sorted(changed, key=order):
            records += cs.record(k, image.get(k))
        if not records:
            return
        await self.store.write(group.group_id, records)
        group.written, group.retire = image, []

    @staticmethod
    def _reports_subset(hb: StreamsHeartbeat, member: StreamsMember) -> bool:
        """Kafka accepts the previous epoch from a member whose reported tasks are a subset of its current
        ones (its heartbeat crossed the response that moved it on)."""
        if hb.active is None:
            return True
        return not _minus(_clean(hb.active), member.active)

    def _topology(self, group: StreamsGroup, member: StreamsMember, topology: Topology) -> list[tuple[int, str]]:
        others = [m for mid, m in group.members.items() if mid != member.member_id]
        if group.topology is None or (not others and topology.epoch != group.topology.epoch):
            group.topology = topology
            group.group_epoch += 1
            return []
        if topology.epoch < group.topology.epoch:
            return [(STALE_TOPOLOGY, f"The member's topology epoch {topology.epoch} is behind the group's "
                                     f"topology epoch {group.topology.epoch}.")]
        if topology.epoch > group.topology.epoch:
            raise KafkaError(ErrorCode.STREAMS_INVALID_TOPOLOGY_EPOCH,
                             f"The topology epoch {topology.epoch} is newer than the group's "
                             f"({group.topology.epoch}) while other members run the older topology.")
        return []  # the same epoch: the group's topology stands (instances of one application agree)

    @staticmethod
    def _update_member(group: StreamsGroup, member: StreamsMember, hb: StreamsHeartbeat) -> None:
        before = (member.process_id, member.rack_id, member.client_tags, member.instance_id)
        if hb.process_id is not None:
            member.process_id = hb.process_id
        if hb.rack_id is not None:
            member.rack_id = hb.rack_id
        if hb.client_tags is not None:
            member.client_tags = dict(hb.client_tags)
        if hb.instance_id is not None:
            member.instance_id = hb.instance_id
        if hb.rebalance_timeout_ms > 0:
            member.rebalance_timeout_ms = hb.rebalance_timeout_ms
        if hb.user_endpoint is not None:
            member.user_endpoint = hb.user_endpoint
        if hb.topology is not None:
            member.topology_epoch = hb.topology.epoch
        member.client_id, member.client_host = hb.client_id, hb.client_host
        if (member.process_id, member.rack_id, member.client_tags, member.instance_id) != before \
                and member.member_epoch != JOIN_EPOCH:
            group.group_epoch += 1

    def _configure(self, group: StreamsGroup, may_create: Callable[[str], bool] | None = None) -> None:
        if group.topology is None:
            group.configured = Configured()
            return

        def partitions_of(name: str) -> int | None:
            info = self.topics.info(name)
            return None if info is None else info.partitions

        group.configured = configure(group.topology, partitions_of, self.topics.names())
        counts = {sub: n for sub, n in group.configured.task_counts.items() if n} if group.configured.ready else {}
        if counts != group.task_counts:
            group.task_counts = dict(counts)
            group.group_epoch += 1
        refused = []
        for t in group.configured.to_create:
            if may_create is None or may_create(t.name):
                self._create(t.name, t.partitions, t.replication_factor, dict(t.configs))
            else:
                refused.append(t.name)
        if refused:  # said in the one status of missing internal topics
            why = f"Unauthorized to CREATE on topics {', '.join(sorted(refused))}."
            group.configured.status = [(code, f"{detail} {why}" if code == MISSING_INTERNAL_TOPICS else detail)
                                       for code, detail in group.configured.status]

    def _create(self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]) -> None:
        if self.create_topic is None or name in self._creating:
            return
        self._creating.add(name)
        create = self.create_topic

        async def run() -> None:
            try:
                await create(name, partitions, replication_factor, configs)
                log.info("Created internal topic %s of a streams group with %d partitions", name, partitions)
            except KafkaError as exc:
                if exc.code is not ErrorCode.TOPIC_ALREADY_EXISTS:
                    log.warning("Could not create internal topic %s of a streams group: %s", name, exc)
            finally:
                self._creating.discard(name)

        self._tasks.spawn(run())

    def _delayed(self, group: StreamsGroup) -> bool:
        """Kafka's initial rebalance delay: a new group's first assignment of tasks waits
        `streams.initial.rebalance.delay.ms` from when it could first be made, for more members to join
        (the members ask again at their next heartbeat)."""
        if group.assigned_tasks or not group.task_counts:
            return False
        delay_ms = self.configs.value(group.group_id, "streams.initial.rebalance.delay.ms")
        now = asyncio.get_running_loop().time()
        if group.delay_until is None:
            group.delay_until = now + delay_ms / 1000
        return now < group.delay_until

    def _assign(self, group: StreamsGroup) -> None:
        members = {mid: AssignorMember(m.process_id, m.active, m.standby) for mid, m in group.members.items()}
        counts = group.task_counts if group.configured.ready and not group.shutdown_requested else {}
        standbys = self.configs.value(group.group_id, "streams.num.standby.replicas")
        assigned = sticky_assign(members, counts, standbys)
        group.targets = {mid: (a.active, a.standby) for mid, a in assigned.items()}
        group.assignment_epoch = group.group_epoch
        group.assigned_tasks = group.assigned_tasks or bool(counts and members)

    def _reconcile(self, group: StreamsGroup, member: StreamsMember, hb: StreamsHeartbeat) -> None:
        if member.state is MemberState.UNREVOKED_TASKS:
            reported = _clean(hb.active) if hb.active is not None else None
            if reported is None or _intersect(reported, member.revoking):
                return  # still holds tasks it must give up
            member.revoking = {}
            if member.rebalance is not None:
                member.rebalance.cancel()
                member.rebalance = None
        target_active, target_standby = group.targets.get(member.member_id, ({}, {}))
        if member.member_epoch == group.assignment_epoch and member.state is MemberState.STABLE:
            return
        revoke = _minus(member.active, target_active)
        if revoke:
            member.revoking = revoke
            member.active = _intersect(member.active, target_active)
            member.standby = _intersect(member.standby, target_standby)
            member.state = MemberState.UNREVOKED_TASKS
            self._rebalance_timer(group, member)
            return
        free = {t for t in task_list(target_active) if t not in group.held_elsewhere(member.member_id)}
        active = {s: frozenset(p for p in ps if (s, p) in free) for s, ps in target_active.items()}
        member.active = _clean(active)
        member.standby = _minus(_clean(target_standby), member.active)
        if member.member_epoch != group.assignment_epoch:
            member.previous_epoch, member.member_epoch = member.member_epoch, group.assignment_epoch
        member.state = (MemberState.STABLE if member.active == _clean(target_active)
                        else MemberState.UNRELEASED_TASKS)

    def _release(self, group: StreamsGroup, member: StreamsMember) -> None:
        member.active, member.standby, member.revoking = {}, {}, {}

    # ---- timers and removal ----
    def _touch(self, group: StreamsGroup, member: StreamsMember) -> None:
        if member.session is not None:
            member.session.cancel()
        timeout = self.configs.value(group.group_id, "streams.session.timeout.ms")
        member.session = asyncio.get_running_loop().call_later(
            timeout / 1000, self._expire, group, member.member_id, "session timeout")

    def _rebalance_timer(self, group: StreamsGroup, member: StreamsMember) -> None:
        if member.rebalance is not None:
            member.rebalance.cancel()
        member.rebalance = asyncio.get_running_loop().call_later(
            max(member.rebalance_timeout_ms, 1) / 1000, self._expire, group, member.member_id,
            "it did not revoke its tasks within the rebalance timeout")

    def _expire(self, group: StreamsGroup, member_id: str, reason: str) -> None:
        async def run() -> None:
            async with self._lock(group.group_id):
                if group.dead or member_id not in group.members:
                    return
                log.info("Member %s of streams group %s removed: %s", member_id, group.group_id, reason)
                self._remove(group, member_id)
                try:
                    await self._flush(group)
                except KafkaError as exc:
                    log.warning("Could not write the removal of member %s of streams group %s: %s", member_id,
                                group.group_id, exc)

        self._tasks.spawn(run())

    def _remove(self, group: StreamsGroup, member_id: str) -> None:
        member = group.members.pop(member_id, None)
        if member is None:
            return
        member.cancel_timers()
        group.targets.pop(member_id, None)
        group.group_epoch += 1
        if not group.members:  # the next members start a new group's first assignment (and its delay)
            group.shutdown_requested, group.assigned_tasks, group.delay_until = False, False, None
            self._assign(group)
        elif not self._delayed(group):
            self._assign(group)

    # ---- StreamsGroupDescribe, ListGroups ----
    async def describe(self, group_id: str, other_type: str | None) -> StreamsGroupDescription:
        try:
            await self.store.wait_ready(group_id)
        except KafkaError as exc:
            return StreamsGroupDescription(group_id, exc.code)
        group = self.groups.get(group_id)
        if group is None or group.dead:
            message = (f"Group {group_id} is not a streams group." if other_type is not None
                       else f"Group {group_id} not found.")
            return StreamsGroupDescription(group_id, ErrorCode.GROUP_ID_NOT_FOUND, message)
        return StreamsGroupDescription(
            group_id, state=group.state, group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
            topology=group.topology,
            members=[StreamsMemberDescription(m, group.targets.get(mid, ({}, {})))
                     for mid, m in sorted(group.members.items())])

    def list_groups(self) -> list[tuple[str, str, str]]:
        """(group id, protocol type, state) of every streams group here."""
        return sorted((g.group_id, GROUP_TYPE_STREAMS, g.state) for g in self.groups.values() if not g.dead)

    # ---- what the offset manager asks of a streams group (GroupType) ----
    def group_ids(self) -> list[str]:
        return [gid for gid, g in self.groups.items() if not g.dead]

    def offsets_of(self, group_id: str) -> dict[TopicPartition, OffsetValue] | None:
        group = self.groups.get(group_id)
        return None if group is None or group.dead else group.offsets

    def _owned(self, group_id: str) -> StreamsGroup:
        group = self.groups.get(group_id)
        if group is None or group.dead:
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE, f"Group {group_id} is being unloaded")
        return group

    @staticmethod
    def _member_epoch_check(group: StreamsGroup, member_id: str | None, epoch: int) -> None:
        member = group.members.get(member_id or "")
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID,
                             f"Member {member_id} is not a member of group {group.group_id}.")
        if epoch > member.member_epoch:
            raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The received member epoch {epoch} is larger than the expected member epoch "
                             f"{member.member_epoch}.")
        if epoch < member.member_epoch:
            raise KafkaError(ErrorCode.STALE_MEMBER_EPOCH,
                             f"The received member epoch {epoch} is smaller than the expected member epoch "
                             f"{member.member_epoch}.")

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None,
                               generation_or_epoch: int, api_version: int, transactional: bool) -> None:
        """As a consumer group: a member commits at its current epoch; a client outside the group only
        while the group has no members (an admin resetting offsets)."""
        group = self._owned(group_id)
        if generation_or_epoch < 0 and not member_id and (transactional or not group.members):
            return
        self._member_epoch_check(group, member_id, generation_or_epoch)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        group = self._owned(group_id)
        if not (member_epoch < 0 and member_id is None):
            self._member_epoch_check(group, member_id, member_epoch)

    def validate_offset_delete(self, group_id: str) -> set[str]:
        group = self._owned(group_id)
        if group.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP)
        return set()

    def expired_offsets(self, group_id: str, now: int, retention_ms: int) -> list[TopicPartition]:
        group = self.groups.get(group_id)
        if group is None or group.dead or group.members:
            return []
        return [tp for tp, v in group.offsets.items()
                if (v.expire_timestamp if v.expire_timestamp >= 0 else v.commit_timestamp + retention_ms) <= now]

    def lock(self, group_id: str) -> AbstractAsyncContextManager[Any]:
        return self._lock(group_id)

    async def delete_if_unused(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and not group.dead and not group.members and not group.offsets:
            await self._flush(group, {})
            self._drop(group_id)

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
            offsets = list(group.offsets)
            try:
                await self._flush(group, {}, offset_records(group_id, dict.fromkeys(offsets)))
            except KafkaError as exc:
                return exc.code
        self._drop(group_id)
        return ErrorCode.NONE
