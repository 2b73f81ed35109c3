"""Metadata store interface shaped like ZooKeeper's primitives: znodes with versions, ephemeral nodes,
conditional writes, children, one-shot watches. ZooKeeper (zk.py) and the in-process store
(embedded.py) implement it; everything above speaks only this interface.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
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


class MetadataStore(ABC):
    """Async, ZooKeeper-shaped. Watches are one-shot and called on the broker's event loop."""

    session_id: int = 0

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def create(self, path: str, data: bytes = b"", ephemeral: bool = False, makepath: bool = False) -> str: ...

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
