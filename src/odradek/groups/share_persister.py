"""`CoordinatorShareStatePersister`: the `ShareStatePersister` of a broker, over the share coordinator
(Kafka's DefaultStatePersister). A share partition's leader reads and writes its state through it.

The share coordinator of a key is the leader of the key's `__share_group_state` partition (found as
FindCoordinator with key type "share" finds it: `runtime.coordinator_node`, creating the topic on first
use). When that is this broker the shard (`ShareCoordinator`) is called directly; otherwise the request
(Initialize/Read/Write/DeleteShareGroupState) goes to that broker over the inter-broker listener. NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS and connection failures are retried, with the
coordinator looked up again, until the timeout; any other error is raised as a KafkaError.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from odradek.groups.share_partition import RecordState, StateBatch
from odradek.groups.share_records import ShareStateValue
from odradek.groups.share_state import ShareKey, ShareSnapshot, ShareStateSummary, delivery_complete_count
from odradek.groups.share_state_coordinator import (
    UNINITIALIZED_START_OFFSET,
    ShareCoordinator,
    coordinator_key,
)
from odradek.protocol.client_security import PLAINTEXT, ClientSecurity
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.kip932 import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    WriteShareGroupStateRequest,
)
from odradek.protocol.transport import AsyncConnection

log = logging.getLogger("odradek.groups.share")

RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                       ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NETWORK_EXCEPTION,
                       ErrorCode.REQUEST_TIMED_OUT})
RETRY_BACKOFF_S = (0.05, 0.1, 0.2, 0.5, 1.0)
WRITE_VERSION = 1
SUMMARY_VERSION = 1

T = TypeVar("T")
Outcome = tuple[ErrorCode, T]


def _batches(raw: Any) -> tuple[StateBatch, ...]:
    out = []
    for b in raw or []:
        try:
            state = RecordState(b.delivery_state)
        except ValueError:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown delivery state {b.delivery_state}") from None
        out.append(StateBatch(b.first_offset, b.last_offset, state, b.delivery_count))
    return tuple(out)


def _summary(value: ShareStateValue) -> ShareStateSummary | None:
    if value.start_offset == UNINITIALIZED_START_OFFSET:
        return None
    return ShareStateSummary(value.start_offset, value.state_epoch, value.leader_epoch,
                             delivery_complete_count(value.start_offset, value.batches))


def _snapshot(value: ShareStateValue) -> ShareSnapshot | None:
    """The state read; None where there is none (a state the group coordinator initialised has a state
    epoch and keeps start offset -1 until its leader first reads it)."""
    if value.start_offset == UNINITIALIZED_START_OFFSET and value.state_epoch == 0 and not value.batches:
        return None
    return ShareSnapshot(value.start_offset, value.batches, value.leader_epoch, value.state_epoch)


class CoordinatorShareStatePersister:
    """`ShareStatePersister` over the share coordinators of the cluster; see the module docstring."""

    def __init__(self, broker_id: int, coordinator: ShareCoordinator, security: ClientSecurity = PLAINTEXT,
                 timeout_s: float = 30.0) -> None:
        self.broker_id = broker_id
        self.coordinator = coordinator
        self.security = security  # of the inter-broker listener
        self.timeout_s = timeout_s
        self._connections: dict[int, tuple[AsyncConnection, asyncio.Lock]] = {}

    async def close(self) -> None:
        conns, self._connections = self._connections, {}
        for conn, _lock in conns.values():
            await conn.close()

    # ---- ShareStatePersister ----
    async def read_state(self, key: ShareKey, leader_epoch: int = -1) -> ShareSnapshot | None:
        async def local() -> Outcome[ShareSnapshot | None]:
            got = await self.coordinator.read(key, leader_epoch)
            return got.error, (_snapshot(got.value) if got.value is not None else None)

        async def remote(conn: AsyncConnection) -> Outcome[ShareSnapshot | None]:
            data = ReadShareGroupStateRequest.ReadStateData
            resp = await conn.request(ReadShareGroupStateRequest(group_id=key.group_id, topics=[data(
                topic_id=uuid.UUID(bytes=key.topic_id), partitions=[data.PartitionData(
                    partition=key.partition, leader_epoch=leader_epoch)])]), 0)
            p = _only(resp)
            if p.error_code:
                return ErrorCode(p.error_code), None
            return ErrorCode.NONE, _snapshot(ShareStateValue(0, leader_epoch, p.start_offset,
                                                             _batches(p.state_batches), p.state_epoch))

        return await self._call(key, local, remote)

    async def write_state(self, key: ShareKey, state: ShareSnapshot) -> None:
        async def local() -> Outcome[None]:
            err, _message = await self.coordinator.write(key, state.state_epoch, state.leader_epoch,
                                                         state.start_offset, state.batches)
            return err, None

        async def remote(conn: AsyncConnection) -> Outcome[None]:
            data = WriteShareGroupStateRequest.WriteStateData
            part = data.PartitionData
            resp = await conn.request(WriteShareGroupStateRequest(group_id=key.group_id, topics=[data(
                topic_id=uuid.UUID(bytes=key.topic_id), partitions=[part(
                    partition=key.partition, state_epoch=state.state_epoch, leader_epoch=state.leader_epoch,
                    start_offset=state.start_offset, delivery_complete_count=-1, state_batches=[part.StateBatch(
                        first_offset=b.first_offset, last_offset=b.last_offset, delivery_state=int(b.state),
                        delivery_count=b.delivery_count) for b in state.batches])])]), WRITE_VERSION)
            return ErrorCode(_only(resp).error_code), None

        await self._call(key, local, remote)

    async def initialize_state(self, key: ShareKey, state_epoch: int, start_offset: int) -> None:
        async def local() -> Outcome[None]:
            return await self.coordinator.initialize(key, state_epoch, start_offset), None

        async def remote(conn: AsyncConnection) -> Outcome[None]:
            data = InitializeShareGroupStateRequest.InitializeStateData
            resp = await conn.request(InitializeShareGroupStateRequest(group_id=key.group_id, topics=[data(
                topic_id=uuid.UUID(bytes=key.topic_id), partitions=[data.PartitionData(
                    partition=key.partition, state_epoch=state_epoch, start_offset=start_offset)])]), 0)
            return ErrorCode(_only(resp).error_code), None

        await self._call(key, local, remote)

    async def delete_state(self, key: ShareKey) -> None:
        async def local() -> Outcome[None]:
            return await self.coordinator.delete(key), None

        async def remote(conn: AsyncConnection) -> Outcome[None]:
            data = DeleteShareGroupStateRequest.DeleteStateData
            resp = await conn.request(DeleteShareGroupStateRequest(group_id=key.group_id, topics=[data(
                topic_id=uuid.UUID(bytes=key.topic_id), partitions=[data.PartitionData(partition=key.partition)])]),
                0)
            return ErrorCode(_only(resp).error_code), None

        await self._call(key, local, remote)

    async def read_summary(self, key: ShareKey) -> ShareStateSummary | None:
        async def local() -> Outcome[ShareStateSummary | None]:
            got = await self.coordinator.read_summary(key)
            return got.error, (_summary(got.value) if got.value is not None else None)

        async def remote(conn: AsyncConnection) -> Outcome[ShareStateSummary | None]:
            data = ReadShareGroupStateSummaryRequest.ReadStateSummaryData
            resp = await conn.request(ReadShareGroupStateSummaryRequest(group_id=key.group_id, topics=[data(
                topic_id=uuid.UUID(bytes=key.topic_id), partitions=[data.PartitionData(
                    partition=key.partition, leader_epoch=-1)])]), SUMMARY_VERSION)
            p = _only(resp)
            if p.error_code or p.start_offset == UNINITIALIZED_START_OFFSET:
                return ErrorCode(p.error_code), None
            return ErrorCode.NONE, ShareStateSummary(p.start_offset, p.state_epoch, p.leader_epoch,
                                                     max(p.delivery_complete_count, 0))

        return await self._call(key, local, remote)

    # ---- internals ----
    async def _call(self, key: ShareKey, local: Callable[[], Awaitable[Outcome[T]]],
                    remote: Callable[[AsyncConnection], Awaitable[Outcome[T]]]) -> T:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        ckey = coordinator_key(key)
        attempt = 0
        while True:
            err: ErrorCode
            message: str | None = None
            try:
                node = await self.coordinator.runtime.coordinator_node(ckey)
                if node.broker_id == self.broker_id:
                    err, result = await local()
                else:
                    err, result = await self._remote(node.broker_id, node.host, node.port, remote)
            except KafkaError as exc:
                err, message = exc.code, exc.message
            else:
                if err == ErrorCode.NONE:
                    return result
            if err not in RETRIABLE or loop.time() >= deadline:
                raise KafkaError(err, message or f"Share state of {ckey}: {err.name}")
            await asyncio.sleep(RETRY_BACKOFF_S[min(attempt, len(RETRY_BACKOFF_S) - 1)])
            attempt += 1

    async def _remote(self, node: int, host: str, port: int,
                      remote: Callable[[AsyncConnection], Awaitable[Outcome[T]]]) -> Outcome[T]:
        entry = self._connections.get(node)
        if entry is None or (entry[0].host, entry[0].port) != (host, port):
            entry = self._connections[node] = (AsyncConnection(
                host, port, f"broker-{self.broker_id}-share-state", timeout_s=self.timeout_s,
                security=self.security), asyncio.Lock())
        conn, lock = entry
        try:
            async with lock:
                return await remote(conn)
        except (OSError, TimeoutError, ConnectionError, EOFError) as exc:
            log.debug("Share state request to broker %d failed: %s", node, exc)
            self._connections.pop(node, None)
            await conn.close()
            raise KafkaError(ErrorCode.NETWORK_EXCEPTION, str(exc)) from None


def _only(resp: Any) -> Any:
    """The one partition result of a one-partition state response."""
    for t in resp.results or []:
        for p in t.partitions or []:
            return p
    raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "A share state response without its partition")
