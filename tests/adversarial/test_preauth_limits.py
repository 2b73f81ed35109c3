"""What a client that has not authenticated can make the broker hold (issue #25, findings 2, 3 and 7), against
real brokers with PLAINTEXT, SASL_PLAINTEXT and SASL_SSL (or SSL) listeners:

- before SASL completes, a frame whose size prefix exceeds sasl.server.max.receive.size closes the connection
  as soon as the prefix is read (the client sees the end having sent only the prefix), on SASL_PLAINTEXT and
  SASL_SSL, after ApiVersions and in SaslHandshake v0's raw-token state too; a 5,000,000-byte PLAIN token is
  refused the same way; after authentication socket.request.max.bytes applies again;
- the issue's "done when": an authenticated client keeps round trips under 100 ms (median) while six clients
  attempt 100 MB frames before authenticating and hundreds (--run-slow: 5,000) of TLS connections stay
  silent; the silent ones beyond max.connections.per.ip and max.connections are closed at once, and the
  broker's RSS comes back within 50 MB of where it started after each flood;
- a TLS handshake that never starts is closed after ssl.handshake.timeout.ms and its place is freed;
- memory comes back after a flood of admitted, half-open TLS connections (malloc_trim).

Silent connections come from their own loopback addresses (127.0.0.x), so that the per-address limit they
hit is theirs, not the authenticated client's."""

from __future__ import annotations

import socket
import ssl
import statistics
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil
import pytest
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from odradek.protocol.client_security import ClientSecurity
from odradek.protocol.transport import BlockingConnection
from tests.adversarial.secured import JAAS  # users admin, alice and bob
from tests.clients import produce
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.sockets import MB, rss, rss_back
from tests.waiting import wait_until

SASL_LIMIT = 524288  # sasl.server.max.receive.size's default
HUGE = 104_857_600  # the frame: socket.request.max.bytes itself
SASL_AUTHENTICATION_FAILED = 58


class Ports:
    def __init__(self) -> None:
        self.plain, self.sasl, self.sasl_ssl = free_port(), free_port(), free_port()


def _sasl_listeners(ports: Ports, ca_chain: Path, **props: str) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{ports.plain},SASL_PLAINTEXT://127.0.0.1:{ports.sasl},"
                     f"SASL_SSL://127.0.0.1:{ports.sasl_ssl}",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(ca_chain),
        "connection.failed.authentication.delay.ms": "20",
        **props,
    }


@pytest.fixture(scope="module")
def guarded(module_brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> tuple[BrokerProcess, Ports]:
    """The issue's broker: SASL_SSL with PLAIN users, max.connections=30, max.connections.per.ip=20. A
    handshake deadline longer than any step of the tests, so a socket closed early was refused at accept."""
    ports = Ports()
    broker = module_brokers.start(_sasl_listeners(ports, pem_pki[1], **{
        "max.connections": "30", "max.connections.per.ip": "20", "ssl.handshake.timeout.ms": "30000"}),
        name="guarded", port=ports.plain)
    return broker, ports


def _client_tls(pem_pki: tuple[Path, Path]) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(pem_pki[0]))


def _framed(request: ApiMessage, version: int, correlation_id: int = 1) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id="preauth-test")
    return bytes(request.encode(header=True, framed=True))


def _closed_by_peer(sock: socket.socket, timeout: float = 10.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError, ssl.SSLEOFError, ssl.SSLZeroReturnError):
        return True
    except TimeoutError:
        return False


@contextmanager
def _connected(port: int, tls: ssl.SSLContext | None, source: str = "127.0.0.1") -> Iterator[socket.socket]:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
    sock = tls.wrap_socket(raw, server_hostname="127.0.0.1") if tls is not None else raw
    try:
        yield sock
    finally:
        sock.close()


def _request(sock: socket.socket, request: ApiMessage, version: int) -> bytes:
    """Send one request, return its response frame (size prefix removed)."""
    sock.sendall(_framed(request, version))
    size = struct.unpack(">i", _read(sock, 4))[0]
    return _read(sock, size)


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return data


def _refusal_logged(broker: BrokerProcess, sock: socket.socket, size: int) -> None:
    """The one line that says why: the peer, the size and the limit."""
    host, port = sock.getsockname()[:2]
    wanted = (f"{host}:{port}", f"frame of {size} bytes is larger than sasl.server.max.receive.size ({SASL_LIMIT})")
    wait_until(lambda: any(all(w in line for w in wanted) for line in broker.output().splitlines()), 10,
               f"a log line with {wanted}")


