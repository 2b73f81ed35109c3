"""One transactional id's metadata and the transitions Kafka's transaction coordinator allows: pure state,
no I/O. The coordinator checks a request against it (`check_producer`), computes the next state
(`prepare_*`), persists that, and only then applies it (`apply`), so a failed write leaves memory as the
log has it. `pending` marks a transition being written; requests meanwhile get CONCURRENT_TRANSACTIONS."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass, field, replace

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.txn.schemas import TxnLogValue

MAX_EPOCH = 32767  # Short.MAX_VALUE: at this epoch the producer gets a new producer id
NO_PRODUCER_ID = -1
NO_EPOCH = -1


def now_ms() -> int:
    return int(time.time() * 1000)


class TxnState(enum.IntEnum):
    """Kafka's TransactionState, with the byte each state has in the log."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def label(self) -> str:
        """The name DescribeTransactions, ListTransactions and kafka-transactions.sh use."""
        return _LABELS[self]

    @property
    def completed(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)


_LABELS = {
    TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}

TopicPartition = tuple[str, int]


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[TopicPartition] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    last_producer_epoch: int = NO_EPOCH  # the epoch before the last bump (a retried InitProducerId's)
    pending: bool = False

    # ---- persistence ----
    def to_value(self) -> TxnLogValue:
        parts: dict[str, list[int]] = {}
        for topic, p in sorted(self.partitions):
            parts.setdefault(topic, []).append(p)
        state = TxnState.PREPARE_ABORT if self.state is TxnState.PREPARE_EPOCH_FENCE else self.state
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, int(state), parts,
                           self.update_ms, self.start_ms)

    @classmethod
    def from_value(cls, transactional_id: str, v: TxnLogValue) -> TxnMetadata:
        try:
            state = TxnState(v.status)
        except ValueError:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown transaction status {v.status}") from None
        parts = {(t, p) for t, ps in v.partitions.items() for p in ps}
        return cls(transactional_id, v.producer_id, v.producer_epoch, v.timeout_ms, state, parts, v.start_ms,
                   v.last_update_ms)

    def copy(self) -> TxnMetadata:
        return replace(self, partitions=set(self.partitions), pending=False)

    # ---- checks ----
    def check_producer(self, producer_id: int, epoch: int) -> None:
        """A request naming this id must carry its producer id and current epoch (Kafka's errors)."""
        if producer_id != self.producer_id:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"Producer id {producer_id} does not match transactional id {self.transactional_id}'s "
                             f"producer id {self.producer_id}")
        if epoch != self.producer_epoch:
            raise KafkaError(ErrorCode.PRODUCER_FENCED,
                             f"Producer epoch {epoch} is not the current epoch {self.producer_epoch} of "
                             f"transactional id {self.transactional_id}: there is a newer producer with the same "
                             f"transactional id")
        if self.pending:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"A state change of transactional id {self.transactional_id} is in progress")

    # ---- transitions: each returns the next metadata, leaving self unchanged ----
    def prepare_epoch_bump(self, new_producer_id: int | None, timeout_ms: int, now: int) -> TxnMetadata:
        """InitProducerId on a completed transaction: a new epoch (or a new id once epochs run out)."""
        nxt = self.copy()
        if new_producer_id is not None:
            nxt.producer_id, nxt.producer_epoch, nxt.last_producer_epoch = new_producer_id, 0, NO_EPOCH
        else:
            nxt.last_producer_epoch, nxt.producer_epoch = self.producer_epoch, self.producer_epoch + 1
        nxt.timeout_ms, nxt.state, nxt.partitions = timeout_ms, TxnState.EMPTY, set()
        nxt.start_ms, nxt.update_ms = -1, now
        return nxt

    def prepare_add_partitions(self, partitions: set[TopicPartition], now: int) -> TxnMetadata:
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"Transactional id {self.transactional_id} is completing a transaction")
        if self.state is TxnState.DEAD:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE, f"Transactional id {self.transactional_id} has expired")
        nxt = self.copy()
        if self.state is not TxnState.ONGOING:
            nxt.start_ms = now
            nxt.partitions = set()
        nxt.state = TxnState.ONGOING
        nxt.partitions |= partitions
        nxt.update_ms = now
        return nxt

    def prepare_end(self, commit: bool, now: int) -> TxnMetadata:
        if self.state is not TxnState.ONGOING:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"EndTxn ({'commit' if commit else 'abort'}) of transactional id "
                             f"{self.transactional_id} in state {self.state.label}")
        nxt = self.copy()
        nxt.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        nxt.update_ms = now
        return nxt

    def prepare_fence_abort(self, now: int) -> TxnMetadata:
        """Abort an ongoing transaction with the epoch bumped, so its producer is fenced (a timeout, or a
        new producer with the same transactional id)."""
        nxt = self.copy()
        if self.producer_epoch < MAX_EPOCH:
            nxt.last_producer_epoch, nxt.producer_epoch = self.producer_epoch, self.producer_epoch + 1
        nxt.state = TxnState.PREPARE_ABORT
        nxt.update_ms = now
        return nxt

    def prepare_complete(self, now: int) -> TxnMetadata:
        nxt = self.copy()
        nxt.state = TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        nxt.partitions = set()
        nxt.update_ms = now
        return nxt

    def apply(self, nxt: TxnMetadata) -> None:
        for name in ("producer_id", "producer_epoch", "timeout_ms", "state", "partitions", "start_ms", "update_ms",
                     "last_producer_epoch"):
            setattr(self, name, getattr(nxt, name))
