"""The Connectors page: the connectors of the Kafka Connect worker given with `odradek console --connect-url
URL` (any Kafka Connect, standalone or distributed, Odradek's or Apache Kafka's), read over its REST API
(`GET /connectors?expand=status&expand=info`): each connector's type, class, state, worker, trace and tasks, and
buttons that pause, resume or restart one (with its tasks). The buttons are POST forms through the console's
gate like every other change (login, same origin, CSRF token; refused when --read-only); the console then calls
the worker's REST API, whose answer (or error message) comes back as the page's one-line result."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web

ACTIONS = {"pause": ("PUT", "pause"), "resume": ("PUT", "resume"),
           "restart": ("POST", "restart?includeTasks=true&onlyFailed=false")}
MAX_BODY = 8 << 20  # a worker's answer larger than this is refused, not read into memory


class ConnectError(Exception):
    """The worker refused a request or did not answer: one line for the page."""


@dataclass
class TaskRow:
    id: int
    state: str
    worker: str
    trace: str | None


@dataclass
class ConnectorRow:
    name: str
    kind: str
    connector_class: str
    state: str
    worker: str
    trace: str | None
    tasks: list[TaskRow] = field(default_factory=list)


class ConnectClient:
    """Blocking calls to a Connect worker's REST API (run on the console's worker threads)."""

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str) -> Any:
        request = urllib.request.Request(self.url + path, method=method, headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:  # noqa: S310 (the operator's URL)
                raw = resp.read(MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read(MAX_BODY)).get("message")
            except (ValueError, AttributeError):
                message = None
            raise ConnectError(f"The Connect worker answered {exc.code}: {message or exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectError(f"Connect worker unreachable at {self.url}: {reason}") from None
        if len(raw) > MAX_BODY:
            raise ConnectError(f"The Connect worker's answer is larger than {MAX_BODY} bytes")
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            raise ConnectError(f"The Connect worker at {self.url} did not answer JSON") from None

    def connectors(self) -> list[ConnectorRow]:
        body = self._call("GET", "/connectors?expand=status&expand=info")
        if not isinstance(body, dict):
            raise ConnectError(f"Unexpected answer from the Connect worker at {self.url}")
        rows = []
        for name, entry in sorted(body.items()):
            status = entry.get("status") or {}
            info = entry.get("info") or {}
            connector = status.get("connector") or {}
            tasks = [TaskRow(int(t.get("id", 0)), str(t.get("state", "")), str(t.get("worker_id", "")),
                             t.get("trace")) for t in status.get("tasks") or []]
            rows.append(ConnectorRow(str(name), str(status.get("type") or info.get("type") or ""),
                                     str((info.get("config") or {}).get("connector.class", "")),
                                     str(connector.get("state", "")), str(connector.get("worker_id", "")),
                                     connector.get("trace"), sorted(tasks, key=lambda t: t.id)))
        return rows

    def act(self, name: str, action: str) -> None:
        method, suffix = ACTIONS[action]
        self._call(method, f"/connectors/{quote(name, safe='')}/{suffix}")


CONNECT = web.AppKey("connect", ConnectClient)


def install(app: web.Application, connect_url: str | None, timeout_s: float) -> None:
    """The client of the operator's Connect worker, if one was given (the pages are `app.py`'s)."""
    if connect_url:
        app[CONNECT] = ConnectClient(connect_url, timeout_s)
