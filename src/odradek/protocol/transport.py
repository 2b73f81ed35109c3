"""Thin transports for `protocol/client.py`'s codec: a blocking socket (tools, tests) and asyncio streams
(replica fetchers, forwarding to the controller). One request in flight per connection; `request` returns
the decoded response, or None for a request that gets none (Produce with acks=0).

Failures are the builtin ones: OSError from the socket, TimeoutError when the peer is silent for
`timeout_s`, and the codec's ProtocolError (a ConnectionError) when the stream is garbled or ends early.
The asyncio connection closes itself on any failure, since its stream position is then unknown."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from kafka.protocol.api_message import ApiMessage

from odradek.protocol.client import DEFAULT_MAX_FRAME_SIZE, ClientCodec

READ_SIZE = 1 << 20


class BlockingConnection:
    """A socket to one broker; every send and receive is bounded by `timeout_s`."""

    def __init__(self, host: str, port: int, client_id: str | None, timeout_s: float,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.address = f"{host}:{port}"
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.codec = ClientCodec(client_id, max_frame_size)

    def __enter__(self) -> BlockingConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.sock.close()

    def request(self, request: ApiMessage, version: int) -> Any:
        self.sock.sendall(self.codec.send(request, version))
        message = None
        while self.codec.waiting:
            for response in self.codec.feed(self.sock.recv(READ_SIZE)):
                message = response.message
        return message


class AsyncConnection:
    """Streams to one broker, opened on first use (and again after a failure)."""

    def __init__(self, host: str, port: int, client_id: str | None, timeout_s: float = 30.0,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_frame_size = max_frame_size
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._codec = ClientCodec(client_id, max_frame_size)

    async def connect(self) -> None:
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=READ_SIZE), self.timeout_s)
        self._codec = ClientCodec(self.client_id, self.max_frame_size)

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def request(self, request: ApiMessage, version: int) -> Any:
        if not self.connected:
            await self.connect()
        assert self._reader is not None and self._writer is not None
        try:
            self._writer.write(self._codec.send(request, version))
            await asyncio.wait_for(self._writer.drain(), self.timeout_s)
            message = None
            while self._codec.waiting:
                data = await asyncio.wait_for(self._reader.read(READ_SIZE), self.timeout_s)
                for response in self._codec.feed(data):
                    message = response.message
            return message
        except BaseException:
            self._abort()
            raise

    def _abort(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()

    async def close(self) -> None:
        writer, self._writer, self._reader = self._writer, None, None
        if writer is not None:
            writer.close()
            try:
                await writer.wait_closed()
            except (ConnectionError, OSError):
                pass
