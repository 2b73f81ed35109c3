"""The `_schemas` topic (`kafkastore.topic`): created compacted with one partition and replication factor
min(3, brokers), read from its start into the registry's state by a thread of its own that keeps following it,
written through an `acks=all` producer. A write returns once the reader has applied it, so the writer's next
request sees it (Confluent's KafkaStore does the same)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.admin_client.connect import ClientErrors, client_config, create_client

log = logging.getLogger("odradek.schema_registry")

Apply = Callable[[bytes | None, bytes | None, int], None]


class StoreError(Exception):
    """The topic could not be read or written in time (the registry's 50001/50002)."""


def ensure_topic(bootstrap: str, props: Mapping[str, str], topic: str, replication: int | None = None) -> None:
    """Create `topic` compacted with one partition and `replication` replicas (min(3, brokers) when None)."""
    admin = create_client(AdminClient, client_config(bootstrap, props, errors=ClientErrors()))
    metadata = admin.list_topics(timeout=30)
    if topic in metadata.topics and not metadata.topics[topic].error:
        return
    replication = replication or min(3, len(metadata.brokers))
    futures = admin.create_topics([NewTopic(topic, 1, replication, config={"cleanup.policy": "compact"})],
                                  request_timeout=30)
    try:
        futures[topic].result(timeout=40)
        log.info("Created schemas topic %s (compacted, replication factor %d)", topic, replication)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class KafkaStore:
    def __init__(self, bootstrap: str, props: Mapping[str, str], topic: str, apply: Apply, client_id: str) -> None:
        self.topic = topic
        self.apply = apply
        self.position = 0  # the next offset to apply
        self._cond = threading.Condition()
        self._stop = threading.Event()
        errors = ClientErrors()
        self.producer = create_client(Producer, client_config(bootstrap, props, errors=errors, defaults={
            "client.id": f"{client_id}-producer", "acks": "all", "linger.ms": 0, "enable.idempotence": False}))
        self.consumer = create_client(Consumer, client_config(bootstrap, props, errors=errors, defaults={
            "client.id": f"{client_id}-reader", "group.id": f"{client_id}-unused", "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "enable.partition.eof": True}))
        # end offsets come from another client: librdkafka answers slowly while a consume() runs
        self.watermarks = create_client(Consumer, client_config(bootstrap, props, errors=errors, defaults={
            "client.id": f"{client_id}-ends", "group.id": f"{client_id}-unused", "enable.auto.commit": False}))
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self._thread = threading.Thread(target=self._run, name=f"schemas-reader-{topic}", daemon=True)

    def start(self, timeout: float = 60.0) -> None:
        self._thread.start()
        self.read_to_end(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # poll() returns at the first record (consume() waits out its whole timeout for a full batch,
                # which would cost every write 0.2 s), then what else is there without waiting
                first = self.consumer.poll(0.2)
                messages = [] if first is None else [first, *self.consumer.consume(500, 0)]
            except RuntimeError:  # closed
                return
            for msg in messages:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        with self._cond:
                            self.position = max(self.position, int(msg.offset() or 0))
                            self._cond.notify_all()
                    else:
                        log.warning("Error reading %s: %s", self.topic, error)
                    continue
                try:
                    self.apply(msg.key(), msg.value(), int(msg.offset() or 0))
                except Exception:
                    log.exception("Could not apply the record of %s at offset %s", self.topic, msg.offset())
                with self._cond:
                    self.position = int(msg.offset() or 0) + 1
                    self._cond.notify_all()

    def end_offset(self) -> int:
        return int(self.watermarks.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=10,
                                                         cached=False)[1])

    def wait_applied(self, offset: int, timeout: float = 30.0) -> None:
        """Wait until the record at `offset` (and all before it) is applied."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.position <= offset:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreError(f"Timed out reading {self.topic} up to offset {offset}")
                self._cond.wait(min(left, 0.5))

    def read_to_end(self, timeout: float = 30.0) -> None:
        try:
            end = self.end_offset()
        except KafkaException as exc:
            raise StoreError(f"Cannot read the end offset of {self.topic}: {exc}") from None
        if end > 0:
            self.wait_applied(end - 1, timeout)

    def send(self, items: list[tuple[bytes, bytes | None]]) -> None:
        """Write the records in order and wait until the reader applied the last."""
        if not items:
            return
        results: list[tuple[KafkaError | None, int]] = []

        def delivered(err: KafkaError | None, msg: object) -> None:
            results.append((err, -1 if err is not None else int(msg.offset() or 0)))  # type: ignore[attr-defined]

        for key, value in items:
            self.producer.produce(self.topic, value, key, 0, on_delivery=delivered)
        left = self.producer.flush(30)
        if left or len(results) < len(items):
            raise StoreError(f"Timed out writing to {self.topic}")
        for err, _ in results:
            if err is not None:
                raise StoreError(f"Cannot write to {self.topic}: {err.str()}")
        self.wait_applied(max(offset for _, offset in results))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.producer.flush(5)
        self.consumer.close()
        self.watermarks.close()
