"""The accept loop of TLS listeners (SSL, SASL_SSL). asyncio's create_server(ssl=...) builds a connection's
TLS state (a 256 KiB read buffer among it) as soon as the socket is accepted, and calls the protocol only
once the handshake is over, within a minute by default: sockets that never send a ClientHello were held
uncounted. Here the listening socket is plain TCP. Each accepted socket is counted against max.connections
and max.connections.per.ip at once; one over the limits is closed before any TLS state exists. An admitted
one is handed to the loop's connect_accepted_socket with ssl.handshake.timeout.ms as the deadline of the
handshake and of the closing close_notify exchange (asyncio would wait 30 s for the client's, reading what
it sends meanwhile). Its Connection holds the count and releases it whether the handshake completes,
fails, times out or cannot even start (no memory). Nothing that happens to one connection stops the loop
accepting the next."""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from collections.abc import Callable

from odradek.ratelog import LimitedLog
from odradek.server.limits import ConnectionLimits
from odradek.server.security import ListenerSecurity

log = logging.getLogger("odradek.network")
limited = LimitedLog(log)  # a line per connection refused or failed: a flood must not flood the log

# After an accept that failed for want of resources (descriptors, memory): wait this long before the next.
ACCEPT_RETRY_S = 0.5
# A client that reset its connection before it was accepted: nothing to wait for.
_TRANSIENT = frozenset((errno.ECONNABORTED, errno.EAGAIN, errno.EWOULDBLOCK, errno.EPROTO, errno.EINTR))


class AdmittedProtocol(asyncio.Protocol):
    """A protocol whose connection may be counted under the limits before it is made: what the acceptor
    needs of the Connection it creates (server/network.py)."""

    def admitted(self, address: str) -> None:
        """The connection from `address` was counted at accept; the protocol releases the count when lost."""
        raise NotImplementedError


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening-to-be sockets on `host` ('' or None: every interface, IPv4 and IPv6) and `port`, as
    asyncio's create_server binds them (SO_REUSEADDR, IPv6 sockets IPv6-only); listen() comes later."""
    infos = socket.getaddrinfo(host or None, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen: set[tuple[int, object]] = set()
    try:
        for family, kind, proto, _name, address in infos:
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


class TlsAcceptor:
    """Accepts on one TLS listener's sockets, admits, and runs each admitted socket's handshake."""

    def __init__(self, sockets: list[socket.socket], security: ListenerSecurity, limits: ConnectionLimits | None,
                 new_connection: Callable[[], AdmittedProtocol], backlog: int = 1024) -> None:
        assert security.ssl_context is not None
        self.sockets = sockets
        self.security = security
        self._limits = limits
        self._new_connection = new_connection
        self._backlog = backlog
        self._loops: list[asyncio.Task[None]] = []
        self._handshakes: set[asyncio.Task[None]] = set()

    @property
    def pending_handshakes(self) -> int:
        return len(self._handshakes)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        for sock in self.sockets:
            sock.listen(self._backlog)
            self._loops.append(loop.create_task(self._accept_loop(sock)))

    async def close(self) -> None:
        tasks = [*self._loops, *self._handshakes]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for sock in self.sockets:
            sock.close()

    async def _accept_loop(self, listening: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                sock, address = await loop.sock_accept(listening)
            except OSError as exc:
                if exc.errno not in _TRANSIENT:  # out of descriptors or buffers: let some close first
                    log.error("Accepting a connection on %s failed: %s", self.security.name, exc)
                    await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            except Exception as exc:  # MemoryError: the next accept may succeed once memory frees
                log.error("Accepting a connection on %s failed: %r", self.security.name, exc)
                await asyncio.sleep(ACCEPT_RETRY_S)
                continue
            self._admit(sock, address)
            # sock_accept does not yield while connections are waiting: let the other clients be served
            # between two accepts of a flood
            await asyncio.sleep(0)

    def _admit(self, sock: socket.socket, address: tuple[object, ...]) -> None:
        host, peer = str(address[0]), f"{address[0]}:{address[1]}"
        if self._limits is not None:
            refused = self._limits.admit(host, self.security.name)
            if refused is not None:
                # As Kafka: the new connection is closed at once; established ones are untouched.
                limited.info("Rejected connection from %s: %s", peer, refused, kind=refused.kind)
                sock.close()
                return
        try:
            connection = self._new_connection()
        except Exception as exc:  # MemoryError: this connection only
            log.warning("Closing connection from %s: setting it up failed: %r", peer, exc)
            if self._limits is not None:
                self._limits.release(host, self.security.name)
            sock.close()
            return
        connection.admitted(host)  # from here the connection holds the count and releases it when lost
        try:
            task = asyncio.get_running_loop().create_task(self._handshake(sock, connection, peer))
        except Exception as exc:
            log.warning("Closing connection from %s: setting it up failed: %r", peer, exc)
            sock.close()
            connection.connection_lost(None)
            return
        self._handshakes.add(task)
        task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, sock: socket.socket, connection: AdmittedProtocol, peer: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(
                lambda: connection, sock, ssl=self.security.ssl_context,
                ssl_handshake_timeout=self.security.handshake_timeout_s,
                ssl_shutdown_timeout=self.security.handshake_timeout_s)
        except asyncio.CancelledError:  # the broker is stopping (the loop closed the transport)
            connection.connection_lost(None)
            raise
        except Exception as exc:
            # Kafka's wording for a failed TLS handshake (a timed-out one included).
            limited.info("Failed authentication with %s (listener %s): SSL handshake failed: %s", peer,
                     self.security.name, str(exc) or type(exc).__name__)
            if not isinstance(exc, OSError):
                # Set-up failed (e.g. MemoryError creating the TLS state): the socket may belong to no
                # transport. Shut it down (the client sees the end) but leave closing the descriptor to
                # whoever holds the socket: a transport may still have it registered with the loop.
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            connection.connection_lost(exc)
