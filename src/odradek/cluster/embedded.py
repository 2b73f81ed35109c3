"""In-process metadata store for the single-node default: a znode tree in memory, persisted node by node
to an SQLite database in the first log dir (ephemeral nodes are not persisted: they die with their
session). A write costs what it changes, whatever the tree's size, and reaches the disk before the call
returns; the disk work runs on one writer thread, in order, so the event loop never waits for an fsync.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import sqlite3
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from odradek.cluster import store as st

STORE_FILE = "odradek-metadata.db"
LEGACY_JSON_FILE = "odradek-metadata.json"  # the whole-tree JSON file of earlier versions, imported once

log = logging.getLogger("odradek.store")

# (sql, parameters) executed together in one transaction
Write = tuple[str, tuple[object, ...]]


@dataclass
class _Change:
    """What one operation changed: rows to write, then watch events to fire."""

    writes: list[Write] = field(default_factory=list)
    events: list[tuple[dict[str, list[st.Watcher]], str, str]] = field(default_factory=list)


@dataclass
class _Node:
    data: bytes
    version: int = 0
    ephemeral: bool = False
    ctime: int = 0
    mtime: int = 0
    children: set[str] = field(default_factory=set)
    cversion: int = 0  # children created and deleted so far (not persisted; see _next_sequence)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _check(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise ValueError(f"invalid znode path {path!r}")


class _Preview:
    """The tree as a `multi` would leave it, op by op, without touching it: so that every op is checked
    before any is applied."""

    def __init__(self, nodes: dict[str, _Node]) -> None:
        self.nodes = nodes
        self.present: dict[str, bool] = {}
        self.versions: dict[str, int] = {}
        self.child_delta: dict[str, int] = {}

    def has(self, path: str) -> bool:
        return self.present.get(path, path in self.nodes)

    def version(self, path: str) -> int:
        n = self.nodes.get(path)
        return self.versions.get(path, n.version if n is not None else 0)

    def children(self, path: str) -> int:
        n = self.nodes.get(path)
        return (len(n.children) if n is not None else 0) + self.child_delta.get(path, 0)

    def _expect(self, path: str, version: int) -> None:
        if not self.has(path):
            raise st.NoNodeError(path)
        if version != -1 and version != self.version(path):
            raise st.BadVersionError(f"{path}: expected version {version}, found {self.version(path)}")

    def apply(self, op: st.Op) -> None:
        _check(op.path)
        if isinstance(op, st.Create):
            if self.has(op.path):
                raise st.NodeExistsError(op.path)
            parent = _parent(op.path)
            if not self.has(parent):
                raise st.NoNodeError(parent)
            self.present[op.path] = True
            self.versions[op.path] = 0
            self.child_delta[parent] = self.child_delta.get(parent, 0) + 1
        elif isinstance(op, st.SetData):
            self._expect(op.path, op.version)
            self.versions[op.path] = self.version(op.path) + 1
        elif isinstance(op, st.Delete):
            self._expect(op.path, op.version)
            if self.children(op.path):
                raise st.NotEmptyError(op.path)
            self.present[op.path] = False
            parent = _parent(op.path)
            self.child_delta[parent] = self.child_delta.get(parent, 0) - 1
        else:
            self._expect(op.path, op.version)


class _Database:
    """The SQLite side: opened, written and closed on the store's one writer thread only."""

    def __init__(self, file: Path) -> None:
        self.file = file
        self.db: sqlite3.Connection | None = None

    def open(self) -> list[tuple[str, bytes, int, int, int]]:
        self.db = sqlite3.connect(self.file, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS znodes (path TEXT PRIMARY KEY, data BLOB NOT NULL,"
            " version INTEGER NOT NULL, ctime INTEGER NOT NULL, mtime INTEGER NOT NULL)"
        )
        legacy = self.file.with_name(LEGACY_JSON_FILE)
        if legacy.exists():
            self._import_legacy(legacy)
        return self.db.execute("SELECT path, data, version, ctime, mtime FROM znodes").fetchall()

    def _import_legacy(self, legacy: Path) -> None:
        assert self.db is not None
        raw = json.loads(legacy.read_text())
        rows = [(p, base64.b64decode(e["data"]), e["version"], e["ctime"], e["mtime"]) for p, e in raw.items()]
        with self.db:
            self.db.execute("BEGIN")
            self.db.executemany("INSERT OR REPLACE INTO znodes VALUES (?, ?, ?, ?, ?)", rows)
        legacy.rename(legacy.with_suffix(".json.imported"))
        log.info("Imported %d znodes from %s into %s", len(rows), legacy, self.file)

    def apply(self, writes: list[Write]) -> None:
        assert self.db is not None
        with self.db:
            self.db.execute("BEGIN")
            for sql, params in writes:
                self.db.execute(sql, params)

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


class EmbeddedStore(st.MetadataStore):
    def __init__(self, file: Path | None) -> None:
        self.session_id = 1
        self._nodes: dict[str, _Node] = {"/": _Node(b"")}
        self._data_watches: dict[str, list[st.Watcher]] = {}
        self._child_watches: dict[str, list[st.Watcher]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._db = _Database(file) if file is not None else None
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="metadata-store") if file is not None else None

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._db is None:
            return
        rows = await self._loop.run_in_executor(self._writer, self._db.open)
        for path, data, version, ctime, mtime in sorted(rows):
            self._nodes[path] = _Node(bytes(data), version, False, ctime, mtime)
            if path != "/":
                self._nodes[_parent(path)].children.add(path.rsplit("/", 1)[1])

    async def close(self) -> None:
        for path in [p for p, n in self._nodes.items() if n.ephemeral]:
            if path in self._nodes:  # not already gone with an ephemeral parent
                self._remove(path, _Change())
        if self._db is not None and self._writer is not None:
            await asyncio.get_running_loop().run_in_executor(self._writer, self._db.close)
            self._writer.shutdown(wait=True)

    async def _commit(self, change: _Change) -> None:
        """Write the change to disk, then tell the watchers (they never act on what a crash could undo).

        The change is already in memory, so it is committed even if the caller is cancelled (a request
        whose client disconnected): otherwise the node would exist without its row or its watch events,
        and the metadata cache and the controller would never learn of it (a `__consumer_offsets` created
        for a FindCoordinator the client dropped stayed unknown, so no group ever found its coordinator)."""
        assert self._loop is not None
        if self._db is not None and change.writes:
            written = self._loop.run_in_executor(self._writer, self._db.apply, change.writes)
            written.add_done_callback(lambda f: self._fire(change) if not f.cancelled() and not f.exception()
                                      else None)
            await asyncio.shield(written)
        else:
            self._fire(change)

    def _fire(self, change: _Change) -> None:
        assert self._loop is not None
        for table, path, kind in change.events:
            for w in table.pop(path, ()):
                self._loop.call_soon(w, st.WatchEvent(kind, path))

    def _stat(self, n: _Node) -> st.Stat:
        return st.Stat(n.version, self.session_id if n.ephemeral else 0, n.ctime, n.mtime, len(n.children))

    def _create(self, path: str, data: bytes, ephemeral: bool, makepath: bool, change: _Change) -> None:
        _check(path)
        if path in self._nodes:
            raise st.NodeExistsError(path)
        parent = _parent(path)
        if parent not in self._nodes:
            if not makepath:
                raise st.NoNodeError(parent)
            self._create(parent, b"", False, True, change)
        now = int(time.time() * 1000)
        self._nodes[path] = _Node(bytes(data), 0, ephemeral, now, now)
        self._nodes[parent].children.add(path.rsplit("/", 1)[1])
        self._nodes[parent].cversion += 1
        if not ephemeral:
            change.writes.append(("INSERT OR REPLACE INTO znodes VALUES (?, ?, 0, ?, ?)", (path, bytes(data), now, now)))
        change.events += [(self._data_watches, path, "CREATED"), (self._child_watches, parent, "CHILD")]

    async def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False,
                     sequence: bool = False) -> str:
        change = _Change()
        if sequence:
            parent = self._nodes.get(_parent(path))
            path = f"{path}{self._next_sequence(parent, path.rsplit('/', 1)[1]) if parent else 0:010d}"
        self._create(path, data, ephemeral, makepath, change)
        await self._commit(change)
        return path

    @staticmethod
    def _next_sequence(parent: _Node, prefix: str) -> int:
        """ZooKeeper numbers a sequential node with its parent's child version. Ours is not persisted, so
        after a restart the number also stays above every sequential child left, and never goes back."""
        taken = [int(c[len(prefix):]) for c in parent.children if c.startswith(prefix) and c[len(prefix):].isdigit()]
        return max(parent.cversion, max(taken, default=-1) + 1)

    async def get(self, path: str, watch: st.Watcher | None = None) -> tuple[bytes, st.Stat]:
        n = self._nodes.get(path)
        if n is None:
            raise st.NoNodeError(path)
        if watch is not None:
            self._data_watches.setdefault(path, []).append(watch)
        return n.data, self._stat(n)

    def _set(self, path: str, data: bytes, version: int, change: _Change) -> st.Stat:
        n = self._nodes.get(path)
        if n is None:
            raise st.NoNodeError(path)
        if version != -1 and version != n.version:
            raise st.BadVersionError(f"{path}: expected version {version}, found {n.version}")
        n.data = bytes(data)
        n.version += 1
        n.mtime = int(time.time() * 1000)
        change.events.append((self._data_watches, path, "CHANGED"))
        if not n.ephemeral:
            change.writes.append(
                ("UPDATE znodes SET data = ?, version = ?, mtime = ? WHERE path = ?", (n.data, n.version, n.mtime, path))
            )
        return self._stat(n)

    async def set(self, path: str, data: bytes, version: int = -1) -> st.Stat:
        change = _Change()
        stat = self._set(path, data, version, change)
        await self._commit(change)
        return stat

    def _remove(self, path: str, change: _Change) -> None:
        n = self._nodes.pop(path)
        for child in list(n.children):
            self._remove(f"{path}/{child}" if path != "/" else f"/{child}", change)
        parent = _parent(path)
        if parent in self._nodes:
            self._nodes[parent].children.discard(path.rsplit("/", 1)[1])
            self._nodes[parent].cversion += 1
        if not n.ephemeral:
            change.writes.append(("DELETE FROM znodes WHERE path = ?", (path,)))
        change.events += [
            (self._data_watches, path, "DELETED"),
            (self._child_watches, path, "DELETED"),
            (self._child_watches, parent, "CHILD"),
        ]

    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None:
        n = self._nodes.get(path)
        if n is None:
            raise st.NoNodeError(path)
        if version != -1 and version != n.version:
            raise st.BadVersionError(f"{path}: expected version {version}, found {n.version}")
        if n.children and not recursive:
            raise st.NotEmptyError(path)
        change = _Change()
        self._remove(path, change)
        await self._commit(change)

    async def multi(self, ops: Sequence[st.Op]) -> list[st.OpResult]:
        preview = _Preview(self._nodes)
        for op in ops:
            preview.apply(op)
        change = _Change()
        results: list[st.OpResult] = []
        for op in ops:
            if isinstance(op, st.Create):
                self._create(op.path, op.data, op.ephemeral, False, change)
                results.append(op.path)
            elif isinstance(op, st.SetData):
                results.append(self._set(op.path, op.data, op.version, change))
            elif isinstance(op, st.Delete):
                self._remove(op.path, change)
                results.append(None)
            else:
                results.append(None)
        await self._commit(change)
        return results

    async def exists(self, path: str, watch: st.Watcher | None = None) -> st.Stat | None:
        if watch is not None:
            self._data_watches.setdefault(path, []).append(watch)
        n = self._nodes.get(path)
        return self._stat(n) if n is not None else None

    async def get_children(self, path: str, watch: st.Watcher | None = None) -> list[str]:
        n = self._nodes.get(path)
        if n is None:
            raise st.NoNodeError(path)
        if watch is not None:
            self._child_watches.setdefault(path, []).append(watch)
        return sorted(n.children)
