"""One KIP-848 consumer group (`group.protocol=consumer`): pure state and the reconciliation rules, no I/O.

Three epochs drive the group:

- the **group epoch** goes up whenever what the assignor sees changes: a member joins or leaves, a
  subscription changes, a subscribed topic appears, disappears or gains partitions;
- the **assignment epoch** is the group epoch the current *target assignment* was computed for; when the
  group epoch is ahead, the next heartbeat runs the assignor and catches it up;
- each member's **member epoch** is the assignment epoch it has reconciled to.

A member moves towards its target one heartbeat at a time (`reconcile`, Kafka's CurrentAssignmentBuilder):
partitions it holds but must give up are *pending revocation* (state UNREVOKED_PARTITIONS, its epoch does
not move) until a heartbeat reports them no longer owned; only then does it advance to the target epoch
and receive new partitions, and a new partition is given only once no other member holds it (the
*partition epochs* map: partition -> epoch of the member holding it, including partitions pending
revocation). A partition wanted but still held elsewhere leaves the member in UNRELEASED_PARTITIONS until
it is free. So no partition is ever owned by two members.

Group states (Kafka's names): Empty (no members), Assigning (group epoch ahead of the assignment epoch),
Reconciling (some member not yet at the assignment epoch or not Stable), Stable, Dead (unloaded/deleted).

`ConsumerGroup` also keeps the group's committed offsets (shared with the classic offsets APIs) and the
set of keys whose records must be written after a change (`dirty`); the coordinator
(`odradek.groups.consumer_coordinator`) turns those into records, owns the timers and talks to the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum

from odradek.groups.assignors import ASSIGNORS, AssignorMember
from odradek.groups.consumer_schemas import (
    Assignment,
    ClassicMemberValue,
    CurrentAssignmentValue,
    MemberMetadataValue,
)
from odradek.groups.schemas import OffsetValue, TopicPartition
from odradek.protocol.errors import ErrorCode, KafkaError

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def now_ms() -> int:
    return int(time.time() * 1000)


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


ClassicProtocol = ClassicMemberValue
"""What a member using the classic protocol (JoinGroup/SyncGroup/Heartbeat) inside a consumer group said in its
JoinGroup: its session timeout and its protocols (assignor names with their ConsumerProtocolSubscription
metadata); Kafka's ClassicMemberMetadata, as its record holds it."""


@dataclass(slots=True)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = 300_000
    server_assignor: str | None = None
    # the current assignment (what the member has been told it owns)
    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    # set for a member that uses the classic protocol (online migration), None for a consumer-protocol one
    classic: ClassicProtocol | None = None

    def metadata_value(self) -> MemberMetadataValue:
        return MemberMetadataValue(self.instance_id, self.rack_id, self.client_id, self.client_host,
                                   list(self.subscribed_topic_names), self.subscribed_topic_regex,
                                   self.rebalance_timeout_ms, self.server_assignor, self.classic)

    def assignment_value(self) -> CurrentAssignmentValue:
        return CurrentAssignmentValue(self.member_epoch, self.previous_member_epoch, int(self.state),
                                      dict(self.assigned), dict(self.pending_revocation))

    @classmethod
    def restore(cls, member_id: str, meta: MemberMetadataValue | None,
                current: CurrentAssignmentValue | None) -> ConsumerMember:
        m = cls(member_id)
        if meta is not None:
            m.instance_id, m.rack_id, m.client_id, m.client_host = (meta.instance_id, meta.rack_id, meta.client_id,
                                                                    meta.client_host)
            m.subscribed_topic_names = list(meta.subscribed_topic_names)
            m.subscribed_topic_regex = meta.subscribed_topic_regex
            m.rebalance_timeout_ms, m.server_assignor = meta.rebalance_timeout_ms, meta.server_assignor
            m.classic = meta.classic
        if current is not None:
            m.member_epoch, m.previous_member_epoch = current.member_epoch, current.previous_member_epoch
            try:
                m.state = MemberState(current.state)
            except ValueError:
                m.state = MemberState.UNKNOWN
            m.assigned, m.pending_revocation = dict(current.assigned), dict(current.pending_revocation)
        return m


# ---- the reconciliation (pure) ------------------------------------------------------------------


