"""Confluent Schema Registry's REST API over aiohttp: the same paths, JSON shapes, status codes and error bodies
{"error_code": N, "message": "..."}, answered as `application/vnd.schemaregistry.v1+json`. Reads are served by
every node from its state; writes go to the node's `Registry` when it is the primary, else are forwarded to the
primary over HTTP (50004 when none is known)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp import web

from odradek.schema_registry.admission import HeavyWork, client_of
from odradek.schema_registry.registry import (
    Registry,
    RegistryError,
    describe,
    parse_version,
    schema_not_found,
)
from odradek.schema_registry.schemas import SCHEMA_TYPES, formatted
from odradek.schema_registry.state import DEFAULT_CONTEXT, context_of

log = logging.getLogger("odradek.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
FORWARDED = "X-Odradek-Forwarded"
MAX_BODY = 16 * 1024 * 1024

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _json(body: Any, status: int = 200) -> web.Response:
    return web.Response(status=status, text=json.dumps(body, separators=(",", ":")), content_type=CONTENT_TYPE)


def _error(status: int, code: int, message: str) -> web.Response:
    return _json({"error_code": code, "message": message}, status)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RegistryError as exc:
        return _error(exc.status, exc.code, exc.message)
    except web.HTTPNotFound:
        return _error(404, 404, "HTTP 404 Not Found")
    except web.HTTPMethodNotAllowed:
        return _error(405, 405, "HTTP 405 Method Not Allowed")
    except web.HTTPRequestEntityTooLarge:
        return _error(413, 413, "Request entity too large")
    except web.HTTPException:
        raise
    except Exception as exc:  # a bug of ours: Confluent's 500 shape and one log line, the node goes on
        log.exception("Error serving %s %s", request.method, request.path)
        return _error(500, 500, f"Internal server error: {type(exc).__name__}")


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "false").lower() == "true"


class Node:
    """What the REST layer needs of the running registry: the registry, whether this node is the primary, the
    primary's URL, and the write path."""

    registry: Registry

    def is_primary(self) -> bool:
        raise NotImplementedError

    def primary_url(self) -> str | None:
        raise NotImplementedError

    def write(self, items: list[tuple[bytes, bytes | None]]) -> None:
        raise NotImplementedError

    def catch_up(self) -> None:
        """Block until this node has read what the topic held when called (after a forwarded write)."""
        raise NotImplementedError


