"""Kafka's own formats of the records in `__consumer_offsets`.

Every key and value starts with an int16 version, followed by a non-flexible struct (int16-length
strings, -1 for null; int32-length bytes; int32-count arrays; big-endian integers):

    OffsetCommitKey     key v0/v1   group string, topic string, partition int32
    GroupMetadataKey    key v2      group string
    OffsetCommitValue   v0          offset int64, metadata string, commit_timestamp int64
                        v1          ... v0 fields, then expire_timestamp int64
                        v2          same fields as v0
                        v3          offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    GroupMetadataValue  v0..v3      protocol_type string, generation int32, protocol string?, leader string?,
                                    current_state_timestamp int64 (v2+), members []:
                                      member_id string, group_instance_id string? (v3+), client_id string,
                                      client_host string, rebalance_timeout int32 (v1+),
                                      session_timeout int32, subscription bytes, assignment bytes

A null value (tombstone) deletes the key: an offset, or a whole group's metadata. `offset_records` and
`group_records` build the (key, value) pairs the coordinator hands to the store.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3  # v1 only when an expire timestamp must be kept
GROUP_VALUE_VERSION = 3

TopicPartition = tuple[str, int]
Records = list[tuple[bytes, bytes | None]]

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class SchemaError(ValueError):
    """A key or value that does not parse as any known version."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(slots=True)
class OffsetValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1
    leader_epoch: int = -1


@dataclass(slots=True)
class MemberValue:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    rebalance_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None


@dataclass(slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberValue] = field(default_factory=list)


# ---- writing ------------------------------------------------------------------------------------


class Writer:
    """The fields of a non-flexible struct; `odradek.groups.consumer_schemas` adds the flexible ones."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def _put(self, field: struct.Struct, v: int) -> Self:
        self.parts.append(field.pack(v))
        return self

    def int8(self, v: int) -> Self:
        return self._put(_I8, v)

    def int16(self, v: int) -> Self:
        return self._put(_I16, v)

    def int32(self, v: int) -> Self:
        return self._put(_I32, v)

    def int64(self, v: int) -> Self:
        return self._put(_I64, v)

    def string(self, v: str | None) -> Self:
        if v is None:
            return self.int16(-1)
        raw = v.encode("utf-8")
        if len(raw) > 0x7FFF:
            raise SchemaError(f"string of {len(raw)} bytes is too long for an int16 length")
        self.int16(len(raw))
        self.parts.append(raw)
        return self

    def bytes_(self, v: bytes | None) -> Self:
        if v is None:
            return self.int32(-1)
        self.int32(len(v))
        self.parts.append(bytes(v))
        return self

    def done(self) -> bytes:
        return b"".join(self.parts)


def encode_offset_key(key: OffsetKey, version: int = OFFSET_KEY_VERSION) -> bytes:
    if version not in (0, 1):
        raise SchemaError(f"offset commit key version {version} is not 0 or 1")
    return Writer().int16(version).string(key.group).string(key.topic).int32(key.partition).done()


def encode_group_key(key: GroupKey) -> bytes:
    return Writer().int16(GROUP_KEY_VERSION).string(key.group).done()


def offset_value_version(value: OffsetValue) -> int:
    """The version Kafka writes: v1 when an explicit expire timestamp is set, otherwise v3."""
    return 1 if value.expire_timestamp != -1 else OFFSET_VALUE_VERSION


def encode_offset_value(value: OffsetValue, version: int | None = None) -> bytes:
    v = offset_value_version(value) if version is None else version
    if v not in (0, 1, 2, 3):
        raise SchemaError(f"offset commit value version {v} is not in 0-3")
    w = Writer().int16(v).int64(value.offset)
    if v >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata).int64(value.commit_timestamp)
    if v == 1:
        w.int64(value.expire_timestamp)
    return w.done()


def _encode_member(w: Writer, m: MemberValue, version: int) -> None:
    w.string(m.member_id)
    if version >= 3:
        w.string(m.group_instance_id)
    w.string(m.client_id).string(m.client_host)
    if version >= 1:
        w.int32(m.rebalance_timeout)
    w.int32(m.session_timeout).bytes_(m.subscription).bytes_(m.assignment)


def encode_group_value(value: GroupValue, version: int = GROUP_VALUE_VERSION) -> bytes:
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"group metadata value version {version} is not in 0-3")
    w = Writer().int16(version).string(value.protocol_type).int32(value.generation)
    w.string(value.protocol).string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.int32(len(value.members))
    for m in value.members:
        _encode_member(w, m, version)
    return w.done()


def offset_records(group_id: str, offsets: Mapping[TopicPartition, OffsetValue | None]) -> Records:
    """One record per partition; None values become tombstones."""
    return [
        (encode_offset_key(OffsetKey(group_id, t, p)), None if v is None else encode_offset_value(v))
        for (t, p), v in offsets.items()
    ]


def group_records(group_id: str, value: GroupValue | None) -> Records:
    """The group's metadata record; a tombstone for None."""
    return [(encode_group_key(GroupKey(group_id)), None if value is None else encode_group_value(value))]