# ---- frames before authentication -------------------------------------------------------------------


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_a_frame_over_the_sasl_limit_is_refused_on_its_size_prefix(guarded: tuple[BrokerProcess, Ports],
                                                                    pem_pki: tuple[Path, Path], protocol: str) -> None:
    broker, ports = guarded
    port, tls = (ports.sasl, None) if protocol == "SASL_PLAINTEXT" else (ports.sasl_ssl, _client_tls(pem_pki))
    with _connected(port, tls) as sock:  # the first frame
        sock.sendall(struct.pack(">i", HUGE))
        assert _closed_by_peer(sock)
        _refusal_logged(broker, sock, HUGE)
    with _connected(port, tls) as sock:  # after ApiVersions, one byte over the limit
        assert _request(sock, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3)
        sock.sendall(struct.pack(">i", SASL_LIMIT + 1))
        assert _closed_by_peer(sock)
        _refusal_logged(broker, sock, SASL_LIMIT + 1)
    with _connected(port, tls) as sock:  # the raw token after SaslHandshake v0
        assert _request(sock, SaslHandshakeRequest(mechanism="PLAIN"), 0)[4:6] == b"\x00\x00"
        sock.sendall(struct.pack(">i", HUGE))
        assert _closed_by_peer(sock)
        _refusal_logged(broker, sock, HUGE)


def test_a_five_megabyte_plain_token_is_refused(guarded: tuple[BrokerProcess, Ports]) -> None:
    broker, ports = guarded
    token = b"\0alice\0" + b"p" * 5_000_000
    frame = _framed(SaslAuthenticateRequest(auth_bytes=token), 2)
    with _connected(ports.sasl, None) as sock:
        assert _request(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1)[4:6] == b"\x00\x00"
        sock.sendall(frame[:4096])  # the size prefix and the start of the token: no more is read
        assert _closed_by_peer(sock)
        _refusal_logged(broker, sock, len(frame) - 4)
    # a token under the limit is read and judged (a wrong password), not refused for its size
    small = _framed(SaslAuthenticateRequest(auth_bytes=b"\0alice\0" + b"p" * 500_000), 2)
    with _connected(ports.sasl, None) as sock:
        assert _request(sock, SaslHandshakeRequest(mechanism="PLAIN"), 1)[4:6] == b"\x00\x00"
        sock.sendall(small)
        size = struct.unpack(">i", _read(sock, 4))[0]
        response = _read(sock, size)
        assert struct.unpack(">h", response[5:7])[0] == SASL_AUTHENTICATION_FAILED  # header v1: id, no tags


def test_after_authentication_socket_request_max_bytes_applies(guarded: tuple[BrokerProcess, Ports]) -> None:
    _, ports = guarded
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "alice",
            "sasl.password": "alice-secret"}
    value = b"v" * 700_000  # a Produce request larger than sasl.server.max.receive.size
    [(partition, offset)] = produce(f"127.0.0.1:{ports.sasl}", "preauth-large", [value], **conf)
    assert (partition, offset) == (0, 0)


# ---- the flood --------------------------------------------------------------------------------


class RoundTrips(threading.Thread):
    """An authenticated SASL_SSL client timing Metadata round trips until stopped (bounded in count)."""

    def __init__(self, port: int, tls: ssl.SSLContext) -> None:
        super().__init__(daemon=True)
        security = ClientSecurity("SASL_SSL", tls, "PLAIN", "alice", "alice-secret")
        self.connection = BlockingConnection("127.0.0.1", port, "timed", 10, security=security)
        self.latencies: list[float] = []
        self.error: BaseException | None = None
        self._finish = threading.Event()

    def run(self) -> None:
        try:
            while not self._finish.is_set() and len(self.latencies) < 100_000:
                started = time.perf_counter()
                assert self.connection.request(MetadataRequest(topics=[]), 1) is not None
                self.latencies.append(time.perf_counter() - started)
                self._finish.wait(0.01)
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def stop(self) -> list[float]:
        self._finish.set()
        self.join(30)
        self.connection.close()
        if self.error is not None:
            raise self.error
        return self.latencies


