"""The HTTP transport under both schema registry clients (serde/registry_http.py), against a small local HTTP
server: the registry's media type and basic auth sent, a refusal handed back structured, the next URL tried
while one does not answer, an answer past the bound or not JSON refused, an unreadable CA file named."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from odradek.serde.registry_http import BadAnswer, Refused, RegistryTransport, TransportError, Unreachable

SEEN: list[dict[str, str]] = []


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        SEEN.append({k: v for k, v in self.headers.items()})
        if self.path == "/big":
            self._send(200, b"[" + b"1," * 600 + b"1]")
        elif self.path == "/html":
            self._send(200, b"<html>proxy error</html>")
        elif self.path == "/missing":
            self._send(404, json.dumps({"error_code": 40401, "message": "Subject 'x'\nnot found."}).encode())
        elif self.path == "/bare":
            self._send(503, b"")
        else:
            self._send(200, b'{"ok": true}')

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_headers_failover_and_answers(url: str) -> None:
    gone = f"http://127.0.0.1:{_closed_port()}"
    http = RegistryTransport([gone, url + "/"], user_info="alice:secret", timeout_s=5, max_answer=1000)
    SEEN.clear()
    assert http.call("GET", "/ok") == {"ok": True}
    assert SEEN[-1]["Authorization"] == "Basic " + base64.b64encode(b"alice:secret").decode()
    assert SEEN[-1]["Accept"].startswith("application/vnd.schemaregistry.v1+json")
    with pytest.raises(Refused) as refused:
        http.call("GET", "/missing")
    assert (refused.value.status, refused.value.error_code) == (404, 40401)
    assert refused.value.message == "Subject 'x' not found."  # one line
    assert refused.value.url == url + "/missing"
    with pytest.raises(Refused) as bare:
        http.call("GET", "/bare")
    assert (bare.value.status, bare.value.error_code, bare.value.message) == (503, None, None)
    with pytest.raises(BadAnswer, match="more than 1000 bytes"):
        http.call("GET", "/big")
    with pytest.raises(BadAnswer, match="not JSON"):
        http.call("GET", "/html")


def test_nothing_answers_and_a_bad_ca_file() -> None:
    with pytest.raises(Unreachable, match=r"http://127\.0\.0\.1:\d+: .*refused"):
        RegistryTransport([f"http://127.0.0.1:{_closed_port()}"], timeout_s=5).call("GET", "/")
    with pytest.raises(TransportError, match="cannot read the CA file /nonexistent/ca.pem"):
        RegistryTransport(["https://127.0.0.1:1"], ca_file="/nonexistent/ca.pem")
