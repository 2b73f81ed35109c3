"""Size-prefixed frames and request/response headers (v0/v1/v2), with size limits. Sans-io."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Protocol

from odradek.protocol.errors import ErrorCode, KafkaError

_INT32 = struct.Struct(">i")
_INT16 = struct.Struct(">h")


class Spliced(Protocol):
    """A response piece whose bytes are not in memory (a file region the network layer sends with
    sendfile); all the wire code needs of it is its length."""

    def __len__(self) -> int: ...


# One piece of a response as handlers build it: bytes in memory, or a spliced region.
Piece = bytes | memoryview | Spliced
_HEADER_FIXED = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length


class FrameError(Exception):
    """The byte stream cannot be framed any further; the connection must be closed."""


@dataclass(slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int  # where the request body starts in the frame


class FrameDecoder:
    """Splits a byte stream into frames; feed bytes, get complete frame payloads back. A size prefix over
    the limit raises FrameError as soon as its 4 bytes are in: nothing of such a frame is buffered. The
    limit may change between feeds (a connection that authenticates gets a larger one); `limit_name` is
    the config key the error names.

    `reserve` (the reader has room for the incomplete frame) reads a frame of at least DIRECT_FILL bytes
    straight into a buffer of its exact size: growing the read buffer to the frame's size and copying the
    frame out of it would hold it twice (a 100 MB request took 200 MB at the moment it completed)."""

    DIRECT_FILL = 1 << 20

    def __init__(self, max_frame_size: int, limit_name: str = "socket.request.max.bytes") -> None:
        self.max_frame_size = max_frame_size
        self.limit_name = limit_name
        self._buf = bytearray()
        self._frame: bytearray | None = None  # the large frame being filled
        self._filled = 0

    def set_limit(self, max_frame_size: int, limit_name: str) -> None:
        """Frames whose size prefix is read from now on are held to this limit."""
        self.max_frame_size, self.limit_name = max_frame_size, limit_name

    def feed(self, data: bytes) -> list[memoryview]:
        frames: list[memoryview] = []
        if self._frame is not None:
            data = self._fill(data, frames)
            if not data:
                return frames
        buf = self._buf
        buf += data
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (size,) = _INT32.unpack_from(buf, pos)
            if size < 0:
                raise FrameError(f"negative frame size {size}")
            if size > self.max_frame_size:
                raise FrameError(f"frame of {size} bytes is larger than {self.limit_name} ({self.max_frame_size})")
            if n - pos - 4 < size:
                break
            # one copy out of the buffer (slicing the bytearray itself would make a second one)
            with memoryview(buf) as view:
                frames.append(memoryview(bytes(view[pos + 4 : pos + 4 + size])))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return frames

    def reserve(self) -> None:
        """The incomplete frame buffered (its prefix is in) may take its full size now: a large one is
        read into a buffer of that size from here on."""
        if self._frame is not None or len(self._buf) < 4:
            return
        (size,) = _INT32.unpack_from(self._buf, 0)
        if size >= self.DIRECT_FILL:
            frame = self._frame = bytearray(size)
            self._filled = len(self._buf) - 4
            with memoryview(frame) as into, memoryview(self._buf) as source:
                into[:self._filled] = source[4:]
            self._buf = bytearray()

    def _fill(self, data: bytes, frames: list[memoryview]) -> bytes:
        """Copy into the large frame; once it is complete, hand it out and return the bytes after it."""
        frame = self._frame
        assert frame is not None
        take = min(len(data), len(frame) - self._filled)
        with memoryview(frame) as into, memoryview(data) as source:  # bytearray[a:b] = x would copy x first
            into[self._filled:self._filled + take] = source[:take]
        self._filled += take
        if self._filled < len(frame):
            return b""
        frames.append(memoryview(frame).toreadonly())
        self._frame = None
        return data[take:] if take < len(data) else b""

    @property
    def buffered(self) -> int:
        return len(self._buf) + (4 + self._filled if self._frame is not None else 0)

    @property
    def partial_frame_size(self) -> int | None:
        """Size prefix plus declared size of the incomplete frame buffered, once its prefix is in."""
        if self._frame is not None:
            return 4 + len(self._frame)
        if len(self._buf) < 4:
            return None
        return 4 + _INT32.unpack_from(self._buf, 0)[0]


class FrameAssembler:
    """Splits a byte stream into frames like FrameDecoder, but keeps the pieces of a frame apart until it
    is complete and joins them once: a response of many megabytes arrives in many reads, and growing one
    bytearray by each read copies it over and over. Frames are views of the received bytes."""

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._chunks: list[bytes] = []
        self._offset = 0  # bytes of the first chunk already taken
        self._buffered = 0  # bytes received and not taken
        self._size: int | None = None  # payload size of the frame in progress, once its prefix is taken

    @property
    def buffered(self) -> int:
        return self._buffered + (4 if self._size is not None else 0)

    def feed(self, data: bytes) -> list[memoryview]:
        if data:
            self._chunks.append(data)
            self._buffered += len(data)
        frames: list[memoryview] = []
        while True:
            if self._size is None:
                if self._buffered < 4:
                    return frames
                (size,) = _INT32.unpack(self._take(4))
                if size < 0:
                    raise FrameError(f"negative frame size {size}")
                if size > self.max_frame_size:
                    raise FrameError(f"frame of {size} bytes is larger than the limit ({self.max_frame_size})")
                self._size = size
            if self._buffered < self._size:
                return frames
            frames.append(self._take(self._size))
            self._size = None

    def _take(self, n: int) -> memoryview:
        """The next `n` buffered bytes (n <= self._buffered)."""
        if n == 0:
            return memoryview(b"")
        first = self._chunks[0]
        if len(first) - self._offset < n:
            first = b"".join([memoryview(first)[self._offset :], *self._chunks[1:]])
            self._chunks, self._offset = [first], 0
        view = memoryview(first)[self._offset : self._offset + n]
        self._offset += n
        self._buffered -= n
        if self._offset == len(first):
            del self._chunks[0]
            self._offset = 0
        return view


def read_uvarint(buf: memoryview | bytes, pos: int) -> tuple[int, int]:
    """Unsigned LEB128 varint as used by flexible versions; returns (value, new position)."""
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 35:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "varint too long")


def write_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def skip_tagged_fields(buf: memoryview | bytes, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise KafkaError(ErrorCode.INVALID_REQUEST, "truncated tagged field")
    return pos


def parse_request_header(frame: memoryview, flexible: bool | None) -> RequestHeader:
    """Parse header v1 (or v2 when `flexible`); `flexible=None` means unknown api/version: v1 only."""
    if len(frame) < _HEADER_FIXED.size:
        raise FrameError(f"request of {len(frame)} bytes is too short for a request header")
    api_key, api_version, correlation_id, client_len = _HEADER_FIXED.unpack_from(frame, 0)
    pos = _HEADER_FIXED.size
    client_id: str | None = None
    if client_len >= 0:
        if pos + client_len > len(frame):
            raise FrameError("request header client_id runs past the end of the frame")
        client_id = bytes(frame[pos : pos + client_len]).decode("utf-8", "replace")
        pos += client_len
    if flexible:
        pos = skip_tagged_fields(frame, pos)
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def peek_api(frame: memoryview) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id of a frame (enough to answer an error)."""
    if len(frame) < 8:
        raise FrameError(f"request of {len(frame)} bytes is too short for a request header")
    api_key, api_version, correlation_id = struct.unpack_from(">hhi", frame, 0)
    return api_key, api_version, correlation_id


