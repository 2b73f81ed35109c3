"""KIP-558's active topics: the topics each connector's tasks produced to (a source's records, once delivered)
or consumed from (a sink's records, before transforms), for `GET /connectors/{name}/topics` and
`PUT /connectors/{name}/topics/reset`, forgotten with the connector; `topic.tracking.enable=false` turns the
tracking and both endpoints off, `topic.tracking.allow.reset=false` the reset. A standalone worker keeps them
in memory, as Kafka's keeps its status store (`ActiveTopics`); a distributed worker in the status topic, where
every worker of the group reads them (`connect/kafka_stores.py`, `StatusTopicActiveTopics`)."""

from __future__ import annotations

import threading
from typing import Protocol


class TopicTracker(Protocol):
    """What the worker and its REST API use of either kind."""

    enabled: bool

    def record(self, connector: str, topic: str, task: int = 0) -> None: ...

    def topics(self, connector: str) -> list[str]: ...

    def reset(self, connector: str) -> None: ...


class ActiveTopics:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()
        self._topics: dict[str, set[str]] = {}

    def record(self, connector: str, topic: str, task: int = 0) -> None:
        """Called for every record (by task `task` of the connector): a set lookup when the topic is known
        already."""
        known = self._topics.get(connector)
        if not self.enabled or (known is not None and topic in known):
            return
        with self._lock:
            self._topics.setdefault(connector, set()).add(topic)

    def topics(self, connector: str) -> list[str]:
        with self._lock:
            return sorted(self._topics.get(connector, ()))

    def reset(self, connector: str) -> None:
        with self._lock:
            self._topics.pop(connector, None)
