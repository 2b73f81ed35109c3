"""Group APIs of the classic protocol: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete.

The handlers translate between the wire messages (per version) and the group coordinator
(`odradek.groups.service.GroupCoordinatorService`, `broker.groups`, built and started before the broker
accepts connections); all group logic lives there, and it routes each request to the group's type
(classic, consumer) and the offsets APIs to the one offset manager. ListGroups lists both kinds, with their
type from v5.
"""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
)
from kafka.protocol.consumer import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.group import OffsetDeleteRequest, OffsetDeleteResponse
from kafka.protocol.metadata import FindCoordinatorRequest, FindCoordinatorResponse
from kafka.protocol.producer import TxnOffsetCommitRequest, TxnOffsetCommitResponse

from odradek.cluster.znodes import BrokerInfo
from odradek.coordinator.runtime import WRITE_ERRORS
from odradek.groups import OFFSETS_TOPIC
from odradek.groups.group import GroupState, GroupSummary, JoinRequest, MemberProfile, now_ms
from odradek.groups.schemas import OffsetValue, TopicPartition
from odradek.groups.service import (
    GROUP_TYPE_CONSUMER,
    GROUP_TYPE_SHARE,
    GROUP_TYPE_STREAMS,
    GroupCoordinatorService,
)
from odradek.groups.share_state_coordinator import coordinator_key, parse_coordinator_key
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.kafka44 import DeleteGroupsRequest, DeleteGroupsResponse
from odradek.server import authz
from odradek.server.registry import RequestContext, handles
from odradek.storage.producer_state import NO_GUARD
from odradek.txn.verification import FIRST_ADDING_TXN_OFFSET_COMMIT_VERSION

KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE = 0, 1, 2
# kafka-python encodes authorized operations as a set of bit numbers; None is Kafka's "not requested"


def coordinator(ctx: RequestContext) -> GroupCoordinatorService:
    gc: GroupCoordinatorService = ctx.broker.groups
    return gc


def client_host(ctx: RequestContext) -> str:
    """The client's host as Kafka's group coordinator records it: "/" and the address, no port."""
    peer = getattr(ctx.connection, "peer", "") or ""
    return "/" + peer.rsplit(":", 1)[0] if peer else ""


def _topic_partition_known(ctx: RequestContext, topic: str, partition: int) -> bool:
    meta = ctx.broker.metadata.topics.get(topic)
    return meta is not None and partition in meta.assignment


# ---- FindCoordinator ----------------------------------------------------------------------------


async def _find_one(ctx: RequestContext, key: str | None, key_type: int,
                    listener: str) -> tuple[int, str | None, int, str, int]:
    """-> (error, message, node id, host, port)"""
    if key_type not in (KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, KEY_TYPE_SHARE) or key is None:
        return ErrorCode.INVALID_REQUEST, f"Unsupported coordinator key type {key_type}", -1, "", -1
    try:
        if key_type == KEY_TYPE_SHARE:  # the share coordinator of a share partition (brokers only, KIP-932)
            authz.require(ctx, authz.Op.CLUSTER_ACTION, authz.CLUSTER)
            share_key = parse_coordinator_key(key)
            if share_key is None or ctx.version < 6:
                return ErrorCode.INVALID_REQUEST, f"Invalid share coordinator key {key!r}", -1, "", -1
            info = await ctx.broker.share_coordinator.runtime.coordinator_node(coordinator_key(share_key))
            return _endpoint(info, listener)
        authz.require(ctx, authz.Op.DESCRIBE, authz.TRANSACTIONAL_ID if key_type == KEY_TYPE_TRANSACTION else authz.GROUP,
                      key)
        if key_type == KEY_TYPE_TRANSACTION:
            if not key:
                return ErrorCode.INVALID_REQUEST, "The transactional id must not be empty", -1, "", -1
            info = await ctx.broker.transactions.coordinator_node(key)
        else:
            info = await coordinator(ctx).coordinator_node(key)
    except KafkaError as exc:
        return exc.code, exc.message, -1, "", -1
    return _endpoint(info, listener)


def _endpoint(info: BrokerInfo, listener: str) -> tuple[int, str | None, int, str, int]:
    endpoint = info.endpoint(listener)
    if endpoint is None:  # as Kafka: the coordinator has no endpoint on the listener the client uses
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, None, -1, "", -1
    return ErrorCode.NONE, None, info.broker_id, endpoint[0], endpoint[1]


