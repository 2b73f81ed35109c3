"""Fetch (with the min-bytes/max-wait long poll) and ListOffsets. Fetch responses are chunk lists:
record bytes go from the log straight to the socket, never re-encoded; unless the broker runs with
ODRADEK_ZERO_COPY=0, they are file regions the network layer sends with sendfile (zero copy)."""

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
from odradek.protocol.framing import Piece
from odradek.replication.partition import Partition
from odradek.server import authz
from odradek.server.fetch_sessions import FINAL_EPOCH, INITIAL_EPOCH, FetchSession, Want
from odradek.server.registry import RequestContext, handles
from odradek.storage.region import FileRegion

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
EARLIEST_LOCAL, LATEST_TIERED = -4, -5  # ListOffsets v8+ (KIP-405), v9+ (KIP-1005)
EARLIEST_PENDING_UPLOAD = -6  # ListOffsets v11+ (KIP-1023)
_EpochEndOffset = OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult.EpochEndOffset


def _check_epoch(p: Partition, current_leader_epoch: int) -> None:
    if current_leader_epoch < 0 or current_leader_epoch == p.leader_epoch:
        return
    if current_leader_epoch < p.leader_epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"epoch {current_leader_epoch} is older than {p.leader_epoch}")
    raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"epoch {current_leader_epoch} is newer than {p.leader_epoch}")


ZERO_UUID = b"\x00" * 16


def _check_follower(part: Partition, replica_id: int, fetch_offset: int, diverging: bool) -> None:
    """A replica's fetch moves its position only if it is one of the partition's assigned replicas
    (not the leader itself) and, unless its log diverges (it will truncate), asks for an offset the
    leader has: a position past the log end would count records as replicated that the follower never
    received."""
    if replica_id not in part.replicas or replica_id == part.broker_id:
        raise KafkaError(ErrorCode.NOT_LEADER_OR_FOLLOWER,
                         f"broker {replica_id} is not a follower of {part.name} (replicas {part.replicas})")
    if not diverging and (fetch_offset > part.log.log_end_offset or fetch_offset < 0):
        raise KafkaError(ErrorCode.OFFSET_OUT_OF_RANGE,
                         f"follower {replica_id} fetched {part.name} at {fetch_offset}, outside the log "
                         f"[{part.log.log_start_offset}, {part.log.log_end_offset}]")


def _wants(ctx: RequestContext, request: Any) -> list[Want]:
    """The partitions a request names, with what it asks of each."""
    by_id = ctx.broker.metadata.by_id
    out: list[Want] = []
    for t in request.topics:
        # the zero topic id (no id) decodes as None; it names no topic: UNKNOWN_TOPIC_ID, as any unknown id
        tid = t.topic_id.bytes if ctx.version >= 13 and t.topic_id is not None else ZERO_UUID
        name = t.topic if ctx.version < 13 else by_id.get(tid, "")
        for fp in t.partitions:
            out.append(Want(name, tid, fp.partition, fp.fetch_offset, fp.partition_max_bytes,
                            getattr(fp, "current_leader_epoch", -1), getattr(fp, "last_fetched_epoch", -1)))
    return out


def _forgotten(ctx: RequestContext, request: Any) -> list[tuple[str, int]]:
    by_id = ctx.broker.metadata.by_id
    out: list[tuple[str, int]] = []
    for t in getattr(request, "forgotten_topics_data", None) or ():
        tid = t.topic_id.bytes if ctx.version >= 13 and t.topic_id is not None else ZERO_UUID
        name = t.topic if ctx.version < 13 else by_id.get(tid, "")
        out.extend((name, p) for p in t.partitions)
    return out


def replica_id_of(version: int, request: Any) -> int:
    """The fetching replica's broker id (v15+: in ReplicaState), or -1 for a consumer."""
    replica_id: int = getattr(request, "replica_id", -1)
    state = getattr(request, "replica_state", None)
    if version >= 15 and state is not None:
        replica_id = state.replica_id
    return replica_id


