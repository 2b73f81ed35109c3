"""Fixtures of the tests that run Apache Kafka's jars: an Apache Kafka broker and the JVM that runs Kafka's tools
and the Java test programs, one of each per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.harness import NO_REBALANCE_DELAY
from tests.jvm.apache_kafka import ApacheKafkaBroker, KafkaTools


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    """Odradek's test broker, like the Apache Kafka one: a new group's first rebalance at once."""
    return dict(NO_REBALANCE_DELAY)


@pytest.fixture(scope="module")
def apache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheKafkaBroker]:
    kafka = ApacheKafkaBroker(tmp_path_factory.mktemp("apache-kafka")).start()
    try:
        yield kafka
    finally:
        kafka.stop()


@pytest.fixture(scope="module")
def tools() -> Iterator[KafkaTools]:
    runner = KafkaTools()
    try:
        yield runner
    finally:
        runner.close()
