"""In-process metadata store for the single-node default: a znode tree in memory, persisted to one JSON
file in the first log dir (ephemeral nodes are not persisted, as they die with their session)."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from odradek.cluster.store import (
    BadVersionError,
    MetadataStore,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Stat,
    Watcher,
    WatchEvent,
)
from odradek.fsutil import atomic_write

STORE_FILE = "odradek-metadata.json"


@dataclass
class _Node:
    data: bytes
    version: int = 0
    ephemeral: bool = False
    ctime: int = 0
    mtime: int = 0
    children: set[str] = field(default_factory=set)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _check(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise ValueError(f"invalid znode path {path!r}")


class EmbeddedStore(MetadataStore):
    def __init__(self, file: Path | None) -> None:
        self.file = file
        self.session_id = 1
        self._nodes: dict[str, _Node] = {"/": _Node(b"")}
        self._data_watches: dict[str, list[Watcher]] = {}
        self._child_watches: dict[str, list[Watcher]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self.file is not None and self.file.exists():
            raw = json.loads(self.file.read_text())
            for path, entry in sorted(raw.items()):
                node = _Node(base64.b64decode(entry["data"]), entry["version"], False, entry["ctime"], entry["mtime"])
                self._nodes[path] = node
                if path != "/":
                    self._nodes[_parent(path)].children.add(path.rsplit("/", 1)[1])

    async def close(self) -> None:
        for path in [p for p, n in self._nodes.items() if n.ephemeral]:
            self._remove(path)
        self._persist()

    def _persist(self) -> None:
        if self.file is None:
            return
        out = {
            path: {"data": base64.b64encode(n.data).decode(), "version": n.version, "ctime": n.ctime, "mtime": n.mtime}
            for path, n in self._nodes.items()
            if not n.ephemeral and path != "/"
        }
        atomic_write(self.file, json.dumps(out))

    def _fire(self, table: dict[str, list[Watcher]], path: str, kind: str, event_path: str | None = None) -> None:
        watchers = table.pop(path, None)
        if not watchers:
            return
        ev = WatchEvent(kind, event_path or path)
        assert self._loop is not None
        for w in watchers:
            self._loop.call_soon(w, ev)

    def _stat(self, n: _Node) -> Stat:
        return Stat(n.version, self.session_id if n.ephemeral else 0, n.ctime, n.mtime, len(n.children))

    async def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str:
        _check(path)
        if path in self._nodes:
            raise NodeExistsError(path)
        parent = _parent(path)
        if parent not in self._nodes:
            if not makepath:
                raise NoNodeError(parent)
            await self.create(parent, b"", makepath=True)
        now = int(time.time() * 1000)
        self._nodes[path] = _Node(bytes(data), 0, ephemeral, now, now)
        self._nodes[parent].children.add(path.rsplit("/", 1)[1])
        if not ephemeral:
            self._persist()
        self._fire(self._data_watches, path, "CREATED")
        self._fire(self._child_watches, parent, "CHILD")
        return path

    async def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]:
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if watch is not None:
            self._data_watches.setdefault(path, []).append(watch)
        return n.data, self._stat(n)

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if version != -1 and version != n.version:
            raise BadVersionError(f"{path}: expected version {version}, found {n.version}")
        n.data = bytes(data)
        n.version += 1
        n.mtime = int(time.time() * 1000)
        if not n.ephemeral:
            self._persist()
        self._fire(self._data_watches, path, "CHANGED")
        return self._stat(n)

    def _remove(self, path: str) -> None:
        n = self._nodes.pop(path)
        for child in list(n.children):
            self._remove(f"{path}/{child}" if path != "/" else f"/{child}")
        parent = _parent(path)
        if parent in self._nodes:
            self._nodes[parent].children.discard(path.rsplit("/", 1)[1])
        self._fire(self._data_watches, path, "DELETED")
        self._fire(self._child_watches, path, "DELETED")
        self._fire(self._child_watches, parent, "CHILD")

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if version != -1 and version != n.version:
            raise BadVersionError(f"{path}: expected version {version}, found {n.version}")
        if n.children and not recursive:
            raise NotEmptyError(path)
        self._remove(path)
        self._persist()

    async def exists(self, path: str, watch: Watcher | None = None) -> Stat | None:
        if watch is not None:
            self._data_watches.setdefault(path, []).append(watch)
        n = self._nodes.get(path)
        return self._stat(n) if n is not None else None

    async def get_children(self, path: str, watch: Watcher | None = None) -> list[str]:
        n = self._nodes.get(path)
        if n is None:
            raise NoNodeError(path)
        if watch is not None:
            self._child_watches.setdefault(path, []).append(watch)
        return sorted(n.children)