class _FetchPlan:
    """The partitions of one fetch, resolved once and read as many times as the long poll needs. A
    replica's fetch is built only once its principal is known to hold CLUSTER_ACTION (see `fetch`): the
    follower positions it records decide the high watermark, so what acks=all acknowledges."""

    def __init__(self, ctx: RequestContext, request: Any, wants: list[Want]) -> None:
        self.ctx = ctx
        self.version = ctx.version
        replica_id = replica_id_of(self.version, request)
        self.is_replica = replica_id >= 0
        self.replica_id = replica_id
        self.read_committed = not self.is_replica and getattr(request, "isolation_level", 0) == 1
        # Kafka's cap, whatever the request asks: fetch.max.bytes (a first batch is still whole, KIP-74)
        self.max_bytes = min(request.max_bytes, ctx.broker.config.get("fetch.max.bytes"))
        self.zero_copy: bool = ctx.broker.zero_copy
        self.topics: list[tuple[FetchTopicResult, list[tuple[Want, Partition | None, KafkaError | None]]]] = []
        self.diverging: dict[tuple[str, int], tuple[int, int] | None] = {}
        self.read_wants: list[Want] = []  # the partitions of the last read, in its order
        self.authorized_any = False  # some partition passed authorization
        replicas = ctx.broker.replicas
        for want in wants:
            part: Partition | None = None
            err: KafkaError | None = None
            if not want.topic:
                err = KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
            else:
                try:
                    if not self.is_replica:
                        authz.require(ctx, authz.Op.READ, authz.TOPIC, want.topic)
                    self.authorized_any = True
                    part = replicas.leader_partition(want.topic, want.partition)
                    _check_epoch(part, want.current_leader_epoch)
                except KafkaError as exc:
                    err, part = exc, None
            if part is not None and self.is_replica:
                div = self.diverging[(want.topic, want.partition)] = part.diverging_epoch(
                    want.last_fetched_epoch, want.fetch_offset)
                try:
                    _check_follower(part, replica_id, want.fetch_offset, div is not None)
                    if div is None:  # a diverging follower truncates first; its position is not yet known
                        replicas.record_follower_fetch(part, replica_id, want.fetch_offset)
                except KafkaError as exc:
                    err, part = exc, None
            if not self.topics or self.topics[-1][0].name != want.topic or self.topics[-1][0].topic_id != want.topic_id:
                self.topics.append((FetchTopicResult(want.topic, want.topic_id), []))
            self.topics[-1][1].append((want, part, err))

    def read(self) -> tuple[list[FetchTopicResult], int, bool]:
        """Read every partition: the topics with their results, the bytes read, whether any failed."""
        remaining = self.max_bytes
        total = 0
        errors = False
        out: list[FetchTopicResult] = []
        self.read_wants = []
        for proto, entries in self.topics:
            topic = FetchTopicResult(proto.name, proto.topic_id)
            for want, part, err in entries:
                res = FetchPartitionResult(want.partition)
                if err is not None:
                    res.error_code = err.code
                    errors = True
                else:
                    assert part is not None
                    res.high_watermark = part.high_watermark
                    res.last_stable_offset = part.log.last_stable_offset
                    res.log_start_offset = part.log.log_start_offset
                    div = self.diverging.get((proto.name, want.partition))
                    if div is not None:
                        res.diverging_epoch = div
                        res.records = b""
                    else:
                        try:
                            data = part.read(
                                want.fetch_offset, min(want.max_bytes, max(remaining, 0)), self.is_replica,
                                min_one=total == 0, read_committed=self.read_committed, zero_copy=self.zero_copy,
                            )
                            res.records = data.records
                            n = len(data.records)
                            if self.read_committed and n:
                                res.aborted = part.log.collect_aborted(want.fetch_offset, res.last_stable_offset)
                            total += n
                            remaining -= n
                        except KafkaError as exc:
                            res.error_code = exc.code
                            errors = True
                topic.partitions.append(res)
                self.read_wants.append(want)
            out.append(topic)
        return out, total, errors

    def answer(self, topics: list[FetchTopicResult], session: FetchSession, incremental: bool
               ) -> list[FetchTopicResult]:
        """Note what each partition is told; an incremental fetch answers only the partitions with news."""
        wants = iter(self.read_wants)
        out: list[FetchTopicResult] = []
        for topic in topics:
            kept = []
            for res in topic.partitions:
                news = session.must_answer(next(wants), res.error_code, res.high_watermark, res.log_start_offset,
                                           bool(res.records), res.diverging_epoch is not None)
                if news or not incremental:
                    kept.append(res)
            if kept or not incremental:
                out.append(FetchTopicResult(topic.name, topic.topic_id, kept))
        return out

    def waiters(self) -> list[asyncio.Future[None]]:
        replica = self.is_replica
        return [part.data_waiter(replica) for _proto, entries in self.topics for _w, part, _e in entries
                if part is not None]


