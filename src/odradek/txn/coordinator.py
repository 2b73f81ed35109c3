"""The transaction coordinator (KIP-98, with KIP-360's epoch bump): the transactional ids of the
`__transaction_state` partitions this broker leads, their producer ids and epochs, and the two-phase end
of each transaction.

- InitProducerId gives a transactional id its producer id, bumping the epoch on every call, which
  fences older producers with the same id; an ongoing transaction is aborted first (the caller retries
  on CONCURRENT_TRANSACTIONS meanwhile, as Kafka's clients do).
- AddPartitionsToTxn / AddOffsetsToTxn move the id to Ongoing and record its partitions.
- EndTxn writes PrepareCommit/PrepareAbort (the decision, durable once written), answers, then has the
  markers written to every partition and writes CompleteCommit/CompleteAbort.
- Transactions open past their timeout are aborted with a bumped epoch; ids idle past
  `transactional.id.expiration.ms` are removed (a tombstone in the log).
- A broker that becomes leader of a `__transaction_state` partition loads it and finishes what the old
  coordinator left prepared (markers again: they are idempotent for readers).

Every state change is written to the log first and applied to memory after, so what a client was told
is what a new coordinator loads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from odradek.aio import TaskSet
from odradek.cluster.producer_ids import ProducerIdAllocator
from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.partitions import Replayed
from odradek.coordinator.runtime import CoordinatorRuntime, TopicSettings
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.txn import TRANSACTION_STATE_TOPIC, schemas
from odradek.txn.markers import MarkerSender
from odradek.txn.state import MAX_EPOCH, TopicPartition, TxnMetadata, TxnState, now_ms

if TYPE_CHECKING:
    from odradek.config import BrokerConfig

log = logging.getLogger("odradek.txn")


@dataclass(frozen=True, slots=True)
class TxnSettings:
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000
    abort_interval_ms: int = 10_000
    remove_interval_ms: int = 3_600_000

    @classmethod
    def from_config(cls, cfg: BrokerConfig) -> TxnSettings:
        return cls(int(cfg.get("transaction.max.timeout.ms")), int(cfg.get("transactional.id.expiration.ms")),
                   int(cfg.get("transaction.abort.timed.out.transaction.cleanup.interval.ms")),
                   int(cfg.get("transaction.remove.expired.transaction.cleanup.interval.ms")))


def txn_topic_settings(cfg: BrokerConfig) -> TopicSettings:
    return TopicSettings.from_config(cfg, TRANSACTION_STATE_TOPIC, "transaction.state.log",
                                     write_timeout_ms=cfg.get("request.timeout.ms"),
                                     load_buffer=cfg.get("transaction.state.log.load.buffer.size"))


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, TxnMetadata]:
    """Fold a partition's records, oldest first, into the transactional ids they leave behind."""
    out: dict[str, TxnMetadata] = {}
    for raw_key, raw_value in records:
        if raw_key is None:
            continue
        try:
            tid = schemas.decode_key(raw_key)
            value = schemas.decode_value(raw_value)
            if value is None:
                out.pop(tid, None)
            else:
                out[tid] = TxnMetadata.from_value(tid, value)
        except (schemas.SchemaError, KafkaError) as exc:
            log.warning("Skipping malformed record in %s: %s", TRANSACTION_STATE_TOPIC, exc)
    return out


TxnRuntime = CoordinatorRuntime[dict[str, TxnMetadata]]


