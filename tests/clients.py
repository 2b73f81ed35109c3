"""Small helpers around the real Kafka clients used by the integration tests."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from tests.waiting import wait_until

_ADMINS: dict[str, AdminClient] = {}


def unique_name(prefix: str) -> str:
    """`prefix` and 8 random hex digits: a topic, group or transactional id no other test uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin(bootstrap: str) -> AdminClient:
    """An admin client per bootstrap string, kept alive so futures of one-line calls can complete."""
    if bootstrap not in _ADMINS:
        _ADMINS[bootstrap] = AdminClient({"bootstrap.servers": bootstrap})
    return _ADMINS[bootstrap]


def forget_admin(bootstrap: str) -> None:
    """Drop the cached admin client of `bootstrap`: after a broker restarts, librdkafka may have dropped it from
    its broker list (metadata from a peer that had not seen it re-register) and not look for it again for
    minutes, so requests routed to that broker wait."""
    _ADMINS.pop(bootstrap, None)


def forget_all_admins() -> None:
    """Drop every cached admin client (librdkafka destroys each), so none outlives its brokers and keeps
    reconnecting to a port nothing listens on any more."""
    _ADMINS.clear()


def alter_configs(bootstrap: str, resource_type: ResourceType, name: str, **configs: str | None) -> None:
    """IncrementalAlterConfigs of one resource: each config set, or deleted when None (`a__b` names `a.b`)."""
    entries = [ConfigEntry(k.replace("__", "."), v, incremental_operation=AlterConfigOpType.SET if v is not None
                           else AlterConfigOpType.DELETE) for k, v in configs.items()]
    res = ConfigResource(resource_type, name, incremental_configs=entries)
    admin(bootstrap).incremental_alter_configs([res])[res].result(20)


def kafka_error_of(call: Any) -> KafkaError:
    """The KafkaError that `call()` raises (as a KafkaException)."""
    with pytest.raises(KafkaException) as info:
        call()
    err = info.value.args[0]
    assert isinstance(err, KafkaError)
    return err


def create_topic(bootstrap: str, name: str, partitions: int = 1, rf: int = 1, config: dict | None = None) -> None:
    client = admin(bootstrap)  # must outlive the future
    fs = client.create_topics([NewTopic(name, partitions, rf, config=config or {})], operation_timeout=10)
    fs[name].result(timeout=20)


def produce(bootstrap: str, topic: str, values: Iterable[bytes | str], partition: int | None = None,
            key: bytes | None = None, **conf: object) -> list[tuple[int, int]]:
    """Produce and wait; returns (partition, offset) of each record in order; raises on any delivery error."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **conf})
    results: list[tuple[int, int] | Exception] = []

    def cb(err: KafkaError | None, msg: object) -> None:
        results.append(RuntimeError(str(err)) if err else (msg.partition(), msg.offset()))  # type: ignore[attr-defined]

    for v in values:
        kwargs = {"partition": partition} if partition is not None else {}
        p.produce(topic, value=v, key=key, on_delivery=cb, **kwargs)
        p.poll(0)
    assert p.flush(30) == 0, "messages still in the producer queue after 30 s"
    for r in results:
        if isinstance(r, Exception):
            raise r
    return results  # type: ignore[return-value]


def consume_all(bootstrap: str, topic: str, expected: int, partitions: int = 1, timeout: float = 30.0,
                **conf: object) -> list:
    """assign() every partition from the beginning and read `expected` messages."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "t-" + str(time.monotonic_ns()),
                  "enable.auto.commit": False, **conf})
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    raise RuntimeError(str(m.error()))
                out.append(m)
    finally:
        c.close()
    return out


def kcat(*args: str, input: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["kcat", *args], input=input, capture_output=True, timeout=timeout)


