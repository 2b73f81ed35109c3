"""The classic group type: the group coordinator of the classic rebalance protocol (timers, the JoinGroup /
SyncGroup / Heartbeat / LeaveGroup orchestration, DescribeGroups, DeleteGroups) over the state machine in
`odradek.groups.group`, and what the one offset manager (`odradek.groups.offset_manager`) asks of a
classic group: may this member commit (generation, member id, static instance), which topics does the group
subscribe to, which offsets expired.

JoinGroup and SyncGroup requests that must wait for the rebalance park as futures on their member and
are completed when the rebalance moves on. Session timeouts, the rebalance timeout, the initial
rebalance delay of an empty group and the wait for SyncGroups are asyncio timers. The broker never
interprets member metadata or assignments, except (as Kafka does) the consumer protocol's subscribed
topics for OffsetDelete and offset retention.

Persistence goes through an injected `odradek.groups.store.GroupStore` (the coordinator runtime of
`__consumer_offsets`; a fake in unit tests): `check`/`wait_ready` say whether this broker coordinates a
group, `write` appends records to the group's partition and returns once they are committed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from odradek.aio import TaskSet
from odradek.groups.group import (
    Group,
    GroupState,
    GroupSummary,
    JoinRequest,
    JoinResult,
    Member,
    SyncResult,
)
from odradek.groups.offset_manager import OffsetSettings
from odradek.groups.schemas import OffsetValue, Records, TopicPartition, group_records, offset_records
from odradek.groups.store import GroupStore, LoadedGroup, write_removal
from odradek.protocol.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

MEMBER_ID_CLIENT_PART = 1024  # characters of the client id a generated member id starts with
log = logging.getLogger("odradek.groups")

GROUP_TYPE_CLASSIC = "classic"


@dataclass(frozen=True, slots=True)
class GroupSettings:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    # the offsets keys, for the offset manager of every group type (`GroupSettings.offsets`)
    metadata_max_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_check_interval_ms: int = 600_000

    def offsets(self) -> OffsetSettings:
        return OffsetSettings(self.metadata_max_bytes, self.retention_ms, self.retention_check_interval_ms)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> GroupSettings:
        return cls(
            min_session_timeout_ms=config.get("group.min.session.timeout.ms"),
            max_session_timeout_ms=config.get("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=config.get("group.initial.rebalance.delay.ms"),
            max_size=config.get("group.max.size"),
            metadata_max_bytes=config.get("offset.metadata.max.bytes"),
            retention_ms=config.get("offsets.retention.minutes") * 60_000,
            retention_check_interval_ms=config.get("offsets.retention.check.interval.ms"),
        )


def resolve(fut: asyncio.Future[Any] | None, value: Any) -> None:
    """Complete a parked request unless its connection went away (cancelled) or it was answered."""
    if fut is not None and not fut.done():
        fut.set_result(value)


def group_record(group: Group, assignments: dict[str, bytes] | None = None) -> Records:
    """The record of the group's metadata as it stands (with `assignments` as the members' assignments)."""
    return group_records(group.group_id, group.to_value(assignments))


class GroupCoordinator:
    """Owns the groups of the `__consumer_offsets` partitions this broker leads."""

    type_name = GROUP_TYPE_CLASSIC

    def __init__(self, settings: GroupSettings, store: GroupStore) -> None:
        self.settings = settings
        self.store = store
        self.groups: dict[str, Group] = {}
        self._tasks = TaskSet(log, "Group coordinator task")

    # ---- life cycle ----
    async def shutdown(self) -> None:
        self._tasks.close()
        for group in list(self.groups.values()):
            self._unload(group, ErrorCode.NOT_COORDINATOR)
        self.groups.clear()

    # ---- loading and unloading (the service calls these when the runtime loads or unloads a partition) ----
    def install(self, loaded: dict[str, LoadedGroup]) -> None:
        for group_id, entry in loaded.items():
            group = Group.from_value(group_id, entry.metadata, entry.offsets)
            old = self.groups.pop(group_id, None)
            if old is not None:
                self._unload(old, ErrorCode.NOT_COORDINATOR)
            self.groups[group_id] = group
            for member in group.members.values():
                self._touch(group, member)
            log.debug("Loaded group %s (%s, generation %d, %d members, %d offsets)", group_id,
                      group.state.value, group.generation, len(group.members), len(group.offsets))

    def unload_partition(self, partition: int) -> None:
        for gid in [g for g in self.groups if self.store.partition_for(g) == partition]:
            self._unload(self.groups.pop(gid), ErrorCode.NOT_COORDINATOR)

    def drop(self, group_id: str) -> None:
        """A consumer group replaced the classic group of this id (a partition's load said so)."""
        old = self.groups.pop(group_id, None)
        if old is not None:
            old.state = GroupState.DEAD

    def release(self, group: Group) -> None:
        """Hand the group over to the consumer type (online upgrade): its parked JoinGroup and SyncGroup
        requests are answered REBALANCE_IN_PROGRESS, so the members rejoin into the consumer group."""
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        self._unload(group, ErrorCode.REBALANCE_IN_PROGRESS)

    def adopt(self, group: Group, reason: str) -> None:
        """Take over a group converted from a consumer group (online downgrade) and rebalance it: its
        members learn it from their next Heartbeat and rejoin."""
        self.groups[group.group_id] = group
        for member in group.members.values():
            self._touch(group, member)
        self._prepare_rebalance(group, reason)

    def _unload(self, group: Group, error: ErrorCode) -> None:
        for t in (group.join_timer, group.sync_timer):
            if t is not None:
                t.cancel()
        for timer in group.pending_members.values():
            if timer is not None:
                timer.cancel()
        for m in group.members.values():
            m.cancel_timer()
            resolve(m.join_waiter, JoinResult(error, m.member_id))
            resolve(m.sync_waiter, SyncResult(error))
            m.join_waiter = m.sync_waiter = None
        group.state = GroupState.DEAD

    # ---- timers ----
    def _touch(self, group: Group, member: Member) -> None:
        """(Re)start the member's session timer."""
        member.cancel_timer()
        member.timer = asyncio.get_running_loop().call_later(
            member.profile.session_timeout_ms / 1000, self._session_expired, group, member)

    def _session_expired(self, group: Group, member: Member) -> None:
        member.timer = None
        if self.groups.get(group.group_id) is not group or group.members.get(member.member_id) is not member:
            return
        if member.join_waiter is not None or member.sync_waiter is not None:
            self._touch(group, member)  # a parked JoinGroup/SyncGroup keeps the member alive
            return
        log.info("Member %s in group %s has failed, removing it from the group (session timeout %d ms)",
                 member.member_id, group.group_id, member.profile.session_timeout_ms)
        self._remove_member(group, member, "session timeout")

    def _add_pending(self, group: Group, member_id: str, session_timeout_ms: int) -> None:
        loop = asyncio.get_running_loop()
        group.pending_members[member_id] = loop.call_later(
            session_timeout_ms / 1000, self._pending_expired, group, member_id)

    def _pending_expired(self, group: Group, member_id: str) -> None:
        if group.pending_members.pop(member_id, None) is not None:
            log.info("Pending member %s in group %s did not join in time", member_id, group.group_id)
            self._try_complete_join(group)

    def _drop_pending(self, group: Group, member_id: str) -> bool:
        if member_id not in group.pending_members:
            return False
        timer = group.pending_members.pop(member_id)
        if timer is not None:
            timer.cancel()
        return True

    # ---- checks shared by the requests ----
    async def _ready(self, group_id: str, create: bool = False, allow_empty: bool = False) -> None:
        """Raise unless this broker coordinates `group_id` and has loaded it. Like Kafka, the offset and
        admin APIs accept the empty group id (old simple consumers committed under it); the membership
        APIs do not."""
        if group_id is None or (not group_id and not allow_empty):
            raise KafkaError(ErrorCode.INVALID_GROUP_ID, "The group id must not be empty")
        await self.store.wait_ready(group_id, create)

    def _validate_session(self, req: JoinRequest) -> None:
        s = self.settings
        if not s.min_session_timeout_ms <= req.profile.session_timeout_ms <= s.max_session_timeout_ms:
            raise KafkaError(ErrorCode.INVALID_SESSION_TIMEOUT,
                             f"session.timeout.ms {req.profile.session_timeout_ms} is outside the broker's range "
                             f"[{s.min_session_timeout_ms}, {s.max_session_timeout_ms}]")

    def _member_check(self, group: Group, member_id: str, instance_id: str | None, generation: int) -> Member:
        if group.is_(GroupState.DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_fenced(member_id, instance_id):
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id} is owned by another member")
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION,
                             f"generation {generation} is not the group's generation {group.generation}")
        return member

    async def _known_member(self, group_id: str, member_id: str, instance_id: str | None,
                            generation: int) -> tuple[Group, Member]:
        """The group and member a SyncGroup or Heartbeat names, or the first error that applies."""
        await self._ready(group_id)
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        return group, self._member_check(group, member_id, instance_id, generation)

    # ---- JoinGroup ----
    async def join(self, req: JoinRequest) -> JoinResult:
        try:
            await self._ready(req.group_id)
            self._validate_session(req)
            group = self.groups.get(req.group_id)
            if group is None and req.member_id:
                raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
            group = group or Group(req.group_id)
            if group.is_(GroupState.DEAD):
                raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            if not group.accepts(req.profile.protocol_type, req.profile.protocols):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            self.groups.setdefault(req.group_id, group)
            if not req.member_id:
                return await self._join_new(group, req)
            return await self._join_known(group, req)
        except KafkaError as exc:
            return JoinResult(exc.code, req.member_id)

    async def _join_new(self, group: Group, req: JoinRequest) -> JoinResult:
        # Kafka's form, client id then a uuid; the client id cut to 1,024 characters, so that the member id
        # always fits the int16-length strings of the group's record and of JoinGroup v0-5
        member_id = f"{req.profile.client_id[:MEMBER_ID_CLIENT_PART]}-{uuid.uuid4()}"
        iid = req.group_instance_id
        if iid is not None and group.static_members.get(iid) in group.members:
            return await self._replace_static(group, group.static_members[iid], member_id, req)
        if group.is_full(self.settings.max_size):
            raise KafkaError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                             f"group {group.group_id} already has the maximum of {self.settings.max_size} members")
        if iid is None and req.require_known_member_id:
            self._add_pending(group, member_id, req.profile.session_timeout_ms)
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)
        return await self._add_and_rebalance(group, member_id, req)

    async def _join_known(self, group: Group, req: JoinRequest) -> JoinResult:
        if self._drop_pending(group, req.member_id):
            return await self._add_and_rebalance(group, req.member_id, req)
        if group.is_static_fenced(req.member_id, req.group_instance_id):
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(req.member_id)
        if member is None or group.is_(GroupState.EMPTY):
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.COMPLETING_REBALANCE) and member.matches(req.profile.protocols):
            self._touch(group, member)
            return group.join_result(member)  # the member lost our answer: repeat it
        if (group.is_(GroupState.STABLE) and member.member_id != group.leader_id
                and member.matches(req.profile.protocols)):
            self._touch(group, member)
            return group.join_result(member)  # a follower rejoining with nothing new: no rebalance
        return await self._update_and_rebalance(group, member, req)

    def _park_join(self, member: Member) -> asyncio.Future[JoinResult]:
        old = member.join_waiter
        fut: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        member.join_waiter = fut
        resolve(old, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        return fut

    async def _add_and_rebalance(self, group: Group, member_id: str, req: JoinRequest) -> JoinResult:
        member = Member.from_request(member_id, req)
        if group.is_(GroupState.PREPARING_REBALANCE) and group.initial_delay:
            group.new_member_added = True
        fut = self._park_join(member)
        group.add(member)
        self._touch(group, member)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id} with group instance id "
                                             f"{req.group_instance_id}")
        self._try_complete_join(group)
        return await fut

    async def _update_and_rebalance(self, group: Group, member: Member, req: JoinRequest) -> JoinResult:
        member.profile = req.profile
        fut = self._park_join(member)
        self._touch(group, member)
        self._maybe_prepare_rebalance(group, f"updating metadata of member {member.member_id}")
        self._try_complete_join(group)
        return await fut

    async def _replace_static(self, group: Group, old_id: str, new_id: str, req: JoinRequest) -> JoinResult:
        old = group.members[old_id]
        unchanged = old.matches(req.profile.protocols)
        was_leader = group.leader_id == old_id
        new = Member.from_request(new_id, req)
        new.assignment = old.assignment
        old.cancel_timer()
        resolve(old.join_waiter, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        resolve(old.sync_waiter, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        group.replace(old_id, new)
        self._touch(group, new)
        log.info("Static member %s of group %s rejoined: member id %s replaces %s", req.group_instance_id,
                 group.group_id, new_id, old_id)
        if group.is_(GroupState.STABLE) and unchanged:
            return await self._static_rejoin_stable(group, old, new, was_leader, req)
        fut = self._park_join(new)
        if group.is_(GroupState.PREPARING_REBALANCE):
            self._try_complete_join(group)
        else:
            self._prepare_rebalance(group, f"static member {req.group_instance_id} rejoined")
        return await fut

    async def _static_rejoin_stable(self, group: Group, old: Member, new: Member, was_leader: bool,
                                    req: JoinRequest) -> JoinResult:
        """A known static member is back with the same subscription: keep the generation and assignment,
        persist the new member id, and answer at once."""
        generation = group.generation
        try:
            await self.store.write(group.group_id, group_record(group))
        except KafkaError as exc:
            if group.members.get(new.member_id) is new:
                new.cancel_timer()
                group.replace(new.member_id, old)
                self._touch(group, old)
            return JoinResult(exc.code, new.member_id)
        if group.members.get(new.member_id) is not new or group.generation != generation:
            return JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, new.member_id)
        if not was_leader:
            return group.join_result(new)
        if req.supports_skip_assignment:
            result = group.join_result(new, leader_view=True)
            result.skip_assignment = True
            return result
        # Before SkipAssignment existed the rejoining leader is told the old leader id, so it acts as a
        # follower and does not run an assignment over an incomplete member list.
        result = group.join_result(new, leader_view=False)
        result.leader = old.member_id
        return result

    # ---- rebalance mechanics ----
    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(GroupState.COMPLETING_REBALANCE):
            self._abort_sync(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._cancel_sync_timer(group)
        from_empty = group.is_(GroupState.EMPTY)
        group.transition(GroupState.PREPARING_REBALANCE)
        self._cancel_join_timer(group)
        loop = asyncio.get_running_loop()
        if from_empty:
            delay = self.settings.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            group.initial_delay, group.new_member_added = True, False
            group.join_timer = loop.call_later(delay / 1000, self._initial_delay_done, group, delay, remaining)
        else:
            group.initial_delay = False
            group.join_timer = loop.call_later(group.rebalance_timeout_ms() / 1000, self._join_expired, group)
        log.info("Preparing to rebalance group %s in state PreparingRebalance with old generation %d "
                 "(reason: %s)", group.group_id, group.generation, reason)

    def _cancel_join_timer(self, group: Group) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None

    def _initial_delay_done(self, group: Group, delay: int, remaining: int) -> None:
        group.join_timer = None
        if not group.is_(GroupState.PREPARING_REBALANCE) or self.groups.get(group.group_id) is not group:
            return
        if group.new_member_added and remaining > 0:
            group.new_member_added = False
            step = min(delay, remaining)
            group.join_timer = asyncio.get_running_loop().call_later(
                step / 1000, self._initial_delay_done, group, delay, remaining - step)
            return
        group.initial_delay = False
        self._complete_join(group)

    def _join_expired(self, group: Group) -> None:
        group.join_timer = None
        if group.is_(GroupState.PREPARING_REBALANCE) and self.groups.get(group.group_id) is group:
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        if group.is_(GroupState.PREPARING_REBALANCE) and not group.initial_delay and group.has_all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        self._cancel_join_timer(group)
        for m in group.not_yet_rejoined():
            if m.group_instance_id is None:
                log.info("Removing member %s of group %s: it did not rejoin in time", m.member_id, group.group_id)
                group.remove(m.member_id)
        if not group.members:
            self._become_empty(group)
            return
        if not group.elect_joined_leader():
            # Only static members that have not rejoined are left: wait for them or their session expiry.
            group.join_timer = asyncio.get_running_loop().call_later(
                group.rebalance_timeout_ms() / 1000, self._join_expired, group)
            return
        group.generation += 1
        group.protocol_name = group.select_protocol()
        group.transition(GroupState.COMPLETING_REBALANCE)
        group.pending_sync = set(group.members)
        log.info("Stabilized group %s generation %d with %d members (protocol %s)", group.group_id,
                 group.generation, len(group.members), group.protocol_name)
        for m in group.members.values():
            if m.join_waiter is not None:
                resolve(m.join_waiter, group.join_result(m))
                m.join_waiter = None
            self._touch(group, m)
        group.sync_timer = asyncio.get_running_loop().call_later(
            group.rebalance_timeout_ms() / 1000, self._sync_expired, group, group.generation)

    def _become_empty(self, group: Group) -> None:
        group.generation += 1
        group.protocol_name = None
        group.leader_id = None
        group.transition(GroupState.EMPTY)
        log.info("Group %s with generation %d is now empty", group.group_id, group.generation)
        self._tasks.spawn(self._store_group(group))

    async def _store_group(self, group: Group) -> None:
        try:
            await self.store.write(group.group_id, group_record(group))
        except KafkaError as exc:
            log.warning("Could not store metadata of group %s: %s", group.group_id, exc)

    def _sync_expired(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if self.groups.get(group.group_id) is not group or group.generation != generation:
            return
        if not group.is_(GroupState.COMPLETING_REBALANCE, GroupState.STABLE) or not group.pending_sync:
            return
        late = [group.members[mid] for mid in group.pending_sync if mid in group.members]
        log.info("Removing members %s of group %s: no SyncGroup within the rebalance timeout",
                 [m.member_id for m in late], group.group_id)
        for m in late:
            resolve(m.sync_waiter, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            group.remove(m.member_id)
        self._prepare_rebalance(group, "members did not sync in time")
        self._try_complete_join(group)

    def _cancel_sync_timer(self, group: Group) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _abort_sync(self, group: Group, error: ErrorCode) -> None:
        self._cancel_sync_timer(group)
        for m in group.members.values():
            m.assignment = b""
            resolve(m.sync_waiter, SyncResult(error))
            m.sync_waiter = None

    def _remove_member(self, group: Group, member: Member, reason: str) -> None:
        resolve(member.join_waiter, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member.member_id))
        resolve(member.sync_waiter, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        member.join_waiter = member.sync_waiter = None
        group.remove(member.member_id)
        if group.is_(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, f"removing member {member.member_id} ({reason})")
        self._try_complete_join(group)

    # ---- SyncGroup ----
    async def sync(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                   protocol_type: str | None, protocol_name: str | None,
                   assignments: list[tuple[str, bytes]]) -> SyncResult:
        try:
            group, member = await self._known_member(group_id, member_id, instance_id, generation)
            if (protocol_type is not None and protocol_type != group.protocol_type) or (
                    protocol_name is not None and protocol_name != group.protocol_name):
                raise KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
            return await self._sync(group, member, assignments)
        except KafkaError as exc:
            return SyncResult(exc.code)

    async def _sync(self, group: Group, member: Member, assignments: list[tuple[str, bytes]]) -> SyncResult:
        if group.is_(GroupState.EMPTY):
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_(GroupState.PREPARING_REBALANCE):
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)
        self._touch(group, member)
        group.pending_sync.discard(member.member_id)
        if group.is_(GroupState.STABLE):
            return SyncResult(ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name)
        old = member.sync_waiter
        fut: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        member.sync_waiter = fut
        resolve(old, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        if member.member_id == group.leader_id:
            self._tasks.spawn(self._leader_sync(group, dict(assignments)))
        return await fut

    async def _leader_sync(self, group: Group, assignments: dict[str, bytes]) -> None:
        generation = group.generation
        full = {mid: bytes(assignments.get(mid, b"")) for mid in group.members}
        error = ErrorCode.NONE
        try:
            await self.store.write(group.group_id, group_record(group, full))
        except KafkaError as exc:
            error = exc.code
        if not group.is_(GroupState.COMPLETING_REBALANCE) or group.generation != generation:
            return  # the rebalance moved on while we were writing; waiters were answered then
        if error != ErrorCode.NONE:
            self._abort_sync(group, error)
            self._prepare_rebalance(group, f"storing the assignment failed: {error.name}")
            return
        for mid, m in group.members.items():
            m.assignment = full.get(mid, b"")
            resolve(m.sync_waiter, SyncResult(ErrorCode.NONE, m.assignment, group.protocol_type,
                                              group.protocol_name))
            m.sync_waiter = None
        group.transition(GroupState.STABLE)
        log.info("Assignment received from leader %s for group %s for generation %d", group.leader_id,
                 group.group_id, generation)

    # ---- Heartbeat ----
    async def heartbeat(self, group_id: str, generation: int, member_id: str, instance_id: str | None) -> ErrorCode:
        try:
            group, member = await self._known_member(group_id, member_id, instance_id, generation)
        except KafkaError as exc:
            return exc.code
        if group.is_(GroupState.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._touch(group, member)
        if group.is_(GroupState.PREPARING_REBALANCE):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # ---- LeaveGroup ----
    async def leave(self, group_id: str, members: list[tuple[str, str | None]]) -> list[ErrorCode]:
        """Per-member errors; group-level problems raise KafkaError."""
        await self._ready(group_id)
        group = self.groups.get(group_id)
        if group is None:
            return [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_(GroupState.DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return [self._leave_one(group, mid, iid) for mid, iid in members]

    def _leave_one(self, group: Group, member_id: str, instance_id: str | None) -> ErrorCode:
        if not member_id:
            if instance_id is None or instance_id not in group.static_members:
                return ErrorCode.UNKNOWN_MEMBER_ID
            member_id = group.static_members[instance_id]
        elif group.is_static_fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if self._drop_pending(group, member_id):
            self._try_complete_join(group)
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        log.info("Member %s has left group %s through explicit LeaveGroup", member_id, group.group_id)
        self._remove_member(group, member, "member left")
        return ErrorCode.NONE

    # ---- what the offset manager asks of a classic group (GroupType) ----
    def group_ids(self) -> list[str]:
        return [gid for gid, g in self.groups.items() if not g.is_(GroupState.DEAD)]

    def offsets_of(self, group_id: str) -> dict[TopicPartition, OffsetValue] | None:
        group = self.groups.get(group_id)
        return None if group is None or group.is_(GroupState.DEAD) else group.offsets

    def validate_offset_commit(self, group_id: str, member_id: str, instance_id: str | None,
                               generation_or_epoch: int, api_version: int, transactional: bool) -> None:
        """Kafka's ClassicGroup.validateOffsetCommit. A commit for a group that does not exist creates it
        (a consumer without group management), unless it names a generation."""
        group = self.groups.get(group_id)
        if group is None:
            if generation_or_epoch >= 0 and not transactional:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
            group = self.groups[group_id] = Group(group_id)
        if transactional:
            if generation_or_epoch >= 0 or member_id:  # KIP-447: a member's commit is fenced like OffsetCommit
                self._commit_check(group, generation_or_epoch, member_id, instance_id)
            return
        member = self._commit_check(group, generation_or_epoch, member_id, instance_id)
        if member is not None:
            self._touch(group, member)

    def validate_offset_fetch(self, group_id: str, member_id: str | None, member_epoch: int) -> None:
        pass  # any client may read a classic group's offsets

    def validate_offset_delete(self, group_id: str) -> set[str]:
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND)
        if group.is_(GroupState.EMPTY):
            return set()
        topics = group.subscribed_topics()
        if topics is None:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP)
        return topics

    def expired_offsets(self, group_id: str, now: int, retention_ms: int) -> list[TopicPartition]:
        group = self.groups.get(group_id)
        return [] if group is None else group.expired_offsets(now, retention_ms)

    def lock(self, group_id: str) -> AbstractAsyncContextManager[Any]:
        return nullcontext()  # classic groups change only on the event loop, between awaits

    async def delete_if_unused(self, group_id: str) -> None:
        group = self.groups.get(group_id)
        if group is not None and group.is_(GroupState.EMPTY) and not group.offsets and not group.pending_members:
            await self._delete(group)

    def _commit_check(self, group: Group, generation: int, member_id: str, instance_id: str | None) -> Member | None:
        if group.is_(GroupState.DEAD):
            raise KafkaError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.is_static_fenced(member_id, instance_id):
            raise KafkaError(ErrorCode.FENCED_INSTANCE_ID)
        if generation < 0 and group.is_(GroupState.EMPTY):
            return None  # a consumer without group management (assign())
        # Kafka's order: the member, then its generation, then the state; a stale member learns it is
        # stale (and rejoins) rather than being told to wait for a rebalance it is not part of
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            raise KafkaError(ErrorCode.ILLEGAL_GENERATION)
        if group.is_(GroupState.COMPLETING_REBALANCE):
            raise KafkaError(ErrorCode.REBALANCE_IN_PROGRESS)
        return member

    # ---- DescribeGroups / ListGroups / DeleteGroups ----
    async def describe(self, group_id: str) -> GroupSummary:
        await self._ready(group_id, allow_empty=True)
        group = self.groups.get(group_id)
        if group is None:
            return GroupSummary(group_id, GroupState.DEAD.value, "", "", [])
        return group.summary()

    def list_groups(self, states: set[str] | None = None) -> tuple[ErrorCode, list[tuple[str, str, str]]]:
        wanted = {s.lower() for s in states} if states else None
        out = [(g.group_id, g.protocol_type or "", g.state.value) for g in self.groups.values()
               if not g.is_(GroupState.DEAD) and (wanted is None or g.state.value.lower() in wanted)]
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.store.loading() else ErrorCode.NONE
        return error, sorted(out)

    async def delete_group(self, group_id: str) -> ErrorCode:
        try:
            await self._ready(group_id, allow_empty=True)
        except KafkaError as exc:
            return exc.code
        group = self.groups.get(group_id)
        if group is None or group.is_(GroupState.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not group.is_(GroupState.EMPTY):
            return ErrorCode.NON_EMPTY_GROUP
        return await self._delete(group)

    async def _delete(self, group: Group) -> ErrorCode:
        """Drop an Empty group: tombstones for its offsets and its metadata."""
        records = offset_records(group.group_id, dict.fromkeys(group.offsets)) + group_records(group.group_id, None)
        self._unload(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        return await write_removal(self.store, group.group_id, records, log, "Group", len(group.offsets))
