"""Fixtures of the guide replays: a `host` whose processes are SIGKILLed by pid afterwards (ZooKeeper
fixtures come from tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.guides.replay import GuideHost


@pytest.fixture
def host(tmp_path: Path) -> Iterator[GuideHost]:
    """The machine a guide is replayed on: a temp directory; all it started is killed at the end."""
    machine = GuideHost(tmp_path)
    try:
        yield machine
    finally:
        machine.cleanup()