def consume_to_end(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0) -> list:
    """Every record of every partition, from its start to its high watermark at call time."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "end-" + str(time.monotonic_ns()),
                  "enable.auto.commit": False})
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in range(partitions)}
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions) if ends[p] > 0])
    out = []
    pos = {p: 0 for p in range(partitions)}
    deadline = time.monotonic() + timeout
    try:
        while any(pos[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    raise RuntimeError(str(m.error()))
                out.append(m)
                pos[m.partition()] = max(pos[m.partition()], m.offset() + 1)
    finally:
        c.close()
    return out


def round_trip(conf: dict[str, object], topic: str, count: int, prefix: str) -> list[bytes]:
    """Produce `prefix`0..`prefix`<count-1> with a client of config `conf`, then read them back through a
    new consumer group of the same config (used to prove a security setting end to end)."""
    from tests.waiting import wait_until

    producer = Producer(conf)
    for i in range(count):
        producer.produce(topic, value=f"{prefix}{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        def drained() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            return len(got) >= count
        wait_until(drained, 60, f"{count} records from {topic}")
    finally:
        consumer.close()
    return got


def kafka_python_round_trip(config: dict[str, Any], topic: str, count: int, prefix: str) -> list[bytes]:
    """`round_trip` with kafka-python: produce `prefix`0..`prefix`<count-1> with a KafkaProducer of config
    `config`, then read the first `count` records back from the earliest offset with a KafkaConsumer of the
    same config (no group; it gives up after 20 s without a record)."""
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(**config)
    for i in range(count):
        producer.send(topic, f"{prefix}{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, auto_offset_reset="earliest", consumer_timeout_ms=20000, **config)
    try:
        return [m.value for _, m in zip(range(count), consumer, strict=False)]
    finally:
        consumer.close()


def kafka_python_group_consumer(topic: str, **config: Any) -> Any:
    """A kafka-python KafkaConsumer subscribed to `topic` (in a group) that knows the topic's partitions
    before its first poll.

    kafka-python 3.0.12 can wedge a group's leader for good when its first assignment ran before the
    topic's metadata arrived. The metadata then differs from what the leader assigned with, so it rejoins,
    but that rejoin is not counted as pending: once the leader's own new assignment makes the two agree,
    poll() stops collecting the join in flight, the SyncGroup answer is never applied and heartbeats stay
    off, so the member is dropped at its session timeout and never notices (Java's rejoinNeededOrPending
    counts a pending join; kafka-python's need_rejoin does not). A consumer that has the metadata first
    never takes that path."""
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, **config)
    wait_until(lambda: consumer.partitions_for_topic(topic)
               and consumer._coordinator._metadata_snapshot.get(topic), 30,
               f"kafka-python's group coordinator to know the partitions of {topic}", interval=0.05)
    return consumer


class NumberedProducer:
    """Sends a numbered message every few milliseconds with acks=all; records what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 2, **conf: object) -> None:
        self.partitions = partitions
        self.acked: list[tuple[int, int, int]] = []  # (partition, offset, number)
        self.failed: list[str] = []
        self.sent = 0
        self._stop = threading.Event()
        self._p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, "retries": 1000000,
                            "retry.backoff.ms": 100, "message.timeout.ms": 60000, **conf})
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _cb(self, err: object, msg: object) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append((msg.partition(), msg.offset(), int(msg.value())))  # type: ignore[attr-defined]

    def _run(self) -> None:
        while not self._stop.is_set():
            i = self.sent
            self._p.produce(self._topic, str(i).encode(), partition=i % self.partitions, on_delivery=self._cb)
            self.sent += 1
            self._p.poll(0.003)
        self._p.flush(60)

    def start(self) -> NumberedProducer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)

    def wait_acked(self, more: int, timeout: float = 30.0) -> None:
        """Until `more` records beyond those acknowledged by now are acknowledged."""
        target = len(self.acked) + more
        wait_until(lambda: len(self.acked) >= target, timeout,
                   lambda: f"{target} acknowledged records ({len(self.acked)} so far; failures {self.failed[:3]})")
