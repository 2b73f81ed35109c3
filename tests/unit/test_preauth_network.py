"""The socket server's bounds on clients it does not know yet, in process on asyncio's loop and on uvloop:
TLS sockets counted at accept (over the limits: closed before any handshake), a handshake that never
starts timed out and its count freed, a failure setting up one connection closing only that one, and on
SASL listeners frames before authentication held to sasl.server.max.receive.size and charged to the
request memory while they are read."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest
import trustme
import uvloop

from odradek.security.sasl import SaslSettings
from odradek.server.limits import ConnectionLimits, RequestMemory
from odradek.server.network import Connection, SocketServer
from odradek.server.security import ListenerSecurity

LOOPS = ["asyncio", "uvloop"]


def run(loop_kind: str, main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    if loop_kind == "uvloop":
        uvloop.run(asyncio.wait_for(main(), 30))
    else:
        asyncio.run(asyncio.wait_for(main(), 30))


@pytest.fixture(scope="module")
def contexts() -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(server, client) TLS contexts for 127.0.0.1."""
    ca = trustme.CA()
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server)
    client = ssl.create_default_context()
    ca.configure_trust(client)
    return server, client


async def echo(conn: Connection, frame: memoryview) -> list[bytes]:
    return [struct.pack(">i", len(frame)), bytes(frame)]


async def until(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def closed_by_peer(reader: asyncio.StreamReader, timeout: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(1), timeout) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


async def tls_round_trip(port: int, client: ssl.SSLContext) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client, server_hostname="127.0.0.1")
    writer.write(struct.pack(">i", 3) + b"abc")
    got = await asyncio.wait_for(reader.readexactly(7), 10)
    writer.close()
    return got


