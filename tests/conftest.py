"""Shared fixtures: real brokers and ZooKeeper servers on 127.0.0.1 (free ports, temp dirs), stopped by pid.

`broker` (one per module) and `fresh_broker` (one per test) use the overrides of `broker_config`; a module
that needs other settings redefines that fixture. `brokers` and `module_brokers` start any other broker or
cluster a test needs (see tests/harness.py: BrokerPool), and stop them when the test or module ends.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness import BrokerPool, BrokerProcess
from tests.zkharness import ZooKeeperEnsemble


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run long drills and benchmarks")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="long drill: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module", autouse=True)
def _admin_clients_die_with_the_module() -> Iterator[None]:
    """Set up before, so torn down after, a module's brokers: the admin clients tests.clients cached for
    them go with them."""
    yield
    from tests.clients import forget_all_admins

    forget_all_admins()


def _pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    pool = BrokerPool(tmp_path_factory.mktemp)
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    """Brokers and clusters of one test."""
    yield from _pool(tmp_path_factory)


@pytest.fixture(scope="module")
def module_brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerPool]:
    """Brokers and clusters shared by a test module."""
    yield from _pool(tmp_path_factory)


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    """server.properties overrides of `broker` and `fresh_broker`; none unless a module redefines this."""
    return {}


@pytest.fixture(scope="module")
def broker(module_brokers: BrokerPool, broker_config: dict[str, str]) -> BrokerProcess:
    """One broker shared by a test module."""
    return module_brokers.start(broker_config)


@pytest.fixture
def fresh_broker(brokers: BrokerPool, broker_config: dict[str, str]) -> BrokerProcess:
    """A broker of a test's own, for tests that restart or kill it."""
    return brokers.start(broker_config)


def _zookeeper(tmp_path_factory: pytest.TempPathFactory, size: int) -> Iterator[ZooKeeperEnsemble]:
    ensemble = ZooKeeperEnsemble(tmp_path_factory.mktemp(f"zk{size}"), size=size)
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop_all()


@pytest.fixture(scope="module")
def zk_ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """Three ZooKeeper servers with a leader (started through `odradek zookeeper-server-start`)."""
    yield from _zookeeper(tmp_path_factory, 3)


@pytest.fixture(scope="module")
def zk_standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperEnsemble]:
    """One standalone ZooKeeper server."""
    yield from _zookeeper(tmp_path_factory, 1)


@pytest.fixture(scope="session")
def pem_pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(CA certificate, broker key and certificate chain) as PEM files, the broker's for 127.0.0.1 (trustme)."""
    import trustme

    root = tmp_path_factory.mktemp("pem-pki")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(root / "ca.pem"))
    ca.issue_cert("127.0.0.1", "localhost").private_key_and_cert_chain_pem.write_to_path(str(root / "broker.pem"))
    return root / "ca.pem", root / "broker.pem"

