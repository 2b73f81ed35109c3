"""odradek.ratelog: repeated lines written a few times per window, the rest counted in one summary line."""

from __future__ import annotations

import asyncio
import logging

import pytest

from odradek.ratelog import LimitedLog


def _messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records]


def test_a_burst_passes_and_the_rest_is_summed_up_after_the_window(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    limited = LimitedLog(logging.getLogger("test.ratelog"), burst=3, window_s=10, clock=lambda: now[0])
    with caplog.at_level(logging.INFO, "test.ratelog"):
        for i in range(4003):
            limited.info("Rejected connection from %s: %s", f"10.0.0.{i % 250}:1", "full")
        assert len(caplog.records) == 3
        now[0] = 10.5
        limited.info("Rejected connection from %s: %s", "10.0.0.9:2", "full")
    assert _messages(caplog)[3:] == [
        "... and 4,000 more like it in the last 10 s: Rejected connection from %s: %s",
        "Rejected connection from 10.0.0.9:2: full"]


def test_kinds_and_levels_are_counted_apart(caplog: pytest.LogCaptureFixture) -> None:
    limited = LimitedLog(logging.getLogger("test.ratelog"), burst=1, window_s=10)
    with caplog.at_level(logging.INFO, "test.ratelog"):
        for _ in range(3):
            limited.info("Rejected %s", "a", kind="max.connections")
            limited.info("Rejected %s", "b", kind="max.connections.per.ip")
            limited.warning("Rejected %s", "c")
    assert _messages(caplog) == ["Rejected a", "Rejected b", "Rejected c"]


def test_the_summary_comes_when_the_window_ends_on_the_loop(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        limited = LimitedLog(logging.getLogger("test.ratelog"), burst=2, window_s=0.1)
        for _ in range(10):
            limited.warning("Failed login from %s: wrong token", "127.0.0.1")
        await asyncio.sleep(0.3)

    with caplog.at_level(logging.INFO, "test.ratelog"):
        asyncio.run(main())
    assert _messages(caplog)[-1] == "... and 8 more like it in the last 0.1 s: Failed login from %s: wrong token"
    assert len(caplog.records) == 3
