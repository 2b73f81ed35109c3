"""The broker's HTTP endpoint (`http.listener=HOST:PORT`): GET /metrics answers in Prometheus' text
format, GET /v1/status/ready says whether the broker serves. A few lines of HTTP/1.1 on asyncio
streams: one request per connection, bounded reads, nothing else served."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from prometheus_client import CONTENT_TYPE_LATEST

log = logging.getLogger("odradek.server")
MAX_HEAD_BYTES = 8192
READ_TIMEOUT_S = 10.0


class HttpEndpoint:
    def __init__(self, host: str, port: int, render_metrics: Callable[[], bytes], ready: Callable[[], bool]) -> None:
        self.host, self.port = host, port
        self.render_metrics = render_metrics
        self.ready = ready
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
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            method, _, rest = head.split(b"\r\n", 1)[0].decode("latin-1").partition(" ")
            path = rest.split(" ", 1)[0].split("?", 1)[0]
            status, ctype, body = self._answer(method, path)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            method, status, ctype, body = "GET", "400 Bad Request", "text/plain", b"bad request\n"
        except ConnectionError:
            writer.close()
            return
        try:
            writer.write(f"HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + (body if status[0] != "2" or method != "HEAD"
                                                                      else b""))
            await writer.drain()
            if status.startswith("400"):
                # unread input makes close() reset the connection, which can lose the answer on the way:
                # half-close, and drop what the client still sends (bounded) before closing
                writer.write_eof()
                await asyncio.wait_for(_discard(reader, 1 << 20), READ_TIMEOUT_S)
        except (ConnectionError, TimeoutError):
            pass
        finally:
            writer.close()

    def _answer(self, method: str, path: str) -> tuple[str, str, bytes]:
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"only GET\n"
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, self.render_metrics()
        if path == "/v1/status/ready":
            if self.ready():
                return "200 OK", "text/plain", b"ready\n"
            return "503 Service Unavailable", "text/plain", b"starting\n"
        return "404 Not Found", "text/plain", b"not found: try /metrics or /v1/status/ready\n"


async def _discard(reader: asyncio.StreamReader, most: int) -> None:
    while most > 0:
        chunk = await reader.read(min(most, 65536))
        if not chunk:
            return
        most -= len(chunk)
