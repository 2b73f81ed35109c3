"""A pytest plugin (`-p odradek_sasl_cluster`) for confluent-kafka-python's share-consumer tests run against an
Odradek broker: its `sasl_cluster` fixture (share_consumer_sasl) and `oauth_trivup_cluster` fixture
(share_consumer_oauth) always start trivup clusters of their own (SASL/PLAIN with user `sasl_user`; unsecured
OAUTHBEARER), while the `kafka_cluster` fixture takes BROKERS. Once the tests are collected, this points their
cluster factories at the broker's SASL_PLAINTEXT listener in SASL_BROKERS, with trivup's user, and at its
OAUTHBEARER listener in OAUTH_BROKERS, with the client settings trivup gives (librdkafka's unsecured JWT for
principal admin with scope requiredScope); the test files run unmodified. Nothing changes when those are unset."""

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


def _oauth_cluster(conf: Any = None) -> Any:
    from tests.integration.cluster_fixture import ByoFixture

    # trivup's KafkaCluster client settings for its unsecured OAUTHBEARER listener
    return ByoFixture({"bootstrap.servers": os.environ["OAUTH_BROKERS"], "security.protocol": "SASL_PLAINTEXT",
                       "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                       "sasl.oauthbearer.config": "scope=requiredScope principal=admin"})


def pytest_collection_finish(session: pytest.Session) -> None:
    conftest = sys.modules.get("tests.integration.conftest")
    if conftest is not None and os.environ.get("SASL_BROKERS"):
        conftest.create_sasl_cluster = _sasl_cluster  # type: ignore[attr-defined]
    oauth = sys.modules.get("tests.integration.share_consumer_oauth.conftest")
    if oauth is not None and os.environ.get("OAUTH_BROKERS"):
        oauth.create_trivup_cluster = _oauth_cluster  # type: ignore[attr-defined]
