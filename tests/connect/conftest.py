"""The Connect tests' broker: a new group's first rebalance at once (every sink task's consumer joins one)."""

from __future__ import annotations

import pytest

from tests.harness import NO_REBALANCE_DELAY


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return dict(NO_REBALANCE_DELAY)