async def tls_server(contexts: tuple[ssl.SSLContext, ssl.SSLContext], limits: ConnectionLimits,
                     timeout_s: float = 10.0) -> tuple[SocketServer, int]:
    server = SocketServer(echo, 1 << 20, limits)
    port = await server.listen("127.0.0.1", 0, ListenerSecurity("SSL", "SSL", contexts[0],
                                                                handshake_timeout_s=timeout_s))
    await server.start_serving()
    return server, port


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_tls_sockets_over_the_limits_are_closed_before_any_handshake(
        loop_kind: str, contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    async def main() -> None:
        limits = ConnectionLimits(100, 2)
        server, port = await tls_server(contexts, limits)
        silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await until(lambda: limits.total == 2)  # counted while their handshake has not even started
        extra_reader, extra_writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_peer(extra_reader, 5)
        assert not await closed_by_peer(silent[0][0], 0.2)
        for _, writer in silent:
            writer.close()
        await until(lambda: limits.total == 0)  # a handshake the client gave up frees its count
        assert await tls_round_trip(port, contexts[1]) == struct.pack(">i", 3) + b"abc"
        extra_writer.close()
        await server.close()
        await until(lambda: limits.total == 0)

    run(loop_kind, main)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_a_handshake_that_never_starts_is_timed_out(
        loop_kind: str, contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    async def main() -> None:
        limits = ConnectionLimits(100, 1)
        server, port = await tls_server(contexts, limits, timeout_s=0.3)
        started = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_peer(reader, 10)
        assert time.monotonic() - started >= 0.25
        await until(lambda: limits.total == 0)
        assert await tls_round_trip(port, contexts[1]) == struct.pack(">i", 3) + b"abc"
        writer.close()
        await server.close()

    run(loop_kind, main)


def test_a_failure_setting_up_one_tls_connection_closes_only_that_one(
        contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    """MemoryError creating the TLS state (asyncio's loop: its methods can be replaced per loop)."""

    async def main() -> None:
        limits = ConnectionLimits(100, 100)
        server, port = await tls_server(contexts, limits)
        loop = asyncio.get_running_loop()
        real = loop.connect_accepted_socket
        failures = [MemoryError()]

        def failing(*args: Any, **kwargs: Any) -> Awaitable[Any]:
            if failures:
                raise failures.pop()
            return real(*args, **kwargs)

        loop.connect_accepted_socket = failing  # type: ignore[method-assign]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_peer(reader, 5)
        await until(lambda: limits.total == 0)
        assert await tls_round_trip(port, contexts[1]) == struct.pack(">i", 3) + b"abc"
        writer.close()
        await server.close()

    asyncio.run(asyncio.wait_for(main(), 30))


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_a_failure_creating_a_plaintext_connection_closes_only_that_one(loop_kind: str,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> None:
        server = SocketServer(echo, 1 << 20, ConnectionLimits(100, 100))
        port = await server.listen("127.0.0.1", 0)
        await server.start_serving()
        failures = [MemoryError()]
        real = server._connection

        def failing(security: ListenerSecurity | None) -> Connection:
            if failures:
                raise failures.pop()
            return real(security)

        monkeypatch.setattr(server, "_connection", failing)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await closed_by_peer(reader, 5)
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", port)
        writer2.write(struct.pack(">i", 2) + b"ok")
        assert await asyncio.wait_for(reader2.readexactly(6), 10) == struct.pack(">i", 2) + b"ok"
        writer.close()
        writer2.close()
        await server.close()

    run(loop_kind, main)


# ---- SASL listeners: frames before authentication ---------------------------------------------------

SASL = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", sasl=SaslSettings(("PLAIN",), max_receive_size=1000))


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_frames_before_authentication_are_bounded_and_charged(loop_kind: str) -> None:
    async def main() -> None:
        async def dispatch(conn: Connection, frame: memoryview) -> list[bytes]:
            if bytes(frame) == b"login":
                conn.authenticated("User:alice")
            return [struct.pack(">i", len(frame)), bytes(frame[:0])]

        memory = RequestMemory(1 << 20)
        server = SocketServer(dispatch, 1 << 20, ConnectionLimits(100, 100), memory)
        port = await server.listen("127.0.0.1", 0, SASL)
        await server.start_serving()
        # the start of a frame under the limit is charged at its full size while it is read
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(struct.pack(">i", 900) + b"x" * 10)
        await until(lambda: memory.used == 904)
        # one over the limit: closed on its size prefix, nothing more read or charged
        reader2, writer2 = await asyncio.open_connection("127.0.0.1", port)
        writer2.write(struct.pack(">i", 1001))
        assert await closed_by_peer(reader2, 5)
        assert memory.used == 904
        writer.close()
        await until(lambda: memory.used == 0)
        # authenticated, the connection may send frames up to socket.request.max.bytes
        reader3, writer3 = await asyncio.open_connection("127.0.0.1", port)
        writer3.write(struct.pack(">i", 5) + b"login")
        assert await asyncio.wait_for(reader3.readexactly(4), 10) == struct.pack(">i", 5)
        writer3.write(struct.pack(">i", 50_000) + b"y" * 50_000)
        assert await asyncio.wait_for(reader3.readexactly(4), 10) == struct.pack(">i", 50_000)
        for w in (writer2, writer3):
            w.close()
        await server.close()

    run(loop_kind, main)


def test_bind_listens_on_the_address_asked_for() -> None:
    from odradek.server.tls_accept import bind

    sockets = bind("127.0.0.1", 0)
    try:
        assert [s.getsockname()[0] for s in sockets] == ["127.0.0.1"]
        assert sockets[0].getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)
    finally:
        for s in sockets:
            s.close()


# ---- connections.max.unauthenticated.ms and making way for the inter-broker listener -----------------------

INTERNAL = ListenerSecurity("INTERNAL", "PLAINTEXT")
CLIENTS = ListenerSecurity("CLIENTS", "SASL_PLAINTEXT", sasl=SaslSettings(("PLAIN",)))


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_an_unauthenticated_connection_is_closed_at_its_deadline(loop_kind: str) -> None:
    async def main() -> None:
        limits = ConnectionLimits(100, 100)
        server = SocketServer(echo, 1 << 20, limits, max_unauthenticated_ms=300)
        port = await server.listen("127.0.0.1", 0, CLIENTS)
        plain_port = await server.listen("127.0.0.1", 0, INTERNAL)
        await server.start_serving()
        started = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        _, other = await asyncio.open_connection("127.0.0.1", plain_port)  # no SASL: no deadline
        await until(lambda: limits.total == 2)
        silent = next(c for c in server.connections if c.security is CLIENTS)
        assert await closed_by_peer(reader, 5)
        assert 0.25 <= time.monotonic() - started < 3
        await until(lambda: limits.total == 1)
        assert silent.closed and [c.security for c in server.connections] == [INTERNAL]
        writer.close()
        other.close()
        await server.close()

    run(loop_kind, main)


@pytest.mark.parametrize("loop_kind", LOOPS)
def test_the_inter_broker_listener_past_max_connections_closes_an_unauthenticated_client(loop_kind: str) -> None:
    async def main() -> None:
        limits = ConnectionLimits(2, 100, protected="INTERNAL")
        server = SocketServer(echo, 1 << 20, limits)
        port = await server.listen("127.0.0.1", 0, CLIENTS)
        internal = await server.listen("127.0.0.1", 0, INTERNAL)
        await server.start_serving()
        clients = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        await until(lambda: len(server.connections) == 2)
        first, second = sorted(server.connections, key=lambda c: c.last_active)
        first.authenticated("User:alice")  # the older one has authenticated: the younger one makes way
        refused_reader, _ = await asyncio.open_connection("127.0.0.1", port)  # CLIENTS is full
        assert await closed_by_peer(refused_reader, 5)
        await asyncio.open_connection("127.0.0.1", internal)
        await until(lambda: second.closed)
        assert not first.closed and limits.total == 2
        for _, w in clients:
            w.close()
        await server.close()

    run(loop_kind, main)
