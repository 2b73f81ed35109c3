"""Fixtures of the integration tests: ZooKeeper servers (a 3-node ensemble, a standalone server)
shared by a test module, started through `odradek zookeeper-server-start` (see tests/zkharness.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.zkharness import ZooKeeperEnsemble


@pytest.fixture(scope="module")
def zk_ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """Three ZooKeeper servers on free ports of 127.0.0.1, with a leader; stopped by pid afterwards."""
    ensemble = ZooKeeperEnsemble(tmp_path_factory.mktemp("zk-ensemble"), size=3)
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop_all()


@pytest.fixture(scope="module")
def zk_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """One standalone ZooKeeper server on a free port of 127.0.0.1."""
    ensemble = ZooKeeperEnsemble(tmp_path_factory.mktemp("zk-standalone"), size=1)
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop_all()
