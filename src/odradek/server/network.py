"""Asyncio socket server: one Connection per socket, frames parsed from data_received callbacks,
requests of a connection handled in order and answered in order, with backpressure both ways. Responses
holding file regions (zero-copy Fetch) are written by server/splice.py. Produce requests may overlap: one
that has appended and only waits for the ISR lets the next Produce start (`Connection.release`); those
that never suspend are handled in a run on the connection's worker, their answers written together.

What a client may hold before it is known is bounded: every accepted socket is counted against the
connection limits at once, TLS listeners included (their own accept loop, server/tls_accept.py, counts a
socket before its handshake and times the handshake out), and on SASL listeners a connection that has
not authenticated reads one frame at a time, of at most sasl.server.max.receive.size bytes, and is
dropped on the size prefix of a larger one. A connection silent for connections.max.idle.ms (nothing read,
nothing written, no request being handled) is closed, as Kafka's selector closes idle channels. Connections
that close feed the heap trimmer (heap.py)."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import types
from collections import deque
from collections.abc import Callable, Coroutine, Generator, Sequence
from functools import partial
from typing import Any

from odradek.protocol.framing import PRODUCE_KEY, FrameDecoder, FrameError, Piece, peek_api_key
from odradek.ratelog import LimitedLog
from odradek.security import tls
from odradek.security.principal_mapping import NoMatchingRule
from odradek.security.sasl import SaslServer
from odradek.server.heap import HeapTrimmer
from odradek.server.limits import ConnectionLimits, RequestMemory
from odradek.server.security import ListenerSecurity
from odradek.server.splice import SpliceCounts, Splicer, has_regions
from odradek.server.tls_accept import AdmittedProtocol, TlsAcceptor, bind

log = logging.getLogger("odradek.network")
# lines a client can make us repeat, once per connection: at most a few per 10 s each, then counted
limited = LimitedLog(log)
_PLAINTEXT = ListenerSecurity.plaintext()

# What a dispatcher returns: chunks to send (already size-framed), or None for no response.
Response = Sequence[Piece] | None
Dispatcher = Callable[["Connection", memoryview], Coroutine[Any, Any, Response]]

# Per connection: stop reading once this many requests, or this many bytes of requests, wait to be
# handled; read again below half of both.
MAX_QUEUED_FRAMES = 64
MAX_QUEUED_BYTES = 16 << 20


# A worker handles Produce requests that do not suspend for at most this long before it lets the loop
# serve the other connections (their answers leave meanwhile, in one write).
EAGER_BUDGET_S = 0.002


def _settle(fut: asyncio.Future[None], _task: object = None) -> None:
    if not fut.done():
        fut.set_result(None)


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Response], waiting_on: Any) -> Generator[Any, None, Response]:
    """The rest of a coroutine that was stepped outside a task until it suspended on `waiting_on`, for a
    task to run: `waiting_on` goes to the task first, then the coroutine continues as if awaited."""
    try:
        yield waiting_on
    except BaseException as exc:  # e.g. the task cancelled while waiting: the coroutine sees it
        try:
            waiting_on = coro.throw(exc)
        except StopIteration as stop:
            return stop.value
        return (yield from _resume(coro, waiting_on))
    return (yield from coro)


async def _continue(coro: Coroutine[Any, Any, Response], waiting_on: Any) -> Response:
    return await _resume(coro, waiting_on)


class _Done:
    """The outcome of a Produce handler that finished without suspending, queued behind earlier answers."""

    __slots__ = ("_response", "_exc")

    def __init__(self, response: Response, exc: Exception | None) -> None:
        self._response, self._exc = response, exc

    def done(self) -> bool:
        return True

    def cancelled(self) -> bool:
        return False

    def cancel(self) -> bool:
        return False

    def exception(self) -> Exception | None:
        return self._exc

    def result(self) -> Response:
        return self._response


class CloseConnection(Exception):
    """Raised by a handler when the protocol gives no way to answer; the reason is logged."""


class Connection(AdmittedProtocol):
    """One client socket. Memory: the requests queued or being handled, plus the frame being read,
    are charged to the shared RequestMemory; a frame is charged in full once its size is known and the
    pool has room, else the connection stops reading until memory frees (nothing is dropped)."""

    def __init__(self, dispatch: Dispatcher, max_frame_size: int, registry: set[Connection],
                 limits: ConnectionLimits | None = None, memory: RequestMemory | None = None,
                 security: ListenerSecurity | None = None, splice_counts: SpliceCounts | None = None,
                 trimmer: HeapTrimmer | None = None, auth_deadline_s: float = -1.0) -> None:
        # what handlers hold for this connection and release when it ends, by key (a new entry replaces
        # an old one, so a client cannot grow it by repeating a request): e.g. a share session
        self.on_close: dict[object, Callable[[], None]] = {}
        self._dispatch = dispatch
        self._splice_counts = splice_counts
        self._trimmer = trimmer
        self.security = security or _PLAINTEXT
        # Kafka's principal of the client: User:ANONYMOUS, the TLS subject, or the SASL user.
        self.principal = "User:ANONYMOUS"
        # On SASL listeners, the authentication state; the dispatcher admits only the SASL requests until
        # it completes. None elsewhere, so plaintext and TLS requests pay one attribute test.
        self.sasl = SaslServer(self.security.sasl) if self.security.sasl is not None else None
        self._decoder = FrameDecoder(max_frame_size)
        self._max_frame_size = max_frame_size
        # Until SASL authentication first completes: frames of at most sasl.server.max.receive.size, read
        # one at a time (as Kafka's authenticator reads them), so that a client nobody knows yet holds at
        # most one small frame.
        self._unauthenticated = self.sasl is not None
        # connections.max.unauthenticated.ms: a SASL connection that has not authenticated by then is closed
        self._auth_deadline_s = auth_deadline_s
        self._auth_timer: asyncio.TimerHandle | None = None
        if self.security.sasl is not None:
            self._decoder.set_limit(self.security.sasl.max_receive_size, "sasl.server.max.receive.size")
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
        # Produce requests started and not yet answered, oldest first (more than one only while handlers
        # have released the connection, see release()), with the size of each frame.
        self._answering: deque[tuple[asyncio.Task[Response] | _Done, int]] = deque()
        self._released: asyncio.Future[None] | None = None
        # a Produce handler being stepped eagerly (see release()), and whether it released the connection
        self._stepping = False
        self._stepped_release = False
        self._out: list[Piece] = []  # Produce answers not yet written (see _flush)
        self._wake: asyncio.Future[None] | None = None
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
        self.last_active = time.monotonic()  # the last read or write (connections.max.idle.ms)

    @property
    def host(self) -> str:
        """The client's address, as ACLs name hosts."""
        return self._address

    # ---- asyncio callbacks ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Plaintext listeners: a TCP connection was accepted. TLS listeners: its handshake completed (it
        was admitted at accept, see server/tls_accept.py)."""
        self.transport = transport  # type: ignore[assignment]  # uvloop's transports are not asyncio.Transport
        try:
            self._made(transport)
        except Exception as exc:  # e.g. MemoryError: this connection fails, the listener serves on
            log.warning("Closing connection from %s: setting it up failed: %r", self.peer, exc)
            self.closed = True
            transport.abort()  # type: ignore[attr-defined]
            self._gone()

    def _made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self._address = str(peer[0]) if peer else "?"
        if self._limits is not None and not self._admitted:
            refused = self._limits.admit(self._address, self.security.name)
            if refused is not None:
                # As Kafka: the new connection is closed at once; established ones are untouched.
                limited.info("Rejected connection from %s: %s", self.peer, refused, kind=refused.kind)
                self.closed = True
                transport.close()
                return
            self._admitted = True
        if self.security.ssl_context is not None:
            try:
                self.principal = tls.peer_principal(transport.get_extra_info("ssl_object"),
                                                    self.security.principal_rules)
            except NoMatchingRule as exc:
                limited.info("Failed authentication with %s (listener %s): %s", self.peer, self.security.name, exc)
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
        if self._unauthenticated and self._auth_deadline_s >= 0:
            self._auth_timer = asyncio.get_running_loop().call_later(self._auth_deadline_s, self._auth_expired)

    def _auth_expired(self) -> None:
        self._auth_timer = None
        if self._unauthenticated and not self.closed:
            limited.info("Closing connection from %s (listener %s): not authenticated within %d ms"
                         " (connections.max.unauthenticated.ms)", self.peer, self.security.name,
                         round(self._auth_deadline_s * 1000))
            self.close("not authenticated in time", quiet=True, abort=True)

    @property
    def unauthenticated(self) -> bool:
        """A SASL connection that has not authenticated yet (the first to make way for the inter-broker
        listener)."""
        return self._unauthenticated

    def admitted(self, address: str) -> None:
        """TLS listeners: the connection was counted under the limits when its socket was accepted, before
        the handshake; it is released when the connection ends, whether or not the handshake completed."""
        self._address = address
        self._admitted = True

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self.last_active = time.monotonic()
        try:
            frames = self._decoder.feed(data)
        except FrameError as exc:
            self.close(f"invalid frame{' before authentication' if self._unauthenticated else ''}: {exc}", abort=True)
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
                self._decoder.reserve()
        self._update_reading()
        if frames:
            if self._worker is None:
                self._worker = asyncio.get_running_loop().create_task(self._work())
            else:
                self._poke()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone()

    def _gone(self) -> None:
        """The connection is over (closed by either side, refused, or its TLS handshake failed): release
        everything it held, once."""
        if self._lost:
            return
        self.closed = True
        self._registry.discard(self)
        self._writable.set()
        if self._worker is not None:
            self._worker.cancel()
        self._cancel_answers()
        if self._waiting_for_memory:
            self._memory.cancel(self._memory_freed)
        self._queue.clear()
        self._memory.adjust(-self._charged)
        self._charged = 0
        self._lost = True
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        if self._admitted and self._limits is not None:
            self._limits.release(self._address, self.security.name)
        self._admitted = False
        if self._trimmer is not None:
            self._trimmer.connection_closed()
        releases, self.on_close = self.on_close, {}
        for release in releases.values():
            try:
                release()
            except Exception:  # noqa: BLE001 - one failing release must not keep the others from running
                log.exception("Releasing what connection %s held failed", self.peer)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()
        self._poke()

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
        if self._partial_charged:
            self._decoder.reserve()
        self._update_reading()

    def authenticated(self, principal: str) -> None:
        """SASL authentication completed: requests of up to socket.request.max.bytes, read as fast as
        memory allows, from now on (re-authentication keeps them)."""
        self.principal = principal
        if self._auth_timer is not None:
            self._auth_timer.cancel()
            self._auth_timer = None
        if self._unauthenticated:
            self._unauthenticated = False
            self._decoder.set_limit(self._max_frame_size, "socket.request.max.bytes")
            self._update_reading()

    def _update_reading(self) -> None:
        if self.closed or self.transport is None:
            return
        if self._unauthenticated:
            local_room = not self._queue and not self._in_flight  # one frame at a time
        elif self._reading_paused:
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
                if peek_api_key(self._queue[0]) == PRODUCE_KEY:
                    await self._produce_run()
                    if self.closed:
                        return
                    if not self._writable.is_set():
                        await self._writable.wait()
                    if self.mute_s > 0:
                        await self._mute()
                    continue
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
                    self.last_active = time.monotonic()
                    if self.splicer is not None and has_regions(response):
                        try:
                            await self.splicer.send(response)
                        except OSError as exc:
                            # a response cut short cannot be finished: as Kafka, drop the connection
                            self.close(f"sending a response failed: {exc}")
                            return
                    else:
                        self.transport.writelines(response)  # type: ignore[arg-type]  # no regions
                # the request's bytes are released from the pool here: they must be freed here too, not
                # when the next request replaces them (a large frame would stay held uncounted meanwhile)
                del frame
                self._in_flight = 0
                self._charge()
                if self._unauthenticated:
                    self._update_reading()  # the next frame may be read
                if response is not None and not self._writable.is_set():
                    await self._writable.wait()
                if self.mute_s > 0:
                    await self._mute()
        finally:
            self._worker = None
        if self._queue and not self.closed:
            self._worker = asyncio.get_running_loop().create_task(self._work())

    # Produce requests, overlapping. Kafka handles one request of a connection at a time; an acks=all
    # Produce spends most of that time waiting for the followers' next fetch, during which the next
    # Produce may as well append, so that one follower fetch carries both. Appends stay in request order
    # (a request starts only once the one before has appended) and so do answers.
    #
    # Most Produce handlers never suspend (acks=1, or acks=all on a single-replica ISR): each is stepped
    # eagerly on the worker's task, and only one that suspends becomes a task of its own (`_resume`). The
    # answers of a run of pipelined requests handled in one go leave in one write (`_flush`) before the
    # worker next awaits: one send for the run instead of a task, a future, two callbacks, three loop turns
    # and a send per request. Until its first suspension a Produce handler therefore runs on the worker's
    # task (as other APIs' handlers run throughout), and on a task of its own after it: it must not enter
    # asyncio.timeout(), bound to the task current at entry, before it first awaits.
    def release(self) -> None:
        """Called by a Produce handler whose appends are done and that now only waits (for the ISR, or a
        flush): the connection may start its next request if that is a Produce too."""
        if self._stepping:  # the handler being stepped eagerly: it suspends next
            self._stepped_release = True
            return
        released = self._released
        if (released is not None and self._answering
                and self._answering[-1][0] is asyncio.current_task()):
            _settle(released)

    def _poke(self) -> None:
        if self._wake is not None:
            _settle(self._wake)

    def _flush(self) -> None:
        """Write the answers gathered since the last flush, in one go."""
        out = self._out
        if out:
            self._out = []
            if not self.closed and self.transport is not None:
                self.last_active = time.monotonic()
                self.transport.writelines(out)  # type: ignore[arg-type]  # Produce: no regions

    def _settled(self) -> None:
        """Before the worker awaits: answers out, reading and the memory charge brought up to date."""
        self._flush()
        self._update_reading()
        self._charge()

    async def _produce_run(self) -> None:
        """Handle the Produce requests at the head of the queue, each started once the one before it has
        released the connection or finished; returns when all are answered and the next request is not
        a Produce that may start (nor one that may still arrive behind an unanswered one)."""
        loop = asyncio.get_running_loop()
        budget_end = time.perf_counter() + EAGER_BUDGET_S
        while not self.closed:
            if (self._queue and peek_api_key(self._queue[0]) == PRODUCE_KEY and self.mute_s <= 0
                    and self._writable.is_set()):
                if time.perf_counter() > budget_end:  # the other connections' turn
                    self._settled()
                    await asyncio.sleep(0)
                    budget_end = time.perf_counter() + EAGER_BUDGET_S
                    continue
                frame = self._queue.popleft()
                size = len(frame)
                self._queued_bytes -= size
                self._in_flight += size
                coro = self._dispatch(self, frame)
                del frame  # the handler holds it until it is answered and released from the pool
                self._stepping, self._stepped_release = True, False
                try:
                    waiting_on = coro.send(None)
                except StopIteration as stop:
                    self._answered(stop.value, None, size)
                    continue
                except Exception as exc:  # noqa: BLE001 - answered (the connection closed) in request order
                    self._answered(None, exc, size)
                    continue
                finally:
                    self._stepping = False
                task: asyncio.Task[Response] = loop.create_task(_continue(coro, waiting_on))
                self._answering.append((task, size))
                task.add_done_callback(self._answer_ready)
                if not self._stepped_release:
                    released = self._released = loop.create_future()
                    task.add_done_callback(partial(_settle, released))
                    self._settled()
                    await released
                    self._released = None
            elif self._answering:
                # an answer, a new frame or room to write will change what may start
                self._settled()
                self._wake = loop.create_future()
                await self._wake
                self._wake = None
            else:
                break
        self._settled()

    def _answered(self, response: Response, exc: Exception | None, size: int) -> None:
        """A Produce handler finished without suspending: its answer goes out after every earlier one."""
        if self._answering:
            self._answering.append((_Done(response, exc), size))
            return
        self._in_flight -= size
        self._deliver(response, exc)

    def _deliver(self, response: Response, exc: BaseException | None) -> None:
        if exc is not None:  # the answers before it still go out (close() flushes them)
            if isinstance(exc, CloseConnection):
                self.close(str(exc))
            else:  # a handler bug must not take the broker down
                log.error("Unexpected error handling a request from %s", self.peer, exc_info=exc)
                self.close(f"internal error: {exc}")
        elif response is not None:
            self._out.extend(response)

    def _answer_ready(self, _task: asyncio.Task[Response]) -> None:
        """A Produce finished: send every answer at the head of the line that is ready, in order."""
        while self._answering and self._answering[0][0].done():
            done, size = self._answering.popleft()
            self._in_flight -= size
            if done.cancelled() or self.closed:
                continue
            exc = done.exception()
            self._deliver(done.result() if exc is None else None, exc)
        self._flush()
        if self.closed:
            self._cancel_answers()
        self._charge()
        self._poke()

    def _cancel_answers(self) -> None:
        for task, size in self._answering:
            task.cancel()
            self._in_flight -= size
        self._answering.clear()

    async def _mute(self) -> None:
        delay, self.mute_s = self.mute_s, 0.0
        self._muted = True
        self._update_reading()
        try:
            await asyncio.sleep(delay)
        finally:
            self._muted = False
            self._update_reading()

    def idle(self, now: float, limit_s: float) -> bool:
        """Silent for longer than `limit_s` with no request queued or being handled."""
        return (now - self.last_active > limit_s and not self._queue and not self._in_flight
                and not self._answering and self._worker is None and not self.closed)

    def close(self, reason: str, quiet: bool = False, abort: bool = False) -> None:
        """Close the socket (after what was written is sent; `abort`: at once, with nothing to send and no
        TLS close_notify exchange, while the client may still be sending); `quiet` when the reason was
        logged already."""
        if self.closed:
            return
        if not quiet:
            limited.warning("Closing connection from %s: %s", self.peer, reason)
        if not abort:
            self._flush()  # answered before the close
        self.closed = True
        if self.transport is not None:
            if abort:
                self.transport.abort()
            else:
                self.transport.close()


class _Refuse(asyncio.Protocol):
    """Stands in for a Connection that could not be created (no memory): the socket is closed at once.
    The accept loop must get a protocol back whatever happens, or uvloop stops accepting on the port."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.abort()  # type: ignore[attr-defined]


