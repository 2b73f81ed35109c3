"""Helpers shared by the metadata store tests: an embedded store opened on a file, and running a coroutine."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from odradek.cluster.embedded import EmbeddedStore

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end on a fresh event loop."""
    return asyncio.run(coro)


async def opened_store(path: Path) -> EmbeddedStore:
    """A started EmbeddedStore persisted to `path`."""
    store = EmbeddedStore(path)
    await store.start()
    return store
