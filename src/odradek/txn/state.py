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
TV2 = 2  # transaction version 2 (KIP-890 part 2): the epoch is bumped at every transaction's end
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
    client_txn_version: int = 0  # of the client that started or ended the transaction (2: TV2)
    next_producer_id: int = NO_PRODUCER_ID  # TV2: the id the producer moves to once the epochs ran out
    previous_producer_id: int = NO_PRODUCER_ID  # TV2: the id before that move (a retried EndTxn's)
    pending: bool = False

    @property
    def bumps_at_end(self) -> bool:
        """TV2: every EndTxn bumps the epoch (so a retry carries the epoch before the bump)."""
        return self.client_txn_version >= TV2 and self.state is not TxnState.PREPARE_EPOCH_FENCE

    # ---- persistence ----
    def to_value(self) -> TxnLogValue:
        parts: dict[str, list[int]] = {}
        for topic, p in sorted(self.partitions):
            parts.setdefault(topic, []).append(p)
        state = TxnState.PREPARE_ABORT if self.state is TxnState.PREPARE_EPOCH_FENCE else self.state
        return TxnLogValue(self.producer_id, self.producer_epoch, self.timeout_ms, int(state), parts,
                           self.update_ms, self.start_ms, self.previous_producer_id, self.next_producer_id,
                           self.client_txn_version)

    @classmethod
    def from_value(cls, transactional_id: str, v: TxnLogValue) -> TxnMetadata:
        try:
            state = TxnState(v.status)
        except ValueError:
            raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, f"unknown transaction status {v.status}") from None
        parts = {(t, p) for t, ps in v.partitions.items() for p in ps}
        return cls(transactional_id, v.producer_id, v.producer_epoch, v.timeout_ms, state, parts, v.start_ms,
                   v.last_update_ms, client_txn_version=v.client_txn_version, next_producer_id=v.next_producer_id,
                   previous_producer_id=v.previous_producer_id)

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
        nxt.client_txn_version, nxt.next_producer_id, nxt.previous_producer_id = 0, NO_PRODUCER_ID, NO_PRODUCER_ID
        return nxt

    def prepare_add_partitions(self, partitions: set[TopicPartition], now: int, txn_version: int = 0
                               ) -> TxnMetadata:
        """`txn_version` 2 when a leader adds the partition for a TV2 producer's first batch there."""
        if self.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS,
                             f"Transactional id {self.transactional_id} is completing a transaction")
        if self.state is TxnState.DEAD:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE, f"Transactional id {self.transactional_id} has expired")
        nxt = self.copy()
        if self.state is not TxnState.ONGOING:
            nxt.start_ms = now
            nxt.partitions = set()
            nxt.client_txn_version = txn_version
        nxt.state = TxnState.ONGOING
        nxt.partitions |= partitions
        nxt.update_ms = now
        return nxt

    def prepare_end(self, commit: bool, now: int, txn_version: int = 0,
                    next_producer_id: int = NO_PRODUCER_ID) -> TxnMetadata:
        """PrepareCommit/PrepareAbort. With `txn_version` 2 (EndTxn v5) the epoch is bumped, the markers
        carry the bumped one; `next_producer_id` is the id the producer moves to when that bump uses the
        last epoch. TV2's abort with nothing open (the client cannot tell whether its first produce added
        a partition) is an abort of no partitions, which only bumps the epoch."""
        tv2_empty_abort = txn_version >= TV2 and not commit and self.state in (
            TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        if self.state is not TxnState.ONGOING and not tv2_empty_abort:
            raise KafkaError(ErrorCode.INVALID_TXN_STATE,
                             f"EndTxn ({'commit' if commit else 'abort'}) of transactional id "
                             f"{self.transactional_id} in state {self.state.label}")
        nxt = self.copy()
        nxt.state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        nxt.update_ms = now
        nxt.client_txn_version = txn_version
        if tv2_empty_abort:
            nxt.partitions, nxt.start_ms = set(), now
        if txn_version >= TV2:
            nxt.last_producer_epoch, nxt.producer_epoch = self.producer_epoch, self.producer_epoch + 1
            nxt.next_producer_id = next_producer_id
        return nxt

    def prepare_fence_abort(self, now: int) -> TxnMetadata:
        """Abort an ongoing transaction with the epoch bumped, so its producer is fenced (a timeout, or a
        new producer with the same transactional id)."""
        nxt = self.copy()
        # TV2: the fence's bump and the end's bump (as Kafka's coordinator does both), so the fenced
        # producer's epoch is not the one before the end's bump, which would pass for a retried EndTxn
        bump = 2 if self.client_txn_version >= TV2 else 1
        if self.producer_epoch < MAX_EPOCH:
            nxt.last_producer_epoch = self.producer_epoch
            nxt.producer_epoch = min(self.producer_epoch + bump, MAX_EPOCH)
        nxt.state = TxnState.PREPARE_ABORT
        nxt.update_ms = now
        return nxt

    def prepare_complete(self, now: int) -> TxnMetadata:
        nxt = self.copy()
        nxt.state = TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        nxt.partitions = set()
        nxt.update_ms = now
        if self.next_producer_id != NO_PRODUCER_ID:  # TV2's bump used the last epoch: the new id, once marked
            nxt.previous_producer_id, nxt.producer_id = self.producer_id, self.next_producer_id
            nxt.producer_epoch, nxt.next_producer_id = 0, NO_PRODUCER_ID
            nxt.last_producer_epoch = NO_EPOCH
        return nxt

    def apply(self, nxt: TxnMetadata) -> None:
        for name in ("producer_id", "producer_epoch", "timeout_ms", "state", "partitions", "start_ms", "update_ms",
                     "last_producer_epoch", "client_txn_version", "next_producer_id", "previous_producer_id"):
            setattr(self, name, getattr(nxt, name))
