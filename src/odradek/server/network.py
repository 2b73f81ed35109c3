"""Asyncio socket server: one Connection per socket, frames parsed from data_received callbacks,
requests of a connection handled in order and answered in order, with backpressure both ways."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from odradek.protocol.framing import FrameDecoder, FrameError

log = logging.getLogger("odradek.network")

# What a dispatcher returns: chunks to send (already size-framed), or None for no response.
Response = Sequence[bytes | memoryview] | None
Dispatcher = Callable[["Connection", memoryview], Awaitable[Response]]

MAX_QUEUED_FRAMES = 64


class CloseConnection(Exception):
    """Raised by a handler when the protocol gives no way to answer; the reason is logged."""


class Connection(asyncio.Protocol):
    def __init__(self, dispatch: Dispatcher, max_frame_size: int, registry: set[Connection]) -> None:
        self._dispatch = dispatch
        self._decoder = FrameDecoder(max_frame_size)
        self._registry = registry
        self._queue: deque[memoryview] = deque()
        self._worker: asyncio.Task | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._reading_paused = False
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.closed = False

    # ---- asyncio callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._registry.add(self)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self._decoder.feed(data)
        except FrameError as exc:
            self.close(f"invalid frame: {exc}")
            return
        if not frames:
            return
        self._queue.extend(frames)
        if len(self._queue) >= MAX_QUEUED_FRAMES and not self._reading_paused and self.transport:
            self._reading_paused = True
            self.transport.pause_reading()
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work())

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._registry.discard(self)
        self._writable.set()
        if self._worker is not None:
            self._worker.cancel()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # ---- request processing ---------------------------------------------------------------------
    async def _work(self) -> None:
        try:
            while self._queue and not self.closed:
                frame = self._queue.popleft()
                if self._reading_paused and len(self._queue) < MAX_QUEUED_FRAMES // 2 and self.transport:
                    self._reading_paused = False
                    self.transport.resume_reading()
                try:
                    response = await self._dispatch(self, frame)
                except CloseConnection as exc:
                    self.close(str(exc))
                    return
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a handler bug must not take the broker down
                    log.exception("Unexpected error handling a request from %s", self.peer, exc_info=exc)
                    self.close(f"internal error: {exc}")
                    return
                if response is not None and not self.closed and self.transport is not None:
                    self.transport.writelines(response)
                    if not self._writable.is_set():
                        await self._writable.wait()
        finally:
            self._worker = None
        if self._queue and not self.closed:
            self._worker = asyncio.get_running_loop().create_task(self._work())

    def close(self, reason: str) -> None:
        if self.closed:
            return
        log.warning("Closing connection from %s: %s", self.peer, reason)
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class SocketServer:
    """Listens on the configured listeners and hands frames to the dispatcher."""

    def __init__(self, dispatch: Dispatcher, max_frame_size: int) -> None:
        self._dispatch = dispatch
        self._max_frame_size = max_frame_size
        self._servers: list[asyncio.base_events.Server] = []
        self.connections: set[Connection] = set()

    async def listen(self, host: str, port: int) -> int:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: Connection(self._dispatch, self._max_frame_size, self.connections),
            host or None,
            port,
            reuse_address=True,
            backlog=1024,
            start_serving=False,
        )
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    async def start_serving(self) -> None:
        """Accept connections only once the broker is ready (the ports were bound earlier)."""
        for s in self._servers:
            await s.start_serving()

    async def close(self) -> None:
        for s in self._servers:
            s.close()
        for c in list(self.connections):
            if c.transport is not None:
                c.transport.close()
        for s in self._servers:
            try:
                await asyncio.wait_for(s.wait_closed(), 2)
            except TimeoutError:
                pass
