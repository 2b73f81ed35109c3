"""An authenticated client cannot pin the broker's memory (issue #36, observation 8): alice, who holds no
ACLs, sends 100 MB Produce frames from six connections, pipelined, two rounds (--run-slow: three). The
frames wait (their connections stop reading) while queued.max.request.bytes is taken, so the broker's
RSS stays within that bound plus one frame (each frame is read into one buffer of its size, and freed
when it is released from the pool); an authorized client's round trips stay fast meanwhile; and once the
flood is answered the RSS comes back within 50 MB of where it started (the heap is trimmed when request
memory drains, not only after many connections close)."""

from __future__ import annotations

import ssl
import statistics
import struct
import threading
import time
from pathlib import Path

import pytest

from odradek.protocol.client_security import ClientSecurity
from odradek.protocol.transport import BlockingConnection
from tests.adversarial.secured import JAAS, PASSWORDS
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.sockets import MB, rss, rss_back
from tests.waiting import wait_until

FRAME = 100 * MB
QUEUED = 200 * MB  # queued.max.request.bytes of the test's broker
TOPIC_AUTHORIZATION_FAILED = 29


def _produce_frame(size: int, correlation_id: int) -> bytes:
    """A Produce v3 frame of `size` bytes in all, one partition of junk records (never parsed: alice may
    not write)."""
    client, topic = b"flood", b"pinned"
    head = struct.pack(">hhih", 0, 3, correlation_id, len(client)) + client
    body = struct.pack(">hhii", -1, 1, 30000, 1) + struct.pack(">h", len(topic)) + topic + struct.pack(">ii", 1, 0)
    records = size - 4 - len(head) - len(body) - 4
    return struct.pack(">i", size - 4) + head + body + struct.pack(">i", records) + bytes(records)


@pytest.fixture(scope="module")
def secured_broker(module_brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> tuple[BrokerProcess, int]:
    port, sasl = free_port(), free_port()
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem_pki[1]),
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin", "allow.everyone.if.no.acl.found": "false",
        "queued.max.request.bytes": str(QUEUED), "socket.request.max.bytes": str(FRAME),
    }, name="request-memory", port=port)
    return broker, sasl


class Peak(threading.Thread):
    """The highest RSS of a process, sampled every 10 ms until stopped."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak = pid, rss(pid)
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.01):
            self.peak = max(self.peak, rss(self.pid))

    def stop(self) -> int:
        self._done.set()
        self.join(5)
        return self.peak


def _security(user: str, ca: Path) -> ClientSecurity:
    return ClientSecurity("SASL_SSL", ssl.create_default_context(cafile=str(ca)), "PLAIN", user, PASSWORDS[user])


def _send_rounds(port: int, ca: Path, frame: bytes, rounds: int, answers: list[int]) -> None:
    with BlockingConnection("127.0.0.1", port, "flood", 120, security=_security("alice", ca)) as conn:
        for _ in range(rounds):  # pipelined: every frame sent before the first answer is read
            conn.sock.sendall(frame)
        for _ in range(rounds):
            size = struct.unpack(">i", _read(conn.sock, 4))[0]
            response = _read(conn.sock, size)
            # correlation id, topics [1], name, partitions [1], index, error code
            (name_len,) = struct.unpack_from(">h", response, 8)
            answers.append(struct.unpack_from(">h", response, 10 + name_len + 8)[0])


def _read(sock: object, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))  # type: ignore[attr-defined]
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return data


class RoundTrips(threading.Thread):
    """admin timing ApiVersions round trips until stopped."""

    def __init__(self, port: int, ca: Path) -> None:
        super().__init__(daemon=True)
        self.connection = BlockingConnection("127.0.0.1", port, "timed", 30, security=_security("admin", ca))
        self.latencies: list[float] = []
        self._finish = threading.Event()

    def run(self) -> None:
        from kafka.protocol.metadata import MetadataRequest

        while not self._finish.is_set():
            started = time.perf_counter()
            self.connection.request(MetadataRequest(topics=[]), 1)
            self.latencies.append(time.perf_counter() - started)
            self._finish.wait(0.01)

    def stop(self) -> list[float]:
        self._finish.set()
        self.join(30)
        self.connection.close()
        return self.latencies


@pytest.mark.parametrize("connections,rounds", [pytest.param(6, 2, id="6x2"),
                                                pytest.param(6, 3, id="6x3", marks=pytest.mark.slow)])
def test_authenticated_frames_wait_for_request_memory_and_it_comes_back(
        secured_broker: tuple[BrokerProcess, int], pem_pki: tuple[Path, Path], connections: int, rounds: int) -> None:
    broker, port = secured_broker
    assert broker.pid is not None
    frame = _produce_frame(FRAME, 7)
    timed = RoundTrips(port, pem_pki[0])
    timed.start()
    wait_until(lambda: len(timed.latencies) >= 5, 30, "the first round trips")
    start = rss(broker.pid)
    peak = Peak(broker.pid)
    peak.start()
    answers: list[int] = []
    senders = [threading.Thread(target=_send_rounds, args=(port, pem_pki[0], frame, rounds, answers))
               for _ in range(connections)]
    for t in senders:
        t.start()
    for t in senders:
        t.join(300)
    highest = peak.stop()
    latencies = timed.stop()
    assert answers == [TOPIC_AUTHORIZATION_FAILED] * (connections * rounds)
    # the pool's bound, plus the one frame that may take it past its capacity, plus slack for the rest
    assert highest - start <= QUEUED + FRAME + 50 * MB, f"peak {(highest - start) / MB:.0f} MB over the start"
    assert statistics.median(latencies) < 0.1, f"median {statistics.median(latencies) * 1000:.0f} ms"
    rss_back(broker.pid, start, "the greedy requests", timeout=30)
