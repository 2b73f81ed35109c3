"""KIP-1071 streams group APIs: StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89), v0-1, and
KIP-1331's StreamsGroupTopologyDescriptionUpdate (93, v0).

The handlers translate between the wire messages (`odradek.protocol.kip1071`: kafka-python 3.0.12 has no
classes for these APIs) and the group coordinator (`odradek.groups.service.GroupCoordinatorService`), which
passes them to its streams group type (`odradek.groups.streams_coordinator`).

Authorization as Kafka's: a heartbeat needs READ on the group and, when it carries a topology, DESCRIBE on
every topic the topology names (TOPIC_AUTHORIZATION_FAILED), which may not be one of Kafka's internal
topics (STREAMS_INVALID_TOPOLOGY); the broker creates the group's missing internal topics only for a member
allowed to CREATE them (on the cluster or the topic), as CreateTopics would. A describe needs DESCRIBE on
the group.
"""

from __future__ import annotations

from typing import Any

from odradek.cluster.assignment import INTERNAL_TOPICS
from odradek.groups.streams_assignor import Tasks
from odradek.groups.streams_coordinator import Endpoint, StreamsHeartbeat
from odradek.groups.streams_topology import InternalTopic, Subtopology, Topology
from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip1071 import (
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsGroupTopologyDescriptionUpdateRequest,
    StreamsGroupTopologyDescriptionUpdateResponse,
)
from odradek.server import authz
from odradek.server.authorized_operations import bits
from odradek.server.handlers.groups import client_host, coordinator
from odradek.server.registry import RequestContext, handles

# Kafka's default acceptable.recovery.lag and the interval at which members report task offsets
ACCEPTABLE_RECOVERY_LAG = 10_000
TASK_OFFSET_INTERVAL_MS = 60_000


def _tasks(task_ids: Any) -> Tasks | None:
    if task_ids is None:
        return None
    out: dict[str, frozenset[int]] = {}
    for t in task_ids:
        out[t.subtopology_id] = out.get(t.subtopology_id, frozenset()) | frozenset(t.partitions or [])
    return out


def _internal(topics: Any) -> tuple[InternalTopic, ...]:
    return tuple(InternalTopic(t.name, t.partitions, t.replication_factor,
                               tuple((c.key, c.value) for c in t.topic_configs or [])) for t in topics or [])


def _topology(t: Any) -> Topology | None:
    if t is None:
        return None
    return Topology(t.epoch, tuple(
        Subtopology(s.subtopology_id, tuple(s.source_topics or []), tuple(s.source_topic_regex or []),
                    _internal(s.state_changelog_topics), tuple(s.repartition_sink_topics or []),
                    _internal(s.repartition_source_topics),
                    tuple((tuple(g.source_topics or []), tuple(g.source_topic_regex or []),
                           tuple(g.repartition_source_topics or [])) for g in s.copartition_groups or []))
        for s in t.subtopologies or []))


def _refused_topology(ctx: RequestContext, topology: Topology) -> tuple[ErrorCode, str] | None:
    named = {t for s in topology.subtopologies for t in (
        *s.source_topics, *s.repartition_sink_topics, *(i.name for i in s.changelog_topics),
        *(i.name for i in s.repartition_source_topics))}
    internal = sorted(named & INTERNAL_TOPICS)
    if internal:
        return (ErrorCode.STREAMS_INVALID_TOPOLOGY,
                f"Use of Kafka internal topics {', '.join(internal)} in a Kafka Streams topology is prohibited.")
    denied = sorted(authz.denied(ctx, authz.Op.DESCRIBE, authz.TOPIC, named))
    if denied:
        return ErrorCode.TOPIC_AUTHORIZATION_FAILED, f"Unauthorized to DESCRIBE on topics {', '.join(denied)}."
    return None


def _may_create(ctx: RequestContext, name: str) -> bool:
    return (authz.allowed(ctx, authz.Op.CREATE, authz.CLUSTER, log_denial=False)
            or authz.allowed(ctx, authz.Op.CREATE, authz.TOPIC, name))


def _task_ids(cls: Any, tasks: Tasks) -> list[Any]:
    return [cls(subtopology_id=s, partitions=sorted(ps)) for s, ps in sorted(tasks.items()) if ps]


