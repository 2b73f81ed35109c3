"""The in-process metadata store keeps its persistent znodes in one file, written atomically."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from odradek.cluster.embedded import STORE_FILE, EmbeddedStore


def test_persistent_znodes_survive_a_restart_and_ephemeral_ones_do_not(tmp_path: Path) -> None:
    path = tmp_path / STORE_FILE

    async def first() -> None:
        store = EmbeddedStore(path)
        await store.start()
        await store.create("/brokers/topics/t", b'{"version":3}', makepath=True)
        await store.create("/brokers/ids/0", b"{}", ephemeral=True, makepath=True)
        await store.close()

    async def second() -> tuple[bytes, object, list[str]]:
        store = EmbeddedStore(path)
        await store.start()
        data, _ = await store.get("/brokers/topics/t")
        return data, await store.exists("/brokers/ids/0"), await store.get_children("/brokers/ids")

    asyncio.run(first())
    assert os.listdir(tmp_path) == [STORE_FILE]  # no temporary file left next to it
    assert asyncio.run(second()) == (b'{"version":3}', None, [])