# ---- reading ------------------------------------------------------------------------------------


class Reader:
    """The fixed-width fields both formats share; `odradek.groups.consumer_schemas` reads the flexible ones."""

    def __init__(self, buf: bytes | bytearray | memoryview) -> None:
        self.buf = bytes(buf)
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.buf):
            raise SchemaError(self._ends_early(n))
        out = self.buf[self.pos : end]
        self.pos = end
        return out

    def _ends_early(self, n: int) -> str:
        return f"need {n} bytes at position {self.pos}, only {len(self.buf) - self.pos} left"

    def int16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def int32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])


class _Reader(Reader):
    """A non-flexible struct."""

    def nullable_string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        try:
            return self._take(n).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SchemaError(f"string at position {self.pos - n} is not UTF-8") from exc

    def string(self) -> str:
        s = self.nullable_string()
        if s is None:
            raise SchemaError("null where a string is required")
        return s

    def bytes_(self) -> bytes:
        n = self.int32()
        return b"" if n < 0 else self._take(n)

    def end(self) -> None:
        if self.pos != len(self.buf):
            raise SchemaError(f"{len(self.buf) - self.pos} unexpected bytes after the record")


def decode_key(buf: bytes | bytearray | memoryview) -> OffsetKey | GroupKey | None:
    """An offset or group key; None for key versions this broker does not know (to be skipped)."""
    r = _Reader(buf)
    version = r.int16()
    if version in (0, 1):
        key: OffsetKey | GroupKey = OffsetKey(r.string(), r.string(), r.int32())
    elif version == GROUP_KEY_VERSION:
        key = GroupKey(r.string())
    else:
        return None
    r.end()
    return key


def _open_value(buf: bytes | bytearray | memoryview, kind: str) -> tuple[_Reader, int]:
    """A reader past the value's version (0-3, for both value kinds) and that version."""
    r = _Reader(buf)
    version = r.int16()
    if version not in (0, 1, 2, 3):
        raise SchemaError(f"unknown {kind} value version {version}")
    return r, version


def decode_offset_value(buf: bytes | bytearray | memoryview | None) -> OffsetValue | None:
    """None for a tombstone."""
    if buf is None:
        return None
    r, version = _open_value(buf, "offset commit")
    offset = r.int64()
    epoch = r.int32() if version >= 3 else -1
    metadata = r.nullable_string() or ""
    commit_ts = r.int64()
    expire_ts = r.int64() if version == 1 else -1
    r.end()
    return OffsetValue(offset, metadata, commit_ts, expire_ts, epoch)


def _decode_member(r: _Reader, version: int) -> MemberValue:
    member_id = r.string()
    instance_id = r.nullable_string() if version >= 3 else None
    client_id = r.string()
    client_host = r.string()
    rebalance_timeout = r.int32() if version >= 1 else -1
    session_timeout = r.int32()
    if rebalance_timeout < 0:
        rebalance_timeout = session_timeout
    subscription = r.bytes_()
    assignment = r.bytes_()
    return MemberValue(member_id, client_id, client_host, session_timeout, rebalance_timeout, subscription,
                       assignment, instance_id)


def decode_group_value(buf: bytes | bytearray | memoryview | None) -> GroupValue | None:
    """None for a tombstone."""
    if buf is None:
        return None
    r, version = _open_value(buf, "group metadata")
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.nullable_string()
    leader = r.nullable_string()
    state_ts = r.int64() if version >= 2 else -1
    count = r.int32()
    if count < 0 or count > len(r.buf):
        raise SchemaError(f"implausible member count {count}")
    members = [_decode_member(r, version) for _ in range(count)]
    r.end()
    return GroupValue(protocol_type, generation, protocol, leader, state_ts, members)
