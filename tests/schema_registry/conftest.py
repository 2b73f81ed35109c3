"""The registry tests' broker (a new group's first rebalance at once, so the primary is elected without the
broker's initial delay) and a registry process shared by a module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import NO_REBALANCE_DELAY, BrokerProcess
from tests.schema_registry.helpers import Registry, wait_primary


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return dict(NO_REBALANCE_DELAY)


@pytest.fixture(scope="module")
def registry(broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    node = Registry(tmp_path_factory.mktemp("registry"), broker).start()
    try:
        wait_primary(node)
        yield node
    finally:
        node.stop()
