"""The unit of work Spark hands to a task: one offset range of one topic-partition."""

from __future__ import annotations

from pyspark.sql.datasource import InputPartition

from odradek.spark.offsets import TP, OffsetRange


class KafkaInputPartition(InputPartition):
    """Read records [start, until) of topic-partition (topic, partition). Picklable, small."""

    def __init__(self, index: int, topic: str, partition: int, start: int, until: int) -> None:
        super().__init__(index)
        self.topic = topic
        self.partition = partition
        self.start = start
        self.until = until

    @classmethod
    def of(cls, index: int, r: OffsetRange) -> KafkaInputPartition:
        return cls(index, r.tp.topic, r.tp.partition, r.start, r.until)

    @property
    def range(self) -> OffsetRange:
        return OffsetRange(TP(self.topic, self.partition), self.start, self.until)

    def __repr__(self) -> str:
        return f"KafkaInputPartition({self.topic}-{self.partition} [{self.start}, {self.until}))"
