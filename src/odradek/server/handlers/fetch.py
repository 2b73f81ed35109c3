"""Fetch (with the min-bytes/max-wait long poll) and ListOffsets. Fetch responses are chunk lists:
record bytes go from the log read straight to the socket, never re-encoded."""

from __future__ import annotations

import asyncio
from typing import Any

from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
)

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from odradek.replication.partition import Partition
from odradek.server.registry import RequestContext, handles

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_EpochEndOffset = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult.EpochEndOffset


def _check_epoch(p: Partition, current_leader_epoch: int) -> None:
    if current_leader_epoch < 0 or current_leader_epoch == p.leader_epoch:
        return
    if current_leader_epoch < p.leader_epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"epoch {current_leader_epoch} is older than {p.leader_epoch}")
    raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"epoch {current_leader_epoch} is newer than {p.leader_epoch}")


class _FetchPlan:
    """The partitions of one fetch request, resolved once and read as many times as the long poll needs."""

    def __init__(self, ctx: RequestContext, request: Any) -> None:
        self.ctx = ctx
        self.version = ctx.version
        replica_id = getattr(request, "replica_id", -1)
        state = getattr(request, "replica_state", None)
        if self.version >= 15 and state is not None:
            replica_id = state.replica_id
        self.is_replica = replica_id >= 0
        self.replica_id = replica_id
        self.max_bytes = request.max_bytes if self.version >= 3 else 2**31 - 1
        self.topics: list[tuple[FetchTopicResult, list[tuple[Any, Partition | None, KafkaError | None]]]] = []
        self.diverging: dict[tuple[str, int], tuple[int, int] | None] = {}
        cache = ctx.broker.metadata
        replicas = ctx.broker.replicas
        for t in request.topics:
            # the zero topic id (no id) decodes as None; it names no topic: UNKNOWN_TOPIC_ID, as any unknown id
            tid = t.topic_id.bytes if self.version >= 13 and t.topic_id is not None else b"\x00" * 16
            name = t.topic if self.version < 13 else cache.by_id.get(tid, "")
            entries = []
            for fp in t.partitions:
                part: Partition | None = None
                err: KafkaError | None = None
                if not name:
                    err = KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
                else:
                    try:
                        part = replicas.leader_partition(name, fp.partition)
                        _check_epoch(part, getattr(fp, "current_leader_epoch", -1))
                    except KafkaError as exc:
                        err, part = exc, None
                if part is not None and self.is_replica:
                    self.diverging[(name, fp.partition)] = part.diverging_epoch(
                        getattr(fp, "last_fetched_epoch", -1), fp.fetch_offset)
                    replicas.record_follower_fetch(part, replica_id, fp.fetch_offset)
                entries.append((fp, part, err))
            self.topics.append((FetchTopicResult(name, tid), entries))

    def read(self) -> tuple[list[FetchTopicResult], int, bool]:
        remaining = self.max_bytes
        total = 0
        errors = False
        out: list[FetchTopicResult] = []
        for proto, entries in self.topics:
            topic = FetchTopicResult(proto.name, proto.topic_id)
            for fp, part, err in entries:
                res = FetchPartitionResult(fp.partition)
                if err is not None:
                    res.error_code = err.code
                    errors = True
                else:
                    assert part is not None
                    res.high_watermark = part.high_watermark
                    res.last_stable_offset = part.high_watermark
                    res.log_start_offset = part.log.log_start_offset
                    div = self.diverging.get((proto.name, fp.partition))
                    if div is not None:
                        res.diverging_epoch = div
                        res.records = b""
                        topic.partitions.append(res)
                        continue
                    try:
                        data = part.read(
                            fp.fetch_offset, min(fp.partition_max_bytes, max(remaining, 0)), self.is_replica,
                            min_one=total == 0,
                        )
                        res.records = data.records
                        n = len(data.records)
                        total += n
                        remaining -= n
                    except KafkaError as exc:
                        res.error_code = exc.code
                        errors = True
                topic.partitions.append(res)
            out.append(topic)
        return out, total, errors

    def waiters(self) -> list[asyncio.Future[None]]:
        return [part.data_waiter() for _proto, entries in self.topics for _fp, part, _e in entries if part is not None]


@handles(FetchRequest, FetchResponse, versions=(4, 16))
async def fetch(ctx: RequestContext, request: Any) -> list[bytes | memoryview]:
    plan = _FetchPlan(ctx, request)
    topics, total, errors = plan.read()
    wait_ms = request.max_wait_ms
    if total < request.min_bytes and wait_ms > 0 and not errors and plan.topics:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        while total < request.min_bytes and not errors:
            remaining = deadline - loop.time()
            if remaining <= 0 or ctx.broker.stopping:
                break
            waiters = plan.waiters()
            if not waiters:
                break
            done, pending = await asyncio.wait(waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            for f in pending:
                f.cancel()
            if not done:
                break
            topics, total, errors = plan.read()
    # Fetch sessions (KIP-227) are not kept: session id 0 tells the client to send full fetches.
    return encode_fetch_response(ctx.version, ctx.header.correlation_id, topics, session_id=0)


def _list_offset(ctx: RequestContext, name: str, req_p: Any, is_replica: bool) -> Any:
    version = ctx.version
    res = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
        partition_index=req_p.partition_index, error_code=0, old_style_offsets=[], timestamp=-1, offset=-1,
        leader_epoch=-1,
    )
    try:
        part = ctx.broker.replicas.leader_partition(name, req_p.partition_index)
        if version >= 4:
            _check_epoch(part, req_p.current_leader_epoch)
        ts = req_p.timestamp
        hw = part.high_watermark
        if ts == EARLIEST:
            res.offset = part.log.log_start_offset
        elif ts == LATEST:
            res.offset = part.log.log_end_offset if is_replica else hw
        else:
            found = part.log.fetch_offset_by_timestamp(ts)
            if found is not None and (is_replica or found[0] < hw):
                res.offset, res.timestamp = found
        res.leader_epoch = part.leader_epoch
    except KafkaError as exc:
        res.error_code = exc.code
    return res


@handles(ListOffsetsRequest, ListOffsetsResponse, versions=(1, 8))
async def list_offsets(ctx: RequestContext, request: Any) -> ListOffsetsResponse:
    is_replica = request.replica_id >= 0
    topics = []
    for t in request.topics:
        parts = [_list_offset(ctx, t.name, p, is_replica) for p in t.partitions]
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _epoch_end_offset(ctx: RequestContext, topic: str, p: Any) -> Any:
    try:
        part = ctx.broker.replicas.leader_partition(topic, p.partition)
        _check_epoch(part, p.current_leader_epoch)
        epoch, end = part.log.epochs.end_offset_for(p.leader_epoch, part.log.log_end_offset)
    except KafkaError as exc:
        return _EpochEndOffset(error_code=exc.code, partition=p.partition, leader_epoch=-1, end_offset=-1)
    return _EpochEndOffset(error_code=0, partition=p.partition, leader_epoch=epoch, end_offset=end)


@handles(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, versions=(2, 4))
async def offset_for_leader_epoch(ctx: RequestContext, request: Any) -> OffsetForLeaderEpochResponse:
    """The end offset of a leader epoch on the leader (KIP-101/279); clients use it to detect truncation."""
    return OffsetForLeaderEpochResponse(throttle_time_ms=0, topics=[
        OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult(
            topic=t.topic, partitions=[_epoch_end_offset(ctx, t.topic, p) for p in t.partitions])
        for t in request.topics
    ])
