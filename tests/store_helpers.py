"""Helpers shared by the metadata store tests: an embedded store opened on a file, running a coroutine, and
the ops that must fail inside a multi (for every backend)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from odradek.cluster.embedded import EmbeddedStore
from odradek.cluster.store import (
    BadVersionError,
    Check,
    Create,
    Delete,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    Op,
    SetData,
)

T = TypeVar("T")


# Ops that fail inside a multi, with the error each raises, over a store holding /v (version 0) and /p/c:
# the contract every store backend keeps (the embedded store's and ZooKeeper's tests both run it)
FAILING_OPS: list[tuple[Op, type[Exception]]] = [
    (Create("/x/y", b""), NoNodeError),
    (Create("/v", b""), NodeExistsError),
    (SetData("/v", b"", version=7), BadVersionError),
    (SetData("/nope", b""), NoNodeError),
    (Delete("/p"), NotEmptyError),
    (Check("/v", version=3), BadVersionError),
    (Check("/nope"), NoNodeError),
]


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end on a fresh event loop."""
    return asyncio.run(coro)


def run_on_store(path: Path, body: Callable[[EmbeddedStore], Awaitable[None]]) -> None:
    """Run `body` on an EmbeddedStore opened on `path`, closed afterwards whatever happens."""
    async def go() -> None:
        store = await opened_store(path)
        try:
            await body(store)
        finally:
            await store.close()

    run(go())


async def opened_store(path: Path) -> EmbeddedStore:
    """A started EmbeddedStore persisted to `path`."""
    store = EmbeddedStore(path)
    await store.start()
    return store
