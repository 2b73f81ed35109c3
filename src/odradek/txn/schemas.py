"""Kafka's record formats in `__transaction_state`: key TransactionLogKey v0 (the transactional id),
value TransactionLogValue v0 (producer id and epoch, timeout, status, partitions, timestamps), or v1
(flexible, Kafka 4's) when the state needs one of v1's tagged fields: the previous and next producer ids
of an epoch overflow and the client's transaction version (KIP-890 part 2). A null value (tombstone)
removes an expired transactional id."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

KEY_VERSION = 0
VALUE_VERSION = 0
FLEXIBLE_VALUE_VERSION = 1
_TAG_PREVIOUS_PID, _TAG_NEXT_PID, _TAG_TXN_VERSION = 0, 1, 2

_H = struct.Struct(">h")
_I = struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqhib")  # version, producer id, producer epoch, timeout, status
_Q = struct.Struct(">q")


class SchemaError(ValueError):
    pass


@dataclass(slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    status: int
    partitions: dict[str, list[int]] = field(default_factory=dict)
    last_update_ms: int = -1
    start_ms: int = -1
    previous_producer_id: int = -1  # v1's tagged fields
    next_producer_id: int = -1
    client_txn_version: int = 0

    @property
    def needs_v1(self) -> bool:
        return self.previous_producer_id >= 0 or self.next_producer_id >= 0 or self.client_txn_version != 0


def _string(s: str) -> bytes:
    raw = s.encode()
    return _H.pack(len(raw)) + raw


def encode_key(transactional_id: str) -> bytes:
    return _H.pack(KEY_VERSION) + _string(transactional_id)


def decode_key(raw: bytes) -> str:
    try:
        (version,) = _H.unpack_from(raw, 0)
        if version > 1:
            raise SchemaError(f"unknown transaction log key version {version}")
        (n,) = _H.unpack_from(raw, 2)
        if n < 0 or 4 + n > len(raw):
            raise SchemaError("transactional id length out of range")
        return raw[4 : 4 + n].decode()
    except (struct.error, UnicodeDecodeError) as exc:
        raise SchemaError(f"malformed transaction log key: {exc}") from None


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _read_uvarint(raw: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(raw) or shift > 28:
            raise SchemaError("malformed varint")
        b = raw[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, pos
        shift += 7


def encode_value(v: TxnLogValue) -> bytes:
    """v0, or v1 when a tagged field differs from its default (Kafka writes v1 from 4.0; v0 is what
    Kafka 3.x coordinators can read, kept while nothing needs more)."""
    flexible = v.needs_v1
    out = bytearray(_VALUE_HEAD.pack(FLEXIBLE_VALUE_VERSION if flexible else VALUE_VERSION, v.producer_id,
                                     v.producer_epoch, v.timeout_ms, v.status))
    if flexible:
        out += _uvarint(len(v.partitions) + 1)
        for topic, parts in sorted(v.partitions.items()):
            raw = topic.encode()
            out += _uvarint(len(raw) + 1) + raw + _uvarint(len(parts) + 1)
            out += b"".join(_I.pack(p) for p in sorted(parts)) + b"\x00"  # the partition entry's tags
    else:
        out += _I.pack(len(v.partitions))
        for topic, parts in sorted(v.partitions.items()):
            out += _string(topic) + _I.pack(len(parts))
            for p in sorted(parts):
                out += _I.pack(p)
    out += _Q.pack(v.last_update_ms) + _Q.pack(v.start_ms)
    if flexible:
        tags = [(tag, body) for tag, body, default in (
            (_TAG_PREVIOUS_PID, _Q.pack(v.previous_producer_id), v.previous_producer_id == -1),
            (_TAG_NEXT_PID, _Q.pack(v.next_producer_id), v.next_producer_id == -1),
            (_TAG_TXN_VERSION, _H.pack(v.client_txn_version), v.client_txn_version == 0)) if not default]
        out += _uvarint(len(tags))
        for tag, body in tags:
            out += _uvarint(tag) + _uvarint(len(body)) + body
    return bytes(out)


def decode_value(raw: bytes | None) -> TxnLogValue | None:
    """None for a tombstone; v0 or v1 (unknown tagged fields are skipped, as Kafka's readers do)."""
    if raw is None:
        return None
    try:
        version, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(raw, 0)
        if version not in (VALUE_VERSION, FLEXIBLE_VALUE_VERSION):
            raise SchemaError(f"unsupported transaction log value version {version}")
        flexible = version == FLEXIBLE_VALUE_VERSION
        pos = _VALUE_HEAD.size
        if flexible:
            count, pos = _read_uvarint(raw, pos)
            count -= 1
        else:
            (count,) = _I.unpack_from(raw, pos)
            pos += 4
        partitions: dict[str, list[int]] = {}
        if count > len(raw):
            raise SchemaError("partition count out of range")
        for _ in range(max(count, 0)):
            if flexible:
                n, pos = _read_uvarint(raw, pos)
                n -= 1
            else:
                (n,) = _H.unpack_from(raw, pos)
                pos += 2
            if n < 0 or pos + n > len(raw):
                raise SchemaError("topic length out of range")
            topic = raw[pos : pos + n].decode()
            pos += n
            if flexible:
                m, pos = _read_uvarint(raw, pos)
                m -= 1
            else:
                (m,) = _I.unpack_from(raw, pos)
                pos += 4
            if m < 0 or pos + 4 * m > len(raw):
                raise SchemaError("partition id count out of range")
            partitions[topic] = list(struct.unpack_from(f">{m}i", raw, pos))
            pos += 4 * m
            if flexible:
                pos = _skip_tags(raw, pos)
        (update,) = _Q.unpack_from(raw, pos)
        (start,) = _Q.unpack_from(raw, pos + 8)
        value = TxnLogValue(pid, epoch, timeout, status, partitions, update, start)
        if flexible:
            _read_tags(raw, pos + 16, value)
        return value
    except (struct.error, UnicodeDecodeError) as exc:
        raise SchemaError(f"malformed transaction log value: {exc}") from None


def _skip_tags(raw: bytes, pos: int) -> int:
    count, pos = _read_uvarint(raw, pos)
    for _ in range(count):
        _tag, pos = _read_uvarint(raw, pos)
        size, pos = _read_uvarint(raw, pos)
        pos += size
    if pos > len(raw):
        raise SchemaError("tagged field out of range")
    return pos


def _read_tags(raw: bytes, pos: int, value: TxnLogValue) -> None:
    count, pos = _read_uvarint(raw, pos)
    for _ in range(count):
        tag, pos = _read_uvarint(raw, pos)
        size, pos = _read_uvarint(raw, pos)
        if pos + size > len(raw):
            raise SchemaError("tagged field out of range")
        if tag == _TAG_PREVIOUS_PID and size == 8:
            (value.previous_producer_id,) = _Q.unpack_from(raw, pos)
        elif tag == _TAG_NEXT_PID and size == 8:
            (value.next_producer_id,) = _Q.unpack_from(raw, pos)
        elif tag == _TAG_TXN_VERSION and size == 2:
            (value.client_txn_version,) = _H.unpack_from(raw, pos)
        pos += size