def _response(ctx: RequestContext, **fields: Any) -> StreamsGroupHeartbeatResponse:
    lag = {"acceptable_recovery_lag": ACCEPTABLE_RECOVERY_LAG} if ctx.version >= 1 else {
        "acceptable_recovery_lag_legacy": ACCEPTABLE_RECOVERY_LAG}
    fields.setdefault("endpoint_information_epoch", 0)
    return StreamsGroupHeartbeatResponse(throttle_time_ms=0, task_offset_interval_ms=TASK_OFFSET_INTERVAL_MS,
                                         **lag, **fields)


def _endpoints(endpoints: list[Endpoint] | None) -> list[Any] | None:
    if endpoints is None:
        return None
    cls = StreamsGroupHeartbeatResponse.EndpointToPartitions
    tp_cls, ep_cls = cls.TopicPartition, cls.Endpoint

    def topics(t: dict[str, frozenset[int]]) -> list[Any]:
        return [tp_cls(topic=name, partitions=sorted(ps)) for name, ps in sorted(t.items())]

    return [cls(user_endpoint=ep_cls(host=host, port=port), active_partitions=topics(active),
                standby_partitions=topics(standby)) for (host, port), active, standby in endpoints]


@handles(StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse, versions=(0, 1))
async def streams_group_heartbeat(ctx: RequestContext, request: Any) -> StreamsGroupHeartbeatResponse:
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, request.group_id or ""):
        return _response(ctx, error_code=authz.ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
                         member_id=request.member_id or "", member_epoch=request.member_epoch,
                         heartbeat_interval_ms=0)
    topology = _topology(request.topology)
    if topology is not None:
        refused = _refused_topology(ctx, topology)
        if refused is not None:
            code, message = refused
            return _response(ctx, error_code=code, error_message=message, member_id=request.member_id or "",
                             member_epoch=request.member_epoch, heartbeat_interval_ms=0)
    endpoint = request.user_endpoint
    hb = StreamsHeartbeat(
        group_id=request.group_id or "", member_id=request.member_id or "", member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id, rebalance_timeout_ms=request.rebalance_timeout_ms,
        topology=topology, may_create=lambda name: _may_create(ctx, name), active=_tasks(request.active_tasks),
        standby=_tasks(request.standby_tasks), warmup=_tasks(request.warmup_tasks), process_id=request.process_id,
        user_endpoint=(endpoint.host, endpoint.port) if endpoint is not None else None,
        endpoint_epoch=request.endpoint_information_epoch,
        client_tags={kv.key: kv.value for kv in request.client_tags} if request.client_tags is not None else None,
        shutdown_application=bool(request.shutdown_application),
        client_id=ctx.header.client_id or "", client_host=client_host(ctx))
    res = await coordinator(ctx).streams_heartbeat(hb)
    task_cls = StreamsGroupHeartbeatResponse.TaskIds
    active = standby = warmup = None
    if res.tasks is not None:
        active, standby, warmup = (_task_ids(task_cls, t) for t in res.tasks)
    status = None if res.status is None else [
        StreamsGroupHeartbeatResponse.Status(status_code=c, status_detail=d) for c, d in res.status]
    return _response(ctx, error_code=res.error, error_message=res.message, member_id=res.member_id,
                     member_epoch=res.member_epoch, heartbeat_interval_ms=res.heartbeat_interval_ms, status=status,
                     active_tasks=active, standby_tasks=standby, warmup_tasks=warmup,
                     endpoint_information_epoch=res.endpoint_epoch, partitions_by_user_endpoint=_endpoints(res.endpoints))


def _described_topology(group_cls: Any, topology: Topology | None) -> Any:
    if topology is None:
        return None
    cls = group_cls.Topology
    sub_cls = cls.Subtopology
    info_cls = sub_cls.TopicInfo
    kv_cls = info_cls.KeyValue

    def infos(topics: tuple[InternalTopic, ...]) -> list[Any]:
        return [info_cls(name=t.name, partitions=t.partitions, replication_factor=t.replication_factor,
                         topic_configs=[kv_cls(key=k, value=v) for k, v in t.configs]) for t in topics]

    return cls(epoch=topology.epoch, subtopologies=[
        sub_cls(subtopology_id=s.subtopology_id, source_topics=list(s.source_topics),
                repartition_sink_topics=list(s.repartition_sink_topics),
                state_changelog_topics=infos(s.changelog_topics),
                repartition_source_topics=infos(s.repartition_source_topics)) for s in topology.subtopologies])


