"""Slow-loris after the TLS handshake (issue #36, observation 6): connections that finish TLS on a SASL_SSL
listener and then say nothing must not keep everyone else out.

- they are closed once connections.max.unauthenticated.ms passes without SASL authentication (not
  before), and their places and memory come back (RSS within 50 MB of where it started);
- while they fill max.connections, the inter-broker listener still admits connections (Kafka's
  ConnectionQuotas: the broker-wide limit does not apply to it), and each one it admits past the limit
  closes a connection of another listener, an unauthenticated one first;
- an authenticated client connected before the flood keeps a median round trip under 100 ms;
- listener.name.<listener>.max.connections caps one listener and leaves the others alone.

The flood is small in the default suite (max.connections=120); --run-slow runs 1,000."""

from __future__ import annotations

import socket
import ssl
import statistics
import threading
import time
from pathlib import Path

import pytest
from kafka.protocol.metadata import MetadataRequest

from odradek.protocol.client_security import ClientSecurity
from odradek.protocol.transport import BlockingConnection
from tests.adversarial.secured import JAAS, PASSWORDS
from tests.harness import BrokerPool, free_port
from tests.sockets import rss, rss_back
from tests.waiting import wait_until

DEADLINE_MS = 3000


class Ports:
    def __init__(self) -> None:
        self.plain, self.sasl, self.sasl_ssl = free_port(), free_port(), free_port()


def _config(ports: Ports, pem: Path, max_connections: int, **props: str) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{ports.plain},SASL_PLAINTEXT://127.0.0.1:{ports.sasl},"
                     f"SASL_SSL://127.0.0.1:{ports.sasl_ssl}",
        "inter.broker.listener.name": "SASL_PLAINTEXT", "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem),
        "max.connections": str(max_connections),
        "connections.max.unauthenticated.ms": str(DEADLINE_MS),
        **props,
    }


def _security(protocol: str, user: str, ca: Path) -> ClientSecurity:
    tls = ssl.create_default_context(cafile=str(ca)) if protocol == "SASL_SSL" else None
    return ClientSecurity(protocol, tls, "PLAIN", user, PASSWORDS[user])


def _serves(port: int, security: ClientSecurity) -> bool:
    with BlockingConnection("127.0.0.1", port, "probe", 10, security=security) as c:
        return bool(c.request(MetadataRequest(topics=[]), 1).brokers)


class SilentTls:
    """Connections from `source` that complete the TLS handshake and then send nothing."""

    def __init__(self, port: int, ca: Path, source: str, count: int) -> None:
        tls = ssl.create_default_context(cafile=str(ca))
        self.sockets: list[ssl.SSLSocket] = []
        self.refused = 0
        for _ in range(count):
            raw = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0))
            try:
                sock = tls.wrap_socket(raw, server_hostname="127.0.0.1")
            except (OSError, ssl.SSLError):  # closed at accept: over a limit
                raw.close()
                self.refused += 1
                continue
            sock.setblocking(False)
            self.sockets.append(sock)

    def open(self) -> int:
        """How many the broker has not closed yet."""
        alive = 0
        for sock in self.sockets:
            try:
                if sock.recv(1) == b"":
                    continue
            except (ssl.SSLWantReadError, BlockingIOError):
                alive += 1
            except OSError:
                continue
        return alive

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


class RoundTrips(threading.Thread):
    """bob, authenticated on SASL_SSL before the flood, timing Metadata round trips until stopped."""

    def __init__(self, port: int, ca: Path) -> None:
        super().__init__(daemon=True)
        self.connection = BlockingConnection("127.0.0.1", port, "timed", 10, security=_security("SASL_SSL", "bob", ca))
        self.latencies: list[float] = []
        self.error: BaseException | None = None
        self._finish = threading.Event()

    def run(self) -> None:
        try:
            while not self._finish.is_set():
                started = time.perf_counter()
                self.connection.request(MetadataRequest(topics=[]), 1)
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


@pytest.mark.parametrize("max_connections", [pytest.param(120, id="120"),
                                             pytest.param(1000, id="1000", marks=pytest.mark.slow)])
def test_silent_tls_connections_give_way_and_time_out(brokers: BrokerPool, pem_pki: tuple[Path, Path],
                                                      max_connections: int) -> None:
    ports = Ports()
    broker = brokers.start(_config(ports, pem_pki[1], max_connections, **{
        "max.connections.per.ip.overrides": f"127.0.0.3:{max_connections * 2}"}), name="slow-loris", port=ports.plain)
    ca = pem_pki[0]
    timed = RoundTrips(ports.sasl_ssl, ca)
    timed.start()
    wait_until(lambda: len(timed.latencies) >= 5, 30, "the first round trips")
    start = rss(broker.pid)
    first = time.monotonic()
    flood = SilentTls(ports.sasl_ssl, ca, "127.0.0.3", max_connections)
    try:
        # the broker is full: all but the timed client's place, the harness' probe aside, is silent
        assert flood.refused >= 1 and len(flood.sockets) >= max_connections - 3
        assert not _serves_quietly(ports.sasl_ssl, _security("SASL_SSL", "alice", ca))
        # the inter-broker listener is not held to max.connections: admin is served, and a silent
        # connection (never the authenticated client) made way for it
        before = flood.open()
        assert _serves(ports.sasl, _security("SASL_PLAINTEXT", "admin", ca))
        wait_until(lambda: flood.open() < before, 10, "a silent connection closed to make way")
        if time.monotonic() - first < DEADLINE_MS / 1000 - 0.5:
            assert flood.open() == before - 1  # one, and none of the others before their deadline
        assert "the inter-broker listener SASL_PLAINTEXT needs its place" in broker.output()
        # the rest are closed by connections.max.unauthenticated.ms, not before it
        wait_until(lambda: flood.open() == 0, DEADLINE_MS / 1000 + 15, lambda: f"{flood.open()} still open")
        assert time.monotonic() - first >= DEADLINE_MS / 1000
        assert "(connections.max.unauthenticated.ms)" in broker.output()
    finally:
        flood.close()
    wait_until(lambda: _serves_quietly(ports.sasl_ssl, _security("SASL_SSL", "alice", ca)), 20,
               "an authenticated connection after the flood")
    latencies = timed.stop()
    assert statistics.median(latencies) < 0.1, f"median {statistics.median(latencies) * 1000:.0f} ms"
    rss_back(broker.pid, start, "the silent TLS connections")


def _serves_quietly(port: int, security: ClientSecurity) -> bool:
    try:
        return _serves(port, security)
    except (OSError, ConnectionError, ssl.SSLError):
        return False


def test_a_listener_limit_caps_that_listener_only(brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> None:
    ports = Ports()
    broker = brokers.start(_config(ports, pem_pki[1], 1000, **{"listener.name.sasl_ssl.max.connections": "3"}),
                           name="listener-limit", port=ports.plain)
    flood = SilentTls(ports.sasl_ssl, pem_pki[0], "127.0.0.4", 5)
    try:
        assert len(flood.sockets) == 3 and flood.refused == 2
        assert "listener SASL_SSL already has the configured maximum of 3 connections" \
               " (listener.name.sasl_ssl.max.connections)" in broker.output()
        assert _serves(ports.sasl, _security("SASL_PLAINTEXT", "bob", pem_pki[0]))
    finally:
        flood.close()
