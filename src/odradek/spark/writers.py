"""Batch and streaming writers of the `odradek` sink (`df.write` / `df.writeStream` with format odradek).

Each task produces its rows and waits for their acknowledgement. With the option transactionalIdPrefix,
each task writes in one Kafka transaction (transactional.id = prefix-<Spark partition id>): begun when the
task starts, committed when its records are flushed, aborted when it fails. A read_committed reader then
never sees the records of a failed attempt. It is still at-least-once for the job: a task that committed
but whose result never reached the driver (the executor died just after) is run again and commits its
records a second time. Spark's job commit cannot make the tasks' transactions atomic together.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from odradek.spark.features import supports_transactions
from odradek.spark.options import SinkOptions
from odradek.spark.producer import ArrowProducer, producer_conf, task_transactional_id
from odradek.spark.schema import check_sink_schema


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    records: int


def _task_partition() -> int:
    """The Spark partition id of the running task (0 outside a task, e.g. in a direct call)."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


def _write(conf: dict[str, Any], topic: str | None, batches: Iterator[pa.RecordBatch],
           transactional_id_prefix: str | None = None, partition_id: int | None = None) -> KafkaCommitMessage:
    """Produce every batch; in a transaction of its own when a prefix is given (aborted on any failure)."""
    tid = None
    if transactional_id_prefix is not None:
        tid = task_transactional_id(transactional_id_prefix,
                                    _task_partition() if partition_id is None else partition_id)
    producer = ArrowProducer(conf, topic, transactional_id=tid)
    try:
        for batch in batches:
            producer.send(batch)
        return KafkaCommitMessage(producer.finish())
    except BaseException:
        producer.abort()
        raise


def _sink_conf(sink: SinkOptions) -> dict[str, Any]:
    """Producer config; with transactionalIdPrefix, refuses at once a broker that says it has no
    transactions (EndTxn), rather than failing every task."""
    transactional = sink.transactional_id_prefix is not None
    if transactional and supports_transactions(dict(sink.client)) is False:
        raise ValueError("option 'transactionalIdPrefix': the broker does not support transactions "
                         "(it does not offer the EndTxn API)")
    return producer_conf(sink.client, transactional=transactional)


class _SinkWriter:
    """What the batch and the streaming writer share: a task writes its rows with `_write`."""

    def __init__(self, sink: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, sink.topic)
        self.topic = sink.topic
        self.transactional_id_prefix = sink.transactional_id_prefix
        self.conf = _sink_conf(sink)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.conf, self.topic, iterator, self.transactional_id_prefix)


class KafkaBatchWriter(_SinkWriter, DataSourceArrowWriter):
    """Each task produces its rows (in its own transaction with transactionalIdPrefix) and waits for their
    acknowledgement; nothing to do at job commit."""


class KafkaStreamWriter(_SinkWriter, DataSourceStreamArrowWriter):
    """Streaming sink: at-least-once per micro-batch, like Spark's Kafka sink (with transactionalIdPrefix,
    each task of a micro-batch commits or aborts its own transaction)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records were acknowledged (or their transactions committed) when the tasks ended; a micro-batch
        commit has nothing left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records already sent stay in the topic (at-least-once); failed tasks aborted their own
        transactions."""
