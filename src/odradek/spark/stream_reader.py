"""Streaming reads (`spark.readStream.format("odradek")`): micro-batches between Kafka-style offsets.

The offsets Spark writes to the checkpoint are the JSON of Spark's Kafka source, `{"topic":{"0":42}}`
(the next offset to read per partition). Each trigger looks up the partitions the subscription covers now
(new ones start at their earliest offset), caps the end by maxOffsetsPerTrigger shared by backlog, may
wait for minOffsetsPerTrigger up to maxTriggerDelay, and under Trigger.AvailableNow never passes the
offsets seen when the query began.

Unless commitOffsets is false, the end offsets of each batch Spark has committed go to a consumer group
(groupId) so that group tools, consoles and lag metrics show the query's progress; the checkpoint stays
the only source of truth for recovery (see group_commit). Spark calls `commit(end)` for a batch only when
it plans the next one, so `latestOffset` also commits its start (the end of the last batch in the commit
log): a query that has caught up shows no lag within one trigger.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from odradek.spark.dataloss import report_discontinuities
from odradek.spark.fetcher import read_range
from odradek.spark.group_commit import GroupCommitter
from odradek.spark.metadata import ClusterOffsets
from odradek.spark.offsets import (
    Offsets,
    backlog,
    cap_to_target,
    find_discontinuities,
    offsets_from_dict,
    offsets_to_dict,
    plan_ranges,
    rate_limit,
)
from odradek.spark.options import SourceOptions
from odradek.spark.partition import KafkaInputPartition
from odradek.spark.resolve import resolve_offsets


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader; one instance lives on the driver for the whole query."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.consumer_conf = opts.consumer_conf()
        self._cluster: ClusterOffsets | None = None
        self._target: Offsets | None = None
        self._latest: Offsets | None = None
        self._last_trigger_ms = 0.0
        self._committer: GroupCommitter | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cluster"] = None  # live clients stay on the driver
        state["_committer"] = None
        return state

    @property
    def cluster(self) -> ClusterOffsets:
        if self._cluster is None:
            o = self.opts
            self._cluster = ClusterOffsets(o.client, retries=o.fetch_retries, retry_interval_ms=o.fetch_retry_interval_ms)
        return self._cluster

    def _commit_progress(self, offsets: Offsets) -> None:
        """Commit offsets the checkpoint holds as processed to the query's consumer group (never raises)."""
        if not self.opts.commit_offsets:
            return
        if self._committer is None:
            self._committer = GroupCommitter(self.opts.client, self.opts.commit_group_id)
        self._committer.commit(offsets)

    def initialOffset(self) -> dict:
        tps = self.cluster.partitions(self.opts.subscription)
        return offsets_to_dict(resolve_offsets(self.opts.starting, tps, self.cluster, "startingOffsets"))

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        if self.opts.min_offsets_per_trigger:
            return ReadMinRows(self.opts.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self.cluster.latest(self.cluster.partitions(self.opts.subscription))

    def _delay(self, available: int) -> bool:
        """minOffsetsPerTrigger: wait for more records, but never longer than maxTriggerDelay."""
        now = time.time() * 1000
        if now - self._last_trigger_ms >= self.opts.max_trigger_delay_ms or available >= (self.opts.min_offsets_per_trigger or 0):
            self._last_trigger_ms = now
            return False
        return True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = offsets_from_dict(start, "checkpointed offset")
        self._commit_progress(begin)  # the end of the last committed batch (or where the query starts)
        tps = self.cluster.partitions(self.opts.subscription)
        latest = self.cluster.latest(tps)
        self._latest = latest
        new = [tp for tp in latest if tp not in begin]
        base = {**self.cluster.earliest(new), **{tp: off for tp, off in begin.items() if tp in latest}}
        end: Offsets = dict(latest)
        if self._target is not None:
            end = cap_to_target(end, begin, self._target)
        elif (self.opts.min_offsets_per_trigger and not isinstance(limit, ReadAllAvailable)
              and self._delay(backlog(base, end))):
            return offsets_to_dict(begin)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(limit.max_rows, {tp: base.get(tp, off) for tp, off in end.items()}, end)
        if end == begin:
            return offsets_to_dict(begin)
        return offsets_to_dict(end)

    def reportLatestOffset(self) -> dict | None:
        return offsets_to_dict(self._latest) if self._latest else None

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        begin = offsets_from_dict(start, "checkpointed start offset")
        until = offsets_from_dict(end, "checkpointed end offset")
        new = [tp for tp in until if tp not in begin]
        earliest_new = self.cluster.earliest(new) if new else {}
        report_discontinuities(find_discontinuities(begin, until, earliest_new), self.opts.fail_on_data_loss)
        base = {tp: begin.get(tp, earliest_new.get(tp, 0)) for tp in until}
        readable = {tp: off for tp, off in until.items() if off >= base[tp]}
        ranges = plan_ranges(base, readable, self.opts.min_partitions, self.opts.max_records_per_partition)
        return [KafkaInputPartition.of(i, r) for i, r in enumerate(ranges)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaInputPartition), f"unexpected partition {partition!r}"
        return read_range(self.consumer_conf, partition.range, include_headers=self.opts.include_headers,
                          fail_on_data_loss=self.opts.fail_on_data_loss, poll_timeout_ms=self.opts.poll_timeout_ms)

    def commit(self, end: dict) -> None:
        """Spark has committed the batch ending at `end`: show it in the consumer group. Recovery never reads
        the group; progress lives in the query's checkpoint, as with Spark's Kafka source."""
        try:
            self._commit_progress(offsets_from_dict(end, "committed end offset"))
        except ValueError:
            pass  # not offsets of ours; Spark checks them where it matters

    def stop(self) -> None:
        if self._committer is not None:
            self._committer.close()
            self._committer = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
