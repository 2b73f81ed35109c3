"""Share group APIs (KIP-932): ShareGroupHeartbeat (76) and ShareGroupDescribe (77) at v1, served by
the group coordinator's share type (`odradek.groups.share_coordinator`), and ShareFetch (78) and
ShareAcknowledge (79) at v1-2, served over the share partitions (`odradek.groups.share_state`) and the
share sessions (`odradek.server.share_sessions`). The message classes are in `odradek.protocol.kip932`.

Version 2 (Kafka 4.2) adds the RENEW acknowledgement (type 4, KIP-1222: the record stays acquired by the
member with a fresh acquisition lock), allowed only in a v2 request whose IsRenewAck is set (elsewhere:
INVALID_REQUEST for the partition). A ShareFetch with IsRenewAck only acknowledges: it fetches nothing,
and its MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0 (INVALID_REQUEST otherwise). ShareFetch v2
also names the acquire mode (KIP-1206): record-limit (1) never acquires more than MaxRecords (a batch is
split, acquired offset by offset); batch-optimized (0, v1's) acquires whole batches, finishing the batch
the limit falls in, as Kafka. ShareAcknowledge v2 answers the lock duration.

A fetch takes its session's partitions from a start that rotates with the session epoch (Kafka's
round-robin rotation), MaxBytes shared out evenly between them (its uniform strategy); MaxBytes 0
acquires nothing. The answers are Kafka's to the byte: empty records,
never null, where nothing was acquired; every partition of a fetch opening a session; CurrentLeader and
NodeEndpoints filled only for a partition whose leader moved.

ShareFetch never decodes a record: it reads whole batches from the log as bytes (walking only their
headers for the offsets), in steps that grow until MaxRecords are acquired (`FIRST_READ_BYTES`), acquires
offsets of them for the member, and answers the batches that hold an acquired offset with the acquired
ranges and their delivery counts (AcquiredRecords); the client keeps the records of those ranges and
drops the rest, as with Kafka. Departure: the records are copied into
the response (no sendfile region as in Fetch). A fetch that acquires nothing waits up to MaxWaitMs for
new data in its partitions or for records given back (released, lock expired); MinBytes counts the bytes
of acquired batches. A share partition's state is read on its first fetch; once a fetch has acquired
something, the partitions still to be read are read in the background and answered empty, as Kafka's
asynchronously initialised share partitions are (the first fetch of a new group's partitions gets the
records of the first one ready, librdkafka's 0179 expects one partition's records there).

Authorization, before any side effect: GROUP READ on the group for every API here but
ShareGroupDescribe (GROUP DESCRIBE); TOPIC READ on each topic fetched or acknowledged
(TOPIC_AUTHORIZATION_FAILED for its partitions). As Kafka (KAFKA-18817): a heartbeat subscribing to a topic
the member may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED, and a group whose members are assigned such a
topic is described by TOPIC_AUTHORIZATION_FAILED alone.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from odradek.groups.service import GroupCoordinatorService
from odradek.groups.share_coordinator import ShareHeartbeat
from odradek.groups.share_partition import AckBatch, AckType, Acquired, SharePartition
from odradek.groups.share_state import ShareKey, persist_error
from odradek.protocol.errors import CorruptRecordError, ErrorCode, KafkaError
from odradek.protocol.kip932 import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)
from odradek.protocol.records import iter_batches
from odradek.replication.partition import Partition
from odradek.server import authz
from odradek.server.handlers.consumer_groups import (
    TOPIC_AUTHORIZATION_MESSAGE,
    describe_each,
    described_member,
)
from odradek.server.handlers.groups import client_host
from odradek.server.handlers.metadata import listener_endpoints
from odradek.server.registry import RequestContext, handles
from odradek.server.share_sessions import CLOSE_EPOCH, OPEN_EPOCH, ShareSession, TopicPartitionId
from odradek.storage.region import FileRegion

_FetchPart = ShareFetchResponse.ShareFetchableTopicResponse.PartitionData
_AckPart = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse.PartitionData


# A ShareFetch acquires at most MaxRecords records (librdkafka asks for 500 and up to 50 MB): each partition
# is read in steps growing fourfold from this size, until enough records are acquired or MaxBytes is
# reached, instead of reading MaxBytes of log to keep a few kilobytes of it.
FIRST_READ_BYTES = 64 << 10


def _groups(ctx: RequestContext) -> GroupCoordinatorService:
    gc: GroupCoordinatorService = ctx.broker.groups
    return gc


# ---- ShareGroupHeartbeat, ShareGroupDescribe ----
def _offset_for_time(log: Any, ts: int) -> int | None:
    """The log's first offset with a timestamp at or after `ts` (share.auto.offset.reset=by_duration)."""
    found = log.fetch_offset_by_timestamp(ts)
    return None if found is None else int(found[0])


