"""The registry's bound on heavy work (schema_registry/admission.py), without a server: a client's calls beyond
its share are refused with 429 at once, other clients are not, at most `threads` run at a time, and a share is
given back when the work ends, not when the request waiting for it is cancelled; a registration stalled on the
topic does not hold the parsing threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

from odradek.schema_registry.admission import HeavyWork
from odradek.schema_registry.registry import RegistryError


def test_a_client_beyond_its_share_gets_429_and_others_do_not() -> None:
    async def scenario() -> None:
        heavy = HeavyWork(threads=2, per_client=3)
        gate = threading.Event()
        running, most = 0, 0
        lock = threading.Lock()

        def work(n: int) -> int:
            nonlocal running, most
            with lock:
                running += 1
                most = max(most, running)
            gate.wait(10)
            with lock:
                running -= 1
            return n

        try:
            mine = [asyncio.ensure_future(heavy.run("address a", work, n)) for n in range(3)]
            await asyncio.sleep(0)
            with pytest.raises(RegistryError) as refused:
                await heavy.run("address a", work, 3)
            assert (refused.value.status, refused.value.code) == (429, 429)
            assert "rate limit" in refused.value.message
            other = asyncio.ensure_future(heavy.run("user bob", work, 4))  # another client's share is its own
            gate.set()
            assert await asyncio.gather(*mine, other) == [0, 1, 2, 4]
            assert most == 2  # the executor's threads, whatever the clients
            assert await heavy.run("address a", work, 5) == 5  # the share came back
        finally:
            gate.set()
            heavy.close()

    asyncio.run(scenario())


def test_a_cancelled_request_holds_its_share_until_its_work_ends() -> None:
    async def scenario() -> None:
        heavy = HeavyWork(threads=1, per_client=1)
        started, gate = threading.Event(), threading.Event()

        def work() -> None:
            started.set()
            gate.wait(10)

        try:
            call = asyncio.ensure_future(heavy.run("address a", work))
            await asyncio.to_thread(started.wait, 10)
            call.cancel()  # the client hung up; its schema is still being parsed
            with pytest.raises(asyncio.CancelledError):
                await call
            with pytest.raises(RegistryError):
                await heavy.run("address a", work)
            gate.set()
            for _ in range(200):
                if not heavy._in_flight:
                    break
                await asyncio.sleep(0.01)
            gate.clear()
            started.clear()
            call = asyncio.ensure_future(heavy.run("address a", work))
            await asyncio.to_thread(started.wait, 10)
            gate.set()
            await call
        finally:
            gate.set()
            heavy.close()

    asyncio.run(scenario())


def test_a_stalled_registration_does_not_hold_the_parsing_threads() -> None:
    async def scenario() -> None:
        heavy = HeavyWork(threads=1, per_client=4)
        stalled = threading.Event()  # a write waiting on the `_schemas` topic
        try:
            write = asyncio.ensure_future(heavy.run_write("address a", stalled.wait, 10))
            assert await asyncio.wait_for(heavy.run("address b", sum, [1, 2]), 10) == 3
            stalled.set()
            assert await write is True
        finally:
            stalled.set()
            heavy.close()

    asyncio.run(scenario())
