"""Metadata store interface shaped like ZooKeeper's primitives: znodes with versions, ephemeral nodes,
conditional writes, children, one-shot watches. ZooKeeper (zk.py) and the in-process store
(embedded.py) implement it; everything above speaks only this interface.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any


class StoreError(Exception):
    """A metadata store operation failed."""


class NoNodeError(StoreError):
    pass


class NodeExistsError(StoreError):
    pass


class BadVersionError(StoreError):
    pass


class NotEmptyError(StoreError):
    pass


class StoreUnavailableError(StoreError):
    """The store cannot be reached (ZooKeeper down or session lost)."""


@dataclass(frozen=True, slots=True)
class Stat:
    version: int
    ephemeral_owner: int = 0
    ctime: int = 0
    mtime: int = 0
    num_children: int = 0


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: str  # CREATED, DELETED, CHANGED, CHILD
    path: str


Watcher = Callable[[WatchEvent], None]


@dataclass(frozen=True, slots=True)
class Create:
    """A `multi` op: create `path` (its parent must exist, or be created by an earlier op)."""

    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class Delete:
    """A `multi` op: delete `path`, which must have no children left by the ops before it."""

    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class Check:
    """A `multi` op that writes nothing: `path` must exist (at `version`, unless -1)."""

    path: str
    version: int = -1


Op = Create | SetData | Delete | Check
OpResult = str | Stat | None  # per op: the created path, the new Stat of a set, None for delete/check

# ZooKeeper refuses requests over jute.maxbuffer (1 MB by default): batches stay well under it
BATCH_MAX_BYTES = 512 * 1024
BATCH_MAX_OPS = 1000
_OP_OVERHEAD = 64


def batches(ops: Sequence[Op], max_bytes: int = BATCH_MAX_BYTES, max_ops: int = BATCH_MAX_OPS) -> Iterator[list[Op]]:
    """`ops` in order, cut into lists small enough for one `multi` each. Each list is atomic on its own,
    the whole is not: for writes that stand alone (one znode per partition, say)."""
    chunk: list[Op] = []
    size = 0
    for op in ops:
        cost = len(op.path) + len(getattr(op, "data", b"")) + _OP_OVERHEAD
        if chunk and (size + cost > max_bytes or len(chunk) >= max_ops):
            yield chunk
            chunk, size = [], 0
        chunk.append(op)
        size += cost
    if chunk:
        yield chunk


class MetadataStore(ABC):
    """Async, ZooKeeper-shaped. Watches are one-shot and called on the broker's event loop."""

    session_id: int = 0

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False,
                     sequence: bool = False) -> str:
        """Create `path`; returns the path created, which with `sequence` is `path` followed by ten digits
        that grow with every child the parent has had (ZooKeeper's sequential nodes)."""

    @abstractmethod
    async def get(self, path: str, watch: Watcher | None = None) -> tuple[bytes, Stat]: ...

    @abstractmethod
    async def set(self, path: str, data: bytes, version: int = -1) -> Stat: ...

    @abstractmethod
    async def delete(self, path: str, version: int = -1, recursive: bool = False) -> None: ...

    @abstractmethod
    async def exists(self, path: str, watch: Watcher | None = None) -> Stat | None: ...

    @abstractmethod
    async def get_children(self, path: str, watch: Watcher | None = None) -> list[str]: ...

    @abstractmethod
    async def multi(self, ops: Sequence[Op]) -> list[OpResult]:
        """Apply `ops` atomically, in order (ZooKeeper's multi): all of them, or none and the error of the
        first that failed (NoNodeError, NodeExistsError, BadVersionError, NotEmptyError). Watches fire
        as for the single operations."""

    async def get_many(self, paths: Sequence[str], watch: Callable[[str], Watcher] | None = None
                       ) -> list[tuple[bytes, Stat] | None]:
        """The data of each path (None where there is no such znode), read without waiting for one answer
        before asking the next; `watch(path)`, when given, is left on each path as by exists() (it fires
        when the znode is created, changed or deleted)."""
        out: list[tuple[bytes, Stat] | None] = []
        for path in paths:
            stat = await self.exists(path, watch(path) if watch is not None else None)
            try:
                out.append(await self.get(path) if stat is not None else None)
            except NoNodeError:
                out.append(None)
        return out

    async def ensure_path(self, path: str) -> None:
        if await self.exists(path) is None:
            try:
                await self.create(path, b"", makepath=True)
            except NodeExistsError:
                pass

    async def get_json(self, path: str, watch: Watcher | None = None) -> tuple[Any, Stat]:
        data, stat = await self.get(path, watch)
        try:
            return json.loads(data.decode("utf-8")) if data else None, stat
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise StoreError(f"malformed JSON in znode {path}: {exc}") from None


def to_json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()