@handles(ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, versions=(1, 1))
async def share_group_heartbeat(ctx: RequestContext, request: Any) -> ShareGroupHeartbeatResponse:
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, request.group_id or ""):
        return ShareGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
            member_id=request.member_id, member_epoch=request.member_epoch, heartbeat_interval_ms=0, assignment=None)
    names = request.subscribed_topic_names
    if names and authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, names):  # Kafka (KAFKA-18817)
        return ShareGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            error_message=TOPIC_AUTHORIZATION_MESSAGE, member_id=request.member_id,
            member_epoch=request.member_epoch, heartbeat_interval_ms=0, assignment=None)
    res = await _groups(ctx).share_heartbeat(ShareHeartbeat(
        group_id=request.group_id or "", member_id=request.member_id or "", member_epoch=request.member_epoch,
        rack_id=request.rack_id, subscribed_topic_names=list(names) if names is not None else None,
        client_id=ctx.header.client_id or "", client_host=client_host(ctx)))
    assignment = None
    if res.assignment is not None:
        tp_cls = ShareGroupHeartbeatResponse.Assignment.TopicPartitions
        assignment = ShareGroupHeartbeatResponse.Assignment(topic_partitions=[
            tp_cls(topic_id=uuid.UUID(bytes=t), partitions=sorted(ps)) for t, ps in sorted(res.assignment.items())
            if ps])
    return ShareGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=res.error, error_message=res.message, member_id=res.member_id,
        member_epoch=res.member_epoch, heartbeat_interval_ms=res.heartbeat_interval_ms, assignment=assignment)


@handles(ShareGroupDescribeRequest, ShareGroupDescribeResponse, versions=(1, 1))
async def share_group_describe(ctx: RequestContext, request: Any) -> ShareGroupDescribeResponse:
    gc = _groups(ctx)
    member = partial(described_member, ShareGroupDescribeResponse.DescribedGroup.Member, gc.topic_name)
    out = await describe_each(ctx, request, ShareGroupDescribeResponse.DescribedGroup, gc.share_describe, member,
                              gc.topic_name)  # hides a group assigned a topic the caller may not describe
    return ShareGroupDescribeResponse(throttle_time_ms=0, groups=out)


# ---- acknowledgements (ShareFetch and ShareAcknowledge) ----
@dataclass(slots=True)
class _PartitionResult:
    error: ErrorCode = ErrorCode.NONE
    ack_error: ErrorCode = ErrorCode.NONE
    records: bytes | None = None
    acquired: list[Acquired] = field(default_factory=list)
    batches: set[int] = field(default_factory=set)  # base offsets of the batches in `records`