# v17 and v18 add only follower fields, tagged (ReplicaDirectoryId, KIP-853; HighWatermark, KIP-1166):
# the response is v16's.
@handles(FetchRequest, FetchResponse, versions=(4, 18))
async def fetch(ctx: RequestContext, request: Any) -> list[Piece]:
    version = ctx.version
    if replica_id_of(version, request) >= 0 and not authz.allowed(ctx, authz.Op.CLUSTER_ACTION, authz.CLUSTER):
        # before anything else: no fetch session, no follower position, no read
        return encode_fetch_response(version, ctx.header.correlation_id, [],
                                     error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    sessions = ctx.broker.fetch_sessions
    session: FetchSession | None = None
    incremental = False
    new_session = False
    wants = _wants(ctx, request)
    if version >= 7:
        session_id, epoch = request.session_id, request.session_epoch
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id:
                sessions.remove(session_id)
            new_session = epoch == INITIAL_EPOCH
        else:
            session = sessions.get(session_id)
            if session is None:
                return encode_fetch_response(version, ctx.header.correlation_id, [],
                                             error_code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
            if session.epoch != epoch:
                return encode_fetch_response(version, ctx.header.correlation_id, [],
                                             error_code=ErrorCode.INVALID_FETCH_SESSION_EPOCH)
            sessions.update(session, wants, _forgotten(ctx, request))
            wants = list(session.wants.values())
            incremental = True
    plan = _FetchPlan(ctx, request, wants)
    if new_session and (plan.authorized_any or not wants or not authz.enabled(ctx)):
        # a fetch refused on every partition gets no session: it would take a cache slot (evicting a
        # consumer's) for nothing
        session = sessions.create(wants)
    quotas = ctx.broker.quotas
    if quotas.enabled and not plan.is_replica:
        # As Kafka: no more than one quota window's worth of bytes (a first batch is still whole, KIP-74)
        cap = quotas.fetch_window_bytes(ctx.connection.principal, ctx.header.client_id or "")
        if cap is not None:
            plan.max_bytes = min(plan.max_bytes, cap)
    topics, total, errors = plan.read()
    wait_ms = request.max_wait_ms
    min_bytes = min(request.min_bytes, plan.max_bytes)  # never wait for more than may be sent
    if total < min_bytes and wait_ms > 0 and not errors and plan.topics:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        while total < min_bytes and not errors:
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
            _release(topics)
            topics, total, errors = plan.read()
    throttle = 0
    if quotas.enabled and not plan.is_replica:
        size = sum(len(p.records) for t in topics for p in t.partitions if p.records)
        throttle = quotas.fetch(ctx.connection.principal, ctx.header.client_id or "", size)
        if throttle:
            # As Kafka: a throttled fetch is answered empty (its bytes unrecorded, the consumer's position
            # unchanged), then the connection is muted; an incremental session keeps its state.
            quotas.unrecord_fetch(ctx.connection.principal, ctx.header.client_id or "", size)
            _release(topics)
            ctx.connection.mute_s = max(ctx.connection.mute_s, throttle / 1000)
            if session is not None and not incremental:
                sessions.remove(session.session_id)
            session_id = session.session_id if session is not None and incremental else 0
            return encode_fetch_response(version, ctx.header.correlation_id, [], throttle_time_ms=throttle,
                                         session_id=session_id)
    if session is not None:
        topics = plan.answer(topics, session, incremental)
    ctx.broker.metrics.error_codes("Fetch", [p.error_code for t in topics for p in t.partitions])
    if not plan.is_replica:
        for t in topics:
            size = sum(len(p.records) for p in t.partitions if p.records)
            if size:
                ctx.broker.metrics.fetched(t.name, size)
    return encode_fetch_response(version, ctx.header.correlation_id, topics,
                                 session_id=session.session_id if session is not None else 0)


def _release(topics: list[FetchTopicResult]) -> None:
    """Close the file regions of a read that will not be sent (their descriptors are duplicates)."""
    for t in topics:
        for p in t.partitions:
            if isinstance(p.records, FileRegion):
                p.records.close()


def _list_offset(ctx: RequestContext, name: str, req_p: Any, is_replica: bool, isolation: int) -> Any:
    version = ctx.version
    res = ListOffsetsResponse.ListOffsetsTopicResponse.ListOffsetsPartitionResponse(
        partition_index=req_p.partition_index, error_code=0, old_style_offsets=[], timestamp=-1, offset=-1,
        leader_epoch=-1,
    )
    try:
        authz.require(ctx, authz.Op.DESCRIBE, authz.TOPIC, name)
        part = ctx.broker.replicas.leader_partition(name, req_p.partition_index)
        if version >= 4:
            _check_epoch(part, req_p.current_leader_epoch)
        ts = req_p.timestamp
        # read_committed consumers see offsets up to the last stable offset (ListOffsets v2+)
        hw = part.log.last_stable_offset if isolation == 1 and not is_replica else part.high_watermark
        if ts in (EARLIEST, EARLIEST_LOCAL):  # every segment is local: the local log start is the log start
            res.offset = part.log.log_start_offset
        elif ts in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
            # nothing is tiered and nothing waits for an upload (no remote storage): Kafka answers offset
            # -1, timestamp -1 and leader epoch -1 for both
            res.leader_epoch = -1
            return res
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


@handles(ListOffsetsRequest, ListOffsetsResponse, versions=(1, 11))
async def list_offsets(ctx: RequestContext, request: Any) -> ListOffsetsResponse:
    """v10's timeout_ms bounds Kafka's wait for remote (tiered) offsets; every offset here is local and
    answered at once, so it has nothing to bound. v11 only adds the earliest-pending-upload timestamp
    (-6), which has no offset here (nothing is tiered)."""
    is_replica = request.replica_id >= 0
    topics = []
    for t in request.topics:
        parts = [_list_offset(ctx, t.name, p, is_replica, request.isolation_level) for p in t.partitions]
        topics.append(ListOffsetsResponse.ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(throttle_time_ms=0, topics=topics)


def _epoch_end_offset(ctx: RequestContext, topic: str, p: Any) -> Any:
    try:
        authz.require(ctx, authz.Op.DESCRIBE, authz.TOPIC, topic)
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
