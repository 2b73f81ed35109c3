"""ACLs in the metadata store, in Kafka's ZooKeeper layout (AclAuthorizer's ZkAclStore), so that Kafka's
own tools read what Odradek writes and the reverse:

- LITERAL patterns: `/kafka-acl/<ResourceType>/<name>`, PREFIXED ones:
  `/kafka-acl-extended/prefixed/<ResourceType>/<name>`; each holds {"version":1,"acls":[{"principal":
  "User:alice","permissionType":"Allow","operation":"Read","host":"*"}, ...]};
- after each change a sequential notification: `/kafka-acl-changes/acl_changes_NNNNNNNNNN` holding
  `TOPIC:name` for a literal pattern, `/kafka-acl-extended-changes/acl_changes_NNNNNNNNNN` holding
  {"version":1,"resourceType":"TOPIC","name":"...","patternType":"PREFIXED"} for the others.

Writes are read-modify-write conditional on the znode's version. Every broker keeps an AclCache: all
ACLs read at start, then the children of both notification znodes watched; each new notification makes
the broker re-read the pattern it names, so an ACL written through one broker applies on all. The
embedded single-node store serves the same interface, so the same code runs there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable

from odradek.aio import TaskSet
from odradek.cluster import znodes as zn
from odradek.cluster.store import (
    BadVersionError,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    StoreError,
    WatchEvent,
    to_json,
)
from odradek.security.acl import (
    RESOURCE_NAMES,
    AccessControlEntry,
    AclBinding,
    AclTable,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_enum,
)

log = logging.getLogger("odradek.authorizer")

ACL_PATH = "/kafka-acl"
EXTENDED_PATH = "/kafka-acl-extended"
LITERAL_CHANGES = "/kafka-acl-changes"
EXTENDED_CHANGES = "/kafka-acl-extended-changes"
CHANGE_PREFIX = "acl_changes_"
CHANGE_EXPIRATION_MS = 15 * 60 * 1000  # as Kafka's ZkNodeChangeNotificationListener
ROOTS = ((ACL_PATH, PatternType.LITERAL), (f"{EXTENDED_PATH}/prefixed", PatternType.PREFIXED))
PATHS = (ACL_PATH, f"{EXTENDED_PATH}/prefixed", LITERAL_CHANGES, EXTENDED_CHANGES)
_TYPES_BY_NAME = {name: rtype for rtype, name in RESOURCE_NAMES.items()}


def pattern_path(p: ResourcePattern) -> str:
    root = ACL_PATH if p.pattern_type == PatternType.LITERAL else f"{EXTENDED_PATH}/{p.pattern_type.name.lower()}"
    return f"{root}/{RESOURCE_NAMES[p.resource_type]}/{p.name}"


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    return to_json({"version": 1, "acls": [e.to_json() for e in sorted(entries)]})


def decode_acls(data: bytes, path: str) -> frozenset[AccessControlEntry]:
    try:
        doc = json.loads(data.decode("utf-8")) if data else {}
        return frozenset(AccessControlEntry.from_json(d) for d in (doc or {}).get("acls", []))
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, AttributeError) as exc:
        raise StoreError(f"malformed ACLs in znode {path}: {exc}") from None


def encode_change(p: ResourcePattern) -> tuple[str, bytes]:
    """The notification znode prefix and content announcing a change of `p`'s ACLs."""
    if p.pattern_type == PatternType.LITERAL:
        return f"{LITERAL_CHANGES}/{CHANGE_PREFIX}", f"{p.resource_type.name}:{p.name}".encode()
    return f"{EXTENDED_CHANGES}/{CHANGE_PREFIX}", to_json(
        {"version": 1, "resourceType": p.resource_type.name, "name": p.name, "patternType": p.pattern_type.name})


def decode_change(changes_path: str, data: bytes) -> ResourcePattern:
    """The pattern a notification names; ValueError when it names none."""
    text = data.decode("utf-8", "replace")
    if changes_path == LITERAL_CHANGES:
        rtype, sep, name = text.partition(":")
        if not sep:
            raise ValueError(f"expected a string in format ResourceType:ResourceName but got {text}")
        return ResourcePattern(ResourceType(parse_enum(ResourceType, rtype)), name, PatternType.LITERAL)
    try:
        doc = json.loads(text)
        return ResourcePattern(ResourceType(parse_enum(ResourceType, str(doc["resourceType"]))), str(doc["name"]),
                               PatternType(parse_enum(PatternType, str(doc["patternType"]))))
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"malformed ACL change event {text!r}") from exc


async def read_pattern(store: MetadataStore, p: ResourcePattern) -> frozenset[AccessControlEntry]:
    path = pattern_path(p)
    try:
        data, _ = await store.get(path)
    except NoNodeError:
        return frozenset()
    return decode_acls(data, path)


async def read_all(store: MetadataStore) -> dict[ResourcePattern, frozenset[AccessControlEntry]]:
    out: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
    for root, ptype in ROOTS:
        try:
            type_dirs = await store.get_children(root)
        except NoNodeError:
            continue
        for type_dir in type_dirs:
            rtype = _TYPES_BY_NAME.get(type_dir)
            if rtype is None:
                log.warning("Ignoring ACLs under %s/%s: unknown resource type", root, type_dir)
                continue
            try:
                names = await store.get_children(f"{root}/{type_dir}")
            except NoNodeError:
                continue
            for name in names:
                pattern = ResourcePattern(rtype, name, ptype)
                try:
                    entries = await read_pattern(store, pattern)
                except StoreError as exc:
                    if "malformed" not in str(exc):
                        raise
                    log.warning("Ignoring %s", exc)
                    continue
                if entries:
                    out[pattern] = entries
    return out