class _Request:
    """What ShareFetch and ShareAcknowledge share: the group, the member, the session, the per-partition
    results in the order first named."""

    def __init__(self, ctx: RequestContext, group_id: str, member_id: str) -> None:
        self.ctx = ctx
        self.gc = _groups(ctx)
        self.group_id = group_id
        self.member_id = member_id
        self.results: dict[TopicPartitionId, _PartitionResult] = {}

    def result(self, tp: TopicPartitionId) -> _PartitionResult:
        res = self.results.get(tp)
        if res is None:
            res = self.results[tp] = _PartitionResult()
        return res

    def check_topic(self, tp: TopicPartitionId) -> Partition:
        """The partition, if the topic exists, the principal may READ it and this broker leads it; else
        the Kafka error for the client."""
        name = self.ctx.broker.metadata.by_id.get(tp[0])
        if name is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "unknown topic id")
        authz.require(self.ctx, authz.Op.READ, authz.TOPIC, name)
        part: Partition = self.ctx.broker.replicas.leader_partition(name, tp[1])
        return part

    async def acknowledge(self, topics: Any, renew_allowed: bool = False) -> None:
        """Apply the acknowledgement batches of `topics` (a request's Topics), one result per partition;
        a partition with a RENEW where `renew_allowed` is false gets INVALID_REQUEST."""
        manager = self.gc.share_partitions
        for t in topics or []:
            for p in t.partitions or []:
                batches = p.acknowledgement_batches or []
                if not batches:
                    continue
                tp = (t.topic_id.bytes, p.partition_index)
                res = self.result(tp)
                try:
                    self.check_topic(tp)
                except KafkaError as exc:
                    res.ack_error = exc.code
                    continue
                if not renew_allowed and any(AckType.RENEW in (b.acknowledge_types or ()) for b in batches):
                    res.ack_error = ErrorCode.INVALID_REQUEST
                    continue
                key = ShareKey(self.group_id, tp[0], tp[1])
                res.ack_error = await manager.acknowledge(key, self.member_id, [
                    AckBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types or ())) for b in batches])

    def release_session(self, session: ShareSession) -> None:
        self.gc.share_partitions.release(self.group_id, self.member_id,
                                         [ShareKey(self.group_id, t, p) for t, p in session.partitions])


_LEADER_MOVED = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


class _Leaders:
    """CurrentLeader and NodeEndpoints as Kafka fills them (KafkaApis): a partition answered
    NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current leader and epoch, and the response
    that leader's endpoint on the request's listener; every other partition keeps the field's default
    (leader 0, epoch 0: the schema gives no other)."""

    def __init__(self, ctx: RequestContext) -> None:
        self.ctx = ctx
        self.endpoints: dict[int, Any] = {}

    def of(self, cls: Any, topic_id: bytes, partition: int, error: int) -> Any:
        if error not in _LEADER_MOVED:
            return cls(leader_id=0, leader_epoch=0)
        cache = self.ctx.broker.metadata
        meta = cache.topics.get(cache.by_id.get(topic_id, ""))
        st = meta.states.get(partition) if meta is not None else None
        if st is None or st.leader not in cache.brokers:
            return cls(leader_id=-1, leader_epoch=-1 if st is None else st.leader_epoch)
        for b, host, port in listener_endpoints([cache.brokers[st.leader]], self.ctx.connection.security.name):
            self.endpoints[b.broker_id] = (host, port, b.rack)
        return cls(leader_id=st.leader, leader_epoch=st.leader_epoch)

    def node_endpoints(self, cls: Any) -> list[Any]:
        return [cls(node_id=n, host=h, port=p, rack=r) for n, (h, p, r) in sorted(self.endpoints.items())]


def _end_session(ctx: RequestContext, session: ShareSession) -> None:
    """The connection that opened `session` is gone: give back what the member holds in its partitions
    and drop it, unless a newer session replaced it."""
    sessions = ctx.broker.share_sessions
    if sessions.sessions.get((session.group_id, session.member_id)) is session:
        _Request(ctx, session.group_id, session.member_id).release_session(session)
        sessions.close(session)


def _refusal(ctx: RequestContext, group_id: str, member_id: str) -> tuple[ErrorCode, str | None] | None:
    """The top-level error of a ShareFetch or ShareAcknowledge refused before anything is done."""
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, group_id):
        return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
    if not group_id or not member_id:
        return ErrorCode.INVALID_REQUEST, "GroupId and MemberId must not be empty."
    return None


