"""The schema registry at `confluent.schema.registry.url`, asked over HTTP what a schema id stands for (Schema
ID Validation's `SchemaLookup`): `GET /schemas/ids/{id}` for its text and type (the record name comes from
that), `GET /schemas/ids/{id}/versions` for the subjects that hold it. The URLs are tried in turn, each request
bounded by `TIMEOUT_S` and its answer by `MAX_ANSWER_BYTES`; when none answers the lookup is unavailable
(never a hang). 404 is "no such id"; 401 and the like are the registry unavailable. HTTP basic auth as
Confluent Server's `confluent.basic.auth.*` keys say."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

import yarl

if TYPE_CHECKING:
    import aiohttp

from odradek.server.schema_names import record_name
from odradek.server.schema_validation import RegistryUnavailable, SchemaFacts

TIMEOUT_S = 5.0
MAX_ANSWER_BYTES = 8 * 1024 * 1024  # a schema is at most 1 MiB of text, JSON-escaped in the answer
THREAD_FROM_BYTES = 64 * 1024  # record names of larger schemas are read on a worker thread


def _aiohttp() -> Any:
    """aiohttp, imported when first needed: every broker builds a lookup, few ever ask a registry (the import
    is a tenth of a broker's start-up CPU)."""
    import aiohttp

    return aiohttp


class HttpSchemaLookup:
    """`credentials_source` is Confluent's confluent.basic.auth.credentials.source: URL takes the user and
    password from each URL's user info, USER_INFO from `user_info` ("user:password"). URLs are kept and shown
    without their credentials (log lines and produce errors never carry them)."""

    def __init__(self, urls: list[str], credentials_source: str = "URL", user_info: str | None = None,
                 max_connections: int = 8) -> None:
        self.urls: list[str] = []
        self._auth: list[aiohttp.BasicAuth | None] = []
        for text in urls:
            if not text.strip():
                continue
            url = yarl.URL(text.strip().rstrip("/"))
            auth = None
            if credentials_source == "USER_INFO" and user_info:
                user, _, password = user_info.partition(":")
                auth = _aiohttp().BasicAuth(user, password)
            elif credentials_source == "URL" and url.user:
                auth = _aiohttp().BasicAuth(url.user, url.password or "")
            self.urls.append(str(url.with_user(None)))
            self._auth.append(auth)
        self._max_connections = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._next = 0  # the URL that answered last is asked first

    def token(self) -> object:
        return None

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def facts(self, schema_id: int) -> SchemaFacts | None:
        failures = []
        for step in range(len(self.urls)):
            i = (self._next + step) % len(self.urls)
            base = self.urls[i]
            try:
                found = await self._ask(base, self._auth[i], schema_id)
            except (TimeoutError, _aiohttp().ClientError, OSError, ValueError, KeyError, TypeError) as exc:
                failures.append(f"{base}: {type(exc).__name__} {exc}".strip())
                continue
            self._next = i
            return found
        raise RegistryUnavailable("; ".join(failures) or "no schema registry URL")

    async def _ask(self, base: str, auth: aiohttp.BasicAuth | None, schema_id: int) -> SchemaFacts | None:
        status, doc = await self._get(f"{base}/schemas/ids/{schema_id}", auth)
        if status == 404:
            return None
        if status != 200 or not isinstance(doc, dict) or not isinstance(doc.get("schema"), str):
            raise ValueError(f"HTTP {status} for schema id {schema_id}")
        status, versions = await self._get(f"{base}/schemas/ids/{schema_id}/versions", auth)
        if status == 404:
            return None
        if status != 200 or not isinstance(versions, list):
            raise ValueError(f"HTTP {status} for the versions of schema id {schema_id}")
        subjects = frozenset(str(v["subject"]) for v in versions)
        schema_type, text = str(doc.get("schemaType") or "AVRO"), doc["schema"]
        if len(text) > THREAD_FROM_BYTES:
            name = await asyncio.to_thread(record_name, schema_type, text)
        else:
            name = record_name(schema_type, text)
        return SchemaFacts(name, subjects)

    async def _get(self, url: str, auth: aiohttp.BasicAuth | None) -> tuple[int, Any]:
        if self._session is None:
            aiohttp = _aiohttp()
            self._session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=TIMEOUT_S),
                connector=aiohttp.TCPConnector(limit=self._max_connections),
                headers={"Accept": "application/vnd.schemaregistry.v1+json, application/json"})
        async with self._session.get(url, auth=auth) as resp:
            body = await resp.content.read(MAX_ANSWER_BYTES + 1)
            if len(body) > MAX_ANSWER_BYTES:
                raise ValueError(f"answer over {MAX_ANSWER_BYTES} bytes")
            if resp.status != 200:
                return resp.status, None
            if len(body) > THREAD_FROM_BYTES:
                return resp.status, await asyncio.to_thread(json.loads, body)
            return resp.status, json.loads(body)
