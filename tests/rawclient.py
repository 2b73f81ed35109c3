"""The shared blocking protocol client (odradek.protocol.transport) plus what only tests want: sending
exactly the bytes a test chooses and reading back a raw frame."""

from __future__ import annotations

from collections import deque
from typing import Any

from kafka.protocol.admin import IncrementalAlterConfigsRequest

from odradek.protocol.client import DEFAULT_MAX_FRAME_SIZE
from odradek.protocol.framing import FrameDecoder
from odradek.protocol.transport import BlockingConnection


class RawClient(BlockingConnection):
    def __init__(self, port: int, timeout: float = 10.0) -> None:
        super().__init__("127.0.0.1", port, "raw-test", timeout)
        self._raw_frames = FrameDecoder(DEFAULT_MAX_FRAME_SIZE)  # frames read by recv_frame, apart from the codec's
        self._pending: deque[bytes] = deque()  # frames read along with an earlier one

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv_frame(self) -> bytes:
        """The next frame's payload (size prefix removed), whatever it holds."""
        while not self._pending:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("connection closed by broker")
            self._pending.extend(bytes(f) for f in self._raw_frames.feed(data))
        return self._pending.popleft()

    def is_closed_by_peer(self, timeout: float = 5.0) -> bool:
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            return True
        except TimeoutError:
            return False


def incremental_alter_configs(client: RawClient, resource_type: int, name: str,
                              ops: list[tuple[str, int, str | None]], validate_only: bool = False) -> Any:
    """IncrementalAlterConfigs v1 of one resource by its type id (any name: the empty one too, which the
    Python clients cannot send): (key, operation id, value) each; the resource's answer."""
    res = IncrementalAlterConfigsRequest.AlterConfigsResource
    req = IncrementalAlterConfigsRequest(resources=[res(
        resource_type=resource_type, resource_name=name,
        configs=[res.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])],
        validate_only=validate_only)
    return client.request(req, 1).responses[0]
