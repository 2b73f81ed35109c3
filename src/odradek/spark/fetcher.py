"""Executor side of the source: read one offset range of one partition as Arrow batches.

A consumer is assigned the partition at the range start (no group membership, no commits) and drained
with large `consume(num_messages=...)` calls until the range end. Records past the end that librdkafka
prefetched are dropped. Offsets inside the range may hold no record the consumer returns: compaction
removed it, it is a transaction marker (a control batch, never returned), or, under read_committed, it
belongs to an aborted transaction (skipped). So the read ends when the consumer has got to the range end,
whichever tells first: a record at or past the end, the consumer's position (which librdkafka moves past
control records), or the end-of-partition event. Records that are gone (start below the log start offset,
or the log now ending before the range end) are data loss: an error naming topic, partition and offsets,
or a warning and a skip when failOnDataLoss is false.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from odradek.spark.arrow_rows import messages_to_batch
from odradek.spark.dataloss import report_data_loss
from odradek.spark.offsets import OffsetRange


def _offset(m: Message) -> int:
    """A fetched record's offset (only produce delivery reports can lack one)."""
    off = m.offset()
    assert off is not None
    return off

# Throughput defaults for bounded reads; any `kafka.` option overrides them.
CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    "isolation.level": "read_uncommitted",  # the source option kafka.isolation.level sets it
    "fetch.queue.backoff.ms": 5,
    "queued.min.messages": 200_000,
    "max.partition.fetch.bytes": 4 << 20,
    "fetch.max.bytes": 64 << 20,
    "fetch.wait.max.ms": 100,
}
# What the read loop relies on; never overridden.
CONSUMER_FIXED: dict[str, Any] = {"enable.partition.eof": True, "auto.offset.reset": "error"}

MAX_BATCH_ROWS = 50_000
IDLE_CHECK_S = 2.0  # after this long without records, ask the broker where the partition starts and ends
SHORT_CHECKS = 3  # idle checks in a row that must find the log ending before the range end to call it loss
_OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}


class RangeReader:
    """Reads one OffsetRange; iterate `batches()` once."""

    def __init__(self, conf: Mapping[str, Any], r: OffsetRange, *, include_headers: bool,
                 fail_on_data_loss: bool, poll_timeout_ms: int, max_batch_rows: int = MAX_BATCH_ROWS) -> None:
        self.conf = {**CONSUMER_DEFAULTS, **conf, **CONSUMER_FIXED}
        self.range = r
        self.include_headers = include_headers
        self.fail = fail_on_data_loss
        self.poll_timeout = poll_timeout_ms / 1000.0
        self.max_batch_rows = max_batch_rows
        self.position = r.start
        self._short_checks = 0

    def _where(self) -> str:
        tp = self.range.tp
        return f"topic {tp.topic!r} partition {tp.partition}"

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.range.size == 0:
            return
        consumer = Consumer(self.conf)
        try:
            self._assign(consumer)
            yield from self._drain(consumer)
        finally:
            consumer.close()

    def _assign(self, consumer: Consumer) -> None:
        tp = self.range.tp
        consumer.assign([TopicPartition(tp.topic, tp.partition, self.position)])

    def _drain(self, consumer: Consumer) -> Iterator[pa.RecordBatch]:
        tp, until = self.range.tp, self.range.until
        idle_since = last_check = time.monotonic()
        while self.position < until:
            want = max(1, min(self.max_batch_rows, until - self.position))
            msgs = consumer.consume(num_messages=want, timeout=0.5)
            if not msgs:
                self._follow_position(consumer)
                if self.position >= until:
                    break
                now = time.monotonic()
                if now - idle_since > self.poll_timeout:
                    raise TimeoutError(
                        f"Timed out after {self.poll_timeout:.0f} s (kafkaConsumer.pollTimeoutMs) waiting for records "
                        f"of {self._where()} at offset {self.position}, reading offsets [{self.range.start}, {until})")
                if now - last_check > IDLE_CHECK_S:
                    last_check = now
                    self._check_bounds(consumer)
                continue
            idle_since = time.monotonic()
            good = [m for m in msgs if m.error() is None]
            errors = [m for m in msgs if m.error() is not None] if len(good) != len(msgs) else []
            if good:
                if _offset(good[-1]) >= until:
                    good = [m for m in good if _offset(m) < until]
                if good and _offset(good[0]) < self.position:
                    good = [m for m in good if _offset(m) >= self.position]
                if good:
                    self.position = _offset(good[-1]) + 1
                    yield messages_to_batch(good, tp.topic, tp.partition, self.include_headers)
                if msgs[-1].error() is None and _offset(msgs[-1]) >= until - 1:
                    self.position = until
            for m in errors:
                if self.position >= until:
                    break
                self._on_error(consumer, m)
            if self.position < until:
                self._follow_position(consumer)

    def _follow_position(self, consumer: Consumer) -> None:
        """Move past offsets that hold no record for us (transaction markers, aborted records) by the
        consumer's own position: the offset after the last record or control record it consumed."""
        tp = self.range.tp
        try:
            pos = consumer.position([TopicPartition(tp.topic, tp.partition)])[0].offset
        except KafkaException:
            return
        if pos > self.position:
            self.position = min(pos, self.range.until)

    def _on_error(self, consumer: Consumer, m: Any) -> None:
        err: KafkaError = m.error()
        until = self.range.until
        if err.code() == KafkaError._PARTITION_EOF:
            end = m.offset()
            if end is None or end < self.position:
                return  # a stale event from before the last seek
            if end >= until:
                self.position = until  # the rest of the range holds no records (compacted, control batches)
            # An end below the range end may be a new leader's high watermark that has not caught up yet:
            # the idle check decides, if no more records come.
            return
        if err.code() in _OUT_OF_RANGE:
            time.sleep(0.1)  # librdkafka stopped fetching this partition; look, then assign it again
            self._check_bounds(consumer, reassign=True)
            return
        if err.fatal() or not err.retriable():
            raise KafkaException(err)

    def _check_bounds(self, consumer: Consumer, reassign: bool = False) -> None:
        """Compare the next offset with the partition's [log start, high watermark): below the start is data
        loss; at or past the end for several checks in a row too (the log was truncated)."""
        tp, until = self.range.tp, self.range.until
        try:
            low, high = consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), timeout=10)
        except KafkaException:
            low = high = -1  # unknown
        if low < 0 or high < 0:  # cannot tell now (-1001: no answer); the poll timeout still applies
            low, high = self.position, self.position + 1
        if low <= self.position < high:
            self._short_checks = 0
        elif self.position < low:
            lost_to = min(low, until)
            report_data_loss(
                f"Cannot fetch offset {self.position} of {self._where()}: offsets [{self.position}, {lost_to}) were "
                f"deleted, the earliest available offset is {low} (reading offsets [{self.range.start}, {until}))",
                self.fail)
            self.position = lost_to
            reassign = True
        else:
            self._short_checks += 1
            if self._short_checks >= SHORT_CHECKS:
                report_data_loss(
                    f"Cannot fetch offset {self.position} of {self._where()}: the partition ends at offset {high} "
                    f"(reading offsets [{self.range.start}, {until}))", self.fail)
                self.position = until
        if reassign and self.position < until:
            self._assign(consumer)


def read_range(conf: Mapping[str, Any], r: OffsetRange, *, include_headers: bool, fail_on_data_loss: bool,
               poll_timeout_ms: int) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records [r.start, r.until) of r.tp."""
    reader = RangeReader(conf, r, include_headers=include_headers, fail_on_data_loss=fail_on_data_loss,
                         poll_timeout_ms=poll_timeout_ms)
    return reader.batches()