def owns_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Whether the member's reported partitions include any of `partitions`; unknown (None) counts as yes."""
    if owned is None:
        return True
    return any(owned.get(t, frozenset()) & ps for t, ps in partitions.items())


def reconcile(member: ConsumerMember, target: Assignment, target_epoch: int,
              partition_epoch: Callable[[bytes, int], int], owned: Assignment | None) -> ConsumerMember:
    """The member's next current assignment (a new object when anything changes; `member` is not
    modified). `partition_epoch(topic, p)` is the epoch of the member holding the partition, -1 if free;
    `owned` is what the member's heartbeat reported (None: not sent)."""
    if member.state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(member, member.member_epoch, member.assigned, target, target_epoch, partition_epoch, owned)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
        return _next(member, member.member_epoch + 1, member.assigned, target, target_epoch, partition_epoch, owned)
    if member.state is MemberState.UNRELEASED_PARTITIONS:
        return _next(member, member.member_epoch, member.assigned, target, target_epoch, partition_epoch, owned)
    if owned is None or any(owned.values()):
        raise KafkaError(ErrorCode.FENCED_MEMBER_EPOCH,
                         "The consumer group member is in an unknown state; it must give up its partitions and rejoin.")
    return _next(member, target_epoch, member.assigned, target, target_epoch, partition_epoch, owned)


def _next(member: ConsumerMember, epoch: int, current: Assignment, target: Assignment, target_epoch: int,
          partition_epoch: Callable[[bytes, int], int], owned: Assignment | None) -> ConsumerMember:
    assigned: dict[bytes, set[int]] = {}
    revoking: dict[bytes, set[int]] = {}
    pending: dict[bytes, set[int]] = {}
    unreleased = False
    for topic in set(target) | set(current):
        want = target.get(topic, frozenset())
        have = current.get(topic, frozenset())
        keep = have & want
        if keep:
            assigned[topic] = set(keep)
        if have - keep:
            revoking[topic] = set(have - keep)
        to_add = {p for p in want - keep if partition_epoch(topic, p) == -1}
        if len(to_add) < len(want - keep):
            unreleased = True
        if to_add:
            pending[topic] = to_add
    if revoking and owns_any(owned, _frozen(revoking)):
        return _with(member, MemberState.UNREVOKED_PARTITIONS, epoch, _frozen(assigned), _frozen(revoking))
    for topic, ps in pending.items():
        assigned.setdefault(topic, set()).update(ps)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return _with(member, state, target_epoch, _frozen(assigned), {})


def _with(member: ConsumerMember, state: MemberState, epoch: int, assigned: Assignment,
          revoking: Assignment) -> ConsumerMember:
    m = ConsumerMember(**{f: getattr(member, f) for f in ConsumerMember.__dataclass_fields__})
    m.state, m.assigned, m.pending_revocation = state, assigned, revoking
    if epoch != member.member_epoch:
        m.previous_member_epoch, m.member_epoch = member.member_epoch, epoch
    return m


def _frozen(a: Mapping[bytes, Iterable[int]]) -> Assignment:
    return {t: frozenset(ps) for t, ps in a.items() if ps}


def same_assignment(a: Assignment, b: Assignment) -> bool:
    return _frozen(a) == _frozen(b)


# ---- the embedded consumer protocol of classic members (ConsumerProtocolSubscription/Assignment) ----


@dataclass(frozen=True, slots=True)
class ClassicSubscription:
    version: int
    topics: list[str]
    owned: dict[str, list[int]]
    rack_id: str | None


class _Reader:
    """The classic (non-flexible) encoding: int16-length strings, int32-count arrays, int32-length bytes."""

    def __init__(self, buf: bytes) -> None:
        self.buf, self.pos = bytes(buf), 0

    def more(self) -> bool:
        return self.pos < len(self.buf)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise ValueError("ends early")
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return int.from_bytes(self.take(2), "big", signed=True)

    def int32(self) -> int:
        return int.from_bytes(self.take(4), "big", signed=True)

    def string(self) -> str | None:
        n = self.int16()
        return None if n < 0 else self.take(n).decode("utf-8")

    def count(self) -> int:
        n = self.int32()
        if n > len(self.buf):
            raise ValueError("implausible array length")
        return max(n, 0)

    def skip_bytes(self) -> None:
        n = self.int32()
        if n > 0:
            self.take(n)

    def partitions(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for _ in range(self.count()):
            topic = self.string() or ""
            out.setdefault(topic, []).extend(self.int32() for _ in range(self.count()))
        return out


def _malformed(what: str) -> KafkaError:
    return KafkaError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"Malformed embedded consumer protocol ({what}).")


