"""Thin transports for `protocol/client.py`'s codec: a blocking socket (tools, tests) and asyncio streams
(replica fetchers, forwarding to the controller). One request in flight per connection; `request` returns
the decoded response, or None for a request that gets none (Produce with acks=0).

Failures are the builtin ones: OSError from the socket, TimeoutError when the peer is silent for
`timeout_s`, and the codec's ProtocolError (a ConnectionError) when the stream is garbled or ends early.
The asyncio connection closes itself on any failure, since its stream position is then unknown.

Both speak to secured listeners when given a `ClientSecurity`: the socket is wrapped in TLS for SSL and
SASL_SSL, and SASL listeners get the handshake and authentication before the first request (a refusal is
an `AuthenticationError`, a ConnectionError)."""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from kafka.protocol.api_message import ApiMessage

from odradek.protocol.client import DEFAULT_MAX_FRAME_SIZE, ClientCodec
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity, sasl_exchange

READ_SIZE = 1 << 20


class BlockingConnection:
    """A socket to one broker; every send and receive is bounded by `timeout_s`."""

    def __init__(self, host: str, port: int, client_id: str | None, timeout_s: float,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, security: ClientSecurity = PLAINTEXT) -> None:
        self.address = f"{host}:{port}"
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.codec = ClientCodec(client_id, max_frame_size)
        try:
            if security.uses_tls:
                assert security.ssl_context is not None
                self.sock = security.ssl_context.wrap_socket(self.sock, server_hostname=host)
            if security.uses_sasl:
                steps = sasl_exchange(security)
                try:
                    step = next(steps)
                    while True:
                        step = steps.send(self.request(*step))
                except StopIteration:
                    pass
        except BaseException:
            self.sock.close()
            raise

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
    """Streams to one broker, opened on first use (and again after a failure). Callers may share it: their
    requests take turns, one exchange at a time (a stream has one reader)."""

    def __init__(self, host: str, port: int, client_id: str | None, timeout_s: float = 30.0,
                 max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, security: ClientSecurity = PLAINTEXT) -> None:
        self.security = security
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self.max_frame_size = max_frame_size
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._codec = ClientCodec(client_id, max_frame_size)
        self._turn = asyncio.Lock()

    async def connect(self) -> None:
        tls = self.security.ssl_context if self.security.uses_tls else None
        self._reader, self._writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=READ_SIZE, ssl=tls,
                                    server_hostname=self.host if tls is not None else None), self.timeout_s)
        self._codec = ClientCodec(self.client_id, self.max_frame_size)
        if self.security.uses_sasl:
            steps = sasl_exchange(self.security)
            try:
                step = next(steps)
                while True:
                    step = steps.send(await self._exchange(*step))
            except StopIteration:
                pass
            except BaseException:
                self._abort()
                raise

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def request(self, request: ApiMessage, version: int) -> Any:
        async with self._turn:
            if not self.connected:
                await self.connect()
            try:
                return await self._exchange(request, version)
            except BaseException:
                self._abort()
                raise

    async def request_raw(self, api_key: int, version: int, flexible: bool, body: bytes | bytearray) -> memoryview:
        """A request body encoded by a fast path of `protocol/`; the answer is the response body, undecoded."""
        async with self._turn:
            if not self.connected:
                await self.connect()
            try:
                answer: memoryview = await self._exchange_frame(self._codec.send_raw(api_key, version, flexible,
                                                                                    body))
                return answer
            except BaseException:
                self._abort()
                raise

    async def _exchange(self, request: ApiMessage, version: int) -> Any:
        return await self._exchange_frame(self._codec.send(request, version))

    async def _exchange_frame(self, frame: bytes) -> Any:
        assert self._reader is not None and self._writer is not None
        self._writer.write(frame)
        await asyncio.wait_for(self._writer.drain(), self.timeout_s)
        message = None
        while self._codec.waiting:
            data = await asyncio.wait_for(self._reader.read(READ_SIZE), self.timeout_s)
            for response in self._codec.feed(data):
                message = response.message
        return message

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