def _has_acks(topics: Any) -> bool:
    return any(p.acknowledgement_batches for t in topics or [] for p in t.partitions or [])


def _is_renew(ctx: RequestContext, request: Any) -> bool:
    """Whether the request may carry RENEW acknowledgements: v2 and later with IsRenewAck set."""
    return ctx.version >= 2 and bool(request.is_renew_ack)


def _count(ctx: RequestContext, results: dict[TopicPartitionId, _PartitionResult], fetched: Iterable[TopicPartitionId],
           acked: Iterable[TopicPartitionId]) -> None:
    """Kafka's per-topic share request metrics: each topic fetched from or acknowledged in, failed when
    one of its partitions got an error."""
    def by_name(tps: Iterable[TopicPartitionId], error: Callable[[_PartitionResult], int]) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for tp in tps:
            name = ctx.broker.metadata.by_id.get(tp[0])
            res = results.get(tp)
            if name is not None and res is not None:
                out[name] = out.get(name, False) or bool(error(res))
        return out

    ctx.broker.metrics.share_requests(by_name(fetched, lambda r: r.error), by_name(acked, lambda r: r.ack_error))


def _by_topic(results: dict[TopicPartitionId, _PartitionResult]) -> dict[bytes, list[tuple[int, _PartitionResult]]]:
    out: dict[bytes, list[tuple[int, _PartitionResult]]] = {}
    for (topic_id, partition), res in results.items():
        out.setdefault(topic_id, []).append((partition, res))
    return out


# ---- ShareFetch ----
def _fetch_error(code: ErrorCode, message: str | None = None) -> ShareFetchResponse:
    """A ShareFetch refused whole: no partitions, AcquisitionLockTimeoutMs 0 (Kafka's error response)."""
    return ShareFetchResponse(throttle_time_ms=0, error_code=code, error_message=message,
                              acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])


def _coalesce(acquired: list[Acquired]) -> list[Acquired]:
    """Adjacent ranges of one delivery count as one (a partition read in several steps acquires in
    several ranges)."""
    out: list[Acquired] = []
    for a in sorted(acquired, key=lambda a: a.first_offset):
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == a.first_offset and last.delivery_count == a.delivery_count:
            out[-1] = Acquired(last.first_offset, a.last_offset, a.delivery_count)
        else:
            out.append(a)
    return out


def _batch_ranges(data: bytes) -> list[tuple[int, int, int, int]]:
    """(base offset, last offset, start, end) of each whole batch in `data` (headers only)."""
    out = []
    try:
        for pos, header in iter_batches(data):
            out.append((header.base_offset, header.last_offset, pos, pos + header.size))
    except CorruptRecordError:
        pass
    return out


def _aborted_bases(data: bytes, aborted: list[tuple[int, int]]) -> set[int]:
    """Base offsets of the batches in `data` that belong to aborted transactions, found as a read_committed
    consumer finds them: `aborted` ((producer id, first offset) from the log's aborted-transaction index)
    names a producer's transaction aborted from its first offset until that producer's control batch."""
    pending = sorted(aborted, key=lambda a: a[1])
    ongoing: set[int] = set()
    out: set[int] = set()
    i = 0
    try:
        for _pos, header in iter_batches(data):
            while i < len(pending) and pending[i][1] <= header.last_offset:
                ongoing.add(pending[i][0])
                i += 1
            if header.is_control:
                ongoing.discard(header.producer_id)  # its abort marker ends the aborted transaction
            elif header.is_transactional and header.producer_id in ongoing:
                out.add(header.base_offset)
    except CorruptRecordError:
        pass
    return out


BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1  # ShareFetch v2's ShareAcquireMode (KIP-1206)