# v6 adds the share coordinator key type (KIP-932): "<group>:<topic id>:<partition>", for brokers only
# (CLUSTER_ACTION), as Kafka.
@handles(FindCoordinatorRequest, FindCoordinatorResponse, versions=(0, 6))
async def find_coordinator(ctx: RequestContext, request: Any) -> FindCoordinatorResponse:
    key_type = request.key_type if ctx.version >= 1 else KEY_TYPE_GROUP
    if ctx.version >= 4:
        coordinators = []
        for key in request.coordinator_keys:
            err, msg, node, host, port = await _find_one(ctx, key, key_type, ctx.connection.security.name)
            coordinators.append(FindCoordinatorResponse.Coordinator(
                key=key, node_id=node, host=host, port=port, error_code=err, error_message=msg))
        return FindCoordinatorResponse(throttle_time_ms=0, coordinators=coordinators)
    err, msg, node, host, port = await _find_one(ctx, request.key, key_type, ctx.connection.security.name)
    return FindCoordinatorResponse(throttle_time_ms=0, error_code=err, error_message=msg, node_id=node, host=host,
                                   port=port)


# ---- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ---------------------------------------------


def _join_request(ctx: RequestContext, request: Any) -> JoinRequest:
    v = ctx.version
    session = request.session_timeout_ms
    rebalance = getattr(request, "rebalance_timeout_ms", -1) if v >= 1 else -1
    return JoinRequest(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        group_instance_id=request.group_instance_id if v >= 5 else None,
        profile=MemberProfile(
            client_id=ctx.header.client_id or "",
            client_host=client_host(ctx),
            session_timeout_ms=session,
            rebalance_timeout_ms=rebalance if rebalance > 0 else session,
            protocol_type=request.protocol_type or "",
            protocols=[(p.name, bytes(p.metadata or b"")) for p in request.protocols or []],
        ),
        require_known_member_id=v >= 4,
        supports_skip_assignment=v >= 9,
    )


@handles(JoinGroupRequest, JoinGroupResponse, versions=(0, 9))
async def join_group(ctx: RequestContext, request: Any) -> JoinGroupResponse:
    authz.require(ctx, authz.Op.READ, authz.GROUP, request.group_id or "")
    gc = coordinator(ctx)
    req = _join_request(ctx, request)
    res = await gc.join(req)
    protocol_name = res.protocol_name if res.protocol_name is not None or ctx.version >= 7 else ""
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=res.error,
        generation_id=res.generation,
        protocol_type=res.protocol_type,
        protocol_name=protocol_name,
        leader=res.leader,
        skip_assignment=res.skip_assignment,
        member_id=res.member_id,
        members=[JoinGroupResponse.JoinGroupResponseMember(member_id=mid, group_instance_id=iid, metadata=meta)
                 for mid, iid, meta in res.members],
    )


@handles(SyncGroupRequest, SyncGroupResponse, versions=(0, 5))
async def sync_group(ctx: RequestContext, request: Any) -> SyncGroupResponse:
    authz.require(ctx, authz.Op.READ, authz.GROUP, request.group_id or "")
    gc = coordinator(ctx)
    v = ctx.version
    res = await gc.sync(
        request.group_id or "", request.generation_id, request.member_id or "",
        request.group_instance_id if v >= 3 else None,
        request.protocol_type if v >= 5 else None,
        request.protocol_name if v >= 5 else None,
        [(a.member_id, bytes(a.assignment or b"")) for a in request.assignments or []],
    )
    return SyncGroupResponse(throttle_time_ms=0, error_code=res.error, protocol_type=res.protocol_type,
                             protocol_name=res.protocol_name, assignment=res.assignment)


@handles(HeartbeatRequest, HeartbeatResponse, versions=(0, 4))
async def heartbeat(ctx: RequestContext, request: Any) -> HeartbeatResponse:
    authz.require(ctx, authz.Op.READ, authz.GROUP, request.group_id or "")
    gc = coordinator(ctx)
    instance_id = request.group_instance_id if ctx.version >= 3 else None
    err = await gc.heartbeat(request.group_id or "", request.generation_id, request.member_id or "", instance_id)
    return HeartbeatResponse(throttle_time_ms=0, error_code=err)


