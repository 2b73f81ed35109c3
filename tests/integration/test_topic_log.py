"""`KafkaTopicLog` (admin_client/topic_log.py), the compacted state topic under Connect's stores and the schema
registry's `_schemas`: a log opened while its topic is still being created by another client waits for the
topic's partitions instead of starting with none, and one that never appears fails with a named error."""

from __future__ import annotations

import logging
import threading

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.admin_client.topic_log import KafkaTopicLog
from tests.harness import BrokerProcess

log = logging.getLogger("test_topic_log")
log.setLevel(logging.INFO)  # the log's "Waiting for the partitions" line is what the test waits on


def _open(broker: BrokerProcess, topic: str, applied: list[tuple[bytes | None, bytes | None, int]],
          metadata_timeout: float = 30.0) -> KafkaTopicLog:
    return KafkaTopicLog(broker.bootstrap, {}, {}, topic, lambda k, v, o: applied.append((k, v, o)),
                         f"topic-log-{topic}", log, metadata_timeout=metadata_timeout)


def test_a_log_opened_before_its_topic_exists_waits_for_its_partitions(broker: BrokerProcess) -> None:
    topic = "topic-log-late"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    asked = threading.Event()

    class Asked(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage() == f"Waiting for the partitions of {topic}":
                asked.set()

    def create_later() -> None:
        # created only once the log has been told it does not exist: its first answer has no partitions
        assert asked.wait(30)
        admin.create_topics([NewTopic(topic, 3, 1, config={"cleanup.policy": "compact"})])[topic].result(30)

    handler = Asked()
    log.addHandler(handler)
    creator = threading.Thread(target=create_later)
    creator.start()
    applied: list[tuple[bytes | None, bytes | None, int]] = []
    try:
        topic_log = _open(broker, topic, applied)
    finally:
        log.removeHandler(handler)
        creator.join()
    try:
        assert topic_log.partitions == [0, 1, 2]
        topic_log.start(30)
        topic_log.write([(b"k1", b"v1"), (b"k2", b"v2")], partition=2, read_back=True)
        assert [(k, v) for k, v, _ in applied] == [(b"k1", b"v1"), (b"k2", b"v2")]
        assert topic_log.read_to_end(10) == {0: 0, 1: 0, 2: 2}
    finally:
        topic_log.stop()


def test_a_log_whose_topic_never_appears_fails_with_the_reason(broker: BrokerProcess) -> None:
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC|no partitions"):
        _open(broker, "topic-log-never", [], metadata_timeout=1.0)