@handles(StreamsGroupDescribeRequest, StreamsGroupDescribeResponse, versions=(0, 1))
async def streams_group_describe(ctx: RequestContext, request: Any) -> StreamsGroupDescribeResponse:
    gc = coordinator(ctx)
    group_cls = StreamsGroupDescribeResponse.DescribedGroup
    member_cls = group_cls.Member
    assignment_cls = member_cls.Assignment
    task_cls = assignment_cls.TaskIds
    endpoint_cls = member_cls.Endpoint
    kv_cls = member_cls.KeyValue
    out = []
    for group_id in dict.fromkeys(request.group_ids or []):
        if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.GROUP, group_id or ""):
            out.append(group_cls(error_code=authz.ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None,
                                 group_id=group_id, group_state="", group_epoch=-1, assignment_epoch=-1,
                                 topology=None, members=[], authorized_operations=bits(None)))
            continue
        d = await gc.streams_describe(group_id or "")
        members = []
        for md in d.members:
            m = md.member
            members.append(member_cls(
                member_id=m.member_id, member_epoch=m.member_epoch, instance_id=m.instance_id, rack_id=m.rack_id,
                client_id=m.client_id, client_host=m.client_host, topology_epoch=m.topology_epoch,
                process_id=m.process_id,
                user_endpoint=endpoint_cls(host=m.user_endpoint[0], port=m.user_endpoint[1]) if m.user_endpoint else None,
                client_tags=[kv_cls(key=k, value=v) for k, v in sorted(m.client_tags.items())],
                task_offsets=[], task_end_offsets=[],
                assignment=assignment_cls(active_tasks=_task_ids(task_cls, m.active),
                                          standby_tasks=_task_ids(task_cls, m.standby), warmup_tasks=[]),
                target_assignment=assignment_cls(active_tasks=_task_ids(task_cls, md.target[0]),
                                                 standby_tasks=_task_ids(task_cls, md.target[1]), warmup_tasks=[]),
                is_classic=False))
        operations = authz.operations(ctx, authz.GROUP, group_id or "", requested=request.include_authorized_operations)
        out.append(group_cls(
            error_code=d.error, error_message=d.message, group_id=group_id, group_state=d.state,
            group_epoch=d.group_epoch, assignment_epoch=d.assignment_epoch,
            topology=_described_topology(group_cls, d.topology), members=members,
            authorized_operations=bits(operations) if d.error == 0 else bits(None),
            assignor_name="sticky" if d.error == 0 else None))
    return StreamsGroupDescribeResponse(throttle_time_ms=0, groups=out)


# KIP-1331: a member pushes its topology's description when a heartbeat answer asks for it, which Kafka
# 4.4 does only with a `group.streams.topology.description.plugin.class` to store it in. Odradek has no
# such plugin (nor does a Kafka broker by default), so no answer asks, and a push gets Kafka's answer
# for a broker without one.
NO_DESCRIPTION_PLUGIN = "The broker has no streams group topology description plugin configured."


@handles(StreamsGroupTopologyDescriptionUpdateRequest, StreamsGroupTopologyDescriptionUpdateResponse,
         versions=(0, 0))
async def streams_group_topology_description_update(
        ctx: RequestContext, request: Any) -> StreamsGroupTopologyDescriptionUpdateResponse:
    """READ on the group (GROUP_AUTHORIZATION_FAILED), then UNSUPPORTED_VERSION: no description plugin."""
    if not authz.allowed(ctx, authz.Op.READ, authz.GROUP, request.group_id or ""):
        return StreamsGroupTopologyDescriptionUpdateResponse(
            throttle_time_ms=0, error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message=None)
    return StreamsGroupTopologyDescriptionUpdateResponse(
        throttle_time_ms=0, error_code=ErrorCode.UNSUPPORTED_VERSION, error_message=NO_DESCRIPTION_PLUGIN)
