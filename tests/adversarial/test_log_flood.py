"""Clients cannot flood the logs (issue #36, observation 11): one line per refused connection and one
warning per wrong console token made a flood of connects or logins a flood of log lines (6,533 in 5 s).
Such lines are now written a few times per 10 s each (odradek/ratelog.py) and the rest counted in one
line: "... and 290 more like it in the last 10 s: ...".

- 300 connections from an address whose max.connections.per.ip override is 0: at most 10 "Rejected
  connection" lines, then the count;
- 300 TLS connections that send garbage instead of a ClientHello: at most 10 handshake failures logged;
- 150 wrong console tokens: at most 10 "Failed login" warnings."""

from __future__ import annotations

import re
import socket
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.console_helpers import running_console, send
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.waiting import wait_until

BURST = 10  # ratelog.BURST


@pytest.fixture(scope="module")
def tls_broker(module_brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> tuple[BrokerProcess, int]:
    port, tls_port = free_port(), free_port()
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{tls_port}",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pem_pki[1]),
        "max.connections.per.ip.overrides": "127.0.0.9:0",
    }, name="log-flood", port=port)
    return broker, tls_port


def _connect_and_close(port: int, source: str, payload: bytes) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10, source_address=(source, 0)) as sock:
            if payload:
                sock.sendall(payload)
            sock.settimeout(10)
            return sock.recv(1) == b""
    except OSError:
        return True


def _lines(broker: BrokerProcess, needle: str) -> list[str]:
    return [line for line in broker.output().splitlines() if needle in line]


def test_refused_connections_are_logged_a_few_times_then_counted(tls_broker: tuple[BrokerProcess, int]) -> None:
    broker, port = tls_broker
    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(lambda _: _connect_and_close(port, "127.0.0.9", b""), range(300)))
    assert 1 <= len(_lines(broker, "Rejected connection from 127.0.0.9")) <= BURST


def test_failed_tls_handshakes_are_logged_a_few_times(tls_broker: tuple[BrokerProcess, int]) -> None:
    broker, port = tls_broker
    garbage = b"GET / HTTP/1.1\r\n\r\n" + b"\0" * 64
    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(lambda _: _connect_and_close(port, "127.0.0.10", garbage), range(300)))
    assert 1 <= len(_lines(broker, "SSL handshake failed")) <= BURST


def test_wrong_console_tokens_are_logged_a_few_times(broker: BrokerProcess, tmp_path: Path) -> None:
    with running_console(broker.bootstrap, tmp_path / "console.out") as console:
        with ThreadPoolExecutor(4) as pool:
            statuses = list(pool.map(lambda i: send(console, "GET", f"/topics?token=wrong-{i:020d}").status,
                                     range(150)))
        assert statuses == [401] * 150
        failed = [line for line in console.output().splitlines() if "Failed login from" in line]
        assert 1 <= len(failed) <= BURST, len(failed)


def test_the_rest_are_counted_when_the_window_ends(tls_broker: tuple[BrokerProcess, int]) -> None:
    """Last in the module, so that the 10 s window of the first flood has mostly passed meanwhile."""
    broker, _ = tls_broker
    summary = wait_until(lambda: re.search(r"\.\.\. and ([\d,]+) more like it in the last 10 s: Rejected connection",
                                           broker.output()), 20, "the summary line")
    rejected = len(_lines(broker, "Rejected connection from 127.0.0.9")) + int(summary.group(1).replace(",", ""))
    assert rejected >= 300 - 5, rejected  # every one accounted for (a few may land in the next window)