def parse_classic_subscription(metadata: bytes) -> ClassicSubscription:
    """A ConsumerProtocolSubscription (v0-3; later versions read as v3): topics, owned partitions (v1+),
    rack (v3+). INCONSISTENT_GROUP_PROTOCOL if it does not parse."""
    try:
        r = _Reader(metadata)
        version = r.int16()
        topics = [r.string() or "" for _ in range(r.count())]
        r.skip_bytes()  # user data
        owned = r.partitions() if version >= 1 and r.more() else {}
        if version >= 2 and r.more():
            r.int32()  # generation id
        rack = r.string() if version >= 3 and r.more() else None
        return ClassicSubscription(version, topics, owned, rack)
    except (ValueError, UnicodeDecodeError):
        raise _malformed("subscription") from None


def parse_classic_assignment(data: bytes) -> dict[str, list[int]]:
    """The partitions of a ConsumerProtocolAssignment (an empty one: none)."""
    if not data:
        return {}
    try:
        r = _Reader(data)
        r.int16()
        return r.partitions()
    except (ValueError, UnicodeDecodeError):
        raise _malformed("assignment") from None


def classic_assignment_bytes(version: int, partitions: Mapping[str, Iterable[int]]) -> bytes:
    """A ConsumerProtocolAssignment of `version` (clamped to 0-3) without user data."""
    out = [max(0, min(version, 3)).to_bytes(2, "big"), len(partitions).to_bytes(4, "big")]
    for topic in sorted(partitions):
        name = topic.encode()
        ps = sorted(partitions[topic])
        out += [len(name).to_bytes(2, "big"), name, len(ps).to_bytes(4, "big")]
        out += [p.to_bytes(4, "big", signed=True) for p in ps]
    out.append((-1).to_bytes(4, "big", signed=True))
    return b"".join(out)


def subscription_version(metadata: bytes) -> int:
    return int.from_bytes(metadata[:2], "big", signed=True) if len(metadata) >= 2 else 0


# ---- the group ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicInfo:
    topic_id: bytes
    partitions: int


