"""Raw sockets against a broker, for the tests of connection limits: a framed request, a connection from a given
loopback source address, whether the broker closed one or answers on it, a set of connections it keeps, and the
broker's memory (RSS) coming back after a flood."""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import TypeVar

import psutil
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest

from tests.rawclient import RawClient
from tests.waiting import wait_until

MB = 1_000_000


def framed(request: ApiMessage, version: int, correlation_id: int = 7) -> bytes:
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id="abuse-test")
    return bytes(request.encode(header=True, framed=True))


def connect_from(port: int, source: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))


def closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(5)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False


def answers(sock: socket.socket) -> bool:
    sock.sendall(framed(MetadataRequest(topics=[]), 1))
    sock.settimeout(10)
    return len(sock.recv(4)) == 4


C = TypeVar("C", socket.socket, RawClient)


def kept(open_one: Callable[[], C], answers: Callable[[C], bool], count: int, what: str) -> list[C]:
    """`count` connections that the broker keeps and answers, all open at once: opened anew until it has let
    go of connections closed a moment ago (it counts them until it has seen them close)."""

    def attempt() -> list[C] | None:
        opened: list[C] = []
        try:
            for _ in range(count):
                opened.append(open_one())
            if all(answers(c) for c in opened):
                return opened
        except (OSError, ConnectionError):
            pass  # refused or closed: the broker still counts old connections
        for c in opened:
            c.close()
        return None

    return wait_until(attempt, 30, f"{count} {what} kept and answered", interval=0.05)


def rss(pid: int | None) -> int:
    """The resident memory of process `pid` (a broker's), in bytes."""
    assert pid is not None
    return int(psutil.Process(pid).memory_info().rss)


def rss_back(pid: int | None, start: int, what: str, timeout: float = 60.0, slack: int = 50 * MB) -> None:
    """Wait until process `pid`'s RSS is back within `slack` of `start`, after `what`."""
    wait_until(lambda: rss(pid) <= start + slack, timeout,
               lambda: f"the broker's RSS back within {slack / MB:.0f} MB of {start / MB:.0f} MB after {what} "
                       f"(now {rss(pid) / MB:.0f} MB)")
