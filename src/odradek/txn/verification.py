"""Transaction verification, the partition leader's side (KIP-890 part 1).

Before a leader appends the first transactional batch of a producer's transaction to a partition, it asks
the transaction coordinator of the batch's transactional id whether the partition is in that transaction
(AddPartitionsToTxn v4+ with VerifyOnly, as Kafka's AddPartitionsToTxnManager does). So a batch whose
producer never added the partition, or that names a producer the coordinator does not know, is refused
instead of opening a transaction nothing would ever end (the last stable offset stuck for good).

`PartitionVerifier` answers from this broker's own coordinator when it leads the id's `__transaction_state`
partition, and otherwise over the inter-broker listener: at most one request in flight per coordinator,
the verifications that arrive meanwhile batched into the next one (one entry per transactional id; a
newer epoch displaces an older one, as in Kafka). `produce_error` turns a coordinator's answer into what
the Produce response carries at the request's version.

Transaction version 2 (KIP-890 part 2): a producer that runs it sends no AddPartitionsToTxn; its Produce
v12+ (and TxnOffsetCommit v5+) asks the leader to add the partition instead, so `verify(..., add=True)`
sends the same request with VerifyOnly false, and the coordinator adds the partition (opening the
transaction) or refuses it with the same errors.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from kafka.protocol.producer import AddPartitionsToTxnRequest

from odradek.cluster.metadata import MetadataCache
from odradek.protocol.client_security import ClientSecurity
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.transport import AsyncConnection
from odradek.txn import TRANSACTION_STATE_TOPIC
from odradek.txn.coordinator import TransactionCoordinator
from odradek.txn.state import TV2, TopicPartition

log = logging.getLogger("odradek.txn.verification")

VERIFY_VERSION = 5  # AddPartitionsToTxn v5: the coordinator may answer TRANSACTION_ABORTABLE
LAST_DEFAULT_ERROR_PRODUCE_VERSION = 10  # up to Produce v10 a client knows INVALID_TXN_STATE, not TRANSACTION_ABORTABLE
LAST_VERIFY_ONLY_PRODUCE_VERSION = 11  # Produce v12+ come from transaction version 2 producers
FIRST_ADDING_TXN_OFFSET_COMMIT_VERSION = 5  # TxnOffsetCommit v5+ too: the offsets partition is added
# what a leader cannot tell apart from a coordinator that is busy: the client should retry its produce
_RETRY_LATER = frozenset({ErrorCode.NETWORK_EXCEPTION, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                          ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})

Verdicts = dict[TopicPartition, ErrorCode]


def _coordinator_code(code: int) -> ErrorCode:
    """A coordinator's per-partition answer as the leader keeps it: producers expect INVALID_PRODUCER_EPOCH
    where the coordinator says PRODUCER_FENCED."""
    return ErrorCode.INVALID_PRODUCER_EPOCH if code == ErrorCode.PRODUCER_FENCED else ErrorCode(code)


def produce_error(code: ErrorCode, produce_version: int) -> tuple[ErrorCode, str | None]:
    """A failed verification as the Produce response's partition error at `produce_version` (Kafka's
    ReplicaManager/AddPartitionsToTxnManager translation): TRANSACTION_ABORTABLE is INVALID_TXN_STATE for
    clients before v11; what only says the coordinator could not answer now is NOT_ENOUGH_REPLICAS, which
    every client retries without a metadata refresh."""
    if code == ErrorCode.TRANSACTION_ABORTABLE and produce_version <= LAST_DEFAULT_ERROR_PRODUCE_VERSION:
        code = ErrorCode.INVALID_TXN_STATE
    if code in _RETRY_LATER or (code == ErrorCode.CONCURRENT_TRANSACTIONS
                                and produce_version <= LAST_VERIFY_ONLY_PRODUCE_VERSION):
        return (ErrorCode.NOT_ENOUGH_REPLICAS,
                f"Unable to verify the partition has been added to the transaction. Underlying error: {code.name}")
    if code == ErrorCode.INVALID_TXN_STATE:
        return code, "Partition was not added to the transaction"
    return code, None


@dataclass(slots=True)
class _Ask:
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    answer: asyncio.Future[Verdicts]
    add: bool = False


@dataclass(slots=True)
class _Node:
    """The verifications waiting for the next request to one coordinator broker."""

    waiting: dict[str, _Ask] = field(default_factory=dict)
    sender: asyncio.Task[None] | None = None


class PartitionVerifier:
    def __init__(self, broker_id: int, metadata: MetadataCache, coordinator: TransactionCoordinator,
                 security: ClientSecurity, timeout_s: float) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.coordinator = coordinator
        self.security = security  # of the inter-broker listener
        self.timeout_s = timeout_s
        self._nodes: dict[int, _Node] = {}
        self._connections: dict[int, AsyncConnection] = {}

    async def close(self) -> None:
        for node in self._nodes.values():
            if node.sender is not None:
                node.sender.cancel()
            for ask in node.waiting.values():
                _answer(ask, ErrorCode.NETWORK_EXCEPTION)
        self._nodes.clear()
        conns, self._connections = self._connections, {}
        for c in conns.values():
            await c.close()

    async def verify(self, tid: str, producer_id: int, producer_epoch: int,
                     partitions: list[TopicPartition], add: bool = False) -> Verdicts:
        """The partitions that are NOT verified (with `add`: not added), each with the coordinator's
        reason (empty: all are)."""
        index = self.coordinator.runtime.partition_for(tid)
        leader = self.metadata.leader_of(TRANSACTION_STATE_TOPIC, index)
        if leader < 0 or leader not in self.metadata.brokers:
            return dict.fromkeys(partitions, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if leader == self.broker_id and add:
            try:
                await self.coordinator.add_partitions(tid, producer_id, producer_epoch, set(partitions), TV2)
            except KafkaError as exc:
                return dict.fromkeys(partitions, _coordinator_code(exc.code))
            return {}
        if leader == self.broker_id:
            verdicts = self.coordinator.verify_partitions(tid, producer_id, producer_epoch, partitions)
            return {tp: _coordinator_code(c) for tp, c in verdicts.items() if c != ErrorCode.NONE}
        node = self._nodes.setdefault(leader, _Node())
        earlier = node.waiting.get(tid)
        if earlier is not None:
            if earlier.producer_epoch > producer_epoch:
                return dict.fromkeys(partitions, ErrorCode.INVALID_PRODUCER_EPOCH)
            # the same epoch: most likely the client retrying; an older one is fenced by this one
            _answer(earlier, ErrorCode.NETWORK_EXCEPTION if earlier.producer_epoch == producer_epoch
                    else ErrorCode.INVALID_PRODUCER_EPOCH)
        answer: asyncio.Future[Verdicts] = asyncio.get_running_loop().create_future()
        node.waiting[tid] = _Ask(producer_id, producer_epoch, list(partitions), answer, add)
        if node.sender is None or node.sender.done():
            node.sender = asyncio.get_running_loop().create_task(self._send_waiting(leader, node))
        return await answer

    async def _send_waiting(self, leader: int, node: _Node) -> None:
        while node.waiting:
            batch, node.waiting = node.waiting, {}
            try:
                results = await self._request(leader, batch)
            except Exception as exc:  # whatever went wrong, every producer waiting gets an answer
                log.warning("Verifying transactions with broker %d failed: %s", leader, exc,
                            exc_info=not isinstance(exc, OSError | TimeoutError | LookupError))
                conn = self._connections.pop(leader, None)
                if conn is not None:
                    await conn.close()
                results = {tid: dict.fromkeys(ask.partitions, ErrorCode.NETWORK_EXCEPTION)
                           for tid, ask in batch.items()}
            for tid, ask in batch.items():
                if not ask.answer.done():
                    ask.answer.set_result(results.get(tid, dict.fromkeys(ask.partitions,
                                                                         ErrorCode.UNKNOWN_SERVER_ERROR)))

    async def _request(self, leader: int, batch: dict[str, _Ask]) -> dict[str, Verdicts]:
        conn = self._connections.get(leader)
        if conn is None:
            info = self.metadata.brokers.get(leader)
            if info is None:
                raise LookupError(f"broker {leader} is not registered")
            conn = AsyncConnection(info.host, info.port, f"broker-{self.broker_id}-txn-verification",
                                   timeout_s=self.timeout_s, security=self.security)
            self._connections[leader] = conn
        txn_cls = AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction
        topic_cls = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        transactions = []
        for tid, ask in batch.items():
            by_topic: dict[str, list[int]] = {}
            for t, p in ask.partitions:
                by_topic.setdefault(t, []).append(p)
            transactions.append(txn_cls(
                transactional_id=tid, producer_id=ask.producer_id, producer_epoch=ask.producer_epoch,
                verify_only=not ask.add, topics=[topic_cls(name=t, partitions=ps) for t, ps in by_topic.items()]))
        resp: Any = await conn.request(AddPartitionsToTxnRequest(transactions=transactions), VERIFY_VERSION)
        if resp.error_code == ErrorCode.UNSUPPORTED_VERSION:
            # a coordinator older than verification (a rolling upgrade): appended unverified, as Kafka does
            log.warning("Broker %d cannot verify transactions (AddPartitionsToTxn v%d): appending unverified",
                        leader, VERIFY_VERSION)
            return {tid: {} for tid in batch}
        if resp.error_code != ErrorCode.NONE:
            # a refusal of the whole request is not the client's to see (Kafka's choice)
            code = (ErrorCode.INVALID_TXN_STATE if resp.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                    else ErrorCode(resp.error_code))
            log.error("Broker %d refused transaction verification: %s", leader, ErrorCode(resp.error_code).name)
            return {tid: dict.fromkeys(ask.partitions, code) for tid, ask in batch.items()}
        out: dict[str, Verdicts] = {}
        for result in resp.results_by_transaction:
            out[result.transactional_id] = {
                (t.name, p.partition_index): _coordinator_code(p.partition_error_code)
                for t in result.topic_results for p in t.results_by_partition
                if p.partition_error_code != ErrorCode.NONE}
        return out


def _answer(ask: _Ask, code: ErrorCode) -> None:
    if not ask.answer.done():
        ask.answer.set_result(dict.fromkeys(ask.partitions, code))
