"""Batch and streaming writers of the `odradek` sink (`df.write` / `df.writeStream` with format odradek).

At-least-once by default. With option `transactionalIdPrefix` each task writes its rows in one Kafka
transaction, with transactional id `<prefix>-<partition id>`: committed when all are acknowledged,
aborted when the task fails, and a retry of the task fences the failed attempt (same id). So
read_committed readers never see the rows of a failed attempt; a task whose commit succeeded but whose
success Spark never learned (an executor lost just after) can still be written again by a retry, so the
job as a whole stays at-least-once, without duplicates from failed attempts."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from odradek.spark.options import SinkOptions
from odradek.spark.producer import ArrowProducer, producer_conf
from odradek.spark.schema import check_sink_schema

TRANSACTION_TIMEOUT_S = 60.0


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    records: int


def _write(conf: dict[str, Any], topic: str | None, batches: Iterator[pa.RecordBatch],
           transactional_id_prefix: str | None = None) -> KafkaCommitMessage:
    if transactional_id_prefix is None:
        producer = ArrowProducer(conf, topic)
        for batch in batches:
            producer.send(batch)
        return KafkaCommitMessage(producer.finish())
    from pyspark import TaskContext

    ctx = TaskContext.get()
    partition = ctx.partitionId() if ctx is not None else 0
    conf = {**conf, "transactional.id": f"{transactional_id_prefix}-{partition}", "enable.idempotence": True}
    producer = ArrowProducer(conf, topic)
    producer.producer.init_transactions(TRANSACTION_TIMEOUT_S)
    producer.producer.begin_transaction()
    try:
        for batch in batches:
            producer.send(batch)
        sent = producer.finish()
        producer.producer.commit_transaction(TRANSACTION_TIMEOUT_S)
    except BaseException:
        try:
            producer.producer.abort_transaction(TRANSACTION_TIMEOUT_S)
        except Exception:
            pass  # the next attempt with this id aborts it (fencing) or the transaction times out
        raise
    return KafkaCommitMessage(sent)


class KafkaBatchWriter(DataSourceArrowWriter):
    """Each task produces its rows and waits for their acknowledgement; nothing to do at job commit."""

    def __init__(self, sink: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, sink.topic)
        self.topic = sink.topic
        self.conf = producer_conf(sink.client)
        self.prefix = sink.transactional_id_prefix

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.conf, self.topic, iterator, self.prefix)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Streaming sink: at-least-once per micro-batch, like Spark's Kafka sink."""

    def __init__(self, sink: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, sink.topic)
        self.topic = sink.topic
        self.conf = producer_conf(sink.client)
        self.prefix = sink.transactional_id_prefix

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.conf, self.topic, iterator, self.prefix)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records were acknowledged when the tasks ended; a micro-batch commit has nothing left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records already sent stay in the topic (at-least-once)."""