@handles(LeaveGroupRequest, LeaveGroupResponse, versions=(0, 5))
async def leave_group(ctx: RequestContext, request: Any) -> LeaveGroupResponse:
    authz.require(ctx, authz.Op.READ, authz.GROUP, request.group_id or "")
    gc = coordinator(ctx)
    if ctx.version >= 3:
        members = [(m.member_id or "", m.group_instance_id) for m in request.members or []]
    else:
        members = [(request.member_id or "", None)]
    try:
        errors = await gc.leave(request.group_id or "", members)
        top = ErrorCode.NONE
    except KafkaError as exc:
        top, errors = exc.code, []
    if ctx.version < 3:
        first = next((e for e in errors if e != ErrorCode.NONE), ErrorCode.NONE)
        return LeaveGroupResponse(throttle_time_ms=0, error_code=top or first)
    return LeaveGroupResponse(
        throttle_time_ms=0, error_code=top,
        members=[LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=iid, error_code=err)
                 for (mid, iid), err in zip(members, errors, strict=False)],
    )


# ---- OffsetCommit / OffsetFetch / OffsetDelete --------------------------------------------------


def _offset_value(ctx: RequestContext, p: Any, now: int, retention_ms: int) -> OffsetValue:
    epoch = p.committed_leader_epoch if ctx.version >= 6 else -1
    expire = now + retention_ms if retention_ms >= 0 else -1
    return OffsetValue(p.committed_offset, p.committed_metadata or "", now, expire, epoch)


_CommitTopic = OffsetCommitResponse.OffsetCommitResponseTopic
_TxnTopic = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic


def _topic_names(ctx: RequestContext, topics: Any) -> list[str | None]:
    """The name of each topic of an OffsetCommit/OffsetFetch request: from v10 topics are named by id
    (KIP-848), and an id this broker does not know, or the zero id, resolves to None (UNKNOWN_TOPIC_ID)."""
    if ctx.version < 10:
        return [t.name for t in topics]
    by_id = ctx.broker.metadata.by_id
    return [by_id.get(t.topic_id.bytes) if t.topic_id is not None else None for t in topics]


def _topic_id(ctx: RequestContext, name: str) -> uuid.UUID | None:
    """The id of a topic this broker knows (None, the zero id on the wire, for one it does not)."""
    meta = ctx.broker.metadata.topics.get(name)
    return uuid.UUID(bytes=meta.topic_id) if meta is not None and any(meta.topic_id) else None


def _valid_offsets(ctx: RequestContext, gc: GroupCoordinatorService, group_id: str, topics: Any,
                   names: list[str | None], value_of: Any,
                   ) -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, OffsetValue]]:
    """The offsets of an OffsetCommit/TxnOffsetCommit that may be written, and the errors of the rest
    (topics whose id is unknown, None in `names`, are answered by `_commit_topics`)."""
    errors: dict[TopicPartition, ErrorCode] = {}
    valid: dict[TopicPartition, OffsetValue] = {}
    for t, name in zip(topics, names, strict=True):
        if name is None:
            continue
        for p in t.partitions:
            tp = (name, p.partition_index)
            if (refused := authz.commit_refusal(ctx, group_id, name)) is not None:
                errors[tp] = refused
            elif not _topic_partition_known(ctx, name, p.partition_index):
                errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif gc.metadata_too_large(p.committed_metadata):
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                valid[tp] = value_of(p)
    return errors, valid


def _commit_topics(topics: Any, names: list[str | None], errors: dict[TopicPartition, ErrorCode],
                   topic_cls: Any, part_cls: Any, by_id: bool = False) -> list[Any]:
    """Every requested partition with its error code, in the response classes of the request's API;
    `by_id`: the topics are named by id (OffsetCommit v10), each answered with the id it was named by."""
    out = []
    for t, name in zip(topics, names, strict=True):
        parts = [part_cls(partition_index=p.partition_index,
                          error_code=ErrorCode.UNKNOWN_TOPIC_ID if name is None else errors[(name, p.partition_index)])
                 for p in t.partitions]
        out.append(topic_cls(topic_id=t.topic_id, partitions=parts) if by_id else topic_cls(name=t.name, partitions=parts))
    return out