class TransactionCoordinator:
    """The transactional ids of the `__transaction_state` partitions this broker leads: the
    `CoordinatorShard` its runtime loads them into."""

    def __init__(self, settings: TxnSettings, runtime: TxnRuntime, markers: MarkerSender,
                 producer_ids: ProducerIdAllocator) -> None:
        self.settings = settings
        self.runtime = runtime
        self.markers = markers
        self.producer_ids = producer_ids
        self.txns: dict[str, TxnMetadata] = {}
        self._tasks = TaskSet(log, "Transaction coordinator task")
        self._completions: dict[str, asyncio.Task[None]] = {}

    # ---- life cycle ----
    async def start(self) -> None:
        await self.runtime.start(self)
        self._tasks.spawn(self._every(self.settings.abort_interval_ms, self.abort_timed_out))
        self._tasks.spawn(self._every(self.settings.remove_interval_ms, self.remove_expired))

    async def shutdown(self) -> None:
        self._tasks.close()
        for t in self._completions.values():
            t.cancel()
        self._completions.clear()
        await self.runtime.shutdown()
        await self.markers.close()
        self.txns.clear()

    async def _every(self, interval_ms: int, fn: Callable[[], Awaitable[None]]) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await fn()
            except Exception as exc:
                log.error("Transaction coordinator housekeeping failed: %s", exc, exc_info=exc)

    async def coordinator_node(self, transactional_id: str) -> BrokerInfo:
        return await self.runtime.coordinator_node(transactional_id)

    # ---- loading (the runtime calls these: CoordinatorShard) ----
    def replay(self, records: Replayed, open_txns: dict[int, Replayed]) -> dict[str, TxnMetadata]:
        return replay(records)

    def loaded(self, index: int, loaded: dict[str, TxnMetadata]) -> None:
        for tid, md in loaded.items():
            self.txns[tid] = md
            if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                log.info("Completing transaction of %s (%s, producer %d epoch %d) after loading %s-%d", tid,
                         md.state.label, md.producer_id, md.producer_epoch, TRANSACTION_STATE_TOPIC, index)
                self._complete_later(md)

    def unloaded(self, index: int) -> None:
        for tid in [t for t in self.txns if self.runtime.partition_for(t) == index]:
            self.txns.pop(tid)
            task = self._completions.pop(tid, None)
            if task is not None:
                task.cancel()

    async def _ready(self, tid: str) -> None:
        if not tid:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "The transactional id must not be empty")
        await self.runtime.wait_ready(tid, create=True)

    def _get(self, tid: str) -> TxnMetadata:
        md = self.txns.get(tid)
        if md is None:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING,
                             f"Transactional id {tid} has no producer id: call InitProducerId first")
        return md

    async def _persist(self, md: TxnMetadata, nxt: TxnMetadata) -> None:
        """Write `nxt` as the id's state, then make it the state in memory."""
        md.pending = True
        try:
            key = schemas.encode_key(md.transactional_id)
            await self.runtime.write(md.transactional_id, [(key, schemas.encode_value(nxt.to_value()))])
        finally:
            md.pending = False
        if self.txns.get(md.transactional_id) is md:
            md.apply(nxt)

    # ---- InitProducerId ----
    async def init_producer_id(self, tid: str, timeout_ms: int, producer_id: int = -1,
                               producer_epoch: int = -1) -> tuple[int, int]:
        """(producer id, epoch) for the transactional id, or KafkaError."""
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            raise KafkaError(ErrorCode.INVALID_TRANSACTION_TIMEOUT,
                             f"Transaction timeout {timeout_ms} ms is not in 1..transaction.max.timeout.ms "
                             f"({self.settings.max_timeout_ms})")
        await self._ready(tid)
        now = now_ms()
        md = self.txns.get(tid)
        if md is None:
            pid = await self.producer_ids.next_id()
            md = TxnMetadata(tid, pid, -1, timeout_ms, TxnState.EMPTY, update_ms=now)
            self.txns[tid] = md
            nxt = md.prepare_epoch_bump(None, timeout_ms, now)
            nxt.last_producer_epoch = -1
            try:
                await self._persist(md, nxt)
            except KafkaError:
                if self.txns.get(tid) is md and md.producer_epoch < 0:
                    del self.txns[tid]
                raise
            log.info("Initialized transactional id %s with producer id %d and epoch %d", tid, md.producer_id,
                     md.producer_epoch)
            return md.producer_id, md.producer_epoch
        if md.pending:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"A state change of {tid} is in progress")
        if producer_id >= 0:
            # KIP-360: a producer asking for a bump names its current id and epoch
            is_retry = (producer_id == md.producer_id and producer_epoch == md.last_producer_epoch
                        and md.state is TxnState.EMPTY)
            if is_retry:
                return md.producer_id, md.producer_epoch
            if producer_id != md.producer_id or producer_epoch != md.producer_epoch:
                raise KafkaError(ErrorCode.PRODUCER_FENCED,
                                 f"Producer {producer_id} epoch {producer_epoch} is not the current producer of {tid}")
        if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"Transactional id {tid} is completing a transaction")
        if md.state is TxnState.ONGOING:
            # a new producer with this id: abort what the old one left open, fencing it; the client retries
            log.info("Aborting the ongoing transaction of %s (producer %d epoch %d) for a new producer", tid,
                     md.producer_id, md.producer_epoch)
            await self._abort_fencing(md)
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"Aborting the ongoing transaction of {tid}")
        new_pid = None
        if md.producer_epoch + 1 >= MAX_EPOCH:
            new_pid = await self.producer_ids.next_id()
        nxt = md.prepare_epoch_bump(new_pid, timeout_ms, now)
        await self._persist(md, nxt)
        log.info("Transactional id %s now has producer id %d and epoch %d", tid, md.producer_id, md.producer_epoch)
        return md.producer_id, md.producer_epoch

    # ---- AddPartitionsToTxn / AddOffsetsToTxn ----
    async def add_partitions(self, tid: str, producer_id: int, producer_epoch: int,
                             partitions: set[TopicPartition]) -> None:
        await self._ready(tid)
        md = self._get(tid)
        md.check_producer(producer_id, producer_epoch)
        if md.state is TxnState.ONGOING and partitions <= md.partitions:
            return
        nxt = md.prepare_add_partitions(partitions, now_ms())
        await self._persist(md, nxt)

    # ---- verification (KIP-890 part 1: AddPartitionsToTxn v4+ with VerifyOnly, from partition leaders) ----
    def verify_partitions(self, tid: str, producer_id: int, producer_epoch: int,
                          partitions: Iterable[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
        """Whether each partition is in the id's ongoing transaction, as Kafka's coordinator answers a
        leader that is about to append the transaction's first batch there: NONE, or TRANSACTION_ABORTABLE
        for a partition the producer never added; an error for all when the producer is not the id's
        current one or the transaction is completing. Never waits: a leader asks before an append."""
        wanted = list(partitions)
        if not tid:
            return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
        try:
            self.runtime.check(tid)
        except KafkaError as exc:
            return dict.fromkeys(wanted, ErrorCode(exc.code))
        md = self.txns.get(tid)
        if md is None or md.producer_id != producer_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != producer_epoch:
            return dict.fromkeys(wanted, ErrorCode.PRODUCER_FENCED)
        if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE):
            return dict.fromkeys(wanted, ErrorCode.CONCURRENT_TRANSACTIONS)
        ongoing = md.state is TxnState.ONGOING
        return {tp: ErrorCode.NONE if ongoing and tp in md.partitions else ErrorCode.TRANSACTION_ABORTABLE
                for tp in wanted}

    # ---- EndTxn ----
    async def end_txn(self, tid: str, producer_id: int, producer_epoch: int, commit: bool) -> None:
        await self._ready(tid)
        md = self._get(tid)
        if producer_id != md.producer_id:
            raise KafkaError(ErrorCode.INVALID_PRODUCER_ID_MAPPING, f"Producer id {producer_id} is not {tid}'s")
        if producer_epoch != md.producer_epoch:
            raise KafkaError(ErrorCode.PRODUCER_FENCED, f"Producer epoch {producer_epoch} of {tid} is fenced")
        if md.pending:
            raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"A state change of {tid} is in progress")
        wanted = TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT
        if md.state is wanted:
            return  # a retry of an EndTxn that completed
        if md.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            if (md.state is TxnState.PREPARE_COMMIT) == commit:
                raise KafkaError(ErrorCode.CONCURRENT_TRANSACTIONS, f"The transaction of {tid} is completing")
            raise KafkaError(ErrorCode.INVALID_TXN_STATE, f"The transaction of {tid} is being "
                             f"{'committed' if md.state is TxnState.PREPARE_COMMIT else 'aborted'}")
        if md.state is TxnState.EMPTY and not commit:
            return  # nothing was added: nothing to abort (what librdkafka may send after a failed add)
        nxt = md.prepare_end(commit, now_ms())
        await self._persist(md, nxt)
        self._complete_later(md)

    async def _abort_fencing(self, md: TxnMetadata) -> None:
        nxt = md.prepare_fence_abort(now_ms())
        await self._persist(md, nxt)
        self._complete_later(md)

    def _complete_later(self, md: TxnMetadata) -> None:
        tid = md.transactional_id
        if tid in self._completions and not self._completions[tid].done():
            return
        task = asyncio.get_running_loop().create_task(self._complete(md))
        self._completions[tid] = task
        task.add_done_callback(lambda t: self._completions.pop(tid, None) if self._completions.get(tid) is t else None)

    async def _complete(self, md: TxnMetadata) -> None:
        """Markers to every partition, then CompleteCommit/CompleteAbort; retried until done or unloaded."""
        tid = md.transactional_id
        commit = md.state is TxnState.PREPARE_COMMIT
        index = self.runtime.partition_for(tid)
        attempt = 0
        while self.txns.get(tid) is md:
            try:
                coordinator_epoch = self.runtime.leader_epoch_of(index)
                await self.markers.send(md.producer_id, md.producer_epoch, commit, coordinator_epoch,
                                        set(md.partitions))
                while md.pending:
                    await asyncio.sleep(0.01)
                if self.txns.get(tid) is not md:
                    return
                await self._persist(md, md.prepare_complete(now_ms()))
                log.debug("Completed the transaction of %s (%s)", tid, "commit" if commit else "abort")
                return
            except asyncio.CancelledError:
                raise
            except KafkaError as exc:
                if exc.code == ErrorCode.NOT_COORDINATOR:
                    return
                attempt += 1
                log.warning("Completing the transaction of %s failed (attempt %d), retrying: %s", tid, attempt, exc)
                await asyncio.sleep(min(0.1 * attempt, 2.0))
            except Exception:  # a defect: still retried, since a transaction left in PREPARE_* blocks its producer
                attempt += 1
                log.exception("Completing the transaction of %s failed (attempt %d), retrying", tid, attempt)
                await asyncio.sleep(min(0.1 * attempt, 2.0))

    # ---- housekeeping ----
    async def abort_timed_out(self) -> None:
        now = now_ms()
        for md in list(self.txns.values()):
            if md.state is TxnState.ONGOING and not md.pending and md.start_ms + md.timeout_ms < now:
                log.info("Aborting the transaction of %s (producer %d epoch %d): open for more than its timeout "
                         "of %d ms", md.transactional_id, md.producer_id, md.producer_epoch, md.timeout_ms)
                try:
                    await self._abort_fencing(md)
                except KafkaError as exc:
                    log.warning("Aborting the timed-out transaction of %s failed: %s", md.transactional_id, exc)

    async def remove_expired(self) -> None:
        now = now_ms()
        for md in list(self.txns.values()):
            if md.state.completed and not md.pending and md.update_ms + self.settings.id_expiration_ms < now:
                tid = md.transactional_id
                try:
                    await self.runtime.write(tid, [(schemas.encode_key(tid), None)])
                except KafkaError as exc:
                    log.warning("Removing expired transactional id %s failed: %s", tid, exc)
                    continue
                if self.txns.get(tid) is md:
                    del self.txns[tid]
                log.info("Removed expired transactional id %s (idle for more than transactional.id.expiration.ms)",
                         tid)

    # ---- describe / list ----
    async def describe(self, tid: str) -> TxnMetadata:
        await self.runtime.wait_ready(tid)
        md = self.txns.get(tid)
        if md is None:
            raise KafkaError(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, f"Transactional id {tid} not found")
        return md

    def listing(self) -> list[TxnMetadata]:
        if self.runtime.loading():
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "The coordinator is loading")
        return list(self.txns.values())
