"""Asks a broker which APIs it offers (ApiVersions v0 over a plain socket), to decide on idempotence.

The sink turns on the idempotent producer when the broker offers InitProducerId. The probe only works on
PLAINTEXT listeners; with TLS or SASL it answers None (unknown) and the caller keeps its default.
"""

from __future__ import annotations

import socket
import struct

API_VERSIONS = 18
INIT_PRODUCER_ID = 22


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("connection closed by the broker")
        buf += chunk
    return bytes(buf)


def api_versions(host: str, port: int, timeout: float = 5.0) -> dict[int, tuple[int, int]]:
    """{api_key: (min_version, max_version)} as the broker at host:port announces them."""
    client_id = b"odradek-spark-probe"
    header = struct.pack(">hhih", API_VERSIONS, 0, 1, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(header)) + header)
        size = struct.unpack(">i", _recv_exact(sock, 4))[0]
        body = _recv_exact(sock, size)
    _corr, error, count = struct.unpack_from(">ihi", body, 0)
    if error:
        raise ConnectionError(f"ApiVersions answered error code {error}")
    out = {}
    for i in range(count):
        key, lo, hi = struct.unpack_from(">hhh", body, 10 + 6 * i)
        out[key] = (lo, hi)
    return out


def supports_idempotence(client: dict[str, str], timeout: float = 5.0) -> bool | None:
    """True/False when a bootstrap broker says whether it offers InitProducerId; None when it can't be asked."""
    if client.get("security.protocol", "plaintext").lower() != "plaintext":
        return None
    for server in client.get("bootstrap.servers", "").split(","):
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            continue
        try:
            return INIT_PRODUCER_ID in api_versions(host.strip("[]"), int(port), timeout)
        except (OSError, ConnectionError, struct.error):
            continue
    return None
