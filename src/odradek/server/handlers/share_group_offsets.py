"""The admin APIs of share-group offsets (KIP-932): DescribeShareGroupOffsets (90, v0-1),
AlterShareGroupOffsets (91, v0) and DeleteShareGroupOffsets (92, v0), served by the share type of the
group coordinator (`odradek.groups.share_coordinator`) over the share partitions' persister. The message
classes are in `odradek.protocol.kip932_admin`.

- Describe answers each partition's start offset (SPSO) and, from v1 (KIP-1226), its lag: the records of
  the log below the high watermark that the group has yet to finish, high watermark - start offset - the
  records past the start offset already acknowledged or archived (-1 where this broker does not lead the
  partition or the partition has no state). A partition without state has start offset -1. Topics null
  means every partition the group has state for.
- Alter sets new start offsets (the group is created if there is none) and Delete forgets the state of
  whole topics; both only while the group has no members (NON_EMPTY_GROUP at the top level).

Authorization as Kafka's KafkaApis: Describe needs GROUP DESCRIBE and TOPIC DESCRIBE per topic; Alter
GROUP READ and TOPIC READ per topic; Delete GROUP DELETE and TOPIC READ per topic. A refused topic gets
TOPIC_AUTHORIZATION_FAILED, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION, per entry.
"""

from __future__ import annotations

import uuid
from typing import Any

from odradek.groups.service import GroupCoordinatorService
from odradek.groups.share_state import ShareKey, ShareStateSummary
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.kip932_admin import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

_DGroup = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
_DTopic = _DGroup.DescribeShareGroupOffsetsResponseTopic
_DPartition = _DTopic.DescribeShareGroupOffsetsResponsePartition
_NO_ID = uuid.UUID(int=0)


def _groups(ctx: RequestContext) -> GroupCoordinatorService:
    gc: GroupCoordinatorService = ctx.broker.groups
    return gc


def _topic(ctx: RequestContext, name: str) -> tuple[bytes, int] | None:
    """(topic id, partition count) of a topic that exists."""
    meta = ctx.broker.metadata.topics.get(name)
    return None if meta is None else (meta.topic_id, len(meta.assignment))


def _topic_error(ctx: RequestContext, op: authz.AclOperation, name: str) -> ErrorCode:
    if not authz.allowed(ctx, op, authz.TOPIC, name):
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED
    return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if _topic(ctx, name) is None else ErrorCode.NONE


def _top_level(response_cls: Any, code: ErrorCode, message: str | None = None) -> Any:
    """An Alter or Delete response refused as a whole."""
    return response_cls(throttle_time_ms=0, error_code=code, error_message=message, responses=[])


def _message(exc: KafkaError) -> str | None:
    return exc.message if exc.message != exc.code.name else None


def _lag(ctx: RequestContext, name: str, partition: int, summary: ShareStateSummary | None) -> tuple[int, int]:
    """(leader epoch, lag) of a partition this broker leads; -1s where it cannot tell."""
    part = ctx.broker.replicas.get(name, partition)
    if part is None or not part.is_leader:
        return -1, -1
    if summary is None or summary.start_offset < 0:
        return part.leader_epoch, -1
    start = max(summary.start_offset, part.log.log_start_offset)
    return part.leader_epoch, max(0, part.high_watermark - start - summary.delivery_complete_count)


# ---- DescribeShareGroupOffsets ----
@handles(DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse, versions=(0, 1))
async def describe_share_group_offsets(ctx: RequestContext, request: Any) -> DescribeShareGroupOffsetsResponse:
    out = []
    for g in request.groups or []:
        out.append(await _describe_group(ctx, g.group_id or "", g.topics))
    return DescribeShareGroupOffsetsResponse(throttle_time_ms=0, groups=out)