def _huge_frame_attempt(port: int, tls: ssl.SSLContext, source: str, sent: list[int]) -> None:
    """A SASL_SSL client that sends a 104,857,600-byte size prefix and then tries to send 99 MB; records
    how much it got out before the broker's close stopped it (bounded: 99 MB or 60 s)."""
    total = 0
    deadline = time.monotonic() + 60
    chunk = b"\0" * (1 << 20)
    with _connected(port, tls, source) as sock:
        sock.settimeout(10)
        try:
            sock.sendall(struct.pack(">i", HUGE))
            while total < 99 * MB and time.monotonic() < deadline:
                sock.sendall(chunk)
                total += len(chunk)
        except OSError:  # reset or broken pipe: the broker closed the connection
            sent.append(total)
            return
    sent.append(-1)  # never refused


class SilentFlood:
    """`count` TCP connections from `source` that never send a byte (not even a TLS ClientHello)."""

    def __init__(self, port: int, source: str, count: int) -> None:
        self.sockets: list[socket.socket] = []
        self._closed: set[int] = set()
        for _ in range(count):
            sock = socket.socket()
            self.sockets.append(sock)
            sock.setblocking(False)
            sock.bind((source, 0))
            sock.connect_ex(("127.0.0.1", port))

    def closed(self) -> int:
        """How many the broker has closed so far."""
        for i, sock in enumerate(self.sockets):
            if i in self._closed:
                continue
            try:
                if sock.recv(1) == b"":
                    self._closed.add(i)
            except (BlockingIOError, InterruptedError):
                pass
            except OSError:  # reset, or refused when the backlog overflowed
                self._closed.add(i)
        return len(self._closed)

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


@pytest.mark.parametrize("silent", [pytest.param(800, id="800-silent"),
                                    pytest.param(5000, id="5000-silent", marks=pytest.mark.slow)])
def test_an_authenticated_client_is_served_through_the_floods(guarded: tuple[BrokerProcess, Ports],
                                                              pem_pki: tuple[Path, Path], silent: int) -> None:
    broker, ports = guarded
    tls = _client_tls(pem_pki)
    timed = RoundTrips(ports.sasl_ssl, tls)  # connected before the flood, from 127.0.0.1
    timed.start()
    wait_until(lambda: len(timed.latencies) >= 5, 30, "the first round trips")
    start = rss(broker.pid)
    with ExitStack() as cleanup:
        # Six pre-auth 100 MB frames and the silent TLS flood, at once.
        sent: list[int] = []
        senders = [threading.Thread(target=_huge_frame_attempt, args=(ports.sasl_ssl, tls, "127.0.0.4", sent))
                   for _ in range(6)]
        for t in senders:
            t.start()
        flood = SilentFlood(ports.sasl_ssl, "127.0.0.3", silent)
        cleanup.callback(flood.close)
        # every silent connection beyond max.connections.per.ip (20) is closed at once, well before the
        # handshake deadline (30 s): the other 20 stay open, counted
        wait_until(lambda: flood.closed() >= silent - 20, 25, lambda: f"{silent - 20} refused, {flood.closed()} so far")
        # meanwhile new authenticated connections are served
        security = ClientSecurity("SASL_SSL", tls, "PLAIN", "alice", "alice-secret")
        for _ in range(3):
            with BlockingConnection("127.0.0.1", ports.sasl_ssl, "new", 10, security=security) as fresh:
                assert fresh.request(MetadataRequest(topics=[]), 1).brokers
        for t in senders:
            t.join(90)
        assert flood.closed() == silent - 20
        assert len(sent) == 6 and all(0 <= n < 20 * MB for n in sent), sent  # refused early, not read
    latencies = timed.stop()
    assert statistics.median(latencies) < 0.1, f"median {statistics.median(latencies) * 1000:.0f} ms"
    out = broker.output()
    assert "address 127.0.0.3 already has the configured maximum of 20 connections" in out
    assert f"frame of {HUGE} bytes is larger than sasl.server.max.receive.size" in out
    rss_back(broker.pid, start, f"{silent} silent TLS connections and six 100 MB frames")


def test_silent_tls_connections_over_max_connections_are_closed_at_once(guarded: tuple[BrokerProcess, Ports],
                                                                        pem_pki: tuple[Path, Path]) -> None:
    broker, ports = guarded
    wait_until(lambda: _held(broker) == 0, 20, "no connection left from the earlier tests")
    start = rss(broker.pid)
    with ExitStack() as cleanup:
        first = SilentFlood(ports.sasl_ssl, "127.0.0.5", 20)  # all admitted: 20 per address, 20 in all
        cleanup.callback(first.close)
        wait_until(lambda: _held(broker, "127.0.0.5") == 20, 10, "the first 20 accepted")
        second = SilentFlood(ports.sasl_ssl, "127.0.0.6", 20)  # 10 more fit under max.connections=30
        cleanup.callback(second.close)
        wait_until(lambda: second.closed() >= 10, 25, lambda: f"10 refused, {second.closed()} so far")
        assert first.closed() == 0 and second.closed() == 10
        assert "the broker already has the configured maximum of 30 connections (max.connections)" in broker.output()
    # their places are free again: an authenticated client connects
    security = ClientSecurity("SASL_SSL", _client_tls(pem_pki), "PLAIN", "alice", "alice-secret")
    wait_until(lambda: _serves(ports.sasl_ssl, security), 20, "an authenticated connection after the flood",
               ignoring=(OSError, ConnectionError))
    rss_back(broker.pid, start, "40 silent TLS connections")


