"""Shared fixtures: a real single-node broker per test module or per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import BrokerProcess


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False, help="run long drills and benchmarks")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="long drill: run with --run-slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker shared by a test module."""
    b = BrokerProcess(tmp_path_factory.mktemp("broker"))
    b.start()
    try:
        yield b
    finally:
        b.stop()
        b.kill()


@pytest.fixture
def fresh_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker of a test's own, for tests that restart or kill it."""
    b = BrokerProcess(tmp_path_factory.mktemp("broker"))
    b.start()
    try:
        yield b
    finally:
        b.stop()
        b.kill()