async def _describe_group(ctx: RequestContext, group_id: str, topics: Any) -> Any:
    def failed(code: ErrorCode, message: str | None = None) -> Any:
        return _DGroup(group_id=group_id, topics=[], error_code=code, error_message=message)

    if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, group_id):
        return failed(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    errors: dict[str, tuple[ErrorCode, list[int]]] = {}  # topic -> (error, partitions), answered as given
    wanted: dict[bytes, list[int]] | None = None
    if topics is not None:
        wanted = {}
        for t in topics:
            name, partitions = t.topic_name or "", list(t.partitions or [])
            err = _topic_error(ctx, authz.Op.DESCRIBE, name)
            info = _topic(ctx, name)
            if err or info is None:
                errors[name] = (err or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partitions)
                continue
            wanted.setdefault(info[0], []).extend(partitions)
    try:
        summaries = await _groups(ctx).share_describe_offsets(group_id, wanted)
    except KafkaError as exc:
        return failed(exc.code, _message(exc))
    by_topic: dict[str, Any] = {}
    for key, summary in summaries.items():
        name = ctx.broker.metadata.by_id.get(key.topic_id)
        if name is None:
            continue  # the topic was deleted
        if wanted is None and not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, name, log_denial=False):
            continue  # as Kafka: all partitions means those the principal may see
        meta = ctx.broker.metadata.topics.get(name)
        topic = by_topic.get(name)
        if topic is None:
            topic = by_topic[name] = _DTopic(topic_name=name, topic_id=uuid.UUID(bytes=key.topic_id), partitions=[])
        if meta is None or not 0 <= key.partition < len(meta.assignment):
            topic.partitions.append(_DPartition(partition_index=key.partition, start_offset=-1, leader_epoch=-1,
                                                lag=-1, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                error_message=None))
            continue
        epoch, lag = _lag(ctx, name, key.partition, summary)
        topic.partitions.append(_DPartition(
            partition_index=key.partition, start_offset=summary.start_offset if summary is not None else -1,
            leader_epoch=epoch, lag=lag, error_code=0, error_message=None))
    for name, (err, partitions) in errors.items():
        by_topic[name] = _DTopic(topic_name=name, topic_id=_NO_ID, partitions=[
            _DPartition(partition_index=p, start_offset=-1, leader_epoch=-1, lag=-1, error_code=err,
                        error_message=None) for p in partitions])
    return _DGroup(group_id=group_id, topics=[by_topic[n] for n in sorted(by_topic)], error_code=0,
                   error_message=None)


# ---- AlterShareGroupOffsets ----
@handles(AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse, versions=(0, 0))
async def alter_share_group_offsets(ctx: RequestContext, request: Any) -> AlterShareGroupOffsetsResponse:
    group_id = request.group_id or ""
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, group_id):
        return _top_level(AlterShareGroupOffsetsResponse, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    results: dict[str, tuple[uuid.UUID, list[tuple[int, ErrorCode]]]] = {}
    offsets: dict[ShareKey, int] = {}
    for t in request.topics or []:
        name = t.topic_name or ""
        err = _topic_error(ctx, authz.Op.READ, name)
        info = _topic(ctx, name)
        rows = results.setdefault(name, (uuid.UUID(bytes=info[0]) if info else _NO_ID, []))[1]
        for p in t.partitions or []:
            code = err
            if not code and info is not None and not 0 <= p.partition_index < info[1]:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif not code and p.start_offset < 0:
                code = ErrorCode.INVALID_REQUEST
            if not code and info is not None:
                offsets[ShareKey(group_id, info[0], p.partition_index)] = p.start_offset
            rows.append((p.partition_index, code))
    try:
        await _groups(ctx).share_alter_offsets(group_id, offsets)
    except KafkaError as exc:
        return _top_level(AlterShareGroupOffsetsResponse, exc.code, _message(exc))
    topic_cls = AlterShareGroupOffsetsResponse.AlterShareGroupOffsetsResponseTopic
    partition_cls = topic_cls.AlterShareGroupOffsetsResponsePartition
    return AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        topic_cls(topic_name=name, topic_id=topic_id, partitions=[
            partition_cls(partition_index=p, error_code=code, error_message=None) for p, code in rows])
        for name, (topic_id, rows) in results.items()])


# ---- DeleteShareGroupOffsets ----
@handles(DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse, versions=(0, 0))
async def delete_share_group_offsets(ctx: RequestContext, request: Any) -> DeleteShareGroupOffsetsResponse:
    group_id = request.group_id or ""
    if not authz.allowed(ctx, authz.Op.DELETE, authz.GROUP, group_id):
        return _top_level(DeleteShareGroupOffsetsResponse, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    results: dict[str, tuple[uuid.UUID, ErrorCode]] = {}
    topic_ids: set[bytes] = set()
    for t in request.topics or []:
        name = t.topic_name or ""
        err = _topic_error(ctx, authz.Op.READ, name)
        info = _topic(ctx, name)
        if not err and info is not None:
            topic_ids.add(info[0])
        results[name] = (uuid.UUID(bytes=info[0]) if info else _NO_ID, err)
    try:
        await _groups(ctx).share_delete_offsets(group_id, topic_ids)
    except KafkaError as exc:
        return _top_level(DeleteShareGroupOffsetsResponse, exc.code, _message(exc))
    topic_cls = DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic
    return DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        topic_cls(topic_name=name, topic_id=topic_id, error_code=code, error_message=None)
        for name, (topic_id, code) in results.items()])
