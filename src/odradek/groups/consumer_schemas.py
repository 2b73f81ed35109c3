"""Kafka's records of KIP-848 consumer groups in `__consumer_offsets` (beside the classic formats of
`odradek.groups.schemas`).

A key is an int16 *record type* (Kafka calls it the key version) and a non-flexible struct of int16-length
strings. A value is an int16 version (0 for all of these) and a flexible struct: compact strings and
arrays (unsigned varint length + 1, 0 for null), 16-byte uuids, and an empty tagged-field section at the
end of every struct. A null value (tombstone) deletes the key.

    type 3  ConsumerGroupMetadata                 key: group            value: Epoch int32
    type 5  ConsumerGroupMemberMetadata           key: group, member    value: InstanceId string?, RackId string?,
                                                  ClientId, ClientHost, SubscribedTopicNames []string,
                                                  SubscribedTopicRegex string?, RebalanceTimeoutMs int32,
                                                  ServerAssignor string?
    type 6  ConsumerGroupTargetAssignmentMetadata key: group            value: AssignmentEpoch int32
    type 7  ConsumerGroupTargetAssignmentMember   key: group, member    value: TopicPartitions [TopicId uuid,
                                                                               Partitions []int32]
    type 8  ConsumerGroupCurrentMemberAssignment  key: group, member    value: MemberEpoch int32,
                                                  PreviousMemberEpoch int32, State int8,
                                                  AssignedPartitions [..], PartitionsPendingRevocation [..]
    type 16 ConsumerGroupRegularExpression        key: group, regex     value: Topics []string, Version int64,
                                                                               Timestamp int64

Type 4 (ConsumerGroupPartitionMetadata, the subscribed topics' metadata) is not written: the coordinator
recomputes it from the cluster metadata after a load, as Kafka 4.1 does (KIP-1101); a type-4 record
written by another broker is skipped. ClassicMemberMetadata (tagged field 0 of the member value: SessionTimeoutMs
int32, SupportedProtocols [Name string, Metadata bytes]) is written for a member that uses the classic protocol
inside a consumer group (online migration) and read back, so it stays a classic member after a load.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from odradek.groups.schemas import Reader, Records, SchemaError, Writer

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
REGULAR_EXPRESSION = 16  # ConsumerGroupRegularExpression: key (group, regex), value what it resolved to
RECORD_TYPES = frozenset(range(3, 9)) | {REGULAR_EXPRESSION}
# the record types whose key holds a second string after the group (a member id, or a regex): these and
# the share groups' member records (types 10, 13 and 14, `odradek.groups.share_schemas`) and the streams
# groups' (types 19, 21 and 22, `odradek.groups.streams_schemas`)
_WITH_MEMBER = frozenset({MEMBER_METADATA, TARGET_ASSIGNMENT_MEMBER, CURRENT_MEMBER_ASSIGNMENT, 10, 13, 14,
                          19, 21, 22, REGULAR_EXPRESSION})

Assignment = dict[bytes, frozenset[int]]  # topic id -> partitions

M = TypeVar("M")  # a member's metadata value
C = TypeVar("C")  # a member's current assignment value

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I8 = struct.Struct(">b")


@dataclass(frozen=True, slots=True)
class ConsumerKey:
    """The key of a consumer group's record, or of a share group's (`odradek.groups.share_schemas`)."""

    record_type: int
    group: str
    member: str | None = None


@dataclass(slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberValue | None = None


@dataclass(frozen=True, slots=True)
class ClassicMemberValue:
    """ClassicMemberMetadata: a classic member's session timeout and JoinGroup protocols."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]

    def names(self) -> list[str]:
        return [name for name, _ in self.protocols]


@dataclass(frozen=True, slots=True)
class RegexValue:
    """ConsumerGroupRegularExpressionValue: the topics a regex matched, the metadata version it was
    matched against (written 0: Odradek's metadata has no such version) and when (ms)."""

    topics: tuple[str, ...]
    version: int = 0
    timestamp: int = 0


@dataclass(slots=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)


# ---- keys ---------------------------------------------------------------------------------------


def encode_key(key: ConsumerKey) -> bytes:
    w = Writer().int16(key.record_type).string(key.group)
    if key.record_type in _WITH_MEMBER:
        w.string(key.member or "")
    return w.done()


def decode_key(record_type: int, buf: bytes) -> ConsumerKey:
    """The rest of a key whose first two bytes said `record_type` (one of RECORD_TYPES, or of the share
    groups' `share_schemas.RECORD_TYPES`)."""
    pos = 2
    group, pos = _read_short_string(buf, pos)
    member = None
    if record_type in _WITH_MEMBER:
        member, pos = _read_short_string(buf, pos)
    if pos != len(buf):
        raise SchemaError(f"{len(buf) - pos} unexpected bytes after a record key of type {record_type}")
    return ConsumerKey(record_type, group, member)


