"""The REST routes of KIP-875's offset changes and KIP-558's active topics, beside `rest.py`'s:
`PATCH`/`DELETE /connectors/{name}/offsets` (200 with `{"message": ...}`), `GET /connectors/{name}/topics`
(`{"<name>": {"topics": [...]}}`) and `PUT /connectors/{name}/topics/reset` (202), with Kafka's errors; and
`GET /metrics`, the worker's Prometheus metrics (`metrics.py`)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST

from odradek.connect import offsets_admin
from odradek.connect.api import ConfigException, ConnectException
from odradek.connect.rest_common import RestError, _json
from odradek.connect.worker import ConnectorState, Worker


class RestRoutes(Protocol):
    """What these routes use of `rest.ConnectRest` (not imported: it imports this module)."""

    worker: Worker

    def _connector(self, request: web.Request) -> ConnectorState: ...

    async def _body(self, request: web.Request) -> Any: ...


def add_routes(app: web.Application, rest: RestRoutes) -> None:
    def forbidden_unless(allowed: bool, message: str) -> None:
        if not allowed:
            raise RestError(403, message)

    async def modify(request: web.Request, reset: bool) -> web.Response:
        state = rest._connector(request)  # noqa: SLF001
        body = None if reset else await rest._body(request)  # noqa: SLF001
        try:
            if reset:
                message = await asyncio.to_thread(offsets_admin.reset, rest.worker, state)
            else:
                message = await asyncio.to_thread(offsets_admin.alter, rest.worker, state, body)
        except offsets_admin.OffsetsError as exc:
            raise RestError(exc.status, str(exc)) from None
        except ConfigException:
            raise
        except ConnectException as exc:
            raise RestError(500, str(exc)) from None
        return _json({"message": message})

    async def alter_offsets(request: web.Request) -> web.Response:
        return await modify(request, False)

    async def reset_offsets(request: web.Request) -> web.Response:
        return await modify(request, True)

    async def topics(request: web.Request) -> web.Response:
        tracker = rest.worker.active_topics
        forbidden_unless(tracker.enabled, "Topic tracking is disabled.")
        name = request.match_info["name"]
        return _json({name: {"topics": tracker.topics(name)}})

    async def reset_topics(request: web.Request) -> web.Response:
        tracker = rest.worker.active_topics
        forbidden_unless(tracker.enabled, "Topic tracking is disabled.")
        forbidden_unless(rest.worker.config.get("topic.tracking.allow.reset", "true") == "true",
                         "Topic tracking reset is disabled.")
        tracker.reset(request.match_info["name"])
        return web.Response(status=202)

    async def metrics(request: web.Request) -> web.Response:
        body = await asyncio.to_thread(rest.worker.metrics.render)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    r = app.router
    r.add_get("/metrics", metrics)
    r.add_patch("/connectors/{name}/offsets", alter_offsets)
    r.add_delete("/connectors/{name}/offsets", reset_offsets)
    r.add_get("/connectors/{name}/topics", topics)
    r.add_put("/connectors/{name}/topics/reset", reset_topics)