PRODUCE_KEY = 0


def peek_api_key(frame: memoryview) -> int:
    """The API key of a request frame, -1 if it is too short to have one."""
    return _INT16.unpack_from(frame, 0)[0] if len(frame) >= 2 else -1


def response_header(correlation_id: int, flexible: bool) -> bytes:
    """Response header v0 (correlation id) or v1 (plus empty tagged fields)."""
    if flexible:
        return _INT32.pack(correlation_id) + b"\x00"
    return _INT32.pack(correlation_id)


def frame_chunks(chunks: list[Piece]) -> list[Piece]:
    """Prefix a response made of chunks with its 4-byte size, without joining the chunks."""
    size = 0
    for c in chunks:
        size += len(c)
    return [_INT32.pack(size), *chunks]


def parse_response_header(frame: memoryview, flexible: bool) -> tuple[int, int]:
    """Correlation id and body offset of a response with header v0, or v1 (tagged fields) when `flexible`."""
    if len(frame) < 4:
        raise FrameError(f"response of {len(frame)} bytes is too short for a response header")
    (correlation_id,) = _INT32.unpack_from(frame, 0)
    if not flexible:
        return correlation_id, 4
    try:
        return correlation_id, skip_tagged_fields(frame, 4)
    except KafkaError as exc:
        raise FrameError(f"response header: {exc}") from None
