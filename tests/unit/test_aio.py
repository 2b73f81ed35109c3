"""TaskSet: background tasks kept alive, failures logged, periodic steps that outlive a failing step."""

from __future__ import annotations

import asyncio
import logging

import pytest

from odradek.aio import TaskSet


def test_every_keeps_running_after_a_failing_step(caplog: pytest.LogCaptureFixture) -> None:
    calls: list[int] = []

    async def scenario() -> None:
        done = asyncio.Event()

        async def step() -> None:
            calls.append(len(calls))
            if len(calls) == 1:
                raise RuntimeError("first step breaks")
            if len(calls) == 3:
                done.set()

        tasks = TaskSet(logging.getLogger("test.aio"), "test tasks")
        tasks.every(0.001, step, "Periodic step")
        await asyncio.wait_for(done.wait(), 30)
        tasks.close()
        count = len(calls)
        await asyncio.sleep(0.01)
        assert len(calls) == count  # closed: no further steps

    with caplog.at_level(logging.ERROR, logger="test.aio"):
        asyncio.run(scenario())
    assert calls[:3] == [0, 1, 2]
    assert "Periodic step failed: first step breaks" in caplog.text


def test_spawn_after_close_discards_the_coroutine() -> None:
    async def scenario() -> None:
        tasks = TaskSet(logging.getLogger("test.aio"), "test tasks")
        tasks.close()

        async def never() -> None:
            raise AssertionError("must not run")

        assert tasks.spawn(never()) is None

    asyncio.run(scenario())
