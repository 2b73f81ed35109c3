"""Executor side of the sink: send the rows of Arrow batches to Kafka and wait until all are acknowledged.

At-least-once, like Spark's Kafka sink: a task fails if any record is not acknowledged, and Spark's retry
of the task may write its records again. The idempotent producer (on when the broker offers it) removes
the duplicates that the producer's own retries would otherwise make.

With a transactional id (the sink option transactionalIdPrefix), the task's records are one Kafka
transaction: begun before the first record, committed once all are flushed, aborted if the task fails,
so a read_committed consumer sees all of a task's records or none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
from confluent_kafka import KafkaError, Producer

from odradek.spark.features import supports_idempotence

# The Java client's default partitioner is murmur2; matching it keeps key -> partition the same as with
# Spark's own Kafka sink.
PRODUCER_DEFAULTS: dict[str, Any] = {
    "partitioner": "murmur2_random",
    "linger.ms": 5,
    "batch.size": 1 << 20,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 512 * 1024,
    "delivery.report.only.error": True,
}
FLUSH_TIMEOUT_S = 120.0
TXN_TIMEOUT_S = 60.0  # init_transactions, commit and abort


def producer_conf(client: Mapping[str, str], *, transactional: bool = False) -> dict[str, Any]:
    """Client config for the sink; decides enable.idempotence (unless given) by asking the broker.
    A transactional producer is always idempotent."""
    conf: dict[str, Any] = {**PRODUCER_DEFAULTS, **client}
    if transactional:
        if str(client.get("enable.idempotence", "true")).strip().lower() == "false":
            raise ValueError("transactionalIdPrefix needs the idempotent producer: "
                             "remove kafka.enable.idempotence=false")
        conf["enable.idempotence"] = True
    elif "enable.idempotence" not in client:
        conf["enable.idempotence"] = supports_idempotence(dict(client)) is not False
    return conf


def task_transactional_id(prefix: str, partition_id: int) -> str:
    """The transactional.id of the task writing Spark partition `partition_id`.

    The same for every attempt of that partition: each attempt's init_transactions bumps the producer
    epoch, which fences an earlier attempt still running (a zombie or a speculative copy) and aborts the
    transaction it left open, instead of leaving it to hold back read_committed readers until
    transaction.timeout.ms."""
    return f"{prefix}-{partition_id}"


class ArrowProducer:
    """Produces rows of batches with columns value and optionally key, topic, partition, headers."""

    def __init__(self, conf: Mapping[str, Any], topic: str | None, transactional_id: str | None = None) -> None:
        self.topic = topic
        self.errors: list[KafkaError] = []
        self.sent = 0
        self.transactional_id = transactional_id
        extra: dict[str, Any] = {"on_delivery": self._on_delivery}
        if transactional_id is not None:
            extra["transactional.id"] = transactional_id
        self.producer = Producer({**conf, **extra})
        self.in_transaction = False
        if transactional_id is not None:
            self.producer.init_transactions(TXN_TIMEOUT_S)
            self.producer.begin_transaction()
            self.in_transaction = True

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            self.errors.append(err)

    def _produce(self, topic: str, value: Any, key: Any, **kw: Any) -> None:
        while True:
            try:
                self.producer.produce(topic, value, key, **kw)
                return
            except BufferError:
                self.producer.poll(0.05)

    def send(self, batch: pa.RecordBatch) -> None:
        names = batch.schema.names
        n = batch.num_rows
        values = batch.column(names.index("value")).to_pylist()
        keys = batch.column(names.index("key")).to_pylist() if "key" in names else [None] * n
        if self.topic is not None:
            topics: list[Any] = [self.topic] * n
        else:
            topics = batch.column(names.index("topic")).to_pylist()
            if None in topics:
                raise ValueError("null topic present in the data. Use the topic option for setting a topic.")
        parts = batch.column(names.index("partition")).to_pylist() if "partition" in names else None
        headers = batch.column(names.index("headers")).to_pylist() if "headers" in names else None
        if parts is None and headers is None:
            for i in range(n):
                self._produce(topics[i], values[i], keys[i])
                if i & 1023 == 0:
                    self.producer.poll(0)
        else:
            for i in range(n):
                kw: dict[str, Any] = {}
                if parts is not None and parts[i] is not None:
                    kw["partition"] = parts[i]
                if headers is not None and headers[i]:
                    kw["headers"] = [(h["key"], h["value"]) for h in headers[i]]
                self._produce(topics[i], values[i], keys[i], **kw)
                if i & 1023 == 0:
                    self.producer.poll(0)
        self.sent += n
        if self.errors:
            raise RuntimeError(f"Kafka did not accept records: {self.errors[0]} ({len(self.errors)} failed)")

    def finish(self) -> int:
        """Wait for every record to be acknowledged; raise if any was not. Returns the count sent."""
        left = self.producer.flush(FLUSH_TIMEOUT_S)
        if self.errors:
            raise RuntimeError(f"Kafka did not accept records: {self.errors[0]} ({len(self.errors)} of {self.sent} failed)")
        if left:
            raise TimeoutError(f"{left} records were still unacknowledged after {FLUSH_TIMEOUT_S:.0f} s")
        if self.in_transaction:
            self.producer.commit_transaction(TXN_TIMEOUT_S)
            self.in_transaction = False
        return self.sent

    def abort(self) -> None:
        """Abort the open transaction, if any (best effort: the task is failing already, and a later
        attempt's init_transactions or the transaction timeout aborts it anyway)."""
        if not self.in_transaction:
            return
        self.in_transaction = False
        try:
            self.producer.abort_transaction(TXN_TIMEOUT_S)
        except Exception:  # fenced, timed out, or the broker is gone: nothing more to do here
            pass