_REFUSE = _Refuse()


class SocketServer:
    """Listens on the configured listeners and hands frames to the dispatcher."""

    def __init__(self, dispatch: Dispatcher, max_frame_size: int, limits: ConnectionLimits | None = None,
                 memory: RequestMemory | None = None, trimmer: HeapTrimmer | None = None,
                 max_idle_ms: int = -1, max_unauthenticated_ms: int = -1) -> None:
        self._dispatch = dispatch
        self.max_idle_ms = max_idle_ms  # connections.max.idle.ms; negative: never closed for silence
        self.max_unauthenticated_ms = max_unauthenticated_ms  # negative: no deadline
        self._idle_sweeper: asyncio.Task[None] | None = None
        self._max_frame_size = max_frame_size
        self.limits = limits
        self.memory = memory or RequestMemory(-1)
        self.trimmer = trimmer or HeapTrimmer()
        if self.memory.on_drained is None:
            self.memory.on_drained = self.trimmer.memory_freed
        self._servers: list[asyncio.base_events.Server] = []
        self._tls_acceptors: list[TlsAcceptor] = []
        self.connections: set[Connection] = set()
        self.splice_counts = SpliceCounts()
        if limits is not None:
            limits.make_way = self._make_way

    def _connection(self, security: ListenerSecurity | None) -> Connection:
        return Connection(self._dispatch, self._max_frame_size, self.connections, self.limits, self.memory,
                          security, self.splice_counts, self.trimmer, self.max_unauthenticated_ms / 1000)

    def _make_way(self, protected: str) -> None:
        """The inter-broker listener admitted a connection past max.connections: close one connection of
        another listener, as Kafka's processors do, choosing one still unauthenticated if there is one,
        else the one silent the longest."""
        others = [c for c in self.connections if c.security.name != protected and not c.closed]
        if not others:
            return
        victim = min(others, key=lambda c: (not c.unauthenticated, c.last_active))
        limited.info("Closing connection from %s (listener %s): the inter-broker listener %s needs its place"
                 " (max.connections=%d)", victim.peer, victim.security.name, protected,
                 self.limits.max_total if self.limits is not None else -1)
        victim.close("max.connections reached", quiet=True, abort=True)

    def _accepted(self, security: ListenerSecurity | None) -> asyncio.Protocol:
        try:
            return self._connection(security)
        except Exception as exc:  # e.g. MemoryError: this connection only
            log.warning("Closing a new connection: creating it failed: %r", exc)
            return _REFUSE

    async def listen(self, host: str, port: int, security: ListenerSecurity | None = None) -> int:
        if security is not None and security.ssl_context is not None:
            # TLS: plain TCP sockets and our own accept loop, which counts a socket before its handshake
            # and bounds the handshake in time (server/tls_accept.py)
            acceptor = TlsAcceptor(bind(host, port), security, self.limits, partial(self._connection, security))
            self._tls_acceptors.append(acceptor)
            return acceptor.sockets[0].getsockname()[1]
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            partial(self._accepted, security),
            host or None,
            port,
            reuse_address=True,
            backlog=1024,
            start_serving=False,
        )
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    async def start_serving(self) -> None:
        """Accept connections only once the broker is ready (the ports were bound earlier). Every listener
        listens before the loop runs anything else, so by the time any port answers every one does (a
        client of a second listener, started as soon as the first answered, is never refused)."""
        for acceptor in self._tls_acceptors:
            acceptor.start()
        await asyncio.gather(*(s.start_serving() for s in self._servers))
        if self.max_idle_ms >= 0 and self._idle_sweeper is None:
            self._idle_sweeper = asyncio.get_running_loop().create_task(self._close_idle())

    async def _close_idle(self) -> None:
        """Close the connections idle for longer than connections.max.idle.ms, looking a few times per
        period (at least every 30 s), so one closes at most a quarter period late."""
        limit_s = self.max_idle_ms / 1000
        while True:
            await asyncio.sleep(min(max(limit_s / 4, 0.05), 30.0))
            now = time.monotonic()
            for c in [c for c in self.connections if c.idle(now, limit_s)]:
                log.debug("Closing connection from %s: idle for more than %d ms (connections.max.idle.ms)",
                          c.peer, self.max_idle_ms)
                c.close("idle", quiet=True)

    async def close(self) -> None:
        self.trimmer.close()
        if self._idle_sweeper is not None:
            self._idle_sweeper.cancel()
        for s in self._servers:
            s.close()
        for acceptor in self._tls_acceptors:
            await acceptor.close()
        for c in list(self.connections):
            if c.transport is not None:
                c.transport.close()
        for s in self._servers:
            try:
                await asyncio.wait_for(s.wait_closed(), 2)
            except TimeoutError:
                pass
