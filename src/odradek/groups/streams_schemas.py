"""Kafka's records of KIP-1071 streams groups in `__consumer_offsets` (Kafka 4.4's layouts), in the key and
value encodings of `odradek.groups.consumer_schemas` (a key: int16 record type and int16-length strings; a
value: int16 version 0 and a flexible struct, unknown tagged fields skipped). A null value deletes the key.

    type 17 StreamsGroupMetadata               key: group          value: Epoch int32, MetadataHash int64
    type 19 StreamsGroupMemberMetadata         key: group, member  value: InstanceId string?, RackId string?,
                                                                          ClientId, ClientHost,
                                                                          RebalanceTimeoutMs int32,
                                                                          TopologyEpoch int32, ProcessId,
                                                                          UserEndpoint {Host, Port uint16}?,
                                                                          ClientTags [Key, Value]
    type 20 StreamsGroupTargetAssignmentMetadata key: group        value: AssignmentEpoch int32
    type 21 StreamsGroupTargetAssignmentMember key: group, member  value: ActiveTasks, StandbyTasks, WarmupTasks
                                                                          (each [SubtopologyId, Partitions []int32])
    type 22 StreamsGroupCurrentMemberAssignment key: group, member value: MemberEpoch int32,
                                                                          PreviousMemberEpoch int32, State int8,
                                                                          the three task lists, then the three
                                                                          pending revocation
    type 23 StreamsGroupTopology               key: group          value: Epoch int32, Subtopologies [the
                                                                          topology as StreamsGroupHeartbeat
                                                                          sends it]

MetadataHash is written 0 ("unknown"): the topology is configured against the cluster's topics on every
heartbeat. Type 18 (an early StreamsGroupPartitionMetadata) is skipped when read, as Kafka does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.groups import consumer_schemas as cs
from odradek.groups.consumer_schemas import ValueReader, ValueWriter
from odradek.groups.schemas import SchemaError
from odradek.groups.streams_assignor import Tasks
from odradek.groups.streams_topology import InternalTopic, Subtopology, Topology

GROUP_METADATA, PARTITION_METADATA = 17, 18
MEMBER_METADATA, TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, TOPOLOGY = (
    19, 20, 21, 22, 23)
RECORD_TYPES = frozenset(range(17, 24))
MEMBER_RECORD_TYPES = (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)  # tombstone order
GROUP_RECORD_TYPES = (TOPOLOGY, TARGET_ASSIGNMENT_METADATA, GROUP_METADATA)  # written last, in this order
# Kafka's streams MemberState values
STATE_STABLE, STATE_UNREVOKED_TASKS, STATE_UNRELEASED_TASKS = 1, 2, 3


@dataclass(slots=True)
class StreamsMemberValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    topology_epoch: int
    process_id: str
    user_endpoint: tuple[str, int] | None = None
    client_tags: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class StreamsCurrentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)
    active_revoking: Tasks = field(default_factory=dict)


# ---- writing ------------------------------------------------------------------------------------


def _tasks(out: ValueWriter, tasks: Tasks) -> ValueWriter:
    out.uvarint(len(tasks) + 1)
    for s in sorted(tasks):
        out.string(s).int32s(sorted(tasks[s])).tags()
    return out


def _read_tasks(r: ValueReader) -> Tasks:
    out: dict[str, frozenset[int]] = {}
    for _ in range(r._count()):
        s = r.string() or ""
        out[s] = frozenset(r.int32s())
        r.tags()
    return out


def _key_values(out: ValueWriter, kv: list[tuple[str, str]]) -> None:
    out.uvarint(len(kv) + 1)
    for k, v in kv:
        out.string(k).string(v).tags()


def _read_key_values(r: ValueReader) -> list[tuple[str, str]]:
    out = []
    for _ in range(r._count()):
        out.append((r.string() or "", r.string() or ""))
        r.tags()
    return out


def encode_group_metadata(epoch: int) -> bytes:
    return ValueWriter().int32(epoch).int64(0).done()


def decode_group_metadata(buf: bytes) -> int:
    r = ValueReader(buf, "streams group metadata")
    epoch = r.int32()
    r.int64()
    r.end()
    return epoch


def encode_member_metadata(v: StreamsMemberValue) -> bytes:
    out = (ValueWriter().string(v.instance_id).string(v.rack_id).string(v.client_id).string(v.client_host)
           .int32(v.rebalance_timeout_ms).int32(v.topology_epoch).string(v.process_id))
    if v.user_endpoint is None:
        out.int8(-1)
    else:
        out.int8(1).string(v.user_endpoint[0]).int16(v.user_endpoint[1] - (1 << 16 if v.user_endpoint[1] >= 1 << 15
                                                                              else 0)).tags()
    _key_values(out, sorted(v.client_tags.items()))
    return out.done()


def decode_member_metadata(buf: bytes) -> StreamsMemberValue:
    r = ValueReader(buf, "streams group member metadata")
    v = StreamsMemberValue(r.string(), r.string(), r.string() or "", r.string() or "", r.int32(), r.int32(),
                           r.string() or "")
    present = r.int8()
    if present >= 0:
        host = r.string() or ""
        v.user_endpoint = (host, r.int16() & 0xFFFF)
        r.tags()
    v.client_tags = dict(_read_key_values(r))
    r.end()
    return v


def encode_target_member(active: Tasks, standby: Tasks) -> bytes:
    out = ValueWriter()
    _tasks(_tasks(_tasks(out, active), standby), {})
    return out.done()


def decode_target_member(buf: bytes) -> tuple[Tasks, Tasks]:
    r = ValueReader(buf, "streams group target assignment member")
    active, standby = _read_tasks(r), _read_tasks(r)
    _read_tasks(r)  # warm-up tasks: none are assigned here
    r.end()
    return active, standby


def encode_current_assignment(v: StreamsCurrentValue) -> bytes:
    out = ValueWriter().int32(v.member_epoch).int32(v.previous_member_epoch).int8(v.state)
    for tasks in (v.active, v.standby, v.warmup, v.active_revoking, {}, {}):
        _tasks(out, tasks)
    return out.done()


def decode_current_assignment(buf: bytes) -> StreamsCurrentValue:
    r = ValueReader(buf, "streams group current member assignment")
    v = StreamsCurrentValue(r.int32(), r.int32(), r.int8(), _read_tasks(r), _read_tasks(r), _read_tasks(r),
                            _read_tasks(r))
    _read_tasks(r)
    _read_tasks(r)
    r.end()
    return v


def _topics(out: ValueWriter, topics: tuple[InternalTopic, ...]) -> None:
    out.uvarint(len(topics) + 1)
    for t in topics:
        out.string(t.name).int32(t.partitions).int16(t.replication_factor)
        _key_values(out, list(t.configs))
        out.tags()


def _read_topics(r: ValueReader) -> tuple[InternalTopic, ...]:
    out = []
    for _ in range(r._count()):
        name = r.string() or ""
        partitions, rf = r.int32(), r.int16()
        out.append(InternalTopic(name, partitions, rf, tuple(_read_key_values(r))))
        r.tags()
    return tuple(out)


def _int16s(out: ValueWriter, items: tuple[int, ...]) -> None:
    out.uvarint(len(items) + 1)
    for i in items:
        out.int16(i)


def _read_int16s(r: ValueReader) -> tuple[int, ...]:
    return tuple(r.int16() for _ in range(r._count()))


def encode_topology(t: Topology) -> bytes:
    out = ValueWriter().int32(t.epoch)
    out.uvarint(len(t.subtopologies) + 1)
    for s in t.subtopologies:
        out.string(s.subtopology_id).strings(list(s.source_topics)).strings(list(s.source_topic_regex))
        _topics(out, s.changelog_topics)
        out.strings(list(s.repartition_sink_topics))
        _topics(out, s.repartition_source_topics)
        out.uvarint(len(s.copartition_groups) + 1)
        for group in s.copartition_groups:
            for indices in group:
                _int16s(out, indices)
            out.tags()
        out.tags()
    return out.done()


def decode_topology(buf: bytes) -> Topology:
    r = ValueReader(buf, "streams group topology")
    epoch = r.int32()
    subs = []
    for _ in range(r._count()):
        sid = r.string() or ""
        sources, regex = tuple(r.strings()), tuple(r.strings())
        changelogs = _read_topics(r)
        sinks = tuple(r.strings())
        repartition = _read_topics(r)
        groups = []
        for _ in range(r._count()):
            groups.append((_read_int16s(r), _read_int16s(r), _read_int16s(r)))
            r.tags()
        r.tags()
        subs.append(Subtopology(sid, sources, regex, changelogs, sinks, repartition, tuple(groups)))
    r.end()
    return Topology(epoch, tuple(subs))


def _epoch(buf: bytes) -> int:
    return cs.decode_epoch(buf, "streams group target assignment metadata")


# ---- what a partition replays into ---------------------------------------------------------------


@dataclass(slots=True)
class LoadedStreamsGroup:
    """The streams-group records of one group, folded (the last record of each key wins)."""

    epoch: int | None = None
    assignment_epoch: int = 0
    topology: Topology | None = None
    members: dict[str, StreamsMemberValue] = field(default_factory=dict)
    targets: dict[str, tuple[Tasks, Tasks]] = field(default_factory=dict)
    current: dict[str, StreamsCurrentValue] = field(default_factory=dict)

    def apply(self, key: cs.ConsumerKey, value: bytes | None) -> None:
        t, member = key.record_type, key.member or ""
        if t == GROUP_METADATA:
            self.epoch = None if value is None else decode_group_metadata(value)
        elif t == TARGET_ASSIGNMENT_METADATA:
            self.assignment_epoch = 0 if value is None else _epoch(value)
        elif t == TOPOLOGY:
            self.topology = None if value is None else decode_topology(value)
        elif t in (MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT):
            entries: dict[str, object] = {MEMBER_METADATA: self.members, TARGET_ASSIGNMENT_MEMBER: self.targets,
                                          CURRENT_MEMBER_ASSIGNMENT: self.current}[t]  # type: ignore[assignment]
            if value is None:
                entries.pop(member, None)
            else:
                decode = {MEMBER_METADATA: decode_member_metadata, TARGET_ASSIGNMENT_MEMBER: decode_target_member,
                          CURRENT_MEMBER_ASSIGNMENT: decode_current_assignment}[t]
                entries[member] = decode(value)
        elif t != PARTITION_METADATA:
            raise SchemaError(f"unknown streams group record type {t}")
