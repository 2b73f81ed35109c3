"""Batch and streaming writers of the `odradek` sink (`df.write` / `df.writeStream` with format odradek)."""

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


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    """What one task wrote."""

    records: int


def _write(conf: dict[str, Any], topic: str | None, batches: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    producer = ArrowProducer(conf, topic)
    for batch in batches:
        producer.send(batch)
    return KafkaCommitMessage(producer.finish())


class KafkaBatchWriter(DataSourceArrowWriter):
    """Each task produces its rows and waits for their acknowledgement; nothing to do at job commit."""

    def __init__(self, sink: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, sink.topic)
        self.topic = sink.topic
        self.conf = producer_conf(sink.client)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.conf, self.topic, iterator)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """Streaming sink: at-least-once per micro-batch, like Spark's Kafka sink."""

    def __init__(self, sink: SinkOptions, schema: StructType) -> None:
        check_sink_schema(schema, sink.topic)
        self.topic = sink.topic
        self.conf = producer_conf(sink.client)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return _write(self.conf, self.topic, iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records were acknowledged when the tasks ended; a micro-batch commit has nothing left to do."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        """Records already sent stay in the topic (at-least-once)."""
