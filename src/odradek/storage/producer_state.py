"""Producer state of one partition: for each producer id, its epoch, the sequence ranges and offsets of
its last five batches, and the first offset of its ongoing transaction.

Used by the log to reject out-of-order or fenced writes, to answer retried batches with their original
offsets instead of writing them twice, and for transactions (KIP-98): a transactional batch from a
producer with no ongoing transaction starts one; a commit/abort marker ends it. The first unstable
offset is the first offset of the oldest transaction that is ongoing, or ended by a marker the high
watermark has not yet passed; the last stable offset (what read_committed consumers may read up to) is
the smaller of it and the high watermark. Rebuilt from batch headers (and markers' control records),
or read from a snapshot (`<offset>.snapshot`, Kafka's format) and the batches after it.

Transaction verification (KIP-890 part 1): before the first transactional batch of a producer's
transaction is appended, the leader asks the transaction coordinator whether the partition is in that
transaction. `start_verification` gives the producer a fresh guard (a `VerificationEntry`) the append must
present; the first transactional batch or marker appended for the producer drops it, so an answer that
arrives after the transaction ended (a marker in between) no longer matches. Later batches of the same
transaction need no guard: the producer's ongoing transaction is proof that it was verified.
"""

from __future__ import annotations

import itertools
import struct
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from odradek.fsutil import atomic_write
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import ABORT_MARKER, COMMIT_MARKER, BatchHeader

NUM_BATCHES_TO_RETAIN = 5
INT32_MAX = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAP_HEAD = struct.Struct(">hI")  # version, crc32c of the rest
# per partition: verifications under way at once; past it the oldest entry goes (its producer's append then
# fails with INVALID_TXN_STATE), so producer ids that verify and never append cannot grow memory
MAX_VERIFICATIONS = 1_000
NO_GUARD = 0  # Kafka's sentinel guard: never verifies anything
_guards = itertools.count(1)
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")  # pid, epoch, last seq, last offset, offset delta, timestamp,
#                                           coordinator epoch, current txn first offset


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
    txn_first_offset: int = -1  # first offset of the ongoing transaction, -1 if none
    coordinator_epoch: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


@dataclass(slots=True)
class VerificationEntry:
    """A verification under way for a producer with no ongoing transaction here: the guard its append must
    present, and the lowest sequence (of its newest epoch) seen meanwhile, so a later batch cannot be
    appended before an earlier one whose verification failed with a retriable error."""

    guard: int
    lowest_seq: int
    epoch: int

    def saw(self, seq: int, epoch: int) -> None:
        if epoch == self.epoch and seq < self.lowest_seq:
            self.lowest_seq = seq
        elif epoch > self.epoch:
            self.epoch, self.lowest_seq = epoch, seq


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker ended: [first_offset, last_offset] where last_offset is the marker's."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


def last_sequence(h: BatchHeader) -> int:
    """The sequence number of the batch's last record (sequences wrap at Int32.MAX)."""
    s = h.base_sequence + h.last_offset_delta
    return s - INT32_MAX - 1 if s > INT32_MAX else s


def _next_seq(seq: int) -> int:
    return 0 if seq == INT32_MAX else seq + 1