def _read_short_string(buf: bytes, pos: int) -> tuple[str, int]:
    if pos + 2 > len(buf):
        raise SchemaError("key ends inside a string length")
    (n,) = _I16.unpack_from(buf, pos)
    pos += 2
    if n < 0 or pos + n > len(buf):
        raise SchemaError(f"bad string length {n} in a record key")
    try:
        return buf[pos:pos + n].decode("utf-8"), pos + n
    except UnicodeDecodeError as exc:
        raise SchemaError("record key string is not UTF-8") from exc


# ---- flexible values ----------------------------------------------------------------------------


class ValueWriter(Writer):
    """A value: version 0, then a flexible struct (whose strings are compact ones)."""

    def __init__(self) -> None:
        super().__init__()
        self.int16(0)  # value version 0

    def uvarint(self, v: int) -> ValueWriter:
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self.parts.append(bytes(out))
        return self

    def string(self, s: str | None) -> ValueWriter:
        if s is None:
            return self.uvarint(0)
        raw = s.encode("utf-8")
        self.uvarint(len(raw) + 1)
        self.parts.append(raw)
        return self

    def strings(self, items: list[str]) -> ValueWriter:
        self.uvarint(len(items) + 1)
        for s in items:
            self.string(s)
        return self

    def int32s(self, items: list[int]) -> ValueWriter:
        self.uvarint(len(items) + 1)
        self.parts.extend(_I32.pack(i) for i in items)
        return self

    def assignment(self, a: Assignment) -> ValueWriter:
        topics = sorted(t for t, ps in a.items() if ps)
        self.uvarint(len(topics) + 1)
        for t in topics:
            if len(t) != 16:
                raise SchemaError(f"topic id of {len(t)} bytes")
            self.parts.append(bytes(t))
            self.int32s(sorted(a[t]))
            self.tags()
        return self

    def tags(self) -> ValueWriter:
        return self.uvarint(0)

    def done(self) -> bytes:
        self.tags()
        return super().done()


class ValueReader(Reader):
    """A value: version 0, then a flexible struct (whose strings are compact ones)."""

    def __init__(self, buf: bytes, what: str) -> None:
        super().__init__(buf)
        self.what = what
        version = self.int16()
        if version != 0:
            raise SchemaError(f"unknown {what} value version {version}")

    def _ends_early(self, n: int) -> str:
        return f"{self.what} value ends early (need {n} bytes at {self.pos})"

    def int8(self) -> int:
        return int(_I8.unpack(self._take(1))[0])

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise SchemaError(f"varint too long in a {self.what} value")

    def string(self) -> str | None:
        n = self.uvarint()
        if n == 0:
            return None
        try:
            return self._take(n - 1).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string in a {self.what} value is not UTF-8") from exc

    def _count(self) -> int:
        n = self.uvarint() - 1
        if n > len(self.buf):
            raise SchemaError(f"implausible array length {n} in a {self.what} value")
        return max(n, 0)

    def strings(self) -> list[str]:
        return [self.string() or "" for _ in range(self._count())]

    def int32s(self) -> list[int]:
        return [self.int32() for _ in range(self._count())]

    def assignment(self) -> Assignment:
        out: Assignment = {}
        for _ in range(self._count()):
            topic = self._take(16)
            out[topic] = frozenset(self.int32s())
            self.tags()
        return out

    def tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # tag
            self._take(self.uvarint())  # unknown tagged fields are skipped, as Kafka does

    def end(self) -> None:
        self.tags()
        if self.pos != len(self.buf):
            raise SchemaError(f"{len(self.buf) - self.pos} unexpected bytes after a {self.what} value")


def encode_epoch(epoch: int) -> bytes:
    """The value of a ConsumerGroupMetadata or ConsumerGroupTargetAssignmentMetadata record."""
    return ValueWriter().int32(epoch).done()


def decode_epoch(buf: bytes, what: str) -> int:
    r = ValueReader(buf, what)
    epoch = r.int32()
    r.end()
    return epoch


def encode_regex(v: RegexValue) -> bytes:
    return ValueWriter().strings(sorted(v.topics)).int64(v.version).int64(v.timestamp).done()


def decode_regex(buf: bytes) -> RegexValue:
    r = ValueReader(buf, "regular expression")
    v = RegexValue(tuple(r.strings()), r.int64(), r.int64())
    r.end()
    return v


