"""Batch reads (`spark.read.format("odradek")`): a fixed range per partition, planned once."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition

from odradek.spark.fetcher import read_range
from odradek.spark.metadata import ClusterOffsets
from odradek.spark.offsets import plan_ranges
from odradek.spark.options import SourceOptions
from odradek.spark.partition import KafkaInputPartition
from odradek.spark.resolve import resolve_offsets


class KafkaBatchReader(DataSourceReader):
    """Reads [startingOffsets, endingOffsets) of every partition the subscription covers."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.consumer_conf = opts.consumer_conf()

    def partitions(self) -> list[InputPartition]:
        o = self.opts
        cluster = ClusterOffsets(o.client, retries=o.fetch_retries, retry_interval_ms=o.fetch_retry_interval_ms)
        try:
            tps = cluster.partitions(o.subscription)
            start = resolve_offsets(o.starting, tps, cluster, "startingOffsets")
            end = resolve_offsets(o.ending, tps, cluster, "endingOffsets")
        finally:
            cluster.close()
        for tp in tps:
            if end[tp] < start[tp]:
                raise ValueError(f"The ending offset {end[tp]} of {tp} is smaller than its starting offset "
                                 f"{start[tp]} (startingOffsets/endingOffsets)")
        ranges = plan_ranges(start, end, o.min_partitions, o.max_records_per_partition)
        return [KafkaInputPartition.of(i, r) for i, r in enumerate(ranges)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaInputPartition):
            return iter(())  # Spark's placeholder partition when there is nothing to read
        return read_range(self.consumer_conf, partition.range, include_headers=self.opts.include_headers,
                          fail_on_data_loss=self.opts.fail_on_data_loss, poll_timeout_ms=self.opts.poll_timeout_ms)
