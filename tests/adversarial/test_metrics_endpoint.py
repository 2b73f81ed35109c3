"""The broker's /metrics endpoint is not open to any local process (issue #36, observation 10): it names
every topic and group. A request whose Host is not a name of the endpoint (a DNS-rebinding page) is
refused 403, with or without credentials; with http.listener.auth.token set, /metrics needs it (Bearer,
or Basic with it as the password) and answers 401 without; readiness stays open; and the endpoint holds
at most http.listener.max.connections connections, each closed after http.listener.request.timeout.ms
(a flood of silent connects no longer holds thousands of descriptors)."""

from __future__ import annotations

import base64
import socket
import time

import psutil
import pytest

from tests.clients import create_topic
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.waiting import wait_until

TOKEN = "scrape-secret-0123456789"
SECRET_TOPIC = "payroll-secret"
MAX_CONNECTIONS = 20


@pytest.fixture(scope="module")
def endpoint(module_brokers: BrokerPool) -> tuple[BrokerProcess, int]:
    http_port = free_port()
    broker = module_brokers.start({
        "http.listener": f"127.0.0.1:{http_port}", "http.listener.auth.token": TOKEN,
        "http.listener.max.connections": str(MAX_CONNECTIONS), "http.listener.request.timeout.ms": "1500",
        "http.listener.allowed.hosts": "metrics.internal",
    }, name="metrics-guard")
    create_topic(broker.bootstrap, SECRET_TOPIC, partitions=1)
    return broker, http_port


def _get(port: int, path: str, host: str, authorization: str | None = None) -> tuple[int, bytes]:
    head = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n"
    if authorization is not None:
        head += f"Authorization: {authorization}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall((head + "\r\n").encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.partition(b"\r\n\r\n")[2]


def _basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"prometheus:{password}".encode()).decode()


def test_a_foreign_host_is_refused_even_with_the_token(endpoint: tuple[BrokerProcess, int]) -> None:
    broker, port = endpoint
    for host in ("evil.example", "evil.example:80", "attacker.test."):
        status, body = _get(port, "/metrics", host, f"Bearer {TOKEN}")
        assert status == 403 and SECRET_TOPIC.encode() not in body
    wait_until(lambda: "refused /metrics from" in broker.output(), 10, "the refusal logged")
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "metrics.internal:9404", "[::1]", socket.gethostname()):
        status, body = _get(port, "/metrics", host, f"Bearer {TOKEN}")
        assert status == 200 and SECRET_TOPIC.encode() in body, host


def test_metrics_need_the_token(endpoint: tuple[BrokerProcess, int]) -> None:
    _, port = endpoint
    host = f"127.0.0.1:{port}"
    for authorization in (None, "Bearer wrong", f"Bearer {TOKEN}x", _basic("wrong"), "Basic !!!", TOKEN):
        status, body = _get(port, "/metrics", host, authorization)
        assert status == 401 and SECRET_TOPIC.encode() not in body, authorization
    assert _get(port, "/metrics", host, f"Bearer {TOKEN}")[0] == 200
    assert _get(port, "/metrics", host, _basic(TOKEN))[0] == 200
    assert _get(port, "/v1/status/ready", host) == (200, b"ready\n")


def _held(broker: BrokerProcess, port: int) -> int:
    assert broker.pid is not None
    return sum(1 for c in psutil.Process(broker.pid).net_connections(kind="tcp")
               if c.laddr and c.laddr.port == port and c.raddr)


def _closed(sockets: list[socket.socket]) -> int:
    closed = 0
    for sock in sockets:
        try:
            closed += sock.recv(1) == b""
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


def test_silent_connections_are_bounded_and_time_out(endpoint: tuple[BrokerProcess, int]) -> None:
    broker, port = endpoint
    silent = []
    try:
        for _ in range(200):
            sock = socket.socket()
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
            silent.append(sock)
        # those over the cap are closed as they arrive, long before the request deadline
        started = time.monotonic()
        wait_until(lambda: _closed(silent) >= len(silent) - MAX_CONNECTIONS, 10,
                   lambda: f"{len(silent) - MAX_CONNECTIONS} closed at once, {_closed(silent)} so far")
        assert time.monotonic() - started < 1.5 and _held(broker, port) <= MAX_CONNECTIONS
        # the held ones are closed at the request deadline: the endpoint serves again
        wait_until(lambda: _held(broker, port) == 0, 15, lambda: f"{_held(broker, port)} still held")
    finally:
        for sock in silent:
            sock.close()
    assert _get(port, "/metrics", f"127.0.0.1:{port}", f"Bearer {TOKEN}")[0] == 200
    assert "(http.listener.max.connections)" in broker.output()
