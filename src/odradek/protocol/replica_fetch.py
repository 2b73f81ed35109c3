"""The replica fetcher's side of Fetch v12, sans-io and by hand: the request encoded straight from the
follower's positions, the response parsed into plain objects whose records are views of the received
frame (never copied or decoded). A follower fetches several times per produce request under acks=all,
so the generic message classes' cost per fetch is worth avoiding here; `protocol/client.py` still checks
the framing and the correlation id.

Request header v2 and body per Kafka's FetchRequest v12; the response per FetchResponse v12 (flexible:
compact arrays and strings, tagged fields; DivergingEpoch is tag 0 of a partition)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from odradek.protocol.client import MalformedResponse
from odradek.protocol.framing import read_uvarint, write_uvarint

VERSION = 12
API_KEY = 1
_HEAD = struct.Struct(">iiiibii")  # replica id, max wait, min bytes, max bytes, isolation, session id, epoch
_POSITION = struct.Struct(">iiqiqi")  # partition, current leader epoch, fetch offset, last fetched epoch,
#                                       log start offset, partition max bytes
_TOP = struct.Struct(">ihi")  # throttle, error, session id
_PART = struct.Struct(">ihqqq")  # index, error, high watermark, last stable offset, log start offset
_I32 = struct.Struct(">i")
_DIVERGING = struct.Struct(">iq")
_ABORTED_ENTRY = 16  # producer id, first offset (each followed by its tagged fields)
_TAG_DIVERGING_EPOCH = 0


@dataclass(slots=True)
class FetchPosition:
    """What a follower asks of one partition."""

    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    max_bytes: int


@dataclass(slots=True)
class FetchedPartition:
    partition: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: memoryview | None
    diverging_epoch: tuple[int, int] | None = None  # (epoch, end offset)


def encode_request(replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int,
                   topics: list[tuple[str, list[FetchPosition]]]) -> bytearray:
    """The body of a full (sessionless) Fetch v12 from a follower."""
    out = bytearray(_HEAD.pack(replica_id, max_wait_ms, min_bytes, max_bytes, 0, 0, -1))
    out += write_uvarint(len(topics) + 1)
    for name, positions in topics:
        raw = name.encode()
        out += write_uvarint(len(raw) + 1)
        out += raw
        out += write_uvarint(len(positions) + 1)
        for p in positions:
            out += _POSITION.pack(p.partition, p.current_leader_epoch, p.fetch_offset, p.last_fetched_epoch,
                                  p.log_start_offset, p.max_bytes)
            out += b"\x00"  # the partition's tagged fields
        out += b"\x00"  # the topic's tagged fields
    out += b"\x01\x01\x00"  # no forgotten topics, rack id "", no tagged fields
    return out


@dataclass(slots=True)
class FetchedResponse:
    error_code: int
    topics: list[tuple[str, list[FetchedPartition]]]


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.pos = 0

    def unpack(self, st: struct.Struct) -> tuple[int, ...]:
        values = st.unpack_from(self.buf, self.pos)
        self.pos += st.size
        return values

    def uvarint(self) -> int:
        value, self.pos = read_uvarint(self.buf, self.pos)
        return value

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise MalformedResponse(f"Fetch v{VERSION} response: field of {n} bytes past the end")
        view = self.buf[self.pos : self.pos + n]
        self.pos += n
        return view

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())


def parse_response(body: memoryview) -> FetchedResponse:
    """The response body (after its header); MalformedResponse if it does not parse."""
    try:
        return _parse(_Reader(body))
    except MalformedResponse:
        raise
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise MalformedResponse(f"Fetch v{VERSION} response does not parse: {exc}") from None
    except Exception as exc:  # read_uvarint's KafkaError on a truncated or endless varint
        raise MalformedResponse(f"Fetch v{VERSION} response does not parse: {exc!r}") from None


def _parse(r: _Reader) -> FetchedResponse:
    _throttle, error, _session = r.unpack(_TOP)
    topics: list[tuple[str, list[FetchedPartition]]] = []
    for _ in range(r.uvarint() - 1):
        name = bytes(r.take(r.uvarint() - 1)).decode()
        parts: list[FetchedPartition] = []
        for _ in range(r.uvarint() - 1):
            index, code, hw, lso, log_start = r.unpack(_PART)
            aborted = r.uvarint() - 1  # -1: null
            for _ in range(max(aborted, 0)):
                r.take(_ABORTED_ENTRY)
                r.skip_tags()
            r.take(4)  # preferred read replica
            size = r.uvarint() - 1
            records = r.take(size) if size >= 0 else None
            part = FetchedPartition(index, code, hw, lso, log_start, records)
            for _ in range(r.uvarint()):
                tag = r.uvarint()
                field = r.take(r.uvarint())
                if tag == _TAG_DIVERGING_EPOCH:
                    epoch, end = _DIVERGING.unpack_from(field, 0)
                    part.diverging_epoch = (epoch, end)
            parts.append(part)
        r.skip_tags()
        topics.append((name, parts))
    r.skip_tags()
    return FetchedResponse(error, topics)
