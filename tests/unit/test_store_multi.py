"""`multi` on the embedded store: all ops or none, checked in order against what earlier ops did, one
SQLite transaction, watches fired as for single writes; and `batches`, which cuts big writes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from odradek.cluster.embedded import STORE_FILE, EmbeddedStore
from odradek.cluster.store import Check, Create, Delete, SetData, Stat, WatchEvent, batches
from tests.store_helpers import FAILING_OPS, opened_store, run, run_on_store


def test_multi_applies_all_ops_in_order_and_persists_them(tmp_path: Path) -> None:
    file = tmp_path / STORE_FILE

    async def first() -> None:
        s = await opened_store(file)
        await s.create("/old", b"x")
        await s.create("/v", b"0")
        results = await s.multi([
            Create("/a", b"1"), Create("/a/b", b"2"),  # a parent created by an earlier op
            SetData("/v", b"1", version=0), SetData("/v", b"2", version=1),
            Delete("/old"), Create("/old", b"again"),
            Check("/a/b", version=0),
        ])
        assert results[0] == "/a" and results[1] == "/a/b"
        assert isinstance(results[3], Stat) and results[3].version == 2
        assert results[4:] == [None, "/old", None]
        await s.close()

    async def second() -> None:
        s = await opened_store(file)
        assert (await s.get("/a/b"))[0] == b"2"
        data, stat = await s.get("/v")
        assert (data, stat.version) == (b"2", 2)
        assert (await s.get("/old"))[0] == b"again"
        await s.close()

    run(first())
    run(second())


@pytest.mark.parametrize(("bad", "error"), FAILING_OPS)
def test_a_failing_op_leaves_everything_as_it_was(tmp_path: Path, bad: object, error: type[Exception]) -> None:
    file = tmp_path / STORE_FILE

    async def go() -> None:
        s = await opened_store(file)
        await s.create("/v", b"0")
        await s.create("/p", b"")
        await s.create("/p/c", b"")
        fired: list[WatchEvent] = []
        await s.exists("/new", watch=fired.append)
        with pytest.raises(error):
            await s.multi([Create("/new", b"n"), SetData("/v", b"1"), bad])  # type: ignore[list-item]
        assert await s.exists("/new") is None
        data, stat = await s.get("/v")
        assert (data, stat.version) == (b"0", 0)
        assert await s.get_children("/p") == ["c"]
        await asyncio.sleep(0)
        assert fired == []
        await s.close()
        s = await opened_store(file)  # nor did anything reach the disk
        assert await s.exists("/new") is None
        await s.close()

    run(go())


def test_delete_of_a_parent_after_its_last_child_and_watches(tmp_path: Path) -> None:
    async def body(s: EmbeddedStore) -> None:
        await s.create("/p", b"")
        await s.create("/p/c", b"")
        fired: list[WatchEvent] = []
        await s.get("/p/c", watch=fired.append)
        await s.get_children("/", watch=fired.append)
        await s.multi([Delete("/p/c"), Delete("/p")])
        await asyncio.sleep(0)
        assert await s.exists("/p") is None
        assert sorted((e.type, e.path) for e in fired) == [("CHILD", "/"), ("DELETED", "/p/c")]

    run_on_store(tmp_path / STORE_FILE, body)


def test_get_many_reads_and_watches_missing_paths(tmp_path: Path) -> None:
    async def body(s: EmbeddedStore) -> None:
        await s.create("/a", b"1")
        fired: list[WatchEvent] = []
        got = await s.get_many(["/a", "/b"], watch=lambda _p: fired.append)
        assert got[0] is not None and got[0][0] == b"1" and got[1] is None
        await s.create("/b", b"2")
        await s.set("/a", b"3")
        await asyncio.sleep(0)
        assert sorted((e.type, e.path) for e in fired) == [("CHANGED", "/a"), ("CREATED", "/b")]

    run_on_store(tmp_path / STORE_FILE, body)


def test_batches_keep_order_and_limits() -> None:
    ops = [Create(f"/t/{i}", b"x" * 100) for i in range(2500)]
    chunks = list(batches(ops, max_bytes=64 * 1024, max_ops=1000))
    assert [op for c in chunks for op in c] == ops
    assert all(len(c) <= 1000 for c in chunks)
    assert all(sum(len(o.path) + len(o.data) + 64 for o in c) <= 64 * 1024 for c in chunks)  # type: ignore[union-attr]
    assert list(batches([])) == []
    big = [SetData("/big", b"x" * 100_000)] * 3
    assert [len(c) for c in batches(big, max_bytes=150_000)] == [1, 1, 1]
