"""The client side of the Kafka protocol, sans-io: requests out as size-prefixed frames, bytes in as
decoded responses. No sockets and no clock here; `protocol/transport.py` moves the bytes.

`ClientCodec.send` numbers a request (correlation id), encodes it with kafka-python's message classes
behind request header v1, or v2 for flexible versions, and remembers which response to expect.
`ClientCodec.feed` takes whatever bytes arrived and returns every response they complete, decoded by
the API key and version of its request. Responses carry header v1 for flexible versions, except
ApiVersions, whose response header is always v0: a client reads it before it knows what the broker
speaks (KIP-511). A broker answers one connection's requests in order, so a response for any but the
oldest outstanding request means the stream is lost; so does a frame that does not decode. Both raise a
`ProtocolError`, after which the connection must be closed.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsRequest

from odradek.protocol import json_messages
from odradek.protocol.framing import FrameAssembler, FrameError, parse_response_header

# No response is that large; a size prefix above it means the stream is garbled.
DEFAULT_MAX_FRAME_SIZE = 1 << 30
_MAX_CORRELATION_ID = (1 << 31) - 1
_RAW_HEADER = struct.Struct(">ihhi")  # frame size (patched), api key, api version, correlation id
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class ProtocolError(ConnectionError):
    """The response stream cannot be followed any further; the connection must be closed."""


class MalformedResponse(ProtocolError):
    """A frame with an impossible size, a short header, or a body that does not decode."""


class CorrelationMismatch(ProtocolError):
    """A response that does not answer the oldest outstanding request."""


class ConnectionLost(ProtocolError):
    """The stream ended while responses were still outstanding."""


@dataclass(frozen=True, slots=True)
class Response:
    correlation_id: int
    api_key: int
    api_version: int
    message: Any


@dataclass(frozen=True, slots=True)
class _Expected:
    correlation_id: int
    response_class: type[ApiMessage] | None  # None: answer a raw request with the undecoded body
    api_version: int
    flexible: bool = False  # the response header of a raw request


def flexible_response_header(response_class: type[ApiMessage], version: int) -> bool:
    """Whether a response carries header v1 (tagged fields) rather than v0."""
    return response_class.API_KEY != ApiVersionsRequest.API_KEY and response_class.flexible_version_q(version)


class ClientCodec:
    """One connection's requests and responses; `send` and `feed` may be interleaved freely."""

    def __init__(self, client_id: str | None, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.client_id = client_id
        self.correlation_id = 0  # the last one sent
        self._expected: deque[_Expected] = deque()
        self._frames = FrameAssembler(max_frame_size)

    @property
    def waiting(self) -> int:
        """How many responses are outstanding."""
        return len(self._expected)

    def send(self, request: ApiMessage, version: int) -> bytes:
        """The frame to write for `request` at `version` (which is set on the request)."""
        self.correlation_id = self.correlation_id % _MAX_CORRELATION_ID + 1
        request.with_header(correlation_id=self.correlation_id, client_id=self.client_id)
        frame = bytes(request.encode(version=version, header=True, framed=True))
        if request.expect_response():  # a Produce with acks=0 gets none
            response_class = json_messages.response_class(request)
            self._expected.append(_Expected(self.correlation_id, response_class, version))
        return frame

    def send_raw(self, api_key: int, version: int, flexible: bool, body: bytes | bytearray) -> bytes:
        """The frame for a request whose body was encoded by a fast path of `protocol/` (header v2 when
        `flexible`, else v1); its response comes out of `feed` undecoded, as a view of the body."""
        self.correlation_id = self.correlation_id % _MAX_CORRELATION_ID + 1
        client_id = self.client_id.encode() if self.client_id is not None else None
        head = bytearray(_RAW_HEADER.pack(0, api_key, version, self.correlation_id))
        head += _INT16.pack(-1) if client_id is None else _INT16.pack(len(client_id)) + client_id
        if flexible:
            head += b"\x00"
        head += body
        _INT32.pack_into(head, 0, len(head) - 4)
        self._expected.append(_Expected(self.correlation_id, None, version, flexible))
        return bytes(head)

    def feed(self, data: bytes) -> list[Response]:
        """The responses completed by `data`, oldest first; empty `data` means the peer closed the stream."""
        if not data:
            if self._expected:
                raise ConnectionLost(f"connection closed with {len(self._expected)} response(s) outstanding"
                                     f" ({self._frames.buffered} bytes of a frame received)")
            return []
        try:
            frames = self._frames.feed(data)
        except FrameError as exc:
            raise MalformedResponse(str(exc)) from None
        return [self._decode(frame) for frame in frames]

    def _decode(self, frame: memoryview) -> Response:
        if not self._expected:
            raise CorrelationMismatch(f"a response of {len(frame)} bytes arrived with no request outstanding")
        expected = self._expected.popleft()
        cls, version = expected.response_class, expected.api_version
        flexible = expected.flexible if cls is None else flexible_response_header(cls, version)
        try:
            correlation_id, body = parse_response_header(frame, flexible)
        except FrameError as exc:
            raise MalformedResponse(f"{'response' if cls is None else cls.name} v{version}: {exc}") from None
        if correlation_id != expected.correlation_id:
            raise CorrelationMismatch(
                f"response with correlation id {correlation_id} where {expected.correlation_id} was expected")
        if cls is None:
            return Response(correlation_id, -1, version, frame[body:])
        try:
            message = cls.decode(frame[body:], version=version)
        except Exception as exc:  # kafka-python raises many kinds on garbage input
            raise MalformedResponse(f"{cls.name} v{version} does not decode: {exc!r}") from None
        return Response(correlation_id, cls.API_KEY, version, message)
