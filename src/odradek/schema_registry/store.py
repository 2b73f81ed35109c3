"""The `_schemas` topic (`kafkastore.topic`) as a `KafkaTopicLog` (admin_client/topic_log.py): created compacted
with one partition and replication factor min(3, brokers), read from its start into the registry's state by a
thread of its own that keeps following it, written through an `acks=all` producer. A write returns once the reader
has applied it, so the writer's next request sees it (Confluent's KafkaStore does the same). Failures are
StoreErrors, the registry's 50001."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from confluent_kafka import KafkaException

from odradek.admin_client.topic_log import Apply, KafkaTopicLog, ensure_compacted_topic

log = logging.getLogger("odradek.schema_registry")


class StoreError(Exception):
    """The topic could not be read or written in time (the registry's 50001/50002)."""


def ensure_topic(bootstrap: str, props: Mapping[str, str], topic: str, replication: int | None = None) -> None:
    """Create `topic` compacted with one partition and `replication` replicas (min(3, brokers) when None)."""
    ensure_compacted_topic(bootstrap, props, topic, 1, replication, log)


@contextmanager
def _store_errors(what: str) -> Iterator[None]:
    try:
        yield
    except KafkaException as exc:
        raise StoreError(f"{what}: {exc.args[0].str()}") from None
    except TimeoutError as exc:  # the topic's own words: "Timed out reading/writing ..."
        raise StoreError(str(exc)) from None


class KafkaStore:
    def __init__(self, bootstrap: str, props: Mapping[str, str], topic: str, apply: Apply, client_id: str) -> None:
        self.log = KafkaTopicLog(bootstrap, props, props, topic, apply, client_id, log, partitions=[0],
                                 thread_name=f"schemas-reader-{topic}")

    def start(self, timeout: float = 60.0) -> None:
        with _store_errors(f"Cannot read the end offset of {self.log.topic}"):
            self.log.start(timeout)

    def read_to_end(self, timeout: float = 30.0) -> None:
        with _store_errors(f"Cannot read the end offset of {self.log.topic}"):
            self.log.read_to_end(timeout)

    def send(self, items: list[tuple[bytes, bytes | None]]) -> None:
        """Write the records in order and wait until the reader applied the last."""
        with _store_errors(f"Cannot write to {self.log.topic}"):
            self.log.write(items, 0, read_back=True)

    def stop(self) -> None:
        self.log.stop()
