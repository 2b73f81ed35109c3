"""Watches of the ZooKeeper store survive a dropped connection: kazoo forgets every watch when its
connection breaks, even while the session lives on, so the store re-fires them once connected again
and their owners re-read (a controller that lost its /brokers/topics watch this way would never see a
new topic)."""

from __future__ import annotations

import asyncio
import uuid

from kazoo.client import KazooClient

from odradek.cluster.store import WatchEvent
from odradek.cluster.zk import ZooKeeperStore
from tests.zkharness import ZooKeeperEnsemble


def test_watches_fire_after_the_server_restarts(zk_own_standalone: ZooKeeperEnsemble) -> None:
    chroot = f"/watches-{uuid.uuid4().hex[:8]}"

    async def go() -> list[WatchEvent]:
        # a session timeout well past a server restart, so the session (and with it the watches) lives on
        store = ZooKeeperStore(zk_own_standalone.connect_string + chroot, 30000, 30000)
        await store.start()
        try:
            await store.create("/topics", b"")
            await store.create("/config", b"{}")
            events: asyncio.Queue[WatchEvent] = asyncio.Queue()
            assert await store.get_children("/topics", watch=events.put_nowait) == []
            await store.get("/config", watch=events.put_nowait)
            assert await store.exists("/later", watch=events.put_nowait) is None
            session = store.session_id

            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, zk_own_standalone.stop_node, 0)
            await loop.run_in_executor(None, zk_own_standalone.start_node, 0)
            got = [await asyncio.wait_for(events.get(), 60) for _ in range(3)]
            assert store.client.client_id is not None and store.client.client_id[0] == session  # not a new session

            # the owner re-reads and watches anew: the next real change is seen
            assert await store.get_children("/topics", watch=events.put_nowait) == []
            other = KazooClient(hosts=zk_own_standalone.connect_string + chroot, timeout=10)
            other.start(timeout=15)
            try:
                other.create("/topics/t1", b"")
            finally:
                other.stop()
                other.close()
            got.append(await asyncio.wait_for(events.get(), 60))
            return got
        finally:
            await store.close()

    got = asyncio.run(go())
    assert sorted((e.type, e.path) for e in got[:3]) == [
        ("CHANGED", "/config"), ("CHANGED", "/later"), ("CHILD", "/topics")]
    assert (got[3].type, got[3].path) == ("CHILD", "/topics")