# v10 names topics by id (KIP-848): an unknown id is UNKNOWN_TOPIC_ID for each of its partitions, and the
# response names each topic by the id it was asked with.
@handles(OffsetCommitRequest, OffsetCommitResponse, versions=(2, 10))
async def offset_commit(ctx: RequestContext, request: Any) -> OffsetCommitResponse:
    gc = coordinator(ctx)
    v = ctx.version
    now = now_ms()
    retention = request.retention_time_ms if v <= 4 else -1
    names = _topic_names(ctx, request.topics)
    errors, valid = _valid_offsets(ctx, gc, request.group_id or "", request.topics, names,
                                   lambda p: _offset_value(ctx, p, now, retention))
    if valid:
        err = await gc.commit(request.group_id or "", request.generation_id_or_member_epoch, request.member_id or "",
                              request.group_instance_id if v >= 7 else None, valid, api_version=v)
        errors.update(dict.fromkeys(valid, err))
    return OffsetCommitResponse(throttle_time_ms=0, topics=_commit_topics(
        request.topics, names, errors, _CommitTopic, _CommitTopic.OffsetCommitResponsePartition, by_id=v >= 10))


# v4 lets the broker answer TRANSACTION_ABORTABLE (KIP-890); v5 is transaction version 2's (the offsets
# partition joins the transaction here, no AddOffsetsToTxn); v6 (KIP-1319's topic ids) is not served.
@handles(TxnOffsetCommitRequest, TxnOffsetCommitResponse, versions=(0, 5))
async def txn_offset_commit(ctx: RequestContext, request: Any) -> TxnOffsetCommitResponse:
    """WRITE on the transactional id first (as Kafka: every partition refused otherwise), then READ on the
    group and topics; the group's offsets partition must be in the producer's transaction (verified with
    its coordinator, as a produce is) before the offsets are written into it."""
    gc = coordinator(ctx)
    v = ctx.version
    now = now_ms()
    names = [t.name for t in request.topics]
    if not authz.allowed(ctx, authz.Op.WRITE, authz.TRANSACTIONAL_ID, request.transactional_id or ""):
        refused = {(t.name, p.partition_index): ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                   for t in request.topics for p in t.partitions}
        return TxnOffsetCommitResponse(throttle_time_ms=0, topics=_commit_topics(
            request.topics, names, refused, _TxnTopic, _TxnTopic.TxnOffsetCommitResponsePartition))
    errors, valid = _valid_offsets(ctx, gc, request.group_id or "", request.topics, names, lambda p: OffsetValue(
        p.committed_offset, p.committed_metadata or "", now, -1, p.committed_leader_epoch if v >= 2 else -1))
    if valid:
        err = await _verify_offsets_partition(ctx, gc, request)
        if err == ErrorCode.NONE:
            err = await gc.txn_commit(request.group_id or "", request.producer_id, request.producer_epoch,
                                      request.generation_id if v >= 3 else -1, request.member_id if v >= 3 else "",
                                      request.group_instance_id if v >= 3 else None, valid)
        errors.update(dict.fromkeys(valid, err))
    return TxnOffsetCommitResponse(throttle_time_ms=0, topics=_commit_topics(
        request.topics, names, errors, _TxnTopic, _TxnTopic.TxnOffsetCommitResponsePartition))


async def _verify_offsets_partition(ctx: RequestContext, gc: GroupCoordinatorService, request: Any) -> ErrorCode:
    """KIP-890 part 1 for TxnOffsetCommit: the group's `__consumer_offsets` partition must be in the
    transaction (AddOffsetsToTxn put it there) unless the producer already has a transaction open in it.
    From v5 (transaction version 2) the coordinator adds it instead, whatever
    `transaction.partition.verification.enable` says. Errors as Kafka's group coordinator answers them
    (TRANSACTION_ABORTABLE from v4, INVALID_TXN_STATE before)."""
    add = ctx.version >= FIRST_ADDING_TXN_OFFSET_COMMIT_VERSION
    if not add and not ctx.broker.config.get("transaction.partition.verification.enable"):
        return ErrorCode.NONE
    tp = (OFFSETS_TOPIC, gc.partition_for(request.group_id or ""))
    try:
        partition = ctx.broker.replicas.leader_partition(*tp)
        guard = partition.start_transaction_verification(request.producer_id, -1, request.producer_epoch)
    except KafkaError as exc:  # not the group's coordinator here (or no offsets topic yet)
        return WRITE_ERRORS.get(ErrorCode(exc.code), ErrorCode(exc.code))
    if guard == NO_GUARD:
        return ErrorCode.NONE
    verdicts = await ctx.broker.txn_verifier.verify(request.transactional_id or "", request.producer_id,
                                                    request.producer_epoch, [tp], add=add)
    code = verdicts.get(tp, ErrorCode.NONE)
    if code == ErrorCode.TRANSACTION_ABORTABLE and ctx.version < 4:
        code = ErrorCode.INVALID_TXN_STATE
    return WRITE_ERRORS.get(code, code)


