"""The keys of KIP-558's topic statuses in a Connect group's status topic (`status-topic-TOPIC:connector-NAME`),
split as Kafka's KafkaStatusBackingStore splits them: at the first colon, which no topic name holds."""

from __future__ import annotations

import pytest

from odradek.connect.kafka_stores import parse_topic_status_key, topic_status_key


@pytest.mark.parametrize("connector, topic", [("src", "orders"), ("a:b", "t.1"), ("-", "x_y-z")])
def test_a_key_splits_back_into_its_connector_and_topic(connector: str, topic: str) -> None:
    key = topic_status_key(connector, topic)
    assert key == f"status-topic-{topic}:connector-{connector}"
    assert parse_topic_status_key(key) == (connector, topic)


@pytest.mark.parametrize("key", [
    "status-connector-src",  # another kind of status
    "status-topic-orders",  # no separator
    "status-topic-:connector-src",  # no topic
    "status-topic-orders:connector-",  # no connector
    "status-topic-orders:task-src",  # not the separator Kafka writes
])
def test_keys_kafka_discards_are_none(key: str) -> None:
    assert parse_topic_status_key(key) is None
