"""Fetch response fast path: the response is built as a list of chunks (header fields, record bytes
as read from the log, trailer) so record bytes are never copied into a larger buffer.

Versions 4..16; flexible (compact) encoding from v12; topic ids instead of names from v13.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from odradek.protocol.framing import Piece, Spliced, write_uvarint

_TOP_CLASSIC = struct.Struct(">ihi")  # throttle, error, session id
_PART_HEAD = struct.Struct(">ihqqq")  # index, error, hw, lso, log start
_PART_HEAD_V4 = struct.Struct(">ihqq")  # v4 has no log start offset
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_DIVERGING = struct.Struct(">iq")
_ABORTED = struct.Struct(">qq")


@dataclass(slots=True)
class FetchPartitionResult:
    index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    records: bytes | memoryview | Spliced | None = None  # a file region goes out by sendfile
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset), flexible versions only
    current_leader: tuple[int, int] | None = None  # (leader id, leader epoch), flexible versions only
    aborted: list[tuple[int, int]] | None = None  # read_committed: (producer id, first offset) per aborted txn


@dataclass(slots=True)
class FetchTopicResult:
    name: str
    topic_id: bytes = b"\x00" * 16
    partitions: list[FetchPartitionResult] = field(default_factory=list)


def _compact_len(n: int) -> bytes:
    return write_uvarint(n + 1)


def _partition_tags(p: FetchPartitionResult) -> bytes:
    tags: list[bytes] = []
    if p.diverging_epoch is not None:
        payload = _DIVERGING.pack(*p.diverging_epoch) + b"\x00"
        tags.append(b"\x00" + write_uvarint(len(payload)) + payload)
    if p.current_leader is not None:
        payload = struct.pack(">ii", *p.current_leader) + b"\x00"
        tags.append(b"\x01" + write_uvarint(len(payload)) + payload)
    return write_uvarint(len(tags)) + b"".join(tags)


def encode_fetch_response(
    version: int,
    correlation_id: int,
    topics: list[FetchTopicResult],
    error_code: int = 0,
    throttle_time_ms: int = 0,
    session_id: int = 0,
) -> list[Piece]:
    """Response header + body as chunks (not yet size-framed)."""
    flexible = version >= 12
    head = bytearray(_I32.pack(correlation_id))
    if flexible:
        head += b"\x00"  # response header v1: no tagged fields
    head += _I32.pack(throttle_time_ms)
    if version >= 7:
        head += _I16.pack(error_code) + _I32.pack(session_id)
    head += _compact_len(len(topics)) if flexible else _I32.pack(len(topics))
    chunks: list[Piece] = []
    cur = head
    for t in topics:
        if version >= 13:
            cur += t.topic_id
        else:
            name = t.name.encode()
            cur += (_compact_len(len(name)) if flexible else _I16.pack(len(name))) + name
        cur += _compact_len(len(t.partitions)) if flexible else _I32.pack(len(t.partitions))
        for p in t.partitions:
            if version >= 5:
                cur += _PART_HEAD.pack(
                    p.index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset
                )
            else:
                cur += _PART_HEAD_V4.pack(p.index, p.error_code, p.high_watermark, p.last_stable_offset)
            # aborted transactions overlapping the records (read_committed), else an empty array
            aborted = p.aborted or ()
            cur += _compact_len(len(aborted)) if flexible else _I32.pack(len(aborted))
            for pid, first in aborted:
                cur += _ABORTED.pack(pid, first)
                if flexible:
                    cur += b"\x00"  # the entry's tagged fields
            if version >= 11:
                cur += b"\xff\xff\xff\xff"  # preferred read replica: -1
            # Kafka sends empty (never null) records, errors included: librdkafka rejects a null set.
            rec = p.records if p.records is not None else b""
            cur += _compact_len(len(rec)) if flexible else _I32.pack(len(rec))
            if len(rec):
                chunks.append(bytes(cur))
                chunks.append(rec)
                cur = bytearray()
            if flexible:
                cur += _partition_tags(p)
        if flexible:
            cur += b"\x00"
    if flexible:
        cur += b"\x00"
    if cur:
        chunks.append(bytes(cur))
    return chunks