class RegistryRest:
    def __init__(self, node: Node, forward_ssl: ssl.SSLContext | None = None) -> None:
        self.node = node
        self.forward_ssl = forward_ssl  # trusts an https primary (`ssl.truststore.location`)
        self.registry = node.registry
        self.state = node.registry.state
        self._session: aiohttp.ClientSession | None = None
        self.heavy = HeavyWork()  # parsing and compatibility checks: their threads and each client's share

    def app(self, middlewares: list[Any] | None = None) -> web.Application:
        app = web.Application(middlewares=[*(middlewares or []), _errors], client_max_size=MAX_BODY)
        r = app.router
        r.add_get("/", self.root)
        r.add_get("/subjects", self.subjects)
        r.add_post("/subjects/{subject}", self.lookup)
        r.add_delete("/subjects/{subject}", self.delete_subject)
        r.add_get("/subjects/{subject}/versions", self.versions)
        r.add_post("/subjects/{subject}/versions", self.register)
        r.add_get("/subjects/{subject}/versions/{version}", self.version)
        r.add_delete("/subjects/{subject}/versions/{version}", self.delete_version)
        r.add_get("/subjects/{subject}/versions/{version}/schema", self.version_schema)
        r.add_get("/subjects/{subject}/versions/{version}/referencedby", self.referenced_by)
        r.add_get("/schemas", self.schemas)
        r.add_get("/schemas/types", self.types)
        r.add_get("/schemas/ids/{id}", self.by_id)
        r.add_get("/schemas/ids/{id}/schema", self.by_id_schema)
        r.add_get("/schemas/ids/{id}/subjects", self.id_subjects)
        r.add_get("/schemas/ids/{id}/versions", self.id_versions)
        r.add_get("/config", self.get_config)
        r.add_put("/config", self.put_config)
        r.add_delete("/config", self.delete_config)
        r.add_get("/config/{subject}", self.get_config)
        r.add_put("/config/{subject}", self.put_config)
        r.add_delete("/config/{subject}", self.delete_config)
        r.add_get("/mode", self.get_mode)
        r.add_put("/mode", self.put_mode)
        r.add_get("/mode/{subject}", self.get_mode)
        r.add_put("/mode/{subject}", self.put_mode)
        r.add_delete("/mode/{subject}", self.delete_mode)
        r.add_post("/compatibility/subjects/{subject}/versions/{version}", self.compatibility)
        r.add_post("/compatibility/subjects/{subject}/versions", self.compatibility)
        r.add_get("/contexts", self.contexts)
        app.on_cleanup.append(self._close)
        return app

    async def _close(self, _app: web.Application) -> None:
        self.heavy.close()
        if self._session is not None:
            await self._session.close()

    # ---- helpers ----------------------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> dict[str, Any]:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError) as exc:
            raise RegistryError(400, 400, f"Unrecognized request body: {str(exc)[:200]}") from None
        except RecursionError:  # json's parser on a body nested thousands deep
            raise RegistryError(400, 400, "Unrecognized request body: nested too deep") from None
        if not isinstance(body, dict):
            raise RegistryError(422, 422, "The request body must be a JSON object")
        return body

    async def _write(self, request: web.Request, call: Callable[[], Any], parses: bool = False) -> web.StreamResponse:
        """Run a write here when this node is the primary, else forward the request to the primary. `parses`:
        it parses a schema, so it runs as the client's heavy work."""
        if self.node.is_primary():
            return _json(await (self.heavy.run_write(client_of(request), call) if parses else asyncio.to_thread(call)))
        if request.headers.get(FORWARDED):
            raise RegistryError(500, 50003, "Error while forwarding the request to the primary: the primary "
                                            "changed")
        url = self.node.primary_url()
        if url is None:
            raise RegistryError(500, 50004, "Unknown leader: no primary is elected for the schema registry")
        return await self._forward(request, url)

    async def _forward(self, request: web.Request, url: str) -> web.StreamResponse:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60),
                                                  connector=aiohttp.TCPConnector(ssl=self.forward_ssl or True))
        headers = {"Content-Type": CONTENT_TYPE, FORWARDED: "true"}
        if "Authorization" in request.headers:
            headers["Authorization"] = request.headers["Authorization"]
        body = await request.read()
        try:
            async with self._session.request(request.method, url.rstrip("/") + request.rel_url.path_qs,
                                             data=body, headers=headers) as resp:
                text = await resp.text()
        except (TimeoutError, aiohttp.ClientError) as exc:
            raise RegistryError(500, 50003, f"Error while forwarding the request to the primary at {url}: "
                                            f"{exc}") from None
        if resp.status == 200:
            # read our own write: what the client does next through this node sees it
            with contextlib.suppress(Exception):
                await asyncio.to_thread(self.node.catch_up)
        return web.Response(status=resp.status, text=text, content_type=CONTENT_TYPE)

    # ---- routes -----------------------------------------------------------------------------------------

    async def root(self, request: web.Request) -> web.Response:
        return _json({})

    async def subjects(self, request: web.Request) -> web.Response:
        prefix = request.query.get("subjectPrefix", "")
        names = self.state.subject_names(deleted=_flag(request, "deleted"))
        if _flag(request, "deletedOnly"):
            live = set(self.state.subject_names())
            names = [n for n in names if n not in live]
        if prefix and prefix != ":*:":
            names = [n for n in names if n.startswith(prefix)]
        return _json(_page(request, names))

    async def versions(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        every = self.state.versions(subject, deleted=True)
        shown = self.state.versions(subject, deleted=_flag(request, "deleted"))
        if _flag(request, "deletedOnly"):
            shown = [r for r in every if r.deleted]
        if not every or (not shown and not _flag(request, "deletedOnly")):
            raise RegistryError(404, 40401, f"Subject '{subject}' not found.")
        return _json([r.version for r in shown])

    async def version(self, request: web.Request) -> web.Response:
        rec = self.registry.version(request.match_info["subject"], request.match_info["version"],
                                    _flag(request, "deleted"))
        return _json(await self._formatted(request, describe(rec)))

    async def version_schema(self, request: web.Request) -> web.Response:
        rec = self.registry.version(request.match_info["subject"], request.match_info["version"],
                                    _flag(request, "deleted"))
        return web.Response(text=rec.schema, content_type=CONTENT_TYPE)

    async def referenced_by(self, request: web.Request) -> web.Response:
        rec = self.registry.version(request.match_info["subject"], request.match_info["version"], True)
        return _json(self.state.referenced_by(rec.subject, rec.version))

    async def lookup(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        body = await self._body(request)
        rec = await self.heavy.run(client_of(request), self.registry.lookup, subject, body,
                                   _flag(request, "normalize"), _flag(request, "deleted"))
        return _json(describe(rec))

    async def register(self, request: web.Request) -> web.StreamResponse:
        subject = request.match_info["subject"]
        body = await self._body(request)
        normalize = _flag(request, "normalize")
        return await self._write(request, lambda: {"id": self.registry.register(subject, body, normalize,
                                                                                self.node.write)}, parses=True)

    async def delete_subject(self, request: web.Request) -> web.StreamResponse:
        subject = request.match_info["subject"]
        permanent = _flag(request, "permanent")
        return await self._write(request, lambda: self.registry.delete_subject(subject, permanent, self.node.write))

    async def delete_version(self, request: web.Request) -> web.StreamResponse:
        subject, version = request.match_info["subject"], request.match_info["version"]
        parse_version(version)  # 42202 before anything else
        permanent = _flag(request, "permanent")
        return await self._write(request, lambda: self.registry.delete_version(subject, version, permanent,
                                                                               self.node.write))

    def _schema_id(self, request: web.Request) -> int:
        try:
            return int(request.match_info["id"])
        except ValueError:
            raise schema_not_found(request.match_info["id"]) from None

    async def _formatted(self, request: web.Request, doc: dict[str, Any]) -> dict[str, Any]:
        """`?format=`: `serialized` gives a Protobuf schema as its base64 FileDescriptorProto (what Confluent's
        Python deserializer asks for), `resolved` an Avro schema with its references inlined; other formats
        and types keep the stored text, as Confluent's do."""
        fmt = request.query.get("format", "")
        if fmt:
            text = await self.heavy.run(client_of(request), self._format, doc, fmt)
            if text is not None:
                doc["schema"] = text
        return doc

    def _format(self, doc: dict[str, Any], fmt: str) -> str | None:
        parsed = self.registry.parse(doc.get("schemaType", "AVRO"), doc["schema"], doc.get("references") or [])
        return formatted(parsed, fmt)

    async def by_id(self, request: web.Request) -> web.Response:
        schema_id = self._schema_id(request)
        rec = self.state.schema(schema_id)
        if rec is None:
            raise schema_not_found(schema_id)
        doc = describe(rec, with_subject=False)
        doc.pop("id")
        return _json(await self._formatted(request, doc))

    async def by_id_schema(self, request: web.Request) -> web.Response:
        schema_id = self._schema_id(request)
        rec = self.state.schema(schema_id)
        if rec is None:
            raise schema_not_found(schema_id)
        return web.Response(text=rec.schema, content_type=CONTENT_TYPE)

    async def id_subjects(self, request: web.Request) -> web.Response:
        schema_id = self._schema_id(request)
        uses = self.state.uses_of(schema_id, _flag(request, "deleted"))
        if self.state.schema(schema_id) is None:
            raise schema_not_found(schema_id)
        return _json(sorted({r.subject for r in uses}))

    async def id_versions(self, request: web.Request) -> web.Response:
        schema_id = self._schema_id(request)
        uses = self.state.uses_of(schema_id, _flag(request, "deleted"))
        if self.state.schema(schema_id) is None:
            raise schema_not_found(schema_id)
        return _json([{"subject": r.subject, "version": r.version} for r in uses])

    async def schemas(self, request: web.Request) -> web.Response:
        prefix = request.query.get("subjectPrefix", "")
        deleted, latest_only = _flag(request, "deleted"), _flag(request, "latestOnly")
        out = []
        for name in self.state.subject_names(deleted=deleted):
            if prefix and not name.startswith(prefix):
                continue
            versions = self.state.versions(name, deleted=deleted)
            out += [describe(r) for r in (versions[-1:] if latest_only else versions)]
        return _json(out)

    async def types(self, request: web.Request) -> web.Response:
        return _json(sorted(SCHEMA_TYPES, key=lambda t: ("JSON", "PROTOBUF", "AVRO").index(t)))

    async def get_config(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        return _json(self.registry.get_config(subject, _flag(request, "defaultToGlobal")))

    async def put_config(self, request: web.Request) -> web.StreamResponse:
        subject = request.match_info.get("subject")
        body = await self._body(request)
        return await self._write(request, lambda: self.registry.set_config(subject, body, self.node.write))

    async def delete_config(self, request: web.Request) -> web.StreamResponse:
        subject = request.match_info.get("subject")
        return await self._write(request, lambda: self.registry.delete_config(subject, self.node.write))

    async def get_mode(self, request: web.Request) -> web.Response:
        subject = request.match_info.get("subject")
        return _json(self.registry.get_mode(subject, _flag(request, "defaultToGlobal")))

    async def put_mode(self, request: web.Request) -> web.StreamResponse:
        subject = request.match_info.get("subject")
        body = await self._body(request)
        force = _flag(request, "force")
        return await self._write(request, lambda: self.registry.set_mode(subject, body, force, self.node.write))

    async def delete_mode(self, request: web.Request) -> web.StreamResponse:
        subject = request.match_info["subject"]
        return await self._write(request, lambda: self.registry.delete_mode(subject, self.node.write))

    async def compatibility(self, request: web.Request) -> web.Response:
        subject = request.match_info["subject"]
        version = request.match_info.get("version")
        body = await self._body(request)
        problems = await self.heavy.run(client_of(request), self.registry.compatibility, subject, version, body,
                                        _flag(request, "normalize"))
        answer: dict[str, Any] = {"is_compatible": not problems}
        if _flag(request, "verbose"):
            answer["messages"] = problems
        return _json(answer)

    async def contexts(self, request: web.Request) -> web.Response:
        with self.state.lock:
            live = {context_of(s) for s, vs in self.state.subjects.items() if vs}
        return _json(_page(request, sorted(live | {DEFAULT_CONTEXT})))


def _page(request: web.Request, items: list[Any]) -> list[Any]:
    """Confluent's `offset` and `limit` (-1: all) of a list answer."""
    try:
        offset, limit = int(request.query.get("offset", "0")), int(request.query.get("limit", "-1"))
    except ValueError:
        raise RegistryError(400, 400, "offset and limit must be integers") from None
    items = items[max(offset, 0):]
    return items if limit < 0 else items[:limit]
