"""One consumer group's state machine (classic rebalance protocol): pure state and transitions, no I/O.

A group moves through Kafka's states::

    Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
    CompletingRebalance --leader's SyncGroup persisted--> Stable
    Stable / CompletingRebalance --join, leave, session expiry--> PreparingRebalance
    PreparingRebalance --last member gone--> Empty;   any --deleted / expired / unloaded--> Dead

`Group` keeps the members, the generation, the selected protocol, static members (group.instance.id ->
member id), members that were handed an id but have not joined yet (KIP-394) and members whose SyncGroup
is still due. It carries the parked JoinGroup/SyncGroup futures and timer handles that the coordinator
(`odradek.groups.coordinator`) creates; it never starts a timer or touches the store itself.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from odradek.groups.schemas import GroupValue, MemberValue, OffsetValue, TopicPartition
from odradek.protocol.errors import ErrorCode

CONSUMER_PROTOCOL = "consumer"
NO_GENERATION = -1


def now_ms() -> int:
    return int(time.time() * 1000)


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# target state -> the states a group may enter it from (Kafka's GroupState.validPreviousStates)
ALLOWED_FROM: dict[GroupState, frozenset[GroupState]] = {
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


# ---- what a JoinGroup brings, and the results handed back to the request handlers ----------------


@dataclass(slots=True)
class MemberProfile:
    """What a member's JoinGroup says about it; replaced as a whole when the member joins again."""

    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]


@dataclass(slots=True)
class JoinRequest:
    group_id: str
    member_id: str
    group_instance_id: str | None
    profile: MemberProfile
    require_known_member_id: bool = True
    supports_skip_assignment: bool = True


@dataclass(slots=True)
class JoinResult:
    error: ErrorCode
    member_id: str = ""
    generation: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass(slots=True)
class SyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(slots=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(slots=True)
class GroupSummary:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


# ---- members and groups -------------------------------------------------------------------------


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    profile: MemberProfile
    assignment: bytes = b""
    join_waiter: asyncio.Future[JoinResult] | None = None
    sync_waiter: asyncio.Future[SyncResult] | None = None
    timer: asyncio.TimerHandle | None = None

    @classmethod
    def from_request(cls, member_id: str, req: JoinRequest) -> Member:
        return cls(member_id, req.group_instance_id, req.profile)

    @property
    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.profile.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.profile.protocols:
            if name == protocol:
                return meta
        return b""

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return [(n, bytes(m)) for n, m in self.profile.protocols] == [(n, bytes(m)) for n, m in protocols]

    def vote(self, candidates: set[str]) -> str | None:
        return next((name for name in self.protocol_names if name in candidates), None)

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None


class Group:
    """One group's state; no I/O and no timers of its own beyond the handles it carries."""

    def __init__(self, group_id: str, state: GroupState = GroupState.EMPTY) -> None:
        self.group_id = group_id
        self.state = state
        self.state_timestamp = now_ms()
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group.instance.id -> member id
        self.pending_members: dict[str, asyncio.TimerHandle | None] = {}  # KIP-394: id handed out, not joined
        self.pending_sync: set[str] = set()
        self.offsets: dict[TopicPartition, OffsetValue] = {}
        self.join_timer: asyncio.TimerHandle | None = None
        self.sync_timer: asyncio.TimerHandle | None = None
        self.initial_delay = False  # this rebalance started from Empty and waits the initial delay
        self.new_member_added = False

    def __repr__(self) -> str:
        return f"Group({self.group_id!r}, {self.state.value}, generation={self.generation})"

    # ---- state ----
    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    def transition(self, target: GroupState) -> None:
        if self.state not in ALLOWED_FROM[target]:
            raise ValueError(f"group {self.group_id}: illegal transition {self.state.value} -> {target.value}")
        self.state = target
        self.state_timestamp = now_ms()

    # ---- membership ----
    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.profile.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        member.cancel_timer()
        iid = member.group_instance_id
        if iid is not None and self.static_members.get(iid) == member_id:
            del self.static_members[iid]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = self._next_leader()
        return member

    def replace(self, old_id: str, new: Member) -> None:
        """Give a static member a new member id, keeping its place, assignment and leadership."""
        self.members = {(new.member_id if k == old_id else k): (new if k == old_id else v)
                        for k, v in self.members.items()}
        if new.group_instance_id is not None:
            self.static_members[new.group_instance_id] = new.member_id
        if self.leader_id == old_id:
            self.leader_id = new.member_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new.member_id)

    def _next_leader(self) -> str | None:
        joined = [m for m in self.members.values() if m.join_waiter is not None]
        pick = joined[0] if joined else next(iter(self.members.values()), None)
        return pick.member_id if pick is not None else None

    def elect_joined_leader(self) -> bool:
        """Make sure the leader is a member that rejoined; False if nobody rejoined."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.join_waiter is not None:
            return True
        joined = next((m for m in self.members.values() if m.join_waiter is not None), None)
        if joined is None:
            return False
        self.leader_id = joined.member_id
        return True

    def is_static_fenced(self, member_id: str, instance_id: str | None) -> bool:
        if instance_id is None:
            return False
        known = self.static_members.get(instance_id)
        return known is not None and known != member_id

    def has_all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def is_full(self, max_size: int) -> bool:
        return len(self.members) + len(self.pending_members) >= max_size

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if m.join_waiter is None]

    # ---- protocols ----
    def supported_protocols(self) -> set[str]:
        sets = [set(m.protocol_names) for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def accepts(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.supported_protocols())

    def select_protocol(self) -> str | None:
        """Each member votes for its most preferred protocol that every member supports; most votes
        wins, ties going to the leader's preference order."""
        candidates = self.supported_protocols()
        if not candidates:
            return None
        votes: dict[str, int] = {}
        for m in self.members.values():
            choice = m.vote(candidates)
            if choice is not None:
                votes[choice] = votes.get(choice, 0) + 1
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        order = {name: i for i, name in enumerate(leader.protocol_names)}
        return max(votes, key=lambda n: (votes[n], -order.get(n, len(order))))

    def rebalance_timeout_ms(self) -> int:
        return max((m.profile.rebalance_timeout_ms for m in self.members.values()), default=0)

    def member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        return [(m.member_id, m.group_instance_id, m.metadata(self.protocol_name)) for m in self.members.values()]

    def join_result(self, member: Member, leader_view: bool | None = None) -> JoinResult:
        is_leader = member.member_id == self.leader_id if leader_view is None else leader_view
        return JoinResult(ErrorCode.NONE, member.member_id, self.generation, self.protocol_type,
                          self.protocol_name, self.leader_id or "", self.member_metadata() if is_leader else [])

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to under the consumer protocol; None if unknown."""
        if self.protocol_type != CONSUMER_PROTOCOL or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            parsed = parse_subscription(m.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics.update(parsed)
        return topics

    # ---- persistence ----
    def to_value(self, assignments: dict[str, bytes] | None = None) -> GroupValue:
        members = [
            MemberValue(m.member_id, m.profile.client_id, m.profile.client_host, m.profile.session_timeout_ms,
                        m.profile.rebalance_timeout_ms, m.metadata(self.protocol_name),
                        assignments.get(m.member_id, m.assignment) if assignments is not None else m.assignment,
                        m.group_instance_id)
            for m in self.members.values()
        ]
        return GroupValue(self.protocol_type or "", self.generation, self.protocol_name, self.leader_id,
                          self.state_timestamp, members)

    @classmethod
    def from_value(cls, group_id: str, value: GroupValue | None, offsets: dict[TopicPartition, OffsetValue]) -> Group:
        group = cls(group_id)
        group.offsets = dict(offsets)
        if value is None:
            return group
        group.generation = value.generation
        group.protocol_name = value.protocol
        if value.current_state_timestamp >= 0:
            group.state_timestamp = value.current_state_timestamp
        for mv in value.members:
            profile = MemberProfile(mv.client_id, mv.client_host, mv.session_timeout, mv.rebalance_timeout,
                                    value.protocol_type, [(value.protocol or "", mv.subscription)])
            group.add(Member(mv.member_id, mv.group_instance_id, profile, mv.assignment))
        group.protocol_type = value.protocol_type or None
        if value.leader in group.members:
            group.leader_id = value.leader
        if group.members:
            group.state = GroupState.STABLE
        return group

    def summary(self) -> GroupSummary:
        stable = self.state is GroupState.STABLE
        members = [
            MemberSummary(m.member_id, m.group_instance_id, m.profile.client_id, m.profile.client_host,
                          m.metadata(self.protocol_name) if stable else b"", m.assignment if stable else b"")
            for m in self.members.values()
        ]
        return GroupSummary(self.group_id, self.state.value, self.protocol_type or "",
                            (self.protocol_name or "") if stable else "", members)

    # ---- offsets ----
    def expired_offsets(self, now: int, retention_ms: int) -> list[TopicPartition]:
        """Offsets past retention (KIP-211): for an Empty group counted from when it became empty, for a
        group never managed by the coordinator from each commit, for a Stable consumer group only the
        offsets of topics it no longer subscribes to."""
        if self.state is GroupState.EMPTY:
            base: Callable[[OffsetValue], int]
            if self.protocol_type is not None:
                base = lambda _v: self.state_timestamp  # noqa: E731
            else:
                base = lambda v: v.commit_timestamp  # noqa: E731
            return [tp for tp, v in self.offsets.items() if _is_expired(v, base(v), now, retention_ms)]
        if self.state is GroupState.STABLE:
            topics = self.subscribed_topics()
            if topics is None:
                return []
            return [tp for tp, v in self.offsets.items()
                    if tp[0] not in topics and _is_expired(v, v.commit_timestamp, now, retention_ms)]
        return []


def _is_expired(value: OffsetValue, base: int, now: int, retention_ms: int) -> bool:
    if value.expire_timestamp >= 0:
        return now >= value.expire_timestamp
    return now - base >= retention_ms


def parse_subscription(metadata: bytes) -> list[str] | None:
    """The topics of a ConsumerProtocolSubscription (any version: topics come first); None if garbage."""
    try:
        pos = 2
        (count,) = struct.unpack_from(">i", metadata, pos)
        pos += 4
        if count < 0 or count > len(metadata):
            return None
        topics = []
        for _ in range(count):
            (n,) = struct.unpack_from(">h", metadata, pos)
            pos += 2
            if n < 0 or pos + n > len(metadata):
                return None
            topics.append(metadata[pos : pos + n].decode("utf-8"))
            pos += n
        return topics
    except (struct.error, UnicodeDecodeError):
        return None
