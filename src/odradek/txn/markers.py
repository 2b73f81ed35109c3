"""Commit and abort markers: written by each partition's leader, sent there by the transaction coordinator.

`MarkerWriter` is the leader side (WriteTxnMarkers, and the coordinator when it leads the partition
itself): append one control batch with acks=all, wait until it is replicated, then tell the group
coordinator when the partition belongs to `__consumer_offsets` (transactional offsets become visible or
are dropped). `MarkerSender` is the coordinator side: it groups a transaction's partitions by leader,
writes locally or sends WriteTxnMarkers, and retries what failed until every partition has its marker
(or its topic is gone), as Kafka's marker channel does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kafka.protocol.producer import WriteTxnMarkersRequest

from odradek.cluster.metadata import MetadataCache
from odradek.groups import OFFSETS_TOPIC
from odradek.protocol.client_security import ClientSecurity
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.records import build_marker
from odradek.protocol.transport import AsyncConnection
from odradek.replication.manager import ReplicaManager
from odradek.storage.log_validator import AppendOrigin

log = logging.getLogger("odradek.txn.markers")

WRITE_TXN_MARKERS_VERSION = 1
RETRY_BACKOFF_S = (0.05, 0.1, 0.2, 0.5, 1.0)
# partition errors after which the marker is not sent again: written, or never writable
_FINAL = {ErrorCode.NONE}
_GIVE_UP = {ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED, ErrorCode.TRANSACTION_COORDINATOR_FENCED}

TopicPartition = tuple[str, int]


class MarkerWriter:
    """The leader side of markers: this broker's partitions, and the group coordinator to tell when a
    marker lands in `__consumer_offsets` (`offsets_marker(partition, producer_id, commit)`)."""

    def __init__(self, replicas: ReplicaManager, offsets_marker: Callable[[int, int, bool], None]) -> None:
        self.replicas = replicas
        self.offsets_marker = offsets_marker

    async def append(self, topic: str, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, timeout_s: float, transaction_version: int = 0) -> ErrorCode:
        """Write one marker as the partition's leader; NONE once it is replicated to the ISR.
        `transaction_version` (WriteTxnMarkers v2, KIP-1228) decides how its producer epoch is checked."""
        try:
            part = self.replicas.leader_partition(topic, partition)
            batch = build_marker(producer_id, producer_epoch, commit, coordinator_epoch)
            info = part.append_as_leader(memoryview(batch), -1, origin=AppendOrigin.COORDINATOR,
                                         transaction_version=transaction_version)
            if info.durable is not None:
                await asyncio.wrap_future(info.durable)
            await asyncio.wait_for(part.hw_waiter(info.last_offset + 1), timeout_s)
        except KafkaError as exc:
            return ErrorCode(exc.code)
        except TimeoutError:
            return ErrorCode.REQUEST_TIMED_OUT
        except OSError as exc:
            log.error("Writing a transaction marker to %s-%d failed: %s", topic, partition, exc)
            return ErrorCode.KAFKA_STORAGE_ERROR
        if topic == OFFSETS_TOPIC:
            self.offsets_marker(partition, producer_id, commit)
        return ErrorCode.NONE


class MarkerSender:
    """Delivers a transaction's markers to every partition of it, retrying until done."""

    def __init__(self, broker_id: int, metadata: MetadataCache, writer: MarkerWriter, security: ClientSecurity,
                 timeout_s: float) -> None:
        self.broker_id = broker_id
        self.metadata = metadata
        self.writer = writer  # for the partitions this broker leads
        self.security = security  # of the inter-broker listener, for WriteTxnMarkers to the others
        self.timeout_s = timeout_s
        self._connections: dict[int, AsyncConnection] = {}

    async def close(self) -> None:
        conns, self._connections = self._connections, {}
        for c in conns.values():
            await c.close()

    async def send(self, producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                   partitions: set[TopicPartition]) -> None:
        remaining = set(partitions)
        attempt = 0
        while remaining:
            by_leader: dict[int, list[TopicPartition]] = {}
            meta = self.metadata
            for tp in sorted(remaining):
                if tp[0] not in meta.topics:
                    log.info("Not writing a transaction marker to %s-%d: the topic no longer exists", *tp)
                    remaining.discard(tp)
                    continue
                by_leader.setdefault(meta.leader_of(*tp), []).append(tp)
            results = await asyncio.gather(*(
                self._send_to(leader, tps, producer_id, producer_epoch, commit, coordinator_epoch)
                for leader, tps in by_leader.items()))
            for outcome in results:
                for tp, err in outcome.items():
                    if err in _FINAL:
                        remaining.discard(tp)
                    elif err in _GIVE_UP:
                        log.warning("Transaction marker for producer %d on %s-%d was refused (%s); not retrying",
                                    producer_id, tp[0], tp[1], err.name)
                        remaining.discard(tp)
            if remaining:
                await asyncio.sleep(RETRY_BACKOFF_S[min(attempt, len(RETRY_BACKOFF_S) - 1)])
                attempt += 1
                if attempt % 20 == 0:
                    log.warning("Still retrying transaction markers for producer %d on %s", producer_id,
                                ", ".join(f"{t}-{p}" for t, p in sorted(remaining)))

    async def _send_to(self, leader: int, tps: list[TopicPartition], producer_id: int, producer_epoch: int,
                       commit: bool, coordinator_epoch: int) -> dict[TopicPartition, ErrorCode]:
        if leader < 0:
            return dict.fromkeys(tps, ErrorCode.LEADER_NOT_AVAILABLE)
        if leader == self.broker_id:
            errors = await asyncio.gather(*(
                self.writer.append(t, p, producer_id, producer_epoch, commit, coordinator_epoch, self.timeout_s)
                for t, p in tps))
            return dict(zip(tps, errors, strict=True))
        try:
            return await self._remote(leader, tps, producer_id, producer_epoch, commit, coordinator_epoch)
        except (OSError, TimeoutError, LookupError, ConnectionError) as exc:
            log.debug("WriteTxnMarkers to broker %d failed: %s", leader, exc)
            conn = self._connections.pop(leader, None)
            if conn is not None:
                await conn.close()
            return dict.fromkeys(tps, ErrorCode.NETWORK_EXCEPTION)

    async def _remote(self, leader: int, tps: list[TopicPartition], producer_id: int, producer_epoch: int,
                      commit: bool, coordinator_epoch: int) -> dict[TopicPartition, ErrorCode]:
        conn = self._connections.get(leader)
        if conn is None:
            info = self.metadata.brokers.get(leader)
            if info is None:
                raise LookupError(f"broker {leader} is not registered")
            conn = AsyncConnection(info.host, info.port, f"broker-{self.broker_id}-txn-markers",
                                   timeout_s=self.timeout_s + 5, security=self.security)
            self._connections[leader] = conn
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        marker_cls = WriteTxnMarkersRequest.WritableTxnMarker
        req = WriteTxnMarkersRequest(markers=[marker_cls(
            producer_id=producer_id, producer_epoch=producer_epoch, transaction_result=commit,
            topics=[marker_cls.WritableTxnMarkerTopic(name=t, partition_indexes=ps) for t, ps in topics.items()],
            coordinator_epoch=coordinator_epoch)])
        resp: Any = await conn.request(req, WRITE_TXN_MARKERS_VERSION)
        out: dict[TopicPartition, ErrorCode] = dict.fromkeys(tps, ErrorCode.UNKNOWN_SERVER_ERROR)
        for m in resp.markers:
            for t in m.topics:
                for p in t.partitions:
                    out[(t.name, p.partition_index)] = ErrorCode(p.error_code)
        return out
