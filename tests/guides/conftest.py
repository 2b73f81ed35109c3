"""Fixtures of the guide replays: a `host` whose processes are SIGKILLed by pid afterwards, and the
ZooKeeper fixtures of the integration tests (a standalone server, a three-node ensemble)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.guides.replay import GuideHost
from tests.integration.conftest import zk_ensemble, zk_standalone

__all__ = ["host", "zk_ensemble", "zk_standalone"]


@pytest.fixture
def host(tmp_path: Path) -> Iterator[GuideHost]:
    """The machine a guide is replayed on: a temp directory; all it started is killed at the end."""
    machine = GuideHost(tmp_path)
    try:
        yield machine
    finally:
        machine.cleanup()