class ConsumerGroup:
    """One consumer group's state; see the module docstring."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.members: dict[str, ConsumerMember] = {}
        self.targets: dict[str, Assignment] = {}
        self.partition_epochs: dict[tuple[bytes, int], int] = {}
        self.static_members: dict[str, str] = {}  # instance id -> member id
        self.offsets: dict[TopicPartition, OffsetValue] = {}
        # topic name -> metadata the target was computed from; None after a load (not in the records)
        self.subscribed: dict[str, TopicInfo] | None = {}
        self.regex_topics: dict[str, frozenset[str]] = {}  # regex -> topics it matched at the last refresh
        self.assignor = ""
        self.state_timestamp = now_ms()
        self.dead = False
        # keys whose records are due: ("group",), ("target_meta",), ("member", id), ("target", id), ("current", id),
        # ("regex", pattern)
        self.dirty: set[tuple[str, ...]] = set()

    def __repr__(self) -> str:
        return f"ConsumerGroup({self.group_id!r}, {self.state.value}, epoch={self.group_epoch})"

    # ---- state ----
    @property
    def state(self) -> ConsumerGroupState:
        if self.dead:
            return ConsumerGroupState.DEAD
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch != self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE
               for m in self.members.values()):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def bump_epoch(self) -> None:
        self.group_epoch += 1
        self.dirty.add(("group",))

    def partition_epoch(self, topic: bytes, partition: int) -> int:
        return self.partition_epochs.get((topic, partition), -1)

    # ---- members ----
    def put_member(self, new: ConsumerMember) -> None:
        """Add or replace a member, keeping the partition epochs in step with its current assignment."""
        old = self.members.get(new.member_id)
        if old is not None:
            self._release(old)
        elif not self.members:
            self.state_timestamp = now_ms()
        self.members[new.member_id] = new
        if new.instance_id is not None:
            self.static_members[new.instance_id] = new.member_id
        self._hold(new)
        if old is not None and old.subscribed_topic_regex != new.subscribed_topic_regex:
            self._prune_regexes()

    def _prune_regexes(self) -> None:
        """Forget the resolution of regexes no member subscribes to any more (a member subscribing to one
        again waits for a new resolution, as in Kafka)."""
        used = {m.subscribed_topic_regex for m in self.members.values()}
        self._set_regex_topics({p: ts for p, ts in self.regex_topics.items() if p in used})

    def _set_regex_topics(self, fresh: dict[str, frozenset[str]]) -> bool:
        """Take these resolutions; each regex whose result changed or that was dropped is due to be
        written (type 16). True if any changed."""
        changed = {p for p in fresh.keys() | self.regex_topics.keys() if fresh.get(p) != self.regex_topics.get(p)}
        self.dirty.update(("regex", p) for p in changed)
        self.regex_topics = fresh
        return bool(changed)

    def _release(self, m: ConsumerMember) -> None:
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    if self.partition_epochs.get((t, p)) is not None:
                        del self.partition_epochs[(t, p)]

    def _hold(self, m: ConsumerMember) -> None:
        for a in (m.assigned, m.pending_revocation):
            for t, ps in a.items():
                for p in ps:
                    self.partition_epochs[(t, p)] = m.member_epoch

    def remove_member(self, member_id: str) -> ConsumerMember | None:
        """Drop a member with its assignment and target; bumps the group epoch."""
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        self._release(m)
        self.targets.pop(member_id, None)
        if m.instance_id is not None and self.static_members.get(m.instance_id) == member_id:
            del self.static_members[m.instance_id]
        self.dirty.update({("member", member_id), ("target", member_id), ("current", member_id)})
        self.bump_epoch()
        self._prune_regexes()
        if not self.members:
            self.state_timestamp = now_ms()
        return m

    def replace_static(self, old_id: str, new: ConsumerMember) -> None:
        """A static member rejoining under a new member id takes over the old one's assignment and target
        without a new group epoch (no rebalance for the others)."""
        old = self.members.pop(old_id)
        self._release(old)
        self.targets[new.member_id] = self.targets.pop(old_id, {})
        self.dirty.update({("member", old_id), ("target", old_id), ("current", old_id),
                           ("member", new.member_id), ("target", new.member_id), ("current", new.member_id)})
        self.put_member(new)

    def classic_members(self) -> list[ConsumerMember]:
        return [m for m in self.members.values() if m.classic is not None]

    def supports_classic(self, protocol_type: str, names: Iterable[str]) -> bool:
        """Kafka's supportsClassicProtocols: a classic member may join if it speaks the consumer protocol
        type and, when classic members are already here, shares a protocol with all of them."""
        wanted = set(names)
        if protocol_type != "consumer" or not wanted:
            return False
        for m in self.classic_members():
            assert m.classic is not None
            wanted &= set(m.classic.names())
        return bool(wanted)

    def waiting_on_unreleased(self, member: ConsumerMember) -> bool:
        """Whether some partition of the member's target that it does not hold is still held by another."""
        for t, ps in self.target_of(member.member_id).items():
            for p in ps - member.assigned.get(t, frozenset()):
                if self.partition_epoch(t, p) != -1:
                    return True
        return False

    def subscriptions_of(self, member: ConsumerMember) -> set[str]:
        topics = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex is not None:
            topics |= self.regex_topics.get(member.subscribed_topic_regex, frozenset())
        return topics

    def subscribed_names(self) -> set[str]:
        out: set[str] = set()
        for m in self.members.values():
            out |= self.subscriptions_of(m)
        return out

    def unresolved_regexes(self) -> set[str]:
        """Regexes some member subscribes to that were never resolved for this group (Kafka resolves a new
        regex asynchronously: until then it matches nothing for the assignor)."""
        return {m.subscribed_topic_regex for m in self.members.values()
                if m.subscribed_topic_regex is not None and m.subscribed_topic_regex not in self.regex_topics}

    def regexes_to_refresh(self, only_resolved: bool = False) -> set[str]:
        """The members' regexes (only those resolved before if `only_resolved`)."""
        wanted = {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex is not None}
        return wanted & set(self.regex_topics) if only_resolved else wanted

    def take_regex_topics(self, resolved: Mapping[str, frozenset[str]]) -> bool:
        """Take fresh resolutions (`regexes_to_refresh` matched against the topic names); regexes no member
        uses any more are dropped. True if any result changed."""
        used = {m.subscribed_topic_regex for m in self.members.values() if m.subscribed_topic_regex is not None}
        fresh = {p: ts for p, ts in self.regex_topics.items() if p in used}
        fresh.update((p, ts) for p, ts in resolved.items() if p in used)
        return self._set_regex_topics(fresh)

    def refresh_metadata(self, lookup: Callable[[str], TopicInfo | None]) -> bool:
        """Take the subscribed topics' ids and partition counts from the cluster; a change bumps the
        group epoch (returns True)."""
        fresh = {}
        for name in sorted(self.subscribed_names()):
            info = lookup(name)
            if info is not None:
                fresh[name] = info
        if fresh == self.subscribed:
            return False
        if self.subscribed is None and self._target_covers(fresh):
            self.subscribed = fresh  # just loaded, and the target was computed for these very partitions
            return False
        self.subscribed = fresh
        self.bump_epoch()
        return True

    def _target_covers(self, topics: Mapping[str, TopicInfo]) -> bool:
        expected = {(i.topic_id, p) for i in topics.values() for p in range(i.partitions)}
        targeted = {(t, p) for a in self.targets.values() for t, ps in a.items() for p in ps}
        return expected == targeted

    # ---- the target assignment ----
    def preferred_assignor(self, default: str) -> str:
        """The assignor most members name (ties: by name), else the broker's default."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return max(sorted(votes), key=lambda n: votes[n])

    def compute_target(self, default_assignor: str) -> None:
        """Run the assignor for the current group epoch."""
        self.assignor = self.preferred_assignor(default_assignor)
        assign = ASSIGNORS[self.assignor]
        ids = dict(self.subscribed or {})
        members = [AssignorMember(m.member_id, m.instance_id,
                                  frozenset(ids[n].topic_id for n in self.subscriptions_of(m) if n in ids),
                                  self.targets.get(m.member_id, {}))
                   for m in self.members.values()]
        result = assign(members, {info.topic_id: info.partitions for info in ids.values()})
        for mid, a in result.items():
            if not same_assignment(self.targets.get(mid, {}), a):
                self.dirty.add(("target", mid))
            self.targets[mid] = _frozen(a)
        self.assignment_epoch = self.group_epoch
        self.dirty.add(("target_meta",))

    def target_of(self, member_id: str) -> Assignment:
        return self.targets.get(member_id, {})

    # ---- restoring from records ----
    @classmethod
    def restore(cls, group_id: str, epoch: int, assignment_epoch: int, members: Mapping[str, MemberMetadataValue],
                targets: Mapping[str, Assignment], current: Mapping[str, CurrentAssignmentValue],
                offsets: Mapping[TopicPartition, OffsetValue],
                regexes: Mapping[str, frozenset[str]] | None = None) -> ConsumerGroup:
        g = cls(group_id)
        g.group_epoch, g.assignment_epoch = epoch, assignment_epoch
        g.offsets = dict(offsets)
        for mid, meta in members.items():
            g.put_member(ConsumerMember.restore(mid, meta, current.get(mid)))
        used = {m.subscribed_topic_regex for m in g.members.values()}
        g.regex_topics = {p: ts for p, ts in (regexes or {}).items() if p in used}
        g.targets = {mid: dict(a) for mid, a in targets.items() if mid in g.members}
        g.subscribed = None
        g.dirty.clear()
        return g

    # ---- offsets ----
    def expired_offsets(self, now: int, retention_ms: int) -> list[TopicPartition]:
        """KIP-211 as for classic groups: an Empty group's offsets expire counted from when it became
        empty; a group with members keeps the offsets of topics it subscribes to."""
        def expired(v: OffsetValue, base: int) -> bool:
            if v.expire_timestamp >= 0:
                return now >= v.expire_timestamp
            return now - base >= retention_ms

        if not self.members:
            return [tp for tp, v in self.offsets.items() if expired(v, max(self.state_timestamp, v.commit_timestamp))]
        topics = self.subscribed_names()
        return [tp for tp, v in self.offsets.items() if tp[0] not in topics and expired(v, v.commit_timestamp)]
