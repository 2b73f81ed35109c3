"""A compacted Kafka topic read from its start by a thread of its own and written through a producer (Kafka's
KafkaBasedLog): the distributed worker's config, offsets and status stores are each one. `read_to_end()` waits
until every record below the partitions' end offsets, as they stood when it was called, has been applied."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.admin_client.connect import ClientErrors, client_config, create_client
from odradek.connect.worker_config import WorkerConfig

log = logging.getLogger("odradek.connect.distributed")

Apply = Callable[[bytes | None, bytes | None, int], None]  # key, value, offset


def ensure_topic(config: WorkerConfig, topic: str, partitions: int, replication: int) -> None:
    """Create `topic` compacted (as the worker creates its internal topics); one that exists is kept as is."""
    admin = create_client(AdminClient, client_config(config.bootstrap_servers, config.client_props("admin"),
                                                     errors=ClientErrors()))
    futures = admin.create_topics([NewTopic(topic, partitions, replication,
                                            config={"cleanup.policy": "compact"})], request_timeout=30)
    try:
        futures[topic].result(timeout=40)
        log.info("Created topic %s with %d partitions and replication factor %d", topic, partitions, replication)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class KafkaLog:
    def __init__(self, config: WorkerConfig, topic: str, apply: Apply, client_id: str) -> None:
        self.topic = topic
        self.apply = apply
        self.failure: KafkaError | None = None
        self._positions: dict[int, int] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self.producer = create_client(Producer, client_config(
            config.bootstrap_servers, config.client_props("producer"), errors=ClientErrors(),
            defaults={"client.id": f"{client_id}-producer", "acks": "all", "linger.ms": 0,
                      "enable.idempotence": False,
                      # a key's partition as a Java worker's producer picks it (murmur2), so both kinds of worker
                      # write a connector's status and offsets to the same partition
                      "partitioner": "murmur2_random"}))
        self.consumer = create_client(Consumer, client_config(
            config.bootstrap_servers, config.client_props("consumer"), errors=ClientErrors(),
            defaults={"client.id": f"{client_id}-consumer", "group.id": f"{client_id}-unused",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": True}))
        # end offsets are asked by another client: librdkafka serves a query slowly while a consume() runs
        self.watermarks = create_client(Consumer, client_config(
            config.bootstrap_servers, config.client_props("consumer"), errors=ClientErrors(),
            defaults={"client.id": f"{client_id}-ends", "group.id": f"{client_id}-unused",
                      "enable.auto.commit": False}))
        metadata = self.consumer.list_topics(topic, timeout=30)
        self.partitions = sorted(metadata.topics[topic].partitions)
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in self.partitions])
        # the end-offset client must know the partitions too, or librdkafka answers "Unknown partition" while its
        # metadata lacks a topic just created (a worker starting beside two others failed so)
        self.watermarks.assign([TopicPartition(topic, p) for p in self.partitions])
        self._thread = threading.Thread(target=self._run, name=f"KafkaBasedLog Work Thread - {topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()
        self.read_to_end()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                # wait for the first record only, then take what else is there: consume(500, 0.2) waited out its
                # timeout for a full batch, so every write took 0.2 s to be read back
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
                        log.warning("Error reading %s: %s", self.topic, error)
                    continue
                try:
                    self.apply(msg.key(), msg.value(), int(msg.offset() or 0))
                except Exception:
                    log.exception("Could not apply a record of %s at offset %s", self.topic, msg.offset())
                with self._cond:
                    self._positions[int(msg.partition() or 0)] = int(msg.offset() or 0) + 1
                    self._cond.notify_all()

    def end_offsets(self) -> dict[int, int]:
        return {p: int(self.watermarks.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10,
                                                             cached=False)[1])
                for p in self.partitions}

    def read_to_end(self, timeout: float = 60.0) -> dict[int, int]:
        """Wait until every record up to the current end offsets is applied; those offsets."""
        ends = self.end_offsets()
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(self._positions.get(p, 0) < end for p, end in ends.items()):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"Timed out reading {self.topic} to its end")
                self._cond.wait(min(left, 0.5))
        return ends

    def send(self, key: bytes, value: bytes | None, partition: int | None = None, sync: bool = True) -> None:
        errors: list[KafkaError] = []

        def delivered(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(err)

        if partition is None:
            self.producer.produce(self.topic, value, key, on_delivery=delivered)
        else:
            self.producer.produce(self.topic, value, key, partition, on_delivery=delivered)
        if sync:
            self.producer.flush(30)
            if errors:
                raise KafkaException(errors[0])
        else:
            self.producer.poll(0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.producer.flush(5)
        self.consumer.close()
        self.watermarks.close()
