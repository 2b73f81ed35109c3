"""The single-node metadata store: ZooKeeper's semantics, persisted node by node to SQLite."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from pathlib import Path

import pytest

from odradek.cluster.embedded import LEGACY_JSON_FILE, STORE_FILE
from odradek.cluster.store import BadVersionError, NodeExistsError, NoNodeError, NotEmptyError, WatchEvent
from tests.store_helpers import opened_store, run


def test_nodes_survive_a_restart_and_ephemerals_do_not(tmp_path: Path) -> None:
    file = tmp_path / STORE_FILE

    async def first() -> None:
        s = await opened_store(file)
        await s.create("/brokers/topics/t", b'{"partitions":{}}', makepath=True)
        await s.set("/brokers/topics/t", b"v1", version=0)
        await s.create("/brokers/ids", b"")
        await s.create("/brokers/ids/0", b"me", ephemeral=True)
        await s.create("/gone", b"x")
        await s.delete("/gone")
        await s.close()

    async def second() -> None:
        s = await opened_store(file)
        data, stat = await s.get("/brokers/topics/t")
        assert (data, stat.version) == (b"v1", 1)
        assert await s.get_children("/brokers") == ["ids", "topics"]
        assert await s.exists("/brokers/ids/0") is None
        assert await s.exists("/gone") is None
        await s.close()

    run(first())
    run(second())


def test_zookeeper_errors(tmp_path: Path) -> None:
    async def go() -> None:
        s = await opened_store(tmp_path / STORE_FILE)
        await s.create("/a", b"1")
        with pytest.raises(NodeExistsError):
            await s.create("/a", b"2")
        with pytest.raises(NoNodeError):
            await s.create("/x/y", b"")
        with pytest.raises(BadVersionError):
            await s.set("/a", b"3", version=7)
        await s.create("/a/b", b"")
        with pytest.raises(NotEmptyError):
            await s.delete("/a")
        await s.delete("/a", recursive=True)
        assert await s.exists("/a/b") is None
        await s.close()

    run(go())


def test_watchers_fire_after_the_change_is_on_disk(tmp_path: Path) -> None:
    file = tmp_path / STORE_FILE

    async def go() -> list[tuple[str, bool]]:
        s = await opened_store(file)
        seen: list[tuple[str, bool]] = []

        def on_event(ev: WatchEvent) -> None:
            # a second connection reads what is committed
            import sqlite3

            with sqlite3.connect(file) as db:
                row = db.execute("SELECT data FROM znodes WHERE path = ?", (ev.path,)).fetchone()
            seen.append((ev.type, row is not None and row[0] == b"new"))

        await s.exists("/w", watch=on_event)
        await s.create("/w", b"new")
        await asyncio.sleep(0)
        await s.close()
        return seen

    assert run(go()) == [("CREATED", True)]


def test_a_cancelled_writer_still_commits_and_fires_watches(tmp_path: Path) -> None:
    """A request cancelled while its change is being written (its client disconnected) must not leave the
    change in memory without its row or its watch events: a `__consumer_offsets` created for a dropped
    FindCoordinator stayed unknown to the metadata cache, so no group ever found its coordinator."""
    file = tmp_path / STORE_FILE

    async def go() -> tuple[list[str], list[str], list[str]]:
        s = await opened_store(file)
        fired: list[str] = []
        children = await s.get_children("/", watch=lambda ev: fired.append(f"{ev.type} {ev.path}"))
        await s.exists("/topic", watch=lambda ev: fired.append(f"{ev.type} {ev.path}"))
        writer = asyncio.ensure_future(s.create("/topic", b"new"))
        await asyncio.sleep(0)  # the node is in memory, its row on the way to disk
        writer.cancel()
        with pytest.raises(asyncio.CancelledError):
            await writer
        for _ in range(100):
            if len(fired) == 2:
                break
            await asyncio.sleep(0.01)
        await s.close()
        s2 = await opened_store(file)
        after = await s2.get_children("/")
        await s2.close()
        return children, sorted(fired), after

    before, fired, after = run(go())
    assert "topic" not in before
    assert fired == ["CHILD /", "CREATED /topic"]
    assert "topic" in after


def test_legacy_json_file_is_imported_once(tmp_path: Path) -> None:
    legacy = tmp_path / LEGACY_JSON_FILE
    now = int(time.time() * 1000)
    entry = {"data": base64.b64encode(b'{"version":1}').decode(), "version": 3, "ctime": now, "mtime": now}
    legacy.write_text(json.dumps({"/cluster": {**entry, "data": ""}, "/cluster/id": entry}))

    async def go() -> tuple[bytes, int]:
        s = await opened_store(tmp_path / STORE_FILE)
        data, stat = await s.get("/cluster/id")
        await s.close()
        return data, stat.version

    assert run(go()) == (b'{"version":1}', 3)
    assert not legacy.exists() and (tmp_path / (LEGACY_JSON_FILE + ".imported")).exists()
    assert run(go()) == (b'{"version":1}', 3)


def test_each_node_is_one_row(tmp_path: Path) -> None:
    """Nodes are rows (a write touches its own row, not a file holding the whole tree)."""

    async def go() -> int:
        s = await opened_store(tmp_path / STORE_FILE)
        await s.create("/p", b"")
        for i in range(2000):
            await s.create(f"/p/{i}", b"x" * 50)
        await s.close()
        import sqlite3

        with sqlite3.connect(tmp_path / STORE_FILE) as db:
            return int(db.execute("SELECT count(*) FROM znodes").fetchone()[0])

    assert run(go()) == 2001
