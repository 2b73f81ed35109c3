"""Kafka's record formats in `__transaction_state`: key TransactionLogKey v0 (the transactional id),
value TransactionLogValue v0 (producer id and epoch, timeout, status, partitions, timestamps). A null
value (tombstone) removes an expired transactional id."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

KEY_VERSION = 0
VALUE_VERSION = 0

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


def encode_value(v: TxnLogValue) -> bytes:
    out = bytearray(_VALUE_HEAD.pack(VALUE_VERSION, v.producer_id, v.producer_epoch, v.timeout_ms, v.status))
    out += _I.pack(len(v.partitions))
    for topic, parts in sorted(v.partitions.items()):
        out += _string(topic) + _I.pack(len(parts))
        for p in sorted(parts):
            out += _I.pack(p)
    out += _Q.pack(v.last_update_ms) + _Q.pack(v.start_ms)
    return bytes(out)


def decode_value(raw: bytes | None) -> TxnLogValue | None:
    """None for a tombstone. Version 0 only (what this broker writes; v1 is Kafka 4's flexible form)."""
    if raw is None:
        return None
    try:
        version, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(raw, 0)
        if version != 0:
            raise SchemaError(f"unsupported transaction log value version {version}")
        pos = _VALUE_HEAD.size
        (count,) = _I.unpack_from(raw, pos)
        pos += 4
        partitions: dict[str, list[int]] = {}
        if count > len(raw):
            raise SchemaError("partition count out of range")
        for _ in range(max(count, 0)):
            (n,) = _H.unpack_from(raw, pos)
            topic = raw[pos + 2 : pos + 2 + n].decode()
            pos += 2 + n
            (m,) = _I.unpack_from(raw, pos)
            pos += 4
            if m < 0 or pos + 4 * m > len(raw):
                raise SchemaError("partition id count out of range")
            partitions[topic] = list(struct.unpack_from(f">{m}i", raw, pos))
            pos += 4 * m
        (update,) = _Q.unpack_from(raw, pos)
        (start,) = _Q.unpack_from(raw, pos + 8)
        return TxnLogValue(pid, epoch, timeout, status, partitions, update, start)
    except (struct.error, UnicodeDecodeError) as exc:
        raise SchemaError(f"malformed transaction log value: {exc}") from None
