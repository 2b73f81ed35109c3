"""The Schemas pages' data: a schema registry's subjects (latest version, type, id, compatibility level), one
subject's versions with a chosen version's pretty-printed schema, references and id, and a line diff between two
versions, read over Confluent Schema Registry's REST API (`admin_client/schema_registry.py`).

The registry is the one given with `odradek console --schema-registry-url URL` (credentials and CA from
`--schema-registry-config FILE`: `basic.auth.user.info`, `schema.registry.ssl.truststore.location`). Without
it, the console asks the cluster: a broker that runs the registry itself (`schema_registry_api`) says so in
its configs (DescribeConfigs), and its first URL is used, a wildcard host replaced by the broker's host; such
a discovered registry is never sent the configured credentials, which are for the operator's URL only.
The compatibility level can be changed through an ordinary gated POST (login, same origin, CSRF, refused
with --read-only), with the console's credentials; everything else here is read-only.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from aiohttp import web

from odradek.admin_client.schema_registry import (
    RegistryClient,
    RegistryError,
    RegistrySettings,
    SchemaVersion,
    check_url,
)

PAGE_SIZE = 50  # subjects per page: each costs two requests to the registry
MAX_DIFF_LINES = 20_000  # difflib is quadratic at worst: larger schemas are not diffed
WILDCARDS = ("", "0.0.0.0", "::", "[::]")


@dataclass
class SubjectRow:
    name: str
    version: int | None = None
    id: int | None = None
    schema_type: str = ""
    level: str = ""
    own_level: bool = False
    error: str | None = None


@dataclass
class DiffLine:
    kind: str  # "add", "del", "hunk", "ctx", "file"
    text: str


class RegistryLink:
    """The registry the pages read: the configured one, else the one the cluster names (looked up until found)."""

    def __init__(self, settings: RegistrySettings | None, timeout_s: float,
                 discover: Callable[[], str | None] | None = None) -> None:
        self.timeout_s = timeout_s
        self.discover = discover
        self._settings = settings
        self._client = RegistryClient(settings, timeout_s) if settings is not None else None
        self._lock = threading.Lock()

    def client(self) -> RegistryClient | None:
        """Blocking: the client, once the registry is known (a DescribeConfigs when discovering)."""
        with self._lock:
            if self._client is None and self.discover is not None:
                url = self.discover()
                if url is not None:
                    self._settings = RegistrySettings(url)
                    self._client = RegistryClient(self._settings, self.timeout_s)
            return self._client

    def settings(self) -> RegistrySettings | None:
        """Blocking like `client`: where the registry is and how to reach it, once known."""
        self.client()
        return self._settings


def registry_url_of(value: str | None, broker_host: str) -> str | None:
    """The first http(s) URL of a broker's `schema_registry_api`, its wildcard host replaced by the broker's."""
    for entry in (value or "").split(","):
        parts = urlsplit(entry.strip())
        if parts.scheme not in ("http", "https") or parts.port is None:
            continue
        host = parts.hostname or ""
        if host in WILDCARDS:
            host = broker_host
        host = f"[{host}]" if ":" in host else host
        try:
            return check_url(urlunsplit((parts.scheme, f"{host}:{parts.port}", "", "", "")))
        except ValueError:
            continue
    return None


def subject_rows(client: RegistryClient, prefix: str, page: int) -> tuple[list[SubjectRow], int, str]:
    """One page of subjects with their latest version and level, the number of subjects, the global level."""
    names = client.subjects(prefix)
    global_level, _ = client.config(None)
    shown = names[page * PAGE_SIZE:(page + 1) * PAGE_SIZE]

    def row(name: str) -> SubjectRow:
        r = SubjectRow(name)
        try:
            latest = client.version(name, "latest")
            r.version, r.id, r.schema_type = latest.version, latest.id, latest.schema_type
            r.level, r.own_level = client.config(name)
        except RegistryError as exc:  # e.g. deleted between the list and now: that row says so
            r.error = str(exc)
        return r

    with ThreadPoolExecutor(8, "console-registry") as pool:
        return list(pool.map(row, shown)), len(names), global_level


@dataclass
class SubjectView:
    name: str
    versions: list[int]
    shown: SchemaVersion
    level: str
    own_level: bool
    diff: list[DiffLine] | None = None
    diff_error: str | None = None


def subject_view(client: RegistryClient, name: str, version: str, diff: tuple[str, str] | None) -> SubjectView:
    versions = client.versions(name)
    shown = client.version(name, version)
    level, own = client.config(name)
    view = SubjectView(name, versions, shown, level, own)
    if diff is not None:
        a = shown if diff[0] == str(shown.version) else client.version(name, diff[0])
        b = shown if diff[1] == str(shown.version) else client.version(name, diff[1])
        view.diff, view.diff_error = diff_lines(a, b)
    return view


def diff_lines(a: SchemaVersion, b: SchemaVersion) -> tuple[list[DiffLine], str | None]:
    """A unified diff of the two versions' pretty-printed schemas (their references too)."""
    old, new = text_of(a).splitlines(), text_of(b).splitlines()
    if len(old) + len(new) > MAX_DIFF_LINES:
        return [], f"These schemas have more than {MAX_DIFF_LINES} lines between them: not diffed here"
    out = []
    for line in difflib.unified_diff(old, new, f"version {a.version} (id {a.id})", f"version {b.version} (id {b.id})",
                                     lineterm="", n=3):
        if line.startswith(("---", "+++")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "ctx")
        out.append(DiffLine(kind, line))
    return out, None


def text_of(v: SchemaVersion) -> str:
    refs = "".join(f"\n// reference {r.get('name')} = {r.get('subject')} version {r.get('version')}"
                   for r in v.references)
    return v.pretty() + refs


REGISTRY = web.AppKey("registry", RegistryLink)


def install(app: web.Application, settings: RegistrySettings | None, timeout_s: float,
            discover: Callable[[], str | None]) -> None:
    """The link to the registry: the operator's when given, else discovered from the cluster."""
    app[REGISTRY] = RegistryLink(settings, timeout_s, None if settings is not None else discover)
