"""Creating the pipeline's topics when they do not exist yet."""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.pipelines.weblogs import DLQ_TOPIC, LOGS_TOPIC, METRICS_TOPIC

DEFAULT_PARTITIONS = {LOGS_TOPIC: 3, DLQ_TOPIC: 1, METRICS_TOPIC: 1}


def ensure_topics(bootstrap: str, partitions: Mapping[str, int] | None = None, timeout: float = 30.0) -> list[str]:
    """Create the missing ones of `partitions` (name -> partition count); returns the names created."""
    wanted = dict(partitions or DEFAULT_PARTITIONS)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=timeout).topics)
    missing = [NewTopic(name, n, 1) for name, n in wanted.items() if name not in existing]
    if not missing:
        return []
    created = []
    for name, fut in admin.create_topics(missing, operation_timeout=timeout).items():
        try:
            fut.result(timeout)
            created.append(name)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
    return created