def _requested(topics: Any) -> list[TopicPartition] | None:
    if topics is None:
        return None
    return [(t.name, p) for t in topics for p in t.partition_indexes]


async def _fetch_group(gc: GroupCoordinatorService, group_id: str, wanted: list[TopicPartition] | None,
                       member: tuple[str | None, int] = (None, -1),
                       ) -> tuple[ErrorCode, list[tuple[TopicPartition, OffsetValue | None]]]:
    try:
        return ErrorCode.NONE, await gc.fetch_offsets(group_id, wanted, member[0], member[1])
    except KafkaError as exc:
        return exc.code, [(tp, None) for tp in wanted or []]


def _by_topic(entries: list[tuple[TopicPartition, OffsetValue | None, ErrorCode]],
              ) -> dict[str, list[tuple[int, OffsetValue | None, ErrorCode]]]:
    out: dict[str, list[tuple[int, OffsetValue | None, ErrorCode]]] = {}
    for (topic, partition), value, err in entries:
        out.setdefault(topic, []).append((partition, value, err))
    return out


def _stable(gc: GroupCoordinatorService, group_id: str,
            entries: list[tuple[TopicPartition, OffsetValue | None]],
            require_stable: bool) -> list[tuple[TopicPartition, OffsetValue | None, ErrorCode]]:
    """KIP-447: with require_stable, a partition with an offset in an open transaction answers
    UNSTABLE_OFFSET_COMMIT (the consumer retries) instead of an offset about to change."""
    return [(tp, None, ErrorCode.UNSTABLE_OFFSET_COMMIT) if require_stable and gc.unstable(group_id, tp)
            else (tp, v, ErrorCode.NONE) for tp, v in entries]


def _partition_fields(partition: int, value: OffsetValue | None, err: ErrorCode) -> dict[str, Any]:
    return {
        "partition_index": partition,
        "committed_offset": value.offset if value is not None else -1,
        "committed_leader_epoch": value.leader_epoch if value is not None else -1,
        "metadata": value.metadata if value is not None else "",
        "error_code": err,
    }


@handles(OffsetFetchRequest, OffsetFetchResponse, versions=(1, 10))
async def offset_fetch(ctx: RequestContext, request: Any) -> OffsetFetchResponse:
    gc = coordinator(ctx)
    if ctx.version >= 8:
        return await _offset_fetch_groups(ctx, gc, request)
    group_id = request.group_id or ""
    authz.require(ctx, authz.Op.DESCRIBE, authz.GROUP, group_id)
    err, entries = await _fetch_group(gc, group_id, _requested(request.topics))
    stable = _stable(gc, group_id, entries, ctx.version >= 7 and request.require_stable)
    stable = authz.hide_topics(ctx, stable, listing=request.topics is None)
    topic_cls = OffsetFetchResponse.OffsetFetchResponseTopic
    part_cls = topic_cls.OffsetFetchResponsePartition
    return OffsetFetchResponse(throttle_time_ms=0, error_code=err, topics=[
        topic_cls(name=topic, partitions=[part_cls(**_partition_fields(p, value, err or perr))
                                          for p, value, perr in parts])
        for topic, parts in _by_topic(stable).items()
    ])


