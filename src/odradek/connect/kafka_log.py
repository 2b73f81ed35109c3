"""The distributed worker's config, offsets and status topics as `KafkaTopicLog`s (admin_client/topic_log.py,
Kafka's KafkaBasedLog): the worker's client settings and a producer that picks a key's partition as a Java
worker's does."""

from __future__ import annotations

import logging

from odradek.admin_client.topic_log import Apply, KafkaTopicLog, ensure_compacted_topic
from odradek.connect.worker_config import WorkerConfig

log = logging.getLogger("odradek.connect.distributed")


def ensure_topic(config: WorkerConfig, topic: str, partitions: int, replication: int) -> None:
    """Create `topic` compacted (as the worker creates its internal topics); one that exists is kept as is."""
    ensure_compacted_topic(config.bootstrap_servers, config.client_props("admin"), topic, partitions, replication,
                           log)


def kafka_log(config: WorkerConfig, topic: str, apply: Apply, client_id: str) -> KafkaTopicLog:
    return KafkaTopicLog(config.bootstrap_servers, config.client_props("producer"), config.client_props("consumer"),
                         topic, apply, client_id, log,
                         # a key's partition as a Java worker's producer picks it (murmur2), so both kinds of
                         # worker write a connector's status and offsets to the same partition
                         producer_defaults={"partitioner": "murmur2_random"})
