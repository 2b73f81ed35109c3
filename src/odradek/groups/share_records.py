"""Kafka's records of `__share_group_state` (KIP-932's share coordinator): the state of one share
partition, keyed by (group id, topic id, partition).

A key is an int16 *record type* (Kafka calls it the key version) and a non-flexible struct: GroupId
(int16-length string), TopicId (16-byte uuid), Partition (int32). A value is an int16 version (0) and a
flexible struct (compact arrays, an empty tagged-field section closing every struct; unknown tags are
skipped). A null value (tombstone) deletes the key.

    type 0  ShareSnapshot  value: SnapshotEpoch uint16, StateEpoch int32, LeaderEpoch int32,
                                  StartOffset int64, CreateTimestamp int64, WriteTimestamp int64,
                                  StateBatches [FirstOffset int64, LastOffset int64,
                                                DeliveryState int8, DeliveryCount int16]
    type 1  ShareUpdate    value: SnapshotEpoch uint16, LeaderEpoch int32, StartOffset int64 (-1: not
                                  moved), StateBatches [as above]

A snapshot is the whole state of the share partition; an update is applied over the snapshot before it
(its batches replace the offsets they cover, its start offset prunes what lies below). Delivery states
are Kafka's: 0 available, 2 acknowledged, 4 archived (acquired records are written as available).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from odradek.groups.consumer_schemas import ValueReader, ValueWriter
from odradek.groups.schemas import Reader, SchemaError, Writer
from odradek.groups.share_partition import RecordState, StateBatch
from odradek.groups.share_state import ShareKey

SHARE_SNAPSHOT = 0
SHARE_UPDATE = 1
RECORD_TYPES = frozenset({SHARE_SNAPSHOT, SHARE_UPDATE})
_U16 = struct.Struct(">H")
_I64 = struct.Struct(">q")
_STORED_STATES = frozenset({RecordState.AVAILABLE, RecordState.ACKNOWLEDGED, RecordState.ARCHIVED})


@dataclass(frozen=True, slots=True)
class ShareStateValue:
    """A ShareSnapshot or ShareUpdate value; an update has no state epoch or timestamps (kept -1 / 0)."""

    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    state_epoch: int = 0
    create_timestamp: int = -1
    write_timestamp: int = -1


def encode_key(record_type: int, key: ShareKey) -> bytes:
    if len(key.topic_id) != 16:
        raise SchemaError(f"topic id of {len(key.topic_id)} bytes")
    w = Writer().int16(record_type).string(key.group_id)
    w.parts.append(bytes(key.topic_id))
    return w.int32(key.partition).done()


def decode_key(buf: bytes | bytearray | memoryview) -> tuple[int, ShareKey] | None:
    """(record type, key); None for a record type this broker does not know (to be skipped)."""
    r = Reader(buf)
    record_type = r.int16()
    if record_type not in RECORD_TYPES:
        return None
    n = r.int16()
    if n < 0:
        raise SchemaError("null group id in a share state key")
    try:
        group = r._take(n).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SchemaError("share state key group id is not UTF-8") from exc
    topic_id = r._take(16)
    partition = r.int32()
    if r.pos != len(r.buf):
        raise SchemaError(f"{len(r.buf) - r.pos} unexpected bytes after a share state key")
    return record_type, ShareKey(group, topic_id, partition)


class _ValueOut(ValueWriter):
    def uint16(self, v: int) -> _ValueOut:
        self.parts.append(_U16.pack(v & 0xFFFF))
        return self

    def batches(self, batches: tuple[StateBatch, ...]) -> _ValueOut:
        self.uvarint(len(batches) + 1)
        for b in batches:
            self.int64(b.first_offset).int64(b.last_offset).int8(int(b.state)).int16(b.delivery_count)
            self.tags()
        return self


class _ValueIn(ValueReader):
    def uint16(self) -> int:
        return int(_U16.unpack(self._take(2))[0])

    def int64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def batches(self) -> tuple[StateBatch, ...]:
        out = []
        for _ in range(self._count()):
            first, last, state, count = self.int64(), self.int64(), self.int8(), self.int16()
            self.tags()
            if first > last or first < 0:
                raise SchemaError(f"bad state batch [{first}, {last}] in a {self.what} value")
            try:
                record_state = RecordState(state)
            except ValueError:
                raise SchemaError(f"unknown delivery state {state} in a {self.what} value") from None
            if record_state not in _STORED_STATES:
                record_state = RecordState.AVAILABLE  # an acquisition lock does not outlive its broker
            out.append(StateBatch(first, last, record_state, count))
        return tuple(out)


def encode_snapshot(v: ShareStateValue) -> bytes:
    w = _ValueOut().uint16(v.snapshot_epoch).int32(v.state_epoch).int32(v.leader_epoch).int64(v.start_offset)
    return w.int64(v.create_timestamp).int64(v.write_timestamp).batches(v.batches).done()


def encode_update(v: ShareStateValue) -> bytes:
    return _ValueOut().uint16(v.snapshot_epoch).int32(v.leader_epoch).int64(v.start_offset).batches(v.batches).done()


def decode_snapshot(buf: bytes | bytearray | memoryview) -> ShareStateValue:
    r = _ValueIn(bytes(buf), "ShareSnapshot")
    snapshot_epoch, state_epoch, leader_epoch, start = r.uint16(), r.int32(), r.int32(), r.int64()
    created, written = r.int64(), r.int64()
    batches = r.batches()
    r.end()
    return ShareStateValue(snapshot_epoch, leader_epoch, start, batches, state_epoch, created, written)


def decode_update(buf: bytes | bytearray | memoryview) -> ShareStateValue:
    r = _ValueIn(bytes(buf), "ShareUpdate")
    snapshot_epoch, leader_epoch, start = r.uint16(), r.int32(), r.int64()
    batches = r.batches()
    r.end()
    return ShareStateValue(snapshot_epoch, leader_epoch, start, batches)


def merge_batches(old: tuple[StateBatch, ...], new: tuple[StateBatch, ...], start_offset: int) -> tuple[StateBatch, ...]:
    """`old` with `new` laid over it (a new batch replaces the offsets it covers), without what lies below
    `start_offset`, in offset order."""
    covered = sorted((b.first_offset, b.last_offset) for b in new)
    out: list[StateBatch] = []
    for b in old:
        pieces = [(b.first_offset, b.last_offset)]
        for lo, hi in covered:
            cut = []
            for first, last in pieces:
                if hi < first or lo > last:
                    cut.append((first, last))
                    continue
                if first < lo:
                    cut.append((first, lo - 1))
                if last > hi:
                    cut.append((hi + 1, last))
            pieces = cut
        out.extend(StateBatch(first, last, b.state, b.delivery_count) for first, last in pieces)
    out.extend(new)
    kept = []
    for b in sorted(out, key=lambda x: x.first_offset):
        if b.last_offset < start_offset:
            continue
        if b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.state, b.delivery_count)
        kept.append(b)
    return tuple(kept)