def _fetch_refusal(ctx: RequestContext, request: Any) -> str | None:
    """Why a v2 ShareFetch is INVALID_REQUEST before anything is done: an unknown acquire mode, or a
    renewing fetch (it only acknowledges) that asks for records."""
    if ctx.version < 2:
        return None
    if request.share_acquire_mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
        return f"Unknown ShareAcquireMode {request.share_acquire_mode}."
    if request.is_renew_ack and (request.max_bytes or request.min_bytes or request.max_records
                                 or request.max_wait_ms):
        return "MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0 when IsRenewAck is set."
    return None


class _Fetch(_Request):
    def __init__(self, ctx: RequestContext, request: Any, session: ShareSession) -> None:
        super().__init__(ctx, request.group_id or "", request.member_id or "")
        self.session = session
        # capped by fetch.max.bytes as a Fetch is (a first batch is still whole, KIP-74), and as Kafka by one
        # quota window of the client's consumer_byte_rate, so a quota never blocks a consumer for good
        self.max_bytes = min(max(request.max_bytes, 0), ctx.broker.config.get("fetch.max.bytes"))
        quotas = ctx.broker.quotas
        cap = quotas.fetch_window_bytes(ctx.connection.principal, ctx.header.client_id or "") \
            if quotas.enabled else None
        if cap is not None:
            self.max_bytes = min(self.max_bytes, cap)
        self.max_records = request.max_records if request.max_records > 0 else 500
        # batch-optimized (v1's, and v2's mode 0) acquires whole batches, record-limit never past MaxRecords
        self.whole_batches = ctx.version < 2 or request.share_acquire_mode == BATCH_OPTIMIZED
        self.epoch = request.share_session_epoch
        self.parts: dict[TopicPartitionId, Partition] = {}
        self.acked: frozenset[TopicPartitionId] = frozenset()  # the partitions acknowledged in this request
        self.bytes_acquired = 0  # of the batches acquired so far, over every read of this fetch

    def resolve(self) -> None:
        """The session's partitions this member may fetch; the others get their error now, and those of
        topic ids that name no topic leave the session (a client cannot make it hold made-up ones)."""
        for tp in list(self.session.partitions):
            try:
                self.parts[tp] = self.check_topic(tp)
            except KafkaError as exc:
                self.result(tp).error = exc.code
                if exc.code == ErrorCode.UNKNOWN_TOPIC_ID:
                    del self.session.partitions[tp]

    def _rotated(self) -> list[tuple[TopicPartitionId, Partition]]:
        """The session's partitions, rotated by the request's session epoch (Kafka's round-robin
        PartitionRotateStrategy), so when MaxRecords or MaxBytes runs out before the last partition, the
        next fetch starts with another one."""
        parts = list(self.parts.items())
        if not parts:
            return parts
        shift = max(self.epoch, 0) % len(parts)
        return parts[shift:] + parts[:shift]

    async def read(self) -> int:
        """Acquire what each partition offers; the bytes of the batches acquired. MaxBytes is shared out
        evenly between the partitions (Kafka's uniform PartitionMaxBytesStrategy), the response's first
        batch whole whatever its size (KIP-74); MaxBytes 0 fetches nothing (as Kafka: not even that
        batch)."""
        manager = self.gc.share_partitions
        total = 0
        records_left = self.max_records
        if self.max_bytes <= 0:
            return 0
        share = max(self.max_bytes // max(len(self.parts), 1), 1)
        for tp, part in self._rotated():
            if records_left <= 0 or total >= self.max_bytes:
                break
            res = self.result(tp)
            if res.error:
                continue
            key = ShareKey(self.group_id, tp[0], tp[1])
            bounds = (part.log.log_start_offset, part.high_watermark, part.leader_epoch,
                      partial(_offset_for_time, part.log))
            if self.bytes_acquired and not manager.loaded(key, part.leader_epoch):
                # Kafka's share partitions initialise asynchronously and a fetch answers with the records of
                # those ready once it has MinBytes: this one's state is read in the background, for the next
                manager.load_soon(key, *bounds)
                continue
            try:
                sp = await manager.partition(key, *bounds)
            except KafkaError as exc:  # its state could not be read (or initialised)
                res.error = persist_error(exc)
                continue
            step, taken = FIRST_READ_BYTES, 0
            while records_left > 0:
                got, size, moved = await self._read_step(
                    part, sp, key, res, records_left, max(min(step, share - taken, self.max_bytes - total), 1),
                    total == 0)
                records_left -= got
                total += size
                taken += size
                self.bytes_acquired += size
                if not moved or taken >= share or total >= self.max_bytes or res.error:
                    break
                step *= 4
        return total

    async def _read_step(self, part: Partition, sp: SharePartition, key: ShareKey, res: _PartitionResult,
                         records_left: int, max_bytes: int, min_one: bool) -> tuple[int, int, bool]:
        """Read up to `max_bytes` of the partition from its first available offset (at least one whole batch
        if `min_one`: the response's first, KIP-74) and acquire up to `records_left` records of it; (records
        acquired, bytes of the batches holding them, whether another step may find more: records were
        acquired, or the first available offset moved past aborted records archived)."""
        manager = self.gc.share_partitions
        if not sp.can_acquire():
            return 0, 0, False
        offset = sp.next_fetch_offset()
        committed = manager.read_committed(self.group_id)
        upper = part.log.last_stable_offset if committed else part.high_watermark
        if offset >= upper:
            return 0, 0, False
        try:
            data = part.read(offset, max_bytes, False, min_one=min_one, read_committed=committed).records
        except KafkaError as exc:
            res.error = exc.code
            return 0, 0, False
        assert not isinstance(data, FileRegion)  # zero_copy=False
        raw = bytes(data)
        # only batches past those already in the response, whose records stay in offset order
        floor = max(res.batches, default=-1)
        batches = [b for b in _batch_ranges(raw) if b[0] > floor]
        # under read_committed the records of aborted transactions are archived, never delivered
        aborted = _aborted_bases(raw, part.log.collect_aborted(offset, upper)) if committed else set()
        got = await manager.acquire(key, self.member_id,
                                    [(b, last) for b, last, _s, _e in batches if b not in aborted], records_left,
                                    self.whole_batches)
        if aborted:
            await manager.archive(key, [(b, last) for b, last, _s, _e in batches if b in aborted])
        if not got:
            return 0, 0, sp.next_fetch_offset() > offset
        res.acquired.extend(got)
        wanted = [(b, s, e) for b, last, s, e in batches
                  if any(a.first_offset <= last and b <= a.last_offset for a in got)]
        res.batches.update(b for b, _s, _e in wanted)
        chunk = b"".join(raw[s:e] for _b, s, e in wanted)
        res.records = (res.records or b"") + chunk
        return sum(a.last_offset - a.first_offset + 1 for a in got), len(chunk), True

    async def throttled(self) -> int:
        """Record the bytes of the records acquired against the client's fetch quota (Kafka's FETCH sensor,
        which Fetch and ShareFetch share); past the quota the throttle time in ms, the bytes unrecorded and
        the records undone, for an empty answer as Kafka's throttled share fetch (see `give_back`)."""
        quotas = self.ctx.broker.quotas
        if not quotas.enabled:
            return 0
        principal, client_id = self.ctx.connection.principal, self.ctx.header.client_id or ""
        size = sum(len(r.records) for r in self.results.values() if r.acquired and r.records)
        throttle = quotas.fetch(principal, client_id, size)
        if throttle:
            quotas.unrecord_fetch(principal, client_id, size)
            for (topic_id, partition), res in self.results.items():
                if res.acquired:
                    await self.gc.share_partitions.give_back(ShareKey(self.group_id, topic_id, partition),
                                                             self.member_id, res.acquired)
            self.ctx.connection.mute_s = max(self.ctx.connection.mute_s, throttle / 1000)
        return throttle

    def waiters(self) -> list[asyncio.Future[None]]:
        manager = self.gc.share_partitions
        out = []
        for tp, part in self.parts.items():
            out.append(part.data_waiter())
            out.append(manager.waiter(ShareKey(self.group_id, tp[0], tp[1])))
        return out

    def response(self, lock_ms: int, every_partition: bool = False) -> ShareFetchResponse:
        """The answer as Kafka's share session context writes it: every partition of a session being
        opened (`every_partition`), else those with records, an error or an acknowledgement; records
        empty, never null, where nothing was acquired (librdkafka drops a whole response whose records
        are null, as Kafka 4.1 made them non-nullable, KAFKA-18889)."""
        topic_cls = ShareFetchResponse.ShareFetchableTopicResponse
        leaders = _Leaders(self.ctx)
        if every_partition:
            for tp in self.session.partitions:
                self.result(tp)
        responses = []
        for topic_id, entries in _by_topic(self.results).items():
            parts = []
            for partition, res in entries:
                if (not every_partition and res.error == 0 and res.ack_error == 0 and not res.acquired
                        and (topic_id, partition) not in self.acked):
                    continue
                parts.append(_FetchPart(
                    partition_index=partition, error_code=res.error, error_message=None,
                    acknowledge_error_code=res.ack_error, acknowledge_error_message=None,
                    current_leader=leaders.of(_FetchPart.LeaderIdAndEpoch, topic_id, partition, res.error),
                    records=(res.records or b"") if res.acquired else b"",
                    acquired_records=[_FetchPart.AcquiredRecords(first_offset=a.first_offset,
                                                                 last_offset=a.last_offset,
                                                                 delivery_count=a.delivery_count)
                                      for a in _coalesce(res.acquired)]))
            if parts:
                responses.append(topic_cls(topic_id=uuid.UUID(bytes=topic_id), partitions=parts))
        return ShareFetchResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                  acquisition_lock_timeout_ms=lock_ms, responses=responses,
                                  node_endpoints=leaders.node_endpoints(ShareFetchResponse.NodeEndpoint))