def encode_member_metadata(v: MemberMetadataValue) -> bytes:
    out = (ValueWriter().string(v.instance_id).string(v.rack_id).string(v.client_id).string(v.client_host)
           .strings(v.subscribed_topic_names).string(v.subscribed_topic_regex).int32(v.rebalance_timeout_ms)
           .string(v.server_assignor))
    if v.classic is None:
        return out.done()
    body = ValueWriter()
    body.parts = []  # a nested struct: no version
    body.int32(v.classic.session_timeout_ms).uvarint(len(v.classic.protocols) + 1)
    for name, metadata in v.classic.protocols:
        body.string(name).uvarint(len(metadata) + 1)
        body.parts.append(bytes(metadata))
        body.tags()
    raw = b"".join(body.tags().parts)
    out.uvarint(1).uvarint(0).uvarint(len(raw))  # one tagged field: tag 0, its size
    out.parts.append(raw)
    return b"".join(out.parts)


def decode_member_metadata(buf: bytes) -> MemberMetadataValue:
    r = ValueReader(buf, "consumer group member metadata")
    v = MemberMetadataValue(r.string(), r.string(), r.string() or "", r.string() or "", r.strings(), r.string(),
                            r.int32(), r.string())
    for _ in range(r.uvarint()):
        tag, size = r.uvarint(), r.uvarint()
        data = r._take(size)
        if tag == 0:
            v.classic = _decode_classic(data)
    if r.pos != len(r.buf):
        raise SchemaError(f"{len(r.buf) - r.pos} unexpected bytes after a {r.what} value")
    return v


def _decode_classic(data: bytes) -> ClassicMemberValue:
    r = ValueReader(_I16.pack(0) + data, "classic member metadata")
    session = r.int32()
    protocols = []
    for _ in range(r._count()):
        name = r.string() or ""
        metadata = r._take(r.uvarint() - 1)
        r.tags()
        protocols.append((name, metadata))
    r.end()
    return ClassicMemberValue(session, tuple(protocols))


def encode_target_member(a: Assignment) -> bytes:
    return ValueWriter().assignment(a).done()


def decode_target_member(buf: bytes) -> Assignment:
    r = ValueReader(buf, "target assignment member")
    a = r.assignment()
    r.end()
    return a


def encode_current_assignment(v: CurrentAssignmentValue) -> bytes:
    return (ValueWriter().int32(v.member_epoch).int32(v.previous_member_epoch).int8(v.state).assignment(v.assigned)
            .assignment(v.pending_revocation).done())


def decode_current_assignment(buf: bytes) -> CurrentAssignmentValue:
    r = ValueReader(buf, "current member assignment")
    v = CurrentAssignmentValue(r.int32(), r.int32(), r.int8(), r.assignment(), r.assignment())
    r.end()
    return v


# ---- what a partition replays into ---------------------------------------------------------------


@dataclass(slots=True)
class LoadedGroupRecords(Generic[M, C]):
    """The records of one group of the KIP-848 kind (consumer here, share in `share_schemas`), folded: the
    last record of each key wins, a tombstone puts the field back to its default or drops the member's
    entry. `RECORDS`: record type -> (the field it sets, its value's decoder)."""

    epoch: int | None = None  # None: no group metadata record (or it was deleted)
    assignment_epoch: int = 0
    members: dict[str, M] = field(default_factory=dict)
    targets: dict[str, Assignment] = field(default_factory=dict)
    current: dict[str, C] = field(default_factory=dict)
    regexes: dict[str, RegexValue] = field(default_factory=dict)  # consumer groups only
    RECORDS: ClassVar[dict[int, tuple[str, Callable[[bytes], Any]]]] = {}

    def apply(self, key: ConsumerKey, value: bytes | None) -> None:
        where = self.RECORDS.get(key.record_type)
        if where is None:
            return
        name, decode = where
        decoded = None if value is None else decode(value)
        if key.record_type in _WITH_MEMBER:
            entries = getattr(self, name)
            if decoded is None:
                entries.pop(key.member or "", None)
            else:
                entries[key.member or ""] = decoded
        else:
            setattr(self, name, self.__dataclass_fields__[name].default if decoded is None else decoded)


class LoadedConsumerGroup(LoadedGroupRecords[MemberMetadataValue, CurrentAssignmentValue]):
    """The consumer-group records of one group, folded."""

    __slots__ = ()
    RECORDS = {
        GROUP_METADATA: ("epoch", lambda v: decode_epoch(v, "consumer group metadata")),
        TARGET_ASSIGNMENT_METADATA: ("assignment_epoch", lambda v: decode_epoch(v, "target assignment metadata")),
        MEMBER_METADATA: ("members", decode_member_metadata),
        TARGET_ASSIGNMENT_MEMBER: ("targets", decode_target_member),
        CURRENT_MEMBER_ASSIGNMENT: ("current", decode_current_assignment),
        REGULAR_EXPRESSION: ("regexes", decode_regex),
    }


def record(key: ConsumerKey, value: bytes | None) -> Records:
    return [(encode_key(key), value)]