async def _offset_fetch_groups(ctx: RequestContext, gc: GroupCoordinatorService, request: Any) -> OffsetFetchResponse:
    """v8+: many groups in one request. From v10 topics are named by id, both ways (KIP-848): an id this
    broker does not know answers UNKNOWN_TOPIC_ID for each partition asked, and a listing of all the
    group's offsets leaves out the topics that no longer exist (they have no id to name them by)."""
    group_cls = OffsetFetchResponse.OffsetFetchResponseGroup
    topic_cls = group_cls.OffsetFetchResponseTopics
    part_cls = topic_cls.OffsetFetchResponsePartitions
    by_id = request.API_VERSION >= 10
    groups = []
    seen: set[tuple[Any, ...]] = set()
    for g in request.groups:
        # each (group, topics) once: a group's offsets, named many times, must not multiply the response
        key = (g.group_id, None if g.topics is None else tuple(
            (t.topic_id if by_id else t.name, tuple(t.partition_indexes)) for t in g.topics))
        if key in seen:
            continue
        seen.add(key)
        if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, g.group_id or ""):
            groups.append(group_cls(group_id=g.group_id, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, topics=[]))
            continue
        unknown: list[Any] = []  # v10: the topics named by an id this broker does not know
        asked: dict[str, uuid.UUID] = {}  # v10: the id each topic was named by
        wanted: list[TopicPartition] | None = None
        if g.topics is not None:
            names = _topic_names(ctx, g.topics)
            unknown = [t for t, name in zip(g.topics, names, strict=True) if name is None]
            asked = {name: t.topic_id for t, name in zip(g.topics, names, strict=True) if name is not None and by_id}
            wanted = [(name, p) for t, name in zip(g.topics, names, strict=True) if name is not None
                      for p in t.partition_indexes]
        # v9+: a consumer group member names itself (KIP-848) and is checked by member epoch
        member = (g.member_id, g.member_epoch) if request.API_VERSION >= 9 else (None, -1)
        err, entries = await _fetch_group(gc, g.group_id or "", wanted, member)
        stable = _stable(gc, g.group_id or "", entries, request.require_stable)
        stable = authz.hide_topics(ctx, stable, listing=g.topics is None)
        topics = []
        for topic, parts in _by_topic(stable).items():
            partitions = [part_cls(**_partition_fields(p, value, err or perr)) for p, value, perr in parts]
            if not by_id:
                topics.append(topic_cls(name=topic, partitions=partitions))
            elif (tid := asked.get(topic) or _topic_id(ctx, topic)) is not None:
                topics.append(topic_cls(topic_id=tid, partitions=partitions))
        topics.extend(topic_cls(topic_id=t.topic_id, partitions=[
            part_cls(**_partition_fields(p, None, err or ErrorCode.UNKNOWN_TOPIC_ID)) for p in t.partition_indexes])
            for t in unknown)
        groups.append(group_cls(group_id=g.group_id, error_code=err, topics=topics))
    return OffsetFetchResponse(throttle_time_ms=0, groups=groups)


