"""A small blocking Kafka protocol client for the admin tools whose calls confluent-kafka lacks
(AlterPartitionReassignments, ListPartitionReassignments): kafka-python's message classes as codecs over
a plain socket, bootstrap by trying each server in turn, requests for the controller sent to it.
Every socket operation is bounded by the tool's timeout; failures become one-line CliErrors."""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest

from odradek.cli.common import CliError

METADATA_VERSION = 1
_I32 = struct.Struct(">i")


def split_servers(bootstrap: str) -> list[tuple[str, int]]:
    out = []
    for item in bootstrap.split(","):
        item = item.strip()
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise CliError(f"Error: invalid bootstrap server '{item}': expected HOST:PORT")
        out.append((host.strip("[]") or "localhost", int(port)))
    return out


class Connection:
    """One socket to one broker, one request in flight."""

    def __init__(self, host: str, port: int, timeout_s: float, client_id: str) -> None:
        self.address = f"{host}:{port}"
        self.client_id = client_id
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def request(self, req: ApiMessage, version: int) -> Any:
        self.correlation_id += 1
        req.API_VERSION = version
        req.with_header(correlation_id=self.correlation_id, client_id=self.client_id)
        try:
            self.sock.sendall(bytes(req.encode(header=True, framed=True)))
            size = _I32.unpack(self._recv(4))[0]
            frame = self._recv(size)
        except TimeoutError:
            raise CliError(f"Error: timed out waiting for a response from {self.address}") from None
        except OSError as exc:
            raise CliError(f"Error: connection to {self.address} failed: {exc.strerror or exc}") from None
        if _I32.unpack_from(frame, 0)[0] != self.correlation_id:
            raise CliError(f"Error: unexpected response from {self.address}")
        resp_cls = req.header.get_response_class()
        flexible = resp_cls.flexible_version_q(version)
        return resp_cls.decode(memoryview(frame)[5 if flexible else 4:], version=version)

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise CliError(f"Error: {self.address} closed the connection (request not supported?)")
            buf += chunk
        return bytes(buf)


class AdminConnection:
    """Bootstrap connection plus, on demand, one to the controller."""

    def __init__(self, bootstrap: str, timeout_s: float, client_id: str, connect_timeout_s: float = 10.0) -> None:
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.client_id = client_id
        self._any: Connection | None = None
        self._controller: Connection | None = None

    def __enter__(self) -> AdminConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for c in (self._any, self._controller):
            if c is not None:
                c.close()
        self._any = self._controller = None

    def any_broker(self) -> Connection:
        if self._any is None:
            self._any = self._connect_bootstrap()
        return self._any

    def _connect_bootstrap(self) -> Connection:
        deadline = time.monotonic() + self.connect_timeout_s
        last = ""
        while True:
            for host, port in split_servers(self.bootstrap):
                try:
                    return Connection(host, port, self.timeout_s, self.client_id)
                except OSError as exc:
                    last = exc.strerror or str(exc)
            if time.monotonic() >= deadline:
                raise CliError(f"Error: could not reach any broker at {self.bootstrap} within "
                               f"{int(self.connect_timeout_s * 1000)} ms ({last})")
            time.sleep(0.5)

    def metadata(self, topics: list[str] | None) -> Any:
        req = MetadataRequest(topics=None if topics is None else [
            MetadataRequest.MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=False)
        return self.any_broker().request(req, METADATA_VERSION)

    def controller(self) -> Connection:
        if self._controller is not None:
            return self._controller
        md = self.metadata([])
        node = next((b for b in md.brokers if b.node_id == md.controller_id), None)
        if node is None:
            return self.any_broker()  # no controller known: any broker forwards or answers NOT_CONTROLLER
        try:
            self._controller = Connection(node.host, node.port, self.timeout_s, self.client_id)
        except OSError:
            return self.any_broker()
        return self._controller
