"""A client of Confluent Schema Registry's REST API (Odradek's registry, Confluent's or Karapace), shared by
`odradek schemas` and the console's Schemas page.

Blocking calls (the console runs them on its worker threads) over serde's `RegistryTransport`, each bounded
by a timeout and by the size of the answer read; basic auth from Confluent's client key `basic.auth.user.info`
(USER:PASSWORD); https verified against the system's CAs or a PEM CA file. A refusal is a `RegistryError`
carrying the registry's one-line message and error code (40401 "Subject 'x' not found.", 42201 "Invalid
schema ..."); a registry that does not answer is one line naming its URL (`unreachable`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from odradek.serde.registry_http import Refused, RegistryTransport, TransportError, Unreachable

DEFAULT_URL = "http://localhost:8081"
MAX_BODY = 8 << 20  # an answer larger than this is refused, not read into memory
SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")
LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE", "NONE")
SUBJECT_NOT_FOUND, VERSION_NOT_FOUND, NO_SUBJECT_LEVEL = 40401, 40402, 40408

# Client properties (Confluent's serializers' and Python client's names) read from a properties file.
URL_KEYS = ("schema.registry.url", "url")
USER_INFO_KEYS = ("basic.auth.user.info", "schema.registry.basic.auth.user.info")
CA_KEYS = ("schema.registry.ssl.truststore.location", "schema.registry.ssl.ca.location", "ssl.ca.location",
           "ssl.truststore.location")


class RegistryError(Exception):
    """The registry refused a request (its message and error code) or did not answer (`unreachable`)."""

    def __init__(self, message: str, code: int | None = None, unreachable: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.unreachable = unreachable


@dataclass
class RegistrySettings:
    """Where the registry is and how to reach it."""

    url: str = DEFAULT_URL
    user_info: str | None = field(default=None, repr=False)  # USER:PASSWORD for basic auth (never in a repr)
    ca_file: str | None = None  # PEM CAs to verify an https registry with


def settings_from(props: Mapping[str, str], url: str | None = None, user_info: str | None = None,
                  ca_file: str | None = None) -> RegistrySettings:
    """Settings from a client properties file, the values given explicitly taking precedence."""
    def first(keys: tuple[str, ...]) -> str | None:
        return next((props[k].strip() for k in keys if props.get(k, "").strip()), None)

    return RegistrySettings(url or first(URL_KEYS) or DEFAULT_URL, user_info or first(USER_INFO_KEYS),
                            ca_file or first(CA_KEYS))


def check_url(url: str) -> str:
    """An http(s) URL with a host, or ValueError with a one-line reason."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"invalid schema registry URL '{url}' (expected http://HOST:PORT or https://HOST:PORT)")
    try:
        parts.port  # noqa: B018 - raises on a bad port
    except ValueError:
        raise ValueError(f"invalid port in schema registry URL '{url}'") from None
    return url.rstrip("/")


@dataclass
class SchemaVersion:
    """One version of a subject, as `GET /subjects/{s}/versions/{v}` describes it."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, doc: Any) -> SchemaVersion:
        if not isinstance(doc, dict):
            raise RegistryError("Unexpected answer from the schema registry (not a schema version)")
        try:
            return cls(str(doc["subject"]), int(doc["version"]), int(doc["id"]), str(doc["schema"]),
                       str(doc.get("schemaType") or "AVRO"), [r for r in doc.get("references") or []
                                                              if isinstance(r, dict)])
        except (KeyError, TypeError, ValueError):
            raise RegistryError("Unexpected answer from the schema registry (not a schema version)") from None

    def pretty(self) -> str:
        """The schema indented when it is JSON (Avro, JSON Schema), as stored otherwise (Protobuf)."""
        if self.schema_type in ("AVRO", "JSON"):
            try:
                return json.dumps(json.loads(self.schema), indent=2, ensure_ascii=False)
            except (ValueError, RecursionError):
                pass
        return self.schema


def subject_path(subject: str) -> str:
    return quote(subject, safe="")


class RegistryClient:
    """Blocking calls to one registry."""

    def __init__(self, settings: RegistrySettings, timeout_s: float) -> None:
        self.url = check_url(settings.url)
        self.timeout_s = timeout_s
        try:
            self._http = RegistryTransport([self.url], user_info=settings.user_info, ca_file=settings.ca_file,
                                           timeout_s=timeout_s, max_answer=MAX_BODY)
        except TransportError as exc:
            raise RegistryError(str(exc)) from None

    def call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            return self._http.call(method, path, body)
        except Refused as exc:
            if exc.message:  # the registry's own line (40401 "Subject 'x' not found.", ...)
                raise RegistryError(exc.message, exc.error_code if exc.error_code is not None else exc.status) from None
            if exc.status == 401:
                raise RegistryError(f"The schema registry at {self.url} refused the credentials (401 Unauthorized)",
                                    401) from None
            raise RegistryError(f"The schema registry at {self.url} answered {exc.status} {exc.reason}",
                                exc.status) from None
        except Unreachable as exc:
            raise RegistryError(f"Schema registry unreachable at {exc}", unreachable=True) from None
        except TransportError as exc:
            raise RegistryError(str(exc)[:1].upper() + str(exc)[1:]) from None

    # reads

    def subjects(self, prefix: str = "", deleted: bool = False) -> list[str]:
        query = f"?subjectPrefix={quote(prefix, safe='')}" if prefix else ""
        if deleted:
            query += ("&" if query else "?") + "deleted=true"
        names = self.call("GET", "/subjects" + query)
        if not isinstance(names, list):
            raise RegistryError("Unexpected answer from the schema registry (not a list of subjects)")
        return [str(n) for n in names]

    def versions(self, subject: str, deleted: bool = False) -> list[int]:
        found = self.call("GET", f"/subjects/{subject_path(subject)}/versions" + ("?deleted=true" if deleted else ""))
        if not isinstance(found, list):
            raise RegistryError("Unexpected answer from the schema registry (not a list of versions)")
        return [int(v) for v in found]

    def version(self, subject: str, version: str | int = "latest") -> SchemaVersion:
        return SchemaVersion.of(self.call("GET", f"/subjects/{subject_path(subject)}/versions/"
                                                 f"{quote(str(version), safe='')}"))

    def config(self, subject: str | None = None) -> tuple[str, bool]:
        """The compatibility level in force for `subject` (the global one without), and whether it is the
        subject's own."""
        if subject is not None:
            try:
                return self._level(self.call("GET", f"/config/{subject_path(subject)}")), True
            except RegistryError as exc:
                if exc.code != NO_SUBJECT_LEVEL:
                    raise
        return self._level(self.call("GET", "/config")), False

    @staticmethod
    def _level(doc: Any) -> str:
        level = doc.get("compatibilityLevel") or doc.get("compatibility") if isinstance(doc, dict) else None
        if not isinstance(level, str):
            raise RegistryError("Unexpected answer from the schema registry (no compatibility level)")
        return level

    # writes

    def register(self, subject: str, schema: str, schema_type: str = "AVRO",
                 references: list[dict[str, Any]] | None = None, normalize: bool = False) -> int:
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = references
        answer = self.call("POST", f"/subjects/{subject_path(subject)}/versions"
                                   + ("?normalize=true" if normalize else ""), body)
        try:
            return int(answer["id"])
        except (KeyError, TypeError, ValueError):
            raise RegistryError("Unexpected answer from the schema registry (no id)") from None

    def check(self, subject: str, schema: str, schema_type: str = "AVRO",
              references: list[dict[str, Any]] | None = None, version: str | None = "latest") -> list[str]:
        """The compatibility problems of `schema` against `version` of the subject (every version the level
        says when `version` is None); an empty list when compatible."""
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = references
        target = "" if version is None else f"/{quote(version, safe='')}"
        answer = self.call("POST", f"/compatibility/subjects/{subject_path(subject)}/versions{target}?verbose=true",
                           body)
        if not isinstance(answer, dict) or not isinstance(answer.get("is_compatible"), bool):
            raise RegistryError("Unexpected answer from the schema registry (no is_compatible)")
        if answer["is_compatible"]:
            return []
        return [str(m) for m in answer.get("messages") or []] or ["incompatible (the registry gave no reason)"]

    def set_config(self, subject: str | None, level: str) -> str:
        path = "/config" + (f"/{subject_path(subject)}" if subject is not None else "")
        return self._level(self.call("PUT", path, {"compatibility": level}))

    def delete_config(self, subject: str) -> None:
        self.call("DELETE", f"/config/{subject_path(subject)}")

    def delete(self, subject: str, version: str | None = None, permanent: bool = False) -> list[int]:
        """Delete a subject (every version) or one version of it; the versions deleted."""
        path = f"/subjects/{subject_path(subject)}"
        if version is not None:
            path += f"/versions/{quote(version, safe='')}"
        answer = self.call("DELETE", path + ("?permanent=true" if permanent else ""))
        found = answer if isinstance(answer, list) else [answer]
        try:
            return [int(v) for v in found]
        except (TypeError, ValueError):
            raise RegistryError("Unexpected answer from the schema registry (not versions)") from None