@handles(OffsetDeleteRequest, OffsetDeleteResponse, versions=(0, 0))
async def offset_delete(ctx: RequestContext, request: Any) -> OffsetDeleteResponse:
    gc = coordinator(ctx)
    authz.require(ctx, authz.Op.DELETE, authz.GROUP, request.group_id or "")
    errors: dict[TopicPartition, ErrorCode] = {}
    for t in request.topics:
        for p in t.partitions:
            if not authz.allowed(ctx, authz.Op.READ, authz.TOPIC, t.name):
                errors[(t.name, p.partition_index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not _topic_partition_known(ctx, t.name, p.partition_index):
                errors[(t.name, p.partition_index)] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions
              if (t.name, p.partition_index) not in errors]
    try:
        errors.update(await gc.delete_offsets(request.group_id or "", wanted))
    except KafkaError as exc:
        return OffsetDeleteResponse(error_code=exc.code, throttle_time_ms=0, topics=[])
    topic_cls = OffsetDeleteResponse.OffsetDeleteResponseTopic
    part_cls = topic_cls.OffsetDeleteResponsePartition
    return OffsetDeleteResponse(error_code=0, throttle_time_ms=0, topics=[
        topic_cls(name=t.name, partitions=[
            part_cls(partition_index=p.partition_index, error_code=errors[(t.name, p.partition_index)])
            for p in t.partitions])
        for t in request.topics
    ])


# ---- DescribeGroups / ListGroups / DeleteGroups -------------------------------------------------


def _described(ctx: RequestContext, request: Any, group_id: str, summary: Any,
               err: ErrorCode) -> Any:
    group_cls = DescribeGroupsResponse.DescribedGroup
    member_cls = group_cls.DescribedGroupMember
    operations = authz.operations(ctx, authz.GROUP, group_id, ctx.version >= 3 and request.include_authorized_operations)
    if summary is None:
        return group_cls(error_code=err, group_id=group_id, group_state="", protocol_type="", protocol_data="",
                         members=[], authorized_operations=None)
    if summary.state == GroupState.DEAD.value and ctx.version >= 6:
        # KIP-1043: from v6 a group that does not exist is GROUP_ID_NOT_FOUND (before, a Dead group)
        return group_cls(error_code=ErrorCode.GROUP_ID_NOT_FOUND, error_message=f"Group {group_id} not found.",
                         group_id=group_id, group_state=summary.state, protocol_type="", protocol_data="",
                         members=[], authorized_operations=None)
    return group_cls(
        error_code=0, group_id=group_id, group_state=summary.state, protocol_type=summary.protocol_type,
        protocol_data=summary.protocol,
        members=[member_cls(member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                            client_host=m.client_host, member_metadata=m.metadata, member_assignment=m.assignment)
                 for m in summary.members],
        authorized_operations=operations,
    )


@handles(DescribeGroupsRequest, DescribeGroupsResponse, versions=(0, 6))
async def describe_groups(ctx: RequestContext, request: Any) -> DescribeGroupsResponse:
    gc = coordinator(ctx)
    out = []
    # Each group once: a group's description can be large (its members' metadata and assignments), and
    # naming it many times in one small request must not multiply the response.
    for group_id in dict.fromkeys(request.groups):
        if gc.group_type(group_id) in (GROUP_TYPE_CONSUMER, GROUP_TYPE_SHARE, GROUP_TYPE_STREAMS):
            # as Kafka: a consumer, share or streams group is not described here (ConsumerGroupDescribe does); v0-5 see it
            # Dead, v6 GROUP_ID_NOT_FOUND with the reason
            described = _described(ctx, request, group_id, GroupSummary(group_id, "Dead", "", "", []), ErrorCode.NONE)
            if ctx.version >= 6:
                described.error_message = f"Group {group_id} is not a classic group."
            out.append(described)
            continue
        try:
            authz.require(ctx, authz.Op.DESCRIBE, authz.GROUP, group_id or "")
            summary, err = await gc.describe(group_id or ""), ErrorCode.NONE
        except KafkaError as exc:
            summary, err = None, exc.code
        out.append(_described(ctx, request, group_id, summary, err))
    return DescribeGroupsResponse(throttle_time_ms=0, groups=out)


@handles(ListGroupsRequest, ListGroupsResponse, versions=(0, 5))
async def list_groups(ctx: RequestContext, request: Any) -> ListGroupsResponse:
    """Classic and consumer (KIP-848) groups; v4 filters by state, v5 by group type (both case-insensitive,
    as Kafka)."""
    gc = coordinator(ctx)
    states = {s.lower() for s in request.states_filter or []} if ctx.version >= 4 else set()
    types = {t.lower() for t in request.types_filter or []} if ctx.version >= 5 else set()
    err, listed = gc.list_groups()
    if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.CLUSTER, log_denial=False):  # else the groups it may describe
        listed = [g for g in listed if authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, g[0], log_denial=False)]
    return ListGroupsResponse(throttle_time_ms=0, error_code=err, groups=[
        ListGroupsResponse.ListedGroup(group_id=gid, protocol_type=ptype, group_state=state, group_type=gtype)
        for gid, ptype, state, gtype in sorted(listed)
        if (not states or state.lower() in states) and (not types or gtype in types)
    ])


@handles(DeleteGroupsRequest, DeleteGroupsResponse, versions=(0, 3))
async def delete_groups(ctx: RequestContext, request: Any) -> DeleteGroupsResponse:
    """v3's per-group ErrorMessage stays null: Kafka 4.4 sets one only where a share group's state could not
    be deleted with a cause to tell, and answers its other errors (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP, ...)
    with the code alone, as here."""
    gc = coordinator(ctx)
    results = []
    for group_id in request.groups_names:
        if not authz.allowed(ctx, authz.Op.DELETE, authz.GROUP, group_id or ""):
            err = ErrorCode.GROUP_AUTHORIZATION_FAILED
        else:
            err = await gc.delete_group(group_id or "")
            if err == ErrorCode.NONE:  # its group configs go with it
                await ctx.broker.group_configs.delete(group_id)
        results.append(DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=err))
    return DeleteGroupsResponse(throttle_time_ms=0, results=results)
