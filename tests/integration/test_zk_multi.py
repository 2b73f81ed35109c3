"""`multi` and `get_many` of the ZooKeeper store on a real ZooKeeper: one transaction, all or nothing,
the store's errors naming the failing op; a batch of thousands of znodes in chunks under jute.maxbuffer."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable

import pytest

from odradek.cluster.store import Check, Create, Delete, SetData, Stat, WatchEvent, batches
from odradek.cluster.zk import ZooKeeperStore
from tests.store_helpers import FAILING_OPS
from tests.zkharness import ZooKeeperChroot


def with_store(zk: ZooKeeperChroot, body: Callable[[ZooKeeperStore], Awaitable[None]]) -> None:
    async def go() -> None:
        store = ZooKeeperStore(f"{zk.connect_string}/multi-{uuid.uuid4().hex[:8]}", 10000, 15000)
        await store.start()
        try:
            await body(store)
        finally:
            await store.close()

    asyncio.run(go())


def test_multi_commits_all_ops(zk_standalone: ZooKeeperChroot) -> None:
    async def body(s: ZooKeeperStore) -> None:
        await s.create("/v", b"0")
        await s.create("/old", b"")
        results = await s.multi([Create("/a", b"1"), Create("/a/b", b"2"), SetData("/v", b"1", version=0),
                                 Delete("/old"), Check("/a/b", version=0)])
        assert results[:2] == ["/a", "/a/b"]
        assert isinstance(results[2], Stat) and results[2].version == 1
        assert results[3:] == [None, None]
        assert (await s.get("/a/b"))[0] == b"2"
        assert await s.exists("/old") is None

    with_store(zk_standalone, body)


@pytest.mark.parametrize(("bad", "error"), FAILING_OPS)
def test_a_failing_op_rolls_back_the_rest(zk_standalone: ZooKeeperChroot, bad: object,
                                          error: type[Exception]) -> None:
    async def body(s: ZooKeeperStore) -> None:
        await s.create("/v", b"0")
        await s.create("/p/c", b"", makepath=True)
        with pytest.raises(error, match=bad.path):  # type: ignore[attr-defined]
            await s.multi([Create("/new", b"n"), SetData("/v", b"1"), bad])  # type: ignore[list-item]
        assert await s.exists("/new") is None
        data, stat = await s.get("/v")
        assert (data, stat.version) == (b"0", 0)

    with_store(zk_standalone, body)


def test_thousands_of_znodes_in_batches_and_read_back_pipelined(zk_standalone: ZooKeeperChroot) -> None:
    async def body(s: ZooKeeperStore) -> None:
        await s.create("/t", b"")
        paths = [f"/t/{i}" for i in range(5000)]
        ops = [Create(p, b"x" * 300) for p in paths]
        chunks = list(batches(ops))
        assert len(chunks) > 1
        for chunk in chunks:
            await s.multi(chunk)
        assert len(await s.get_children("/t")) == 5000
        fired: list[WatchEvent] = []
        got = await s.get_many([*paths[:100], "/t/missing"], watch=lambda _p: fired.append)
        assert all(g is not None and g[0] == b"x" * 300 for g in got[:100]) and got[100] is None
        await s.create("/t/missing", b"")
        await s.set("/t/7", b"y")
        for _ in range(100):
            if len(fired) == 2:
                break
            await asyncio.sleep(0.05)
        assert sorted((e.type, e.path) for e in fired) == [("CHANGED", "/t/7"), ("CREATED", "/t/missing")]

    with_store(zk_standalone, body)
