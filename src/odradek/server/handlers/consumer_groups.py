"""KIP-848 consumer group APIs: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69), v0-1.

The handlers translate between the wire messages (`odradek.protocol.kip848`: kafka-python 3.0.12 has no
classes for these APIs) and the group coordinator (`odradek.groups.service.GroupCoordinatorService`,
`broker.groups`), which passes them to its consumer group type (`odradek.groups.consumer_coordinator`). Topics travel by id on the wire; ConsumerGroupDescribe names them too.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from odradek.groups.consumer_coordinator import Heartbeat
from odradek.protocol.kip848 import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from odradek.server import authz
from odradek.server.authorized_operations import bits
from odradek.server.handlers.groups import client_host, coordinator
from odradek.server.registry import RequestContext, handles

MEMBER_TYPE_CLASSIC, MEMBER_TYPE_CONSUMER = 0, 1
TOPIC_AUTHORIZATION_MESSAGE = "Topic authorization failed."  # Kafka's TopicAuthorizationException default
HIDDEN_TOPICS_MESSAGE = "The group has described topic(s) that the client is not authorized to describe."


def _owned(topics: Any) -> dict[bytes, frozenset[int]] | None:
    if topics is None:
        return None
    out: dict[bytes, frozenset[int]] = {}
    for t in topics:
        out[t.topic_id.bytes] = out.get(t.topic_id.bytes, frozenset()) | frozenset(t.partitions or [])
    return out


def _describable(ctx: RequestContext) -> Callable[[frozenset[str]], frozenset[str]]:
    """The filter a regex resolution triggered by this request applies: the topics the request's
    principal may DESCRIBE (denials not logged: a regex matching a forbidden topic is no attempt on it)."""
    def describable(names: frozenset[str]) -> frozenset[str]:
        if not authz.enabled(ctx):
            return names
        return frozenset(n for n in names if authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, n, False))
    return describable


@handles(ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, versions=(0, 1))
async def consumer_group_heartbeat(ctx: RequestContext, request: Any) -> ConsumerGroupHeartbeatResponse:
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, request.group_id or ""):
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=authz.ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
            member_id=request.member_id, member_epoch=request.member_epoch, heartbeat_interval_ms=0,
            assignment=None)
    names = request.subscribed_topic_names
    if names and authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, names):
        # Kafka (KAFKA-18813): a subscription naming a topic the member may not describe is refused whole;
        # the member stays as it was and may retry (its client reports the error and keeps heartbeating).
        return ConsumerGroupHeartbeatResponse(
            throttle_time_ms=0, error_code=authz.ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            error_message=TOPIC_AUTHORIZATION_MESSAGE, member_id=request.member_id,
            member_epoch=request.member_epoch, heartbeat_interval_ms=0, assignment=None)
    cg = coordinator(ctx)
    hb = Heartbeat(
        group_id=request.group_id or "",
        member_id=request.member_id or "",
        member_epoch=request.member_epoch,
        instance_id=request.instance_id,
        rack_id=request.rack_id,
        rebalance_timeout_ms=request.rebalance_timeout_ms,
        subscribed_topic_names=(list(request.subscribed_topic_names)
                                if request.subscribed_topic_names is not None else None),
        subscribed_topic_regex=request.subscribed_topic_regex if ctx.version >= 1 else None,
        server_assignor=request.server_assignor,
        owned=_owned(request.topic_partitions),
        client_id=ctx.header.client_id or "",
        client_host=client_host(ctx),
        version=ctx.version,
        describable=_describable(ctx),
    )
    res = await cg.consumer_heartbeat(hb)
    assignment = None
    if res.assignment is not None:
        tp_cls = ConsumerGroupHeartbeatResponse.Assignment.TopicPartitions
        assignment = ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[
            tp_cls(topic_id=uuid.UUID(bytes=t), partitions=sorted(ps))
            for t, ps in sorted(res.assignment.items()) if ps])
    return ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0, error_code=res.error, error_message=res.message,
        member_id=res.member_id, member_epoch=res.member_epoch,
        heartbeat_interval_ms=res.heartbeat_interval_ms, assignment=assignment)


def assignment_of(assignment_cls: Any, topic_name: Callable[[bytes], str], a: dict[bytes, frozenset[int]]) -> Any:
    """A described member's assignment (ConsumerGroupDescribe and ShareGroupDescribe): topics by id and
    name, partitions sorted, topics with none left out."""
    tp_cls = assignment_cls.TopicPartitions
    return assignment_cls(topic_partitions=[
        tp_cls(topic_id=uuid.UUID(bytes=t), topic_name=topic_name(t), partitions=sorted(ps))
        for t, ps in sorted(a.items()) if ps])


def described_member(member_cls: Any, topic_name: Callable[[bytes], str], m: Any, **more: Any) -> Any:
    """A described member with the fields ConsumerGroupDescribe and ShareGroupDescribe share (ids, epoch,
    client, subscribed topic names, assignment), plus `more`, those of the one request."""
    return member_cls(
        member_id=m.member_id, rack_id=m.rack_id, member_epoch=m.member_epoch, client_id=m.client_id,
        client_host=m.client_host, subscribed_topic_names=m.subscribed_topic_names,
        assignment=assignment_of(member_cls.Assignment, topic_name, m.assignment), **more)


async def describe_each(ctx: RequestContext, request: Any, group_cls: Any,
                        describe: Callable[[str], Awaitable[Any]], member: Callable[[Any], Any],
                        topic_name: Callable[[bytes], str] | None = None) -> list[Any]:
    """The DescribedGroups of a ConsumerGroupDescribe or ShareGroupDescribe: each id once (as
    DescribeGroups), GROUP_AUTHORIZATION_FAILED without DESCRIBE on it, TOPIC_AUTHORIZATION_FAILED when a
    member's assignment (or target) holds a topic the caller may not DESCRIBE (given `topic_name`), else its description by
    `describe` with each member made by `member`."""
    out = []
    for group_id in dict.fromkeys(request.group_ids or []):
        if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, group_id or ""):
            out.append(group_cls(error_code=authz.ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
                                 group_id=group_id, group_state="", group_epoch=-1, assignment_epoch=-1,
                                 assignor_name="", members=[], authorized_operations=bits(None)))
            continue
        d = await describe(group_id or "")
        held = {topic_name(t) for m in d.members for a in (m.assignment, m.target) for t in a} if topic_name else set()
        held.discard("")  # a topic deleted meanwhile
        if d.error == 0 and authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, held):
            # Kafka: a group holding a topic the caller may not describe is described by this error alone
            out.append(group_cls(error_code=authz.ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                                 error_message=HIDDEN_TOPICS_MESSAGE, group_id=group_id, group_state="",
                                 group_epoch=-1, assignment_epoch=-1, assignor_name="", members=[],
                                 authorized_operations=bits(None)))
            continue
        operations = authz.operations(ctx, authz.GROUP, group_id or "", requested=request.include_authorized_operations)
        out.append(group_cls(
            error_code=d.error, error_message=d.message, group_id=group_id, group_state=d.state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch, assignor_name=d.assignor,
            members=[member(m) for m in d.members],
            authorized_operations=bits(operations) if d.error == 0 else bits(None)))
    return out


@handles(ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, versions=(0, 1))
async def consumer_group_describe(ctx: RequestContext, request: Any) -> ConsumerGroupDescribeResponse:
    cg = coordinator(ctx)
    member_cls = ConsumerGroupDescribeResponse.DescribedGroup.Member

    def member(m: Any) -> Any:
        return described_member(
            member_cls, cg.topic_name, m, instance_id=m.instance_id, subscribed_topic_regex=m.subscribed_topic_regex,
            target_assignment=assignment_of(member_cls.Assignment, cg.topic_name, m.target),
            member_type=MEMBER_TYPE_CLASSIC if m.classic else MEMBER_TYPE_CONSUMER)

    out = await describe_each(ctx, request, ConsumerGroupDescribeResponse.DescribedGroup, cg.consumer_describe,
                              member, cg.topic_name)
    return ConsumerGroupDescribeResponse(throttle_time_ms=0, groups=out)

