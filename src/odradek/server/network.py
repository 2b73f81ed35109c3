"""Asyncio socket server: one Connection per socket, frames parsed from data_received callbacks,
requests of a connection handled in order and answered in order, with backpressure both ways. Responses
holding file regions (zero-copy Fetch) are written by server/splice.py."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections import deque
from collections.abc import Awaitable, Callable, Sequence

from odradek.protocol.framing import FrameDecoder, FrameError, Piece
from odradek.security.principal_mapping import NoMatchingRule
from odradek.server import tls
from odradek.server.limits import ConnectionLimits, RequestMemory
from odradek.server.sasl import SaslServer
from odradek.server.security import ListenerSecurity
from odradek.server.splice import SpliceCounts, Splicer, has_regions

log = logging.getLogger("odradek.network")
_PLAINTEXT = ListenerSecurity.plaintext()

# What a dispatcher returns: chunks to send (already size-framed), or None for no response.
Response = Sequence[Piece] | None
Dispatcher = Callable[["Connection", memoryview], Awaitable[Response]]

# Per connection: stop reading once this many requests, or this many bytes of requests, wait to be
# handled; read again below half of both.
MAX_QUEUED_FRAMES = 64
MAX_QUEUED_BYTES = 16 << 20


class CloseConnection(Exception):
    """Raised by a handler when the protocol gives no way to answer; the reason is logged."""


class Connection(asyncio.Protocol):
    """One client socket. Memory: the requests queued or being handled, plus the frame being read,
    are charged to the shared RequestMemory; a frame is charged in full once its size is known and the
    pool has room, else the connection stops reading until memory frees (nothing is dropped)."""

    def __init__(self, dispatch: Dispatcher, max_frame_size: int, registry: set[Connection],
                 limits: ConnectionLimits | None = None, memory: RequestMemory | None = None,
                 security: ListenerSecurity | None = None, splice_counts: SpliceCounts | None = None) -> None:
        self._dispatch = dispatch
        self._splice_counts = splice_counts
        self.security = security or _PLAINTEXT
        # Kafka's principal of the client: User:ANONYMOUS, the TLS subject, or the SASL user.
        self.principal = "User:ANONYMOUS"
        # On SASL listeners, the authentication state; the dispatcher admits only the SASL requests until
        # it completes. None elsewhere, so plaintext and TLS requests pay one attribute test.
        self.sasl = SaslServer(self.security.sasl) if self.security.sasl is not None else None
        self._decoder = FrameDecoder(max_frame_size)
        self._registry = registry
        self._limits = limits
        self._memory = memory or RequestMemory(-1)
        self._queue: deque[memoryview] = deque()
        self._queued_bytes = 0
        self._in_flight = 0
        self._charged = 0
        self._partial_charged = False  # the frame being read is charged at its full size
        self._waiting_for_memory = False
        self._worker: asyncio.Task | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self._reading_paused = False
        # KIP-219: a handler that throttles the client sets this; the response goes out at once, then the
        # connection reads and handles nothing more for that long.
        self.mute_s = 0.0
        self._muted = False
        self._admitted = False
        self._lost = False
        self._address = "?"
        self.transport: asyncio.Transport | None = None
        self.splicer: Splicer | None = None
        self.peer = "?"
        self.closed = False

    @property
    def host(self) -> str:
        """The client's address, as ACLs name hosts."""
        return self._address

    # ---- asyncio callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._address = str(peer[0]) if peer else "?"
        if self._limits is not None:
            refused = self._limits.admit(self._address)
            if refused is not None:
                # As Kafka: the new connection is closed at once; established ones are untouched.
                log.info("Rejected connection from %s: %s", self.peer, refused)
                self.closed = True
                transport.close()
                return
        self._admitted = True
        if self.security.ssl_context is not None:
            try:
                self.principal = tls.peer_principal(transport.get_extra_info("ssl_object"),
                                                    self.security.principal_rules)
            except NoMatchingRule as exc:
                log.info("Failed authentication with %s (listener %s): %s", self.peer, self.security.name, exc)
                self.closed = True
                transport.close()
                return
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        # sendfile writes the socket directly: not under TLS, whose bytes the transport encrypts
        sock_fd = sock.fileno() if sock is not None and self.security.ssl_context is None else -1
        self.splicer = Splicer(transport, sock_fd, self._writable,  # type: ignore[arg-type]
                               lambda: self.closed, self._splice_counts)
        self._registry.add(self)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            frames = self._decoder.feed(data)
        except FrameError as exc:
            self.close(f"invalid frame: {exc}")
            return
        if frames:
            self._partial_charged = False  # the first frame completed is the one that was charged
            self._queue.extend(frames)
            for f in frames:
                self._queued_bytes += len(f)
        self._charge()
        if not self._partial_charged:
            if not self._memory.has_room():
                self._wait_for_memory()
            elif self._decoder.partial_frame_size is not None:
                self._partial_charged = True
                self._charge()
        self._update_reading()
        if frames and self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._work())

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._registry.discard(self)
        self._writable.set()
        if self._worker is not None:
            self._worker.cancel()
        if self._waiting_for_memory:
            self._memory.cancel(self._memory_freed)
        self._queue.clear()
        self._memory.adjust(-self._charged)
        self._charged = 0
        self._lost = True
        if self._admitted and self._limits is not None:
            self._limits.release(self._address)
            self._admitted = False

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    # ---- memory and backpressure ------------------------------------------------------------------
    def _charge(self) -> None:
        """Bring this connection's charge in the shared pool up to date."""
        if self._lost:
            return
        # The start of a frame not yet admitted is not charged (it is at most one read): charging it
        # could fill the pool with bytes that only reading further would free.
        partial = (self._decoder.partial_frame_size or 0) if self._partial_charged else 0
        held = self._queued_bytes + self._in_flight + partial
        if held != self._charged:
            delta, self._charged = held - self._charged, held
            self._memory.adjust(delta)

    def _wait_for_memory(self) -> None:
        if not self._waiting_for_memory:
            self._waiting_for_memory = True
            self._memory.wait(self._memory_freed)

    def _memory_freed(self) -> None:
        self._waiting_for_memory = False
        if self.closed:
            return
        if self._decoder.partial_frame_size is not None:
            self._partial_charged = True
        self._charge()
        self._update_reading()

    def _update_reading(self) -> None:
        if self.closed or self.transport is None:
            return
        if self._reading_paused:
            local_room = len(self._queue) < MAX_QUEUED_FRAMES // 2 and self._queued_bytes < MAX_QUEUED_BYTES // 2
        else:
            local_room = len(self._queue) < MAX_QUEUED_FRAMES and self._queued_bytes < MAX_QUEUED_BYTES
        pause = self._waiting_for_memory or not local_room or self._muted
        if pause != self._reading_paused:
            self._reading_paused = pause
            if pause:
                self.transport.pause_reading()
            else:
                self.transport.resume_reading()

    # ---- request processing ---------------------------------------------------------------------
    async def _work(self) -> None:
        try:
            while self._queue and not self.closed:
                frame = self._queue.popleft()
                self._queued_bytes -= len(frame)
                self._in_flight = len(frame)
                self._update_reading()
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
                    if self.splicer is not None and has_regions(response):
                        try:
                            await self.splicer.send(response)
                        except OSError as exc:
                            # a response cut short cannot be finished: as Kafka, drop the connection
                            self.close(f"sending a response failed: {exc}")
                            return
                    else:
                        self.transport.writelines(response)  # type: ignore[arg-type]  # no regions
                self._in_flight = 0
                self._charge()
                if response is not None and not self._writable.is_set():
                    await self._writable.wait()
                if self.mute_s > 0:
                    await self._mute()
        finally:
            self._worker = None
        if self._queue and not self.closed:
            self._worker = asyncio.get_running_loop().create_task(self._work())

    async def _mute(self) -> None:
        delay, self.mute_s = self.mute_s, 0.0
        self._muted = True
        self._update_reading()
        try:
            await asyncio.sleep(delay)
        finally:
            self._muted = False
            self._update_reading()

    def close(self, reason: str, quiet: bool = False) -> None:
        """Close the socket (after what was written is sent); `quiet` when the reason was logged already."""
        if self.closed:
            return
        if not quiet:
            log.warning("Closing connection from %s: %s", self.peer, reason)
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class SocketServer:
    """Listens on the configured listeners and hands frames to the dispatcher."""

    def __init__(self, dispatch: Dispatcher, max_frame_size: int, limits: ConnectionLimits | None = None,
                 memory: RequestMemory | None = None) -> None:
        self._dispatch = dispatch
        self._max_frame_size = max_frame_size
        self.limits = limits
        self.memory = memory or RequestMemory(-1)
        self._servers: list[asyncio.base_events.Server] = []
        self.connections: set[Connection] = set()
        self.splice_counts = SpliceCounts()

    async def listen(self, host: str, port: int, security: ListenerSecurity | None = None) -> int:
        loop = asyncio.get_running_loop()
        # A TLS handshake that fails (a plaintext client, an untrusted certificate) closes the socket before
        # any Connection exists; asyncio logs it at debug level only.
        server = await loop.create_server(
            lambda: Connection(self._dispatch, self._max_frame_size, self.connections, self.limits, self.memory,
                               security, self.splice_counts),
            host or None,
            port,
            reuse_address=True,
            backlog=1024,
            start_serving=False,
            ssl=security.ssl_context if security is not None else None,
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
