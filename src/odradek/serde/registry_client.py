"""A small client of Confluent Schema Registry's REST API: register a schema under a subject, fetch a schema
by id, the latest version of a subject (over `registry_http.RegistryTransport`: basic auth, a PEM CA, bounded
answers). Answers are cached (ids are immutable), so a stream of records asks
the registry once per schema id, not once per record; an id the registry does not know is remembered for
NOT_FOUND_TTL_S, so records carrying a bogus id cannot turn into a request each.

Picklable (Spark ships it to executors inside each task's function): an unpickled client takes the caches of
its process for the same registry, so a Python worker that runs task after task asks for an id once.
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from odradek.serde.registry_http import Refused, RegistryTransport, TransportError, Unreachable

CACHE_SIZE = 1000
NOT_FOUND_TTL_S = 10.0
MAX_ANSWER_BYTES = 16 << 20  # a schema and its references; a larger answer is refused, not read into memory
SCHEMA_NOT_FOUND = 40403


class RegistryError(RuntimeError):
    """The registry answered an error (with its error_code), or could not be reached (error_code None)."""

    def __init__(self, message: str, error_code: int | None = None) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it: id, type (AVRO, JSON, PROTOBUF) and text."""

    schema_id: int
    schema_type: str
    text: str


class _Caches:
    """What a client remembers: schemas by id, unknown ids with the time they were asked, registrations."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_id: OrderedDict[int, RegisteredSchema] = OrderedDict()
        self.missing: dict[int, float] = {}
        self.registered: OrderedDict[tuple[str, str, str], int] = OrderedDict()


_SHARED: dict[tuple[tuple[str, ...], str | None], _Caches] = {}  # the caches of unpickled clients, per registry
_SHARED_LOCK = threading.Lock()


class RegistryClient:
    """Confluent's REST API at `url` (comma-separated URLs: tried in turn when one cannot be reached).
    Basic auth from `user_info` ("user:password", Confluent's basic.auth.user.info) or the URL's userinfo."""

    def __init__(self, url: str, *, user_info: str | None = None, timeout_s: float = 10.0,
                 ca_file: str | None = None) -> None:
        self.urls: list[str] = []
        for raw in url.split(","):
            parts = urllib.parse.urlsplit(raw.strip())
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"schema registry URL {raw.strip()!r} is not http(s)://HOST:PORT")
            if parts.username is not None and user_info is None:
                user_info = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            netloc = parts.hostname if parts.port is None else f"{parts.hostname}:{parts.port}"
            if ":" in parts.hostname:
                netloc = f"[{parts.hostname}]" + ("" if parts.port is None else f":{parts.port}")
            self.urls.append(urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")))
        self.user_info = user_info
        self.timeout_s = timeout_s
        self.ca_file = ca_file  # PEM CAs for an https registry (else the system's)
        self._http: RegistryTransport | None = None
        self._init_caches()

    def _init_caches(self, caches: _Caches | None = None) -> None:
        c = caches or _Caches()
        self._caches = c
        self._lock, self._by_id, self._missing, self._registered = c.lock, c.by_id, c.missing, c.registered

    def __getstate__(self) -> dict[str, Any]:
        return {"urls": self.urls, "user_info": self.user_info, "timeout_s": self.timeout_s, "ca_file": self.ca_file}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._http = None
        key = (tuple(self.urls), self.user_info)
        with _SHARED_LOCK:
            caches = _SHARED.setdefault(key, _Caches())
        self._init_caches(caches)

    # --- requests ------------------------------------------------------------------------------

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            if self._http is None:  # made here, not at unpickling: a Spark task ships the settings only
                self._http = RegistryTransport(self.urls, user_info=self.user_info, ca_file=self.ca_file,
                                               timeout_s=self.timeout_s, max_answer=MAX_ANSWER_BYTES)
            return self._http.call(method, path, body)
        except Refused as exc:
            raise RegistryError(f"schema registry answered {exc.status} to {exc.url}: {exc.message or exc.reason}",
                                exc.error_code) from None
        except Unreachable as exc:
            raise RegistryError(f"schema registry unreachable ({exc})") from None
        except TransportError as exc:
            raise RegistryError(str(exc)) from None

    # --- the API ---------------------------------------------------------------------------------

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """GET /schemas/ids/{id}, cached; RegistryError(error_code=40403) for an unknown id."""
        with self._lock:
            found = self._by_id.get(schema_id)
            if found is not None:
                return found
            missing_at = self._missing.get(schema_id)
            if missing_at is not None and time.monotonic() - missing_at < NOT_FOUND_TTL_S:
                raise RegistryError(f"schema id {schema_id} not found in the registry", SCHEMA_NOT_FOUND)
        try:
            body = self._call("GET", f"/schemas/ids/{schema_id}")
        except RegistryError as exc:
            if exc.error_code == SCHEMA_NOT_FOUND:
                with self._lock:
                    if len(self._missing) >= CACHE_SIZE:
                        self._missing.clear()
                    self._missing[schema_id] = time.monotonic()
                raise RegistryError(f"schema id {schema_id} not found in the registry", SCHEMA_NOT_FOUND) from None
            raise
        schema = _registered(schema_id, body)
        with self._lock:
            self._by_id[schema_id] = schema
            if len(self._by_id) > CACHE_SIZE:
                self._by_id.popitem(last=False)
        return schema

    def register(self, subject: str, text: str, schema_type: str = "AVRO") -> int:
        """POST /subjects/{subject}/versions: the schema's id (the same one if it was registered already)."""
        key = (subject, schema_type, text)
        with self._lock:
            if key in self._registered:
                return self._registered[key]
        body: dict[str, Any] = {"schema": text}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        schema_id = int(self._call("POST", f"/subjects/{_quote(subject)}/versions", body)["id"])
        with self._lock:
            self._registered[key] = schema_id
            self._by_id[schema_id] = RegisteredSchema(schema_id, schema_type, text)
            for cache in (self._registered, self._by_id):
                if len(cache) > CACHE_SIZE:
                    cache.popitem(last=False)
        return schema_id

    def latest(self, subject: str) -> RegisteredSchema:
        """GET /subjects/{subject}/versions/latest (not cached: the latest version moves)."""
        body = self._call("GET", f"/subjects/{_quote(subject)}/versions/latest")
        return _registered(body.get("id") if isinstance(body, dict) else None, body)


def _registered(schema_id: Any, body: Any) -> RegisteredSchema:
    """A schema answer (`{"schema": ..., "schemaType"?: ...}`), or RegistryError when it is not one."""
    if not isinstance(body, dict) or not isinstance(body.get("schema"), str) or not isinstance(schema_id, int):
        raise RegistryError(f"schema registry answered no schema: {str(body)[:200]}")
    return RegisteredSchema(schema_id, str(body.get("schemaType", "AVRO")), body["schema"])


def _quote(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")

