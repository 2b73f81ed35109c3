"""Idempotent-producer state of one partition: for each producer id, its epoch and the sequence ranges and
offsets of its last five batches. Used by the log to reject out-of-order or fenced writes and to answer
retried batches with their original offsets instead of writing them twice. Rebuilt from batch headers."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import BatchHeader

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1


@dataclass(slots=True)
class BatchMeta:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[BatchMeta] = field(default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN))
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def last_sequence(h: BatchHeader) -> int:
    """The sequence number of the batch's last record (sequences wrap at Int32.MAX)."""
    s = h.base_sequence + h.last_offset_delta
    return s - INT32_MAX - 1 if s > INT32_MAX else s


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def find_duplicate(self, h: BatchHeader) -> BatchMeta | None:
        """The cached batch this one repeats (a producer retry), if any."""
        entry = self.producers.get(h.producer_id)
        if h.producer_id < 0 or entry is None or entry.epoch != h.producer_epoch:
            return None
        last = last_sequence(h)
        for b in entry.batches:
            if b.first_seq == h.base_sequence and b.last_seq == last:
                return b
        return None

    def check(self, h: BatchHeader, pending: dict[int, int] | None = None) -> None:
        """Raise the Kafka error for a batch that may not be appended; `pending` holds last sequences of
        batches earlier in the same request (pid -> last seq)."""
        if h.producer_id < 0:
            return
        entry = self.producers.get(h.producer_id)
        last_seq = pending.get(h.producer_id) if pending and h.producer_id in pending else None
        if entry is None:
            return  # a new producer, or one whose state expired: accept whatever sequence it starts at
        if h.producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch {h.producer_epoch} of producer {h.producer_id} is older than current epoch {entry.epoch}",
            )
        if h.base_sequence < 0:
            return  # markers and coordinator-written batches carry no sequence
        if h.producer_epoch > entry.epoch:
            if h.base_sequence != 0:
                raise KafkaError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"New epoch {h.producer_epoch} of producer {h.producer_id} starts at sequence "
                    f"{h.base_sequence}, not 0",
                )
            return
        current = entry.last_seq if last_seq is None else last_seq
        if current >= 0 and h.base_sequence != _next_seq(current):
            raise KafkaError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {h.producer_id}: {h.base_sequence} "
                f"(incoming batch), {current} (current end sequence)",
            )

    def update(self, h: BatchHeader, first_offset: int) -> None:
        """Record an appended batch (its offsets as assigned)."""
        if h.producer_id < 0:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None or h.producer_epoch != entry.epoch:
            entry = ProducerEntry(h.producer_epoch)
            self.producers[h.producer_id] = entry
        if h.base_sequence < 0:
            return
        entry.batches.append(
            BatchMeta(
                h.base_sequence,
                last_sequence(h),
                first_offset,
                first_offset + h.last_offset_delta,
                h.max_timestamp,
            )
        )
        entry.last_timestamp = h.max_timestamp

    def clear(self) -> None:
        self.producers.clear()
