"""A raw Kafka protocol client over a plain socket, for sending exactly the bytes a test wants."""

from __future__ import annotations

import socket
import struct
from typing import Any

from kafka.protocol.api_message import ApiMessage


class RawClient:
    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        size = struct.unpack(">i", self._recv_exact(4))[0]
        return self._recv_exact(size)

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("connection closed by broker")
            buf += chunk
        return bytes(buf)

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False

    def request(self, req: ApiMessage, version: int) -> Any:
        self.correlation_id += 1
        req.API_VERSION = version
        req.with_header(correlation_id=self.correlation_id, client_id="raw-test")
        self.send_raw(bytes(req.encode(header=True, framed=True)))
        frame = self.recv_frame()
        resp_cls = req.header.get_response_class()
        flexible = resp_cls.flexible_version_q(version) and req.API_KEY != 18
        (corr,) = struct.unpack_from(">i", frame, 0)
        assert corr == self.correlation_id
        body = frame[5:] if flexible else frame[4:]
        return resp_cls.decode(body, version=version)