def snapshot_name(offset: int) -> str:
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        # producer id -> first offset of its open transaction (the entries' txn_first_offset, kept apart so
        # the last stable offset, asked on every fetch, need not look at every producer)
        self.open_txns: dict[int, int] = {}
        # transactions ended by a marker at or above the high watermark (still unstable), oldest first
        self.unreplicated: deque[CompletedTxn] = deque()
        self.verifications: dict[int, VerificationEntry] = {}  # producer id -> verification under way

    # ---- transaction verification (KIP-890 part 1) ----
    def start_verification(self, producer_id: int, sequence: int, epoch: int) -> int:
        """The guard a transactional append of the producer must present, or NO_GUARD when it has an
        ongoing transaction here (nothing to verify). Repeated calls before the append share one guard."""
        if self._in_open_txn(producer_id, epoch):
            return NO_GUARD
        entry = self.verifications.get(producer_id)
        if entry is None:
            if len(self.verifications) >= MAX_VERIFICATIONS:
                del self.verifications[next(iter(self.verifications))]  # the oldest
            entry = self.verifications[producer_id] = VerificationEntry(next(_guards), sequence, epoch)
        else:
            entry.saw(sequence, epoch)
        return entry.guard

    def _in_open_txn(self, producer_id: int, epoch: int) -> bool:
        """Whether a batch of this producer at `epoch` continues its transaction open here. With transaction
        version 2 a batch of the next epoch belongs to the next transaction, whatever is still open (its
        marker not written yet): that one must be added, and so verified, too."""
        entry = self.producers.get(producer_id)
        return producer_id in self.open_txns and entry is not None and entry.epoch == epoch

    def _check_verified(self, h: BatchHeader, guard: int) -> None:
        entry = self.verifications.get(h.producer_id)
        if (not self._in_open_txn(h.producer_id, h.producer_epoch)
                and (guard == NO_GUARD or entry is None or entry.guard != guard)):
            raise KafkaError(ErrorCode.INVALID_TXN_STATE, "Record was not part of an ongoing transaction")
        if entry is not None and h.base_sequence > entry.lowest_seq:
            raise KafkaError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                             f"Out of order sequence number for producer {h.producer_id}: {h.base_sequence} "
                             f"(incoming seq. number), {entry.lowest_seq} (earliest seen sequence)")

    def find_duplicate(self, h: BatchHeader) -> BatchMeta | None:
        """The cached batch this one repeats (a producer retry), if any."""
        entry = self.producers.get(h.producer_id)
        if h.producer_id < 0 or entry is None or entry.epoch != h.producer_epoch or h.base_sequence < 0:
            return None
        last = last_sequence(h)
        for b in entry.batches:
            if b.first_seq == h.base_sequence and b.last_seq == last:
                return b
        return None

    def check(self, h: BatchHeader, pending: dict[int, int] | None = None, coordinator_epoch: int = -1,
              transaction_version: int = 0, verification_guard: int | None = None) -> None:
        """Raise the Kafka error for a batch that may not be appended (as leader); `pending` holds last
        sequences of batches earlier in the same request (pid -> last seq); `coordinator_epoch` and
        `transaction_version` are a marker's: from transaction version 2 the coordinator bumps the epoch
        before it writes the markers, so a marker's epoch must be above the producer's (KIP-1228), where
        older versions accept the same epoch. With `verification_guard` (a client's append while
        transaction verification is on) a transactional batch must continue an ongoing transaction of
        its producer or present the guard of its verification (`start_verification`)."""
        if h.producer_id < 0:
            return
        if verification_guard is not None and h.is_transactional and not h.is_control:
            self._check_verified(h, verification_guard)
        entry = self.producers.get(h.producer_id)
        last_seq = pending.get(h.producer_id) if pending and h.producer_id in pending else None
        if entry is None:
            return  # a new producer, or one whose state expired: accept whatever sequence it starts at
        if h.is_control and 0 <= coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                             f"Marker of producer {h.producer_id} from coordinator epoch {coordinator_epoch}, older "
                             f"than the epoch {entry.coordinator_epoch} of its last marker")
        if (not h.is_control and not h.is_transactional and entry.txn_first_offset >= 0
                and h.producer_epoch == entry.epoch):
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"Non-transactional batch of producer {h.producer_id}, which has a transaction open "
                             f"since offset {entry.txn_first_offset}")
        if h.is_control and transaction_version >= 2 and h.producer_epoch <= entry.epoch:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                             f"Marker epoch {h.producer_epoch} of producer {h.producer_id} (transaction version "
                             f"{transaction_version}) is not above its current epoch {entry.epoch}")
        if h.producer_epoch < entry.epoch:
            if h.is_control:
                raise KafkaError(ErrorCode.INVALID_PRODUCER_EPOCH,
                                 f"Marker epoch {h.producer_epoch} of producer {h.producer_id} is older than "
                                 f"its current epoch {entry.epoch}")
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

    def update(self, h: BatchHeader, first_offset: int, marker: int | None = None,
               coordinator_epoch: int = -1) -> CompletedTxn | None:
        """Record an appended batch (its offsets as assigned). For a control batch `marker` is its type
        (COMMIT_MARKER/ABORT_MARKER); the transaction it ends is returned."""
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if h.is_transactional:
            # a first offset or a marker: a verification under way no longer applies, except one of an
            # epoch above the producer's before this marker (transaction version 2: the marker carries the
            # bumped epoch, and that verification is the next transaction's, which the coordinator adds
            # only once this one is complete)
            verifying = self.verifications.get(h.producer_id)
            if verifying is not None and not (h.is_control and entry is not None and verifying.epoch > entry.epoch):
                del self.verifications[h.producer_id]
        if entry is None or h.producer_epoch != entry.epoch:
            txn_first = entry.txn_first_offset if entry is not None else -1
            entry = ProducerEntry(h.producer_epoch, txn_first_offset=txn_first)
            self.producers[h.producer_id] = entry
        last_offset = first_offset + h.last_offset_delta
        entry.last_timestamp = max(entry.last_timestamp, h.max_timestamp)
        if h.is_control:
            if marker not in (COMMIT_MARKER, ABORT_MARKER):
                return None
            entry.coordinator_epoch = coordinator_epoch
            start, entry.txn_first_offset = entry.txn_first_offset, -1
            self.open_txns.pop(h.producer_id, None)
            if start < 0:
                return None  # no transaction of this producer here (a marker of a retried end, say)
            done = CompletedTxn(h.producer_id, start, last_offset, marker == ABORT_MARKER)
            self.unreplicated.append(done)
            return done
        if h.is_transactional and entry.txn_first_offset < 0:
            entry.txn_first_offset = self.open_txns[h.producer_id] = first_offset
        if h.base_sequence >= 0:
            entry.batches.append(BatchMeta(h.base_sequence, last_sequence(h), first_offset, last_offset,
                                           h.max_timestamp))
        return None

    # ---- stability ----
    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the oldest transaction not yet stable at this high watermark, or None."""
        while self.unreplicated and self.unreplicated[0].last_offset < high_watermark:
            self.unreplicated.popleft()
        firsts = list(self.open_txns.values())
        if self.unreplicated:
            firsts.append(min(t.first_offset for t in self.unreplicated))
        return min(firsts) if firsts else None

    def ongoing(self) -> dict[int, int]:
        """producer id -> first offset of its ongoing transaction."""
        return dict(self.open_txns)

    def clear(self) -> None:
        self.producers.clear()
        self.open_txns.clear()
        self.unreplicated.clear()
        self.verifications.clear()

    # ---- snapshots (Kafka's producer snapshot file) ----
    def write_snapshot(self, path: Path) -> None:
        body = bytearray(struct.pack(">i", len(self.producers)))
        for pid, e in sorted(self.producers.items()):
            last = e.batches[-1] if e.batches else None
            body += _SNAP_ENTRY.pack(
                pid, e.epoch, last.last_seq if last else -1, last.last_offset if last else -1,
                (last.last_offset - last.first_offset) if last else 0, e.last_timestamp, e.coordinator_epoch,
                e.txn_first_offset)
        atomic_write(path, _SNAP_HEAD.pack(SNAPSHOT_VERSION, crc32c(bytes(body))) + bytes(body))

    def read_snapshot(self, path: Path) -> None:
        """Replace the state with a snapshot's; raises ValueError if it is not a valid one."""
        data = path.read_bytes()
        if len(data) < _SNAP_HEAD.size + 4:
            raise ValueError(f"{path.name}: too short")
        version, crc = _SNAP_HEAD.unpack_from(data, 0)
        body = data[_SNAP_HEAD.size:]
        if version != SNAPSHOT_VERSION:
            raise ValueError(f"{path.name}: unknown version {version}")
        if crc32c(body) != crc:
            raise ValueError(f"{path.name}: CRC mismatch")
        (count,) = struct.unpack_from(">i", body, 0)
        if count < 0 or 4 + count * _SNAP_ENTRY.size != len(body):
            raise ValueError(f"{path.name}: bad entry count {count}")
        self.clear()
        for i in range(count):
            pid, epoch, last_seq, last_offset, delta, ts, coord, txn_first = _SNAP_ENTRY.unpack_from(
                body, 4 + i * _SNAP_ENTRY.size)
            entry = ProducerEntry(epoch, last_timestamp=ts, txn_first_offset=txn_first, coordinator_epoch=coord)
            if last_seq >= 0:
                first_seq = last_seq - delta if last_seq >= delta else last_seq - delta + INT32_MAX + 1
                entry.batches.append(BatchMeta(first_seq, last_seq, last_offset - delta, last_offset, ts))
            self.producers[pid] = entry
            if txn_first >= 0:
                self.open_txns[pid] = txn_first