async def update(store: MetadataStore, p: ResourcePattern,
                 change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]]
                 ) -> tuple[frozenset[AccessControlEntry], frozenset[AccessControlEntry]]:
    """Apply `change` to the ACLs of `p` in the store (conditional on the znode's version, retried when
    another writer got there first) and announce it; -> (before, after)."""
    path = pattern_path(p)
    while True:
        try:
            data, stat = await store.get(path)
            old, version = decode_acls(data, path), stat.version
        except NoNodeError:
            old, version = frozenset(), None
        new = change(old)
        if new == old:
            return old, new
        try:
            if version is None:
                await store.create(path, encode_acls(new), makepath=True)
            elif new:
                await store.set(path, encode_acls(new), version)
            else:
                await store.delete(path, version)
        except (BadVersionError, NodeExistsError, NoNodeError):
            continue
        break
    prefix, notice = encode_change(p)
    await store.create(prefix, notice, makepath=True, sequence=True)
    return old, new


async def purge_changes(store: MetadataStore, now_ms: int) -> None:
    """Delete notifications older than CHANGE_EXPIRATION_MS (as Kafka's listener does)."""
    for changes in (LITERAL_CHANGES, EXTENDED_CHANGES):
        try:
            children = await store.get_children(changes)
        except NoNodeError:
            continue
        for child in children:
            if not child.startswith(CHANGE_PREFIX):
                continue
            try:
                stat = await store.exists(f"{changes}/{child}")
                if stat is not None and now_ms - stat.ctime > CHANGE_EXPIRATION_MS:
                    await store.delete(f"{changes}/{child}")
            except NoNodeError:
                continue


def _sequence(child: str) -> int:
    try:
        return int(child[len(CHANGE_PREFIX):])
    except ValueError:
        return -1


class AclCache:
    """This broker's copy of every ACL, kept current from the change notifications."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store
        self.table = AclTable()
        self._seen: dict[str, int] = {LITERAL_CHANGES: -1, EXTENDED_CHANGES: -1}
        self._lock = asyncio.Lock()
        self._tasks = TaskSet(log, "ACL change processing", expected=(StoreError,))

    async def start(self) -> None:
        """Read every ACL and watch the notifications (again after a new ZooKeeper session)."""
        for path in PATHS:
            await self.store.ensure_path(path)
        async with self._lock:
            for changes in self._seen:
                children = await self.store.get_children(changes, watch=self._watcher(changes))
                self._seen[changes] = max((_sequence(c) for c in children if c.startswith(CHANGE_PREFIX)), default=-1)
            self.table = AclTable(await read_all(self.store))
        log.info("Loaded %d ACLs on %d resource patterns", len(self.table), len(self.table.patterns()))

    def close(self) -> None:
        self._tasks.close()

    def _watcher(self, changes: str) -> Callable[[WatchEvent], None]:
        def fire(_ev: WatchEvent) -> None:
            self._tasks.spawn(self._process(changes))
        return fire

    async def _process(self, changes: str) -> None:
        async with self._lock:
            children = await self.store.get_children(changes, watch=self._watcher(changes))
            fresh = sorted((s, c) for c in children if c.startswith(CHANGE_PREFIX)
                           and (s := _sequence(c)) > self._seen[changes])
            for seq, child in fresh:
                self._seen[changes] = seq
                try:
                    data, _ = await self.store.get(f"{changes}/{child}")
                    pattern = decode_change(changes, data)
                except NoNodeError:
                    continue  # purged already: the pattern was re-read when it was newer
                except ValueError as exc:
                    log.warning("Ignoring ACL change notification %s/%s: %s", changes, child, exc)
                    continue
                await self._reload(pattern)

    async def _reload(self, pattern: ResourcePattern) -> None:
        try:
            entries = await read_pattern(self.store, pattern)
        except StoreError as exc:
            if "malformed" not in str(exc):
                raise
            log.warning("Ignoring %s", exc)
            entries = frozenset()
        if entries != self.table.get(pattern):
            log.info("Processing ACL change for %s: %d ACLs", pattern, len(entries))
        self.table.put(pattern, entries)

    async def refresh(self, pattern: ResourcePattern) -> None:
        """Re-read `pattern` now (after a write of our own, so the writer's next request sees it)."""
        async with self._lock:
            await self._reload(pattern)

    async def add(self, bindings: list[AclBinding]) -> None:
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
        for pattern, entries in by_pattern.items():
            await update(self.store, pattern, lambda old, entries=entries: old | entries)  # type: ignore[misc]
            await self.refresh(pattern)
        await purge_changes(self.store, zn.now_ms())

    async def remove(self, bindings: list[AclBinding]) -> None:
        by_pattern: dict[ResourcePattern, set[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, set()).add(b.entry)
        for pattern, entries in by_pattern.items():
            await update(self.store, pattern, lambda old, entries=entries: old - entries)  # type: ignore[misc]
            await self.refresh(pattern)
        await purge_changes(self.store, zn.now_ms())
