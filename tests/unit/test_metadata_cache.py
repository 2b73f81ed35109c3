"""The metadata cache against a real (embedded) store: overlapping reloads of the same znode, as watches
firing during a slow read cause, never let an older read overwrite a newer one."""

from __future__ import annotations

import asyncio
from typing import Any

from odradek.cluster import znodes as zn
from odradek.cluster.embedded import EmbeddedStore
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.store import to_json


class SlowFirstRead(EmbeddedStore):
    """Holds the first read of one path until released, so a later reload overtakes it."""

    def __init__(self, path: str) -> None:
        super().__init__(None)
        self.slow_path = path
        self.release = asyncio.Event()
        self.held = asyncio.Event()
        self._armed = False

    def arm(self) -> None:
        self._armed = True

    async def get_json(self, path: str, watch: Any = None) -> Any:
        result = await super().get_json(path, watch)
        if self._armed and path == self.slow_path:
            self._armed = False
            self.held.set()
            await self.release.wait()
        return result


async def _register(store: EmbeddedStore, bid: int) -> None:
    info = zn.BrokerInfo(bid, f"broker{bid}.example", 9092 + bid, None, "PLAINTEXT")
    await store.create(zn.broker_path(bid), to_json(info.to_json()), ephemeral=True)


def test_a_slow_broker_list_read_does_not_undo_a_newer_one() -> None:
    async def main() -> None:
        store = SlowFirstRead(zn.broker_path(0))
        await store.start()
        for path in zn.PERSISTENT_PATHS:
            await store.ensure_path(path)
        await _register(store, 0)
        cache = MetadataCache(store)
        await cache.start()
        try:
            assert set(cache.brokers) == {0}
            store.arm()  # the reload that broker 1's registration triggers stalls reading broker 0 ...
            await _register(store, 1)
            await asyncio.wait_for(store.held.wait(), 10)
            await _register(store, 2)  # ... while broker 2's registration triggers a second one
            assert await cache.wait_for(lambda: set(cache.brokers) == {0, 1, 2}, 10)
            store.release.set()  # the stalled reload ({0, 1}) finishes last
            for _ in range(20):
                await asyncio.sleep(0)
            await asyncio.sleep(0.05)
            assert set(cache.brokers) == {0, 1, 2}
        finally:
            cache.close()
            await store.close()

    asyncio.run(main())