@handles(ShareFetchRequest, ShareFetchResponse, versions=(1, 2))
async def share_fetch(ctx: RequestContext, request: Any) -> ShareFetchResponse:
    gc = _groups(ctx)
    lock_ms = gc.share_partitions.lock_duration_ms(request.group_id or "")
    group_id, member_id, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
    refused = _refusal(ctx, group_id, member_id)
    if refused is not None:
        return _fetch_error(*refused)
    invalid = _fetch_refusal(ctx, request)
    if invalid is not None:
        return _fetch_error(ErrorCode.INVALID_REQUEST, invalid)
    renew = _is_renew(ctx, request)
    sessions = ctx.broker.share_sessions
    try:
        if epoch == OPEN_EPOCH:
            if _has_acks(request.topics):
                raise KafkaError(ErrorCode.INVALID_REQUEST,
                                 "Acknowledgements are not allowed in a request that opens a share session.")
            unknown = gc.share_session_refusal(group_id, member_id)
            if unknown is not None:
                raise KafkaError(*unknown)
            old = sessions.sessions.get((group_id, member_id))
            if old is not None:
                _Request(ctx, group_id, member_id).release_session(old)
            session = sessions.open(group_id, member_id, gc.share.settings.max_size)
            # a session ends with the connection that opened it (Kafka's disconnect listener): its records
            # go back to the others and the session leaves the cache
            ctx.connection.on_close[("share session", group_id, member_id)] = partial(_end_session, ctx, session)
        elif epoch == CLOSE_EPOCH:
            session = sessions.closing(group_id, member_id)
        elif epoch < CLOSE_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH, f"Share session epoch {epoch} is invalid.")
        else:
            session = sessions.current(group_id, member_id, epoch)
    except KafkaError as exc:
        return _fetch_error(exc.code, exc.message)
    fetch = _Fetch(ctx, request, session)
    await fetch.acknowledge(request.topics, renew)
    fetch.acked = frozenset(fetch.results)
    if epoch == CLOSE_EPOCH:
        fetch.release_session(session)
        sessions.close(session)
        _count(ctx, fetch.results, (), fetch.acked)
        return fetch.response(lock_ms)
    for t in request.forgotten_topics_data or []:
        for p in t.partitions or []:
            session.partitions.pop((t.topic_id.bytes, p), None)
    for t in request.topics or []:
        for p in t.partitions or []:
            session.partitions[(t.topic_id.bytes, p.partition_index)] = None
    if renew:  # a renewing fetch only acknowledges (Kafka skips the fetch)
        _count(ctx, fetch.results, (), fetch.acked)
        return fetch.response(lock_ms)
    fetch.resolve()
    total = await fetch.read()
    wait_ms = request.max_wait_ms
    min_bytes = max(min(request.min_bytes, fetch.max_bytes), 1)  # never wait for more than may be sent
    if total < min_bytes and wait_ms > 0 and fetch.parts and not fetch.acked:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_ms / 1000
        while total < min_bytes:
            remaining = deadline - loop.time()
            if remaining <= 0 or ctx.broker.stopping:
                break
            waiters = fetch.waiters()
            done, pending = await asyncio.wait(waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            for f in pending:
                f.cancel()
            if not done:
                break
            total += await fetch.read()
    throttle = await fetch.throttled()
    if throttle:
        return ShareFetchResponse(throttle_time_ms=throttle, error_code=0, error_message=None,
                                  acquisition_lock_timeout_ms=lock_ms, responses=[], node_endpoints=[])
    ctx.broker.metrics.error_codes("ShareFetch", [r.error for r in fetch.results.values()])
    _count(ctx, fetch.results, list(session.partitions), fetch.acked)
    return fetch.response(lock_ms, every_partition=epoch == OPEN_EPOCH)


# ---- ShareAcknowledge ----
@handles(ShareAcknowledgeRequest, ShareAcknowledgeResponse, versions=(1, 2))
async def share_acknowledge(ctx: RequestContext, request: Any) -> ShareAcknowledgeResponse:
    group_id, member_id, epoch = request.group_id or "", request.member_id or "", request.share_session_epoch
    lock_ms = _groups(ctx).share_partitions.lock_duration_ms(group_id)  # answered from v2

    def error(code: ErrorCode, message: str | None = None) -> ShareAcknowledgeResponse:
        return ShareAcknowledgeResponse(throttle_time_ms=0, error_code=code, error_message=message,
                                        acquisition_lock_timeout_ms=0, responses=[], node_endpoints=[])

    refused = _refusal(ctx, group_id, member_id)
    if refused is not None:
        return error(*refused)
    sessions = ctx.broker.share_sessions
    try:
        if epoch == OPEN_EPOCH or epoch < CLOSE_EPOCH:
            raise KafkaError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                             f"Share session epoch {epoch} is invalid for ShareAcknowledge.")
        session = (sessions.closing(group_id, member_id) if epoch == CLOSE_EPOCH
                   else sessions.current(group_id, member_id, epoch))
    except KafkaError as exc:
        return error(exc.code, exc.message)
    req = _Request(ctx, group_id, member_id)
    await req.acknowledge(request.topics, _is_renew(ctx, request))
    _count(ctx, req.results, (), list(req.results))
    if epoch == CLOSE_EPOCH:
        req.release_session(session)
        sessions.close(session)
    topic_cls = ShareAcknowledgeResponse.ShareAcknowledgeTopicResponse
    leaders = _Leaders(ctx)
    responses = [topic_cls(topic_id=uuid.UUID(bytes=topic_id), partitions=[
        _AckPart(partition_index=partition, error_code=res.ack_error, error_message=None,
                 current_leader=leaders.of(_AckPart.LeaderIdAndEpoch, topic_id, partition, res.ack_error))
        for partition, res in entries])
        for topic_id, entries in _by_topic(req.results).items()]
    return ShareAcknowledgeResponse(
        throttle_time_ms=0, error_code=0, error_message=None, acquisition_lock_timeout_ms=lock_ms,
        responses=responses, node_endpoints=leaders.node_endpoints(ShareAcknowledgeResponse.NodeEndpoint))