def _held(broker: BrokerProcess, source: str | None = None) -> int:
    """How many client connections (from `source`, or any) the broker holds: its accepted sockets, from
    /proc, whatever their state (one the client closed counts until the broker closes it too)."""
    assert broker.pid is not None
    return sum(1 for c in psutil.Process(broker.pid).net_connections(kind="tcp")
               if c.raddr and (source is None or c.raddr.ip == source))


def _serves(port: int, security: ClientSecurity) -> bool:
    with BlockingConnection("127.0.0.1", port, "after", 10, security=security) as c:
        return bool(c.request(MetadataRequest(topics=[]), 1).brokers)


# ---- the TLS handshake's deadline ---------------------------------------------------------------------


def test_a_handshake_that_never_starts_is_closed_after_the_timeout_and_frees_its_place(
        brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> None:
    port, tls_port = free_port(), free_port()
    broker = brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{tls_port}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem_pki[1]),
        "ssl.handshake.timeout.ms": "3000", "max.connections.per.ip.overrides": "127.0.0.7:2",
    }, name="handshake-timeout", port=port)
    with ExitStack() as cleanup:
        started = time.monotonic()
        silent = SilentFlood(tls_port, "127.0.0.7", 2)
        cleanup.callback(silent.close)
        wait_until(lambda: _held(broker, "127.0.0.7") == 2, 10, "two silent connections held")
        over = SilentFlood(tls_port, "127.0.0.7", 1)  # a third: over the address's limit, closed at once
        cleanup.callback(over.close)
        wait_until(lambda: over.closed() == 1, 2.5, "the third connection refused before any timeout")
        assert silent.closed() == 0
        wait_until(lambda: silent.closed() == 2, 15, "the silent handshakes timed out")
        assert time.monotonic() - started >= 2.9  # not before ssl.handshake.timeout.ms
    wait_until(lambda: "SSL handshake failed" in broker.output(), 10, "the handshake failure logged")
    # the places are free: a TLS client from the same address completes its handshake and is answered
    tls = _client_tls(pem_pki)

    def answered() -> bool:
        with _connected(tls_port, tls, "127.0.0.7") as sock:
            return bool(_request(sock, ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3))

    wait_until(answered, 10, "a TLS round trip from 127.0.0.7", ignoring=(OSError, ConnectionError))


# ---- memory after a flood of admitted connections -------------------------------------------------------


def _client_hello(tls: ssl.SSLContext) -> bytes:
    out = ssl.MemoryBIO()
    handshake = tls.wrap_bio(ssl.MemoryBIO(), out, server_hostname="127.0.0.1")
    with pytest.raises(ssl.SSLWantReadError):
        handshake.do_handshake()
    return out.read()


def test_memory_comes_back_after_a_flood_of_half_open_tls_connections(
        brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> None:
    """1,500 TLS connections admitted, each stopping after its ClientHello (the broker holds their TLS state
    until they go): without malloc_trim the freed state stays in the broker's heap."""
    ports = Ports()
    broker = brokers.start(_sasl_listeners(ports, pem_pki[1]), name="flood-memory", port=ports.plain)
    tls = _client_tls(pem_pki)
    start = rss(broker.pid)
    with ExitStack() as cleanup:
        flood = SilentFlood(ports.sasl_ssl, "127.0.0.8", 1500)
        cleanup.callback(flood.close)
        hello = _client_hello(tls)
        for sock in flood.sockets:
            sock.setblocking(True)
            sock.settimeout(10)
            sock.sendall(hello)
        wait_until(lambda: _held(broker, "127.0.0.8") == 1500, 30, "1,500 connections held")
        peak = rss(broker.pid)
        assert flood.closed() == 0
    rss_back(broker.pid, start, f"1,500 half-open TLS connections (peak {peak / MB:.0f} MB)")
