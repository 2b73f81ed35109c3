"""The broker's HTTP endpoint (`http.listener=HOST:PORT`): GET /metrics answers in Prometheus' text
format, GET /v1/status/ready says whether the broker serves. A few lines of HTTP/1.1 on asyncio
streams: one request per connection, bounded reads, nothing else served.

What it lets in (the metrics name every topic and group, so they are not for any local process):
- the Host header must be one of the endpoint's names (security/http_host.py, the console's check
  against DNS rebinding): loopback names, any IP address, this machine's name, the advertised listeners'
  hosts and http.listener.allowed.hosts; otherwise 403;
- with http.listener.auth.token set, /metrics needs `Authorization: Bearer <token>` (or Basic auth with
  the token as the password, any user name); otherwise 401. Readiness stays open: it tells nothing;
- at most http.listener.max.connections connections at once (more are closed as they arrive), each
  with http.listener.request.timeout.ms to send its request and take its answer."""

from __future__ import annotations

import asyncio
import base64
import binascii
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CONTENT_TYPE_LATEST

from odradek.ratelog import LimitedLog
from odradek.security.http_host import HostAllowlist, same_secret

log = logging.getLogger("odradek.server")
limited = LimitedLog(log)
MAX_HEAD_BYTES = 8192


@dataclass(frozen=True)
class HttpAccess:
    """Who the endpoint serves, and how much of it a client may hold."""

    hosts: HostAllowlist = field(default_factory=lambda: HostAllowlist("127.0.0.1", any_address=True))
    token: str | None = None
    max_connections: int = 64
    timeout_s: float = 10.0


def _authorized(header: str | None, token: str) -> bool:
    scheme, _, value = (header or "").strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "bearer":
        return same_secret(value, token)
    if scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value, validate=True).decode("utf-8", "surrogateescape")
        except (binascii.Error, ValueError):
            return False
        return same_secret(decoded.partition(":")[2], token)
    return False


class HttpEndpoint:
    def __init__(self, host: str, port: int, render_metrics: Callable[[], bytes], ready: Callable[[], bool],
                 access: HttpAccess | None = None) -> None:
        self.host, self.port = host, port
        self.render_metrics = render_metrics
        self.ready = ready
        self.access = access or HttpAccess()
        self.open_connections = 0
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, self.host, self.port, limit=MAX_HEAD_BYTES)
        self.port = self._server.sockets[0].getsockname()[1]
        log.info("HTTP endpoint (metrics, readiness) on http://%s:%d/metrics", self.host, self.port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.open_connections >= self.access.max_connections:
            limited.warning("HTTP endpoint: closed a connection from %s: already %d open"
                            " (http.listener.max.connections)", _peer(writer), self.open_connections)
            writer.transport.abort()
            return
        self.open_connections += 1
        cut_short = False
        try:
            async with asyncio.timeout(self.access.timeout_s):
                await self._exchange(reader, writer)
        except (TimeoutError, ConnectionError):
            cut_short = True  # silent, slow or gone: nothing more to send it
        finally:
            self.open_connections -= 1
            if cut_short:
                writer.transport.abort()
            else:
                writer.close()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, _, rest = lines[0].partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if sep:
                    headers.setdefault(name.strip().lower(), value.strip())
            status, ctype, body, extra = self._answer(method, path, headers, _peer(writer))
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            method, status, ctype, body, extra = "GET", "400 Bad Request", "text/plain", b"bad request\n", ""
        writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n{extra}"
                     "Connection: close\r\n\r\n".encode() + (body if status[0] != "2" or method != "HEAD" else b""))
        await writer.drain()
        if status.startswith("400"):
            # unread input makes close() reset the connection, which can lose the answer on the way:
            # half-close, and drop what the client still sends (bounded) before closing
            writer.write_eof()
            await _discard(reader, 1 << 20)

    def _answer(self, method: str, path: str, headers: dict[str, str], peer: str) -> tuple[str, str, bytes, str]:
        host = headers.get("host")
        if not self.access.hosts.allows(host):
            limited.warning("HTTP endpoint: refused %s from %s for Host %r: not a name of this endpoint"
                            " (http.listener.allowed.hosts)", path[:80], peer, (host or "")[:80])
            return "403 Forbidden", "text/plain", b"Forbidden: Host is not a name of this endpoint\n", ""
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"only GET\n", ""
        if path == "/metrics":
            token = self.access.token
            if token is not None and not _authorized(headers.get("authorization"), token):
                limited.warning("HTTP endpoint: refused /metrics to %s: missing or wrong credentials"
                                " (http.listener.auth.token)", peer)
                return ("401 Unauthorized", "text/plain", b"Unauthorized: see http.listener.auth.token\n",
                        'WWW-Authenticate: Bearer realm="odradek"\r\n')
            return "200 OK", CONTENT_TYPE_LATEST, self.render_metrics(), ""
        if path == "/v1/status/ready":
            if self.ready():
                return "200 OK", "text/plain", b"ready\n", ""
            return "503 Service Unavailable", "text/plain", b"starting\n", ""
        return "404 Not Found", "text/plain", b"not found: try /metrics or /v1/status/ready\n", ""


def _peer(writer: asyncio.StreamWriter) -> str:
    peer = writer.get_extra_info("peername")
    return f"{peer[0]}:{peer[1]}" if peer else "?"


async def _discard(reader: asyncio.StreamReader, most: int) -> None:
    while most > 0:
        chunk = await reader.read(min(most, 65536))
        if not chunk:
            return
        most -= len(chunk)
