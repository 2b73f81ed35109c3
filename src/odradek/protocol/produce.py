"""Produce fast path: parse the request keeping each partition's record batches as memoryviews, and
encode the response directly.

kafka-python's generic decoder would copy every records field; here the records stay views into the frame,
and the batches are validated later by the log (headers and CRC only, never individual records). The
response (v3..v13) is encoded without building message objects: a broker answers every produce request,
under acks=all several per follower fetch, and the generic encoder cost as much as the append.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.framing import read_uvarint, skip_tagged_fields, write_uvarint
from odradek.protocol.validate import MAX_DECODED_OBJECTS, MAX_STRING_BYTES

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_ACKS_TIMEOUT = struct.Struct(">hi")
# Objects built per topic (ProduceTopic, its name, its partition list) and per partition (ProducePartition,
# its index, its records view): counted against the same bound as kafka-python's decoding (validate.py).
_TOPIC_OBJECTS = 3
_PARTITION_OBJECTS = 3


@dataclass(slots=True)
class ProducePartition:
    index: int
    records: memoryview | None


@dataclass(slots=True)
class ProduceTopic:
    name: str  # "" from v13 on, where the request names topics by id
    partitions: list[ProducePartition]
    topic_id: bytes | None = None  # v13+: the 16 bytes of the topic id (KIP-516)


@dataclass(slots=True)
class ProduceRequestView:
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topics: list[ProduceTopic]


class _Reader:
    __slots__ = ("buf", "pos", "flexible", "objects")

    def __init__(self, buf: memoryview, pos: int, flexible: bool) -> None:
        self.buf = buf
        self.pos = pos
        self.flexible = flexible
        self.objects = MAX_DECODED_OBJECTS

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Produce request is truncated")

    def int32(self) -> int:
        self.need(4)
        (v,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return v


    def uuid(self) -> bytes:
        self.need(16)
        raw = bytes(self.buf[self.pos : self.pos + 16])
        self.pos += 16
        return raw

    def string(self, nullable: bool = False) -> str | None:
        if self.flexible:
            n, self.pos = read_uvarint(self.buf, self.pos)
            n -= 1
        else:
            self.need(2)
            (n,) = _I16.unpack_from(self.buf, self.pos)
            self.pos += 2
        if n < 0:
            if nullable:
                return None
            raise KafkaError(ErrorCode.INVALID_REQUEST, "null string where a string is required")
        if n > MAX_STRING_BYTES:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"string of {n} bytes, longer than {MAX_STRING_BYTES}")
        self.need(n)
        s = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", "replace")
        self.pos += n
        return s

    def array_len(self, objects_each: int) -> int:
        """An array's length, charging `objects_each` objects per element to the request's budget."""
        if self.flexible:
            n, self.pos = read_uvarint(self.buf, self.pos)
            n -= 1
        else:
            n = self.int32()
        if n < 0:  # Produce has no nullable arrays
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"array length {n} where an array is required")
        if n > len(self.buf):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"array length {n} exceeds request size")
        self.objects -= n * objects_each
        if self.objects < 0:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"array length {n}: the request would decode into "
                                                        f"more than {MAX_DECODED_OBJECTS} objects")
        return n

    def nullable_bytes(self) -> memoryview | None:
        if self.flexible:
            n, self.pos = read_uvarint(self.buf, self.pos)
            n -= 1
        else:
            n = self.int32()
        if n < 0:
            return None
        self.need(n)
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def tagged(self) -> None:
        if self.flexible:
            self.pos = skip_tagged_fields(self.buf, self.pos)


def parse_produce_request(frame: memoryview, body_offset: int, version: int) -> ProduceRequestView:
    """Parse Produce v3..v13 starting at `body_offset` of `frame` (v13 names each topic by its id)."""
    r = _Reader(frame, body_offset, flexible=version >= 9)
    transactional_id = r.string(nullable=True)
    r.need(6)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, r.pos)
    r.pos += 6
    topics: list[ProduceTopic] = []
    by_id = version >= 13
    for _ in range(r.array_len(_TOPIC_OBJECTS)):
        topic_id = r.uuid() if by_id else None
        name = "" if by_id else r.string() or ""
        parts: list[ProducePartition] = []
        for _ in range(r.array_len(_PARTITION_OBJECTS)):
            index = r.int32()
            records = r.nullable_bytes()
            r.tagged()
            parts.append(ProducePartition(index, records))
        r.tagged()
        topics.append(ProduceTopic(name, parts, topic_id))
    r.tagged()
    return ProduceRequestView(transactional_id, acks, timeout_ms, topics)


@dataclass(slots=True)
class ProducePartitionResult:
    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    record_errors: list[tuple[int, str | None]] | None = None  # (batch index, message), v8+


_PART_RESULT = struct.Struct(">ihqq")  # index, error code, base offset, log append time
_I64 = struct.Struct(">q")


def _length(n: int, flexible: bool) -> bytes:
    return write_uvarint(n + 1) if flexible else _I32.pack(n)


def _string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else b"\xff\xff"
    raw = value.encode()
    return (write_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def encode_produce_response(version: int, correlation_id: int,
                            topics: list[tuple[str | bytes, list[ProducePartitionResult]]],
                            throttle_time_ms: int = 0) -> list[bytes]:
    """Response header and body of Produce v3..v13, as one chunk (not yet size-framed); a topic is keyed
    by name, or from v13 by its 16-byte id."""
    flexible = version >= 9
    out = bytearray(_I32.pack(correlation_id))
    if flexible:
        out += b"\x00"  # response header v1: no tagged fields
    out += _length(len(topics), flexible)
    for key, parts in topics:
        if version >= 13:
            out += key if isinstance(key, bytes) else bytes(16)
        else:
            out += _string(key if isinstance(key, str) else "", flexible)
        out += _length(len(parts), flexible)
        for p in parts:
            out += _PART_RESULT.pack(p.index, p.error_code, p.base_offset, p.log_append_time)
            if version >= 5:
                out += _I64.pack(p.log_start_offset)
            if version >= 8:
                errors = p.record_errors or ()
                out += _length(len(errors), flexible)
                for batch_index, message in errors:
                    out += _I32.pack(batch_index) + _string(message, flexible)
                    if flexible:
                        out += b"\x00"
                out += _string(p.error_message, flexible)
            if flexible:
                out += b"\x00"
        if flexible:
            out += b"\x00"
    out += _I32.pack(throttle_time_ms)
    if flexible:
        out += b"\x00"
    return [bytes(out)]
