"""A compacted Kafka topic kept as state (Kafka's KafkaBasedLog, Confluent's KafkaStore): read from its start by a
thread of its own that keeps following it, each record handed to `apply`, and written through an `acks=all`
producer. `read_to_end()` waits until every record below the partitions' end offsets, as they stood when it was
called, has been applied; `write(..., read_back=True)` until the records written have been. Connect's config,
offsets and status topics and the schema registry's `_schemas` topic are each one."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.admin_client.connect import ClientErrors, client_config, create_client

Apply = Callable[[bytes | None, bytes | None, int], None]  # key, value, offset


def ensure_compacted_topic(bootstrap: str, props: Mapping[str, str], topic: str, partitions: int,
                           replication: int | None, log: logging.Logger) -> None:
    """Create `topic` compacted; one that exists is kept as is (not even asked to be created, which a client
    allowed to read and write it but not to create topics could not). `replication` None: min(3, brokers)."""
    admin = create_client(AdminClient, client_config(bootstrap, props, errors=ClientErrors()))
    metadata = admin.list_topics(timeout=30)
    if topic in metadata.topics and not metadata.topics[topic].error:
        return
    replication = replication or min(3, len(metadata.brokers))
    futures = admin.create_topics([NewTopic(topic, partitions, replication, config={"cleanup.policy": "compact"})],
                                  request_timeout=30)
    try:
        futures[topic].result(timeout=40)
        log.info("Created topic %s (compacted) with %d partitions and replication factor %d", topic, partitions,
                 replication)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class KafkaTopicLog:
    """`producer_props` and `consumer_props` are the clients' Kafka-style settings (security keys and the like);
    `producer_defaults` adds to the producer's own. `partitions` None: every partition the topic has."""

    def __init__(self, bootstrap: str, producer_props: Mapping[str, str], consumer_props: Mapping[str, str],
                 topic: str, apply: Apply, client_id: str, log: logging.Logger, *,
                 partitions: Sequence[int] | None = None, producer_defaults: Mapping[str, object] | None = None,
                 thread_name: str | None = None, metadata_timeout: float = 30.0) -> None:
        self.topic = topic
        self.apply = apply
        self.log = log
        self._positions: dict[int, int] = {}  # per partition, the next offset to apply
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.producer = create_client(Producer, client_config(
            bootstrap, producer_props, errors=ClientErrors(),
            defaults={"client.id": f"{client_id}-producer", "acks": "all", "linger.ms": 0,
                      "enable.idempotence": False, **(producer_defaults or {})}))
        self.consumer = create_client(Consumer, client_config(
            bootstrap, consumer_props, errors=ClientErrors(),
            defaults={"client.id": f"{client_id}-consumer", "group.id": f"{client_id}-unused",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": True}))
        # end offsets are asked by another client: librdkafka serves a query slowly while a consume() runs
        self.watermarks = create_client(Consumer, client_config(
            bootstrap, consumer_props, errors=ClientErrors(),
            defaults={"client.id": f"{client_id}-ends", "group.id": f"{client_id}-unused",
                      "enable.auto.commit": False}))
        if partitions is None:
            partitions = self._partitions_of(topic, metadata_timeout)
        self.partitions = sorted(partitions)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in self.partitions])
        # the end-offset client must know the partitions too, or librdkafka answers "Unknown partition" while its
        # metadata lacks a topic just created (a Connect worker starting beside two others failed so)
        self.watermarks.assign([TopicPartition(topic, p) for p in self.partitions])
        self._thread = threading.Thread(target=self._run, name=thread_name or f"KafkaBasedLog Work Thread - {topic}",
                                        daemon=True)

    def _partitions_of(self, topic: str, timeout: float) -> list[int]:
        """The topic's partitions, asked again while the metadata lacks them (a topic another client has just
        created can show up first with LEADER_NOT_AVAILABLE and no partitions)."""
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            metadata = self.consumer.list_topics(topic, timeout=max(1.0, deadline - time.monotonic()))
            found = metadata.topics.get(topic)
            if found is not None and found.partitions and found.error is None:
                return list(found.partitions)
            refused = (found is not None and found.error is not None and not found.error.retriable()
                       and found.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART)  # e.g. not authorized
            if refused or time.monotonic() >= deadline:
                raise KafkaException(found.error if found is not None and found.error is not None
                                     else KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, f"no partitions of {topic}"))
            if not waited:
                self.log.info("Waiting for the partitions of %s", topic)
                waited = True
            time.sleep(0.2)

    def start(self, timeout: float = 60.0) -> None:
        self._thread.start()
        self.read_to_end(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # wait for the first record only, then take what else is there: consume(500, 0.2) waits out its
                # timeout for a full batch, so every write would take 0.2 s to be read back
                first = self.consumer.poll(0.2)
                messages = [] if first is None else [first, *self.consumer.consume(499, 0)]
            except RuntimeError:  # closed
                return
            for msg in messages:
                error = msg.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:  # its offset is the end offset
                        with self._cond:
                            partition, end = int(msg.partition() or 0), int(msg.offset() or 0)
                            self._positions[partition] = max(self._positions.get(partition, 0), end)
                            self._cond.notify_all()
                    else:
                        self.log.warning("Error reading %s: %s", self.topic, error)
                    continue
                try:
                    self.apply(msg.key(), msg.value(), int(msg.offset() or 0))
                except Exception:
                    self.log.exception("Could not apply the record of %s at offset %s", self.topic, msg.offset())
                with self._cond:
                    self._positions[int(msg.partition() or 0)] = int(msg.offset() or 0) + 1
                    self._cond.notify_all()

    def end_offsets(self, timeout: float = 30.0) -> dict[int, int]:
        """The partitions' end offsets, each asked again on a retriable error or a timeout until `timeout` (Kafka's
        KafkaBasedLog retries so; a worker starting on a busy machine beside two others once gave up here)."""
        deadline = time.monotonic() + timeout
        ends: dict[int, int] = {}
        for p in self.partitions:
            while True:
                try:
                    ends[p] = int(self.watermarks.get_watermark_offsets(
                        TopicPartition(self.topic, p), timeout=max(1.0, min(10.0, deadline - time.monotonic())),
                        cached=False)[1])
                    break
                except KafkaException as exc:
                    error = exc.args[0]
                    transient = error.retriable() or error.code() in (KafkaError._TIMED_OUT,
                                                                     KafkaError._UNKNOWN_PARTITION)
                    if not transient or time.monotonic() >= deadline:
                        raise
                    self.log.info("Reading the end offset of %s-%d again: %s", self.topic, p, error)
                    time.sleep(0.2)
        return ends

    def wait_applied(self, ends: Mapping[int, int], timeout: float) -> None:
        """Wait until every record below `ends` (partition -> offset) is applied; TimeoutError when not in time."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(self._positions.get(p, 0) < end for p, end in ends.items()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"Timed out reading {self.topic} to offsets {dict(ends)}")
                self._cond.wait(min(left, 0.5))

    def read_to_end(self, timeout: float = 60.0) -> dict[int, int]:
        """Wait until every record up to the current end offsets is applied; those offsets."""
        ends = self.end_offsets()
        self.wait_applied(ends, timeout)
        return ends

    def write(self, items: Iterable[tuple[bytes, bytes | None]], partition: int | None = None, sync: bool = True,
              read_back: bool = False, timeout: float = 30.0) -> None:
        """Produce the records in order (to `partition`, else as the producer's partitioner picks). `sync`: wait
        until they (and every earlier one) are acknowledged; KafkaException on a failed delivery, TimeoutError
        when not in time. `read_back`: then wait until the reader has applied them."""
        errors: list[KafkaError] = []
        ends: dict[int, int] = {}

        def delivered(err: KafkaError | None, msg: object) -> None:
            if err is not None:
                errors.append(err)
            else:
                p, offset = int(msg.partition() or 0), int(msg.offset() or 0)  # type: ignore[attr-defined]
                ends[p] = max(ends.get(p, 0), offset + 1)

        count = 0
        for key, value in items:
            if partition is None:
                self.producer.produce(self.topic, value, key, on_delivery=delivered)
            else:
                self.producer.produce(self.topic, value, key, partition, on_delivery=delivered)
            count += 1
        if not sync:
            self.producer.poll(0)
            return
        left = self.producer.flush(timeout)
        if errors:
            raise KafkaException(errors[0])
        if left:
            raise TimeoutError(f"Timed out writing to {self.topic}")
        if read_back and count:
            self.wait_applied(ends, timeout)

    def send(self, key: bytes, value: bytes | None, partition: int | None = None, sync: bool = True) -> None:
        """One record (see `write`)."""
        self.write([(key, value)], partition, sync)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.producer.flush(5)
        self.consumer.close()
        self.watermarks.close()
