"""Kafka's records of KIP-932 share groups in `__consumer_offsets` (Kafka 4.1's layouts), beside the
consumer groups' of `odradek.groups.consumer_schemas`, whose key and value encodings they use: a key is
an int16 record type and int16-length strings; a value is an int16 version (0 for all of these) and a
flexible struct (compact strings and arrays, 16-byte uuids, a tagged-field section closing every struct;
unknown tags are skipped). A null value (tombstone) deletes the key.

    type 10 ShareGroupMemberMetadata           key: group, member    value: RackId string?, ClientId,
                                                                            ClientHost,
                                                                            SubscribedTopicNames []string
    type 11 ShareGroupMetadata                 key: group            value: Epoch int32, MetadataHash int64
    type 12 ShareGroupTargetAssignmentMetadata key: group            value: AssignmentEpoch int32
    type 13 ShareGroupTargetAssignmentMember   key: group, member    value: TopicPartitions [TopicId uuid,
                                                                            Partitions []int32]
    type 14 ShareGroupCurrentMemberAssignment  key: group, member    value: MemberEpoch int32,
                                                                            PreviousMemberEpoch int32,
                                                                            State int8,
                                                                            AssignedPartitions [TopicId uuid,
                                                                            Partitions []int32]
    type 15 ShareGroupStatePartitionMetadata   key: group            value: InitializingTopics [TopicId uuid,
                                                                            TopicName, Partitions []int32],
                                                                            InitializedTopics [same],
                                                                            DeletingTopics [TopicId uuid,
                                                                            TopicName]

MetadataHash (KIP-1101: a hash of the subscribed topics' metadata) is written 0, "unknown": Kafka then
recomputes the assignment once after a load, and this coordinator recomputes it on every heartbeat anyway;
a Kafka 4.0 ShareGroupMetadata value (Epoch alone) is read too. Type 9 (ShareGroupPartitionMetadata, Kafka
4.0's copy of the subscribed topics' metadata) is not written, and skipped when read, as Kafka 4.1 does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from odradek.groups import consumer_schemas as cs
from odradek.groups.consumer_schemas import ValueReader, ValueWriter
from odradek.groups.schemas import SchemaError

# the record types (keys' versions), 9 to 15 as the table above lists them
(PARTITION_METADATA, MEMBER_METADATA, GROUP_METADATA, TARGET_ASSIGNMENT_METADATA, TARGET_ASSIGNMENT_MEMBER,
 CURRENT_MEMBER_ASSIGNMENT, STATE_PARTITION_METADATA) = RECORD_TYPES = range(9, 16)
MEMBER_RECORD_TYPES = (CURRENT_MEMBER_ASSIGNMENT, TARGET_ASSIGNMENT_MEMBER, MEMBER_METADATA)  # tombstone order
GROUP_RECORD_TYPES = (TARGET_ASSIGNMENT_METADATA, STATE_PARTITION_METADATA, GROUP_METADATA)  # written last
STABLE = 0  # MemberState: a share member has nothing to revoke, so it is always stable

Assignment = cs.Assignment
TopicPartitions = dict[bytes, tuple[str, frozenset[int]]]  # topic id -> (topic name, partitions)


@dataclass(slots=True)
class ShareMemberValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]


@dataclass(slots=True)
class ShareCurrentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int = STABLE
    assigned: Assignment = field(default_factory=dict)


@dataclass(slots=True)
class StatePartitionValue:
    """The partitions whose share-partition state is being initialized or is initialized, and the
    topics whose state is being deleted."""

    initializing: TopicPartitions = field(default_factory=dict)
    initialized: TopicPartitions = field(default_factory=dict)
    deleting: dict[bytes, str] = field(default_factory=dict)


# ---- values -------------------------------------------------------------------------------------


def encode_member_metadata(v: ShareMemberValue) -> bytes:
    return (ValueWriter().string(v.rack_id).string(v.client_id).string(v.client_host).strings(v.subscribed_topic_names)
            .done())


def decode_member_metadata(buf: bytes) -> ShareMemberValue:
    r = ValueReader(buf, "share group member metadata")
    v = ShareMemberValue(r.string(), r.string() or "", r.string() or "", r.strings())
    r.end()
    return v


def encode_group_metadata(epoch: int, metadata_hash: int = 0) -> bytes:
    return ValueWriter().int32(epoch).int64(metadata_hash).done()


def decode_group_metadata(buf: bytes) -> int:
    """The group epoch."""
    r = ValueReader(buf, "share group metadata")
    epoch = r.int32()
    if len(r.buf) - r.pos >= 9:  # Kafka 4.1+: MetadataHash, then the tagged fields (4.0 has no hash)
        r._take(8)
    r.end()
    return epoch


def encode_current_assignment(v: ShareCurrentValue) -> bytes:
    return ValueWriter().int32(v.member_epoch).int32(v.previous_member_epoch).int8(v.state).assignment(v.assigned).done()


def decode_current_assignment(buf: bytes) -> ShareCurrentValue:
    r = ValueReader(buf, "share group current member assignment")
    v = ShareCurrentValue(r.int32(), r.int32(), r.int8(), r.assignment())
    r.end()
    return v


def _put_topics(out: ValueWriter, topics: TopicPartitions) -> None:
    out.uvarint(len(topics) + 1)
    for topic_id in sorted(topics):
        name, partitions = topics[topic_id]
        out.parts.append(_uuid(topic_id))
        out.string(name).int32s(sorted(partitions)).tags()


def _uuid(topic_id: bytes) -> bytes:
    if len(topic_id) != 16:
        raise SchemaError(f"topic id of {len(topic_id)} bytes")
    return bytes(topic_id)


def encode_state_partition_metadata(v: StatePartitionValue) -> bytes:
    out = ValueWriter()
    _put_topics(out, v.initializing)
    _put_topics(out, v.initialized)
    out.uvarint(len(v.deleting) + 1)
    for topic_id in sorted(v.deleting):
        out.parts.append(_uuid(topic_id))
        out.string(v.deleting[topic_id]).tags()
    return out.done()


def decode_state_partition_metadata(buf: bytes) -> StatePartitionValue:
    r = ValueReader(buf, "share group state partition metadata")

    def topics() -> TopicPartitions:
        out: TopicPartitions = {}
        for _ in range(r._count()):
            topic_id = r._take(16)
            name = r.string() or ""
            out[topic_id] = (name, frozenset(r.int32s()))
            r.tags()
        return out

    v = StatePartitionValue(topics(), topics())
    for _ in range(r._count()):
        topic_id = r._take(16)
        v.deleting[topic_id] = r.string() or ""
        r.tags()
    r.end()
    return v


# ---- what a partition replays into ---------------------------------------------------------------


@dataclass(slots=True)
class LoadedShareGroup(cs.LoadedGroupRecords[ShareMemberValue, ShareCurrentValue]):
    """The share-group records of one group, folded (last record of each key wins)."""

    state_partitions: StatePartitionValue | None = None
    RECORDS = {
        GROUP_METADATA: ("epoch", decode_group_metadata),
        TARGET_ASSIGNMENT_METADATA: ("assignment_epoch",
                                     lambda v: cs.decode_epoch(v, "share group target assignment metadata")),
        STATE_PARTITION_METADATA: ("state_partitions", decode_state_partition_metadata),
        MEMBER_METADATA: ("members", decode_member_metadata),
        TARGET_ASSIGNMENT_MEMBER: ("targets", cs.decode_target_member),
        CURRENT_MEMBER_ASSIGNMENT: ("current", decode_current_assignment),
    }

    def partitions(self, initializing: bool = False) -> set[tuple[bytes, int]]:
        """The (topic id, partition)s whose share-partition state is initialized (`initializing`: those
        whose initialization was started and not seen to end)."""
        sp = self.state_partitions
        if sp is None:
            return set()
        topics = sp.initializing if initializing else sp.initialized
        return {(t, p) for t, (_n, ps) in topics.items() for p in ps}
