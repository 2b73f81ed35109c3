"""A pytest plugin (`-p odradek_sasl_cluster`) for confluent-kafka-python's share-consumer tests run against an
Odradek broker: its `sasl_cluster` fixture always starts a trivup cluster of its own (SASL/PLAIN, user
`sasl_user` with that password), while the `kafka_cluster` fixture takes BROKERS. Once the tests are collected,
this points the fixture's cluster factory at the broker's SASL_PLAINTEXT listener in SASL_BROKERS instead, with
trivup's user; the test files run unmodified. Nothing changes when SASL_BROKERS is unset."""

from __future__ import annotations

import os
import sys
from typing import Any

import pytest

USER = "sasl_user"  # trivup's `sasl_users: 'sasl_user=sasl_user'` in create_sasl_cluster


def _sasl_cluster(conf: Any = None) -> Any:
    from tests.integration.cluster_fixture import ByoFixture  # confluent-kafka-python's tests package

    return ByoFixture({"bootstrap.servers": os.environ["SASL_BROKERS"], "security.protocol": "SASL_PLAINTEXT",
                       "sasl.mechanism": "PLAIN", "sasl.username": USER, "sasl.password": USER})


def pytest_collection_finish(session: pytest.Session) -> None:
    conftest = sys.modules.get("tests.integration.conftest")
    if conftest is not None and os.environ.get("SASL_BROKERS"):
        conftest.create_sasl_cluster = _sasl_cluster  # type: ignore[attr-defined]
