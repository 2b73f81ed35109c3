"""Metadata (with topic auto-creation), DescribeCluster and DescribeTopicPartitions: the cluster as this
broker's cache sees it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kafka.protocol.admin import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from odradek.cluster.assignment import INTERNAL_TOPICS, validate_topic_name
from odradek.cluster.znodes import BrokerInfo
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.ratelog import LimitedLog
from odradek.server import authz
from odradek.server.authorized_operations import bits
from odradek.server.registry import RequestContext, handles

log = logging.getLogger("odradek.request")
limited = LimitedLog(log)  # lines any client can repeat per request
ZERO_UUID = b"\x00" * 16


def _uuid_str(raw: bytes) -> Any:
    import uuid

    return uuid.UUID(bytes=raw)


def _partition(meta: Any, p: int, live: set[int]) -> Any:
    replicas = meta.assignment[p]
    st = meta.states.get(p)
    if st is None:
        return MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
            error_code=ErrorCode.LEADER_NOT_AVAILABLE, partition_index=p, leader_id=-1, leader_epoch=-1,
            replica_nodes=replicas, isr_nodes=[], offline_replicas=[],
        )
    leader = st.leader if st.leader in live else -1
    return MetadataResponse.MetadataResponseTopic.MetadataResponsePartition(
        error_code=0 if leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        partition_index=p,
        leader_id=leader,
        leader_epoch=st.leader_epoch,
        replica_nodes=replicas,
        isr_nodes=st.isr,
        offline_replicas=[b for b in replicas if b not in live],
    )


def _topic(broker: Any, name: str, live: set[int], operations: set[int] | None) -> Any:
    meta = broker.metadata.topics.get(name)
    if meta is None:
        return MetadataResponse.MetadataResponseTopic(
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=_uuid_str(ZERO_UUID),
            is_internal=False, partitions=[],
        )
    return MetadataResponse.MetadataResponseTopic(
        error_code=0,
        name=name,
        topic_id=_uuid_str(meta.topic_id),
        is_internal=name in INTERNAL_TOPICS,
        partitions=[_partition(meta, p, live) for p in sorted(meta.assignment)],
        authorized_operations=operations,
    )


def _failed_id(topic_id: bytes, code: int) -> Any:
    """A topic the request named by id only, refused: its id comes back, never its name."""
    return MetadataResponse.MetadataResponseTopic(error_code=code, name=None, topic_id=_uuid_str(topic_id),
                                                  is_internal=False, partitions=[])


def _failed_topic(name: str, code: int) -> Any:
    return MetadataResponse.MetadataResponseTopic(error_code=code, name=name, topic_id=_uuid_str(ZERO_UUID),
                                                  is_internal=False, partitions=[])


async def _auto_create(ctx: RequestContext, name: str) -> Any:
    broker = ctx.broker
    try:
        validate_topic_name(name)
    except KafkaError:
        return _failed_topic(name, ErrorCode.INVALID_TOPIC_EXCEPTION)
    try:
        authz.require_create_topic(ctx, name)
    except KafkaError as exc:
        return _failed_topic(name, exc.code)
    try:
        await broker.topic_admin.create_topic(name, broker.config.get("num.partitions"),
                                  broker.config.get("default.replication.factor"), {}, wait_s=2.0)
    except KafkaError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            limited.info("Auto-creation of topic %s failed: %s", name, exc)
            return MetadataResponse.MetadataResponseTopic(
                error_code=exc.code, name=name, topic_id=_uuid_str(ZERO_UUID), is_internal=False, partitions=[],
            )
    return None


@handles(MetadataRequest, MetadataResponse, versions=(0, 13))
async def metadata(ctx: RequestContext, request: Any) -> MetadataResponse:
    broker = ctx.broker
    cache = broker.metadata
    version = ctx.version
    live = set(cache.brokers)
    requested = request.topics
    listing = requested is None or (version == 0 and not requested)
    by_id: set[str] = set()  # topics the request named by id only
    unknown_ids: list[bytes] = []
    if listing:
        names = sorted(cache.topics)
        if authz.enabled(ctx):  # topics the caller may not describe are left out of the listing
            names = [n for n in names if authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, n, False)]
    else:
        names = [t.name for t in requested if t.name is not None]
        for t in requested:
            if t.name is None and getattr(t, "topic_id", None) is not None:
                found = cache.by_id.get(t.topic_id.bytes)
                if found:
                    names.append(found)
                    by_id.add(found)
                else:
                    unknown_ids.append(t.topic_id.bytes)
        names = list(dict.fromkeys(names))  # each topic once, as Kafka (a topic named twice is described once)
    auto = version < 4 or request.allow_auto_topic_creation
    topic_ops = version >= 8 and request.include_topic_authorized_operations
    topics = []
    for name in names:
        if not listing and not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, name):
            if name in by_id:  # as Kafka: the id named comes back, the name it resolves to does not
                meta = cache.topics.get(name)
                topics.append(_failed_id(meta.topic_id if meta is not None else ZERO_UUID,
                                         ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            else:
                topics.append(_failed_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        if name not in cache.topics and auto and broker.config.get("auto.create.topics.enable"):
            failed = await _auto_create(ctx, name)
            if failed is not None:
                topics.append(failed)
                continue
        topics.append(_topic(broker, name, live, authz.operations(ctx, authz.TOPIC, name, topic_ops)))
    topics.extend(_failed_id(tid, ErrorCode.UNKNOWN_TOPIC_ID) for tid in dict.fromkeys(unknown_ids))
    brokers = [
        MetadataResponse.MetadataResponseBroker(node_id=b.broker_id, host=host, port=port, rack=b.rack)
        for b, host, port in listener_endpoints(cache.brokers.values(), ctx.connection.security.name)
    ]
    return MetadataResponse(
        throttle_time_ms=0,
        brokers=brokers,
        cluster_id=broker.cluster_id,
        controller_id=cache.controller_id,
        topics=topics,
        authorized_operations=authz.operations(
            ctx, authz.CLUSTER, requested=8 <= version <= 10 and request.include_cluster_authorized_operations),
        error_code=ErrorCode.NONE,  # v13+ (KIP-1102): Kafka's REBOOTSTRAP_REQUIRED has no cause here
    )


def listener_endpoints(brokers: Iterable[BrokerInfo], listener: str) -> list[tuple[BrokerInfo, str, int]]:
    """The live brokers with their endpoints on `listener`, by id; as Kafka, a broker without that
    listener is left out."""
    out = []
    for b in sorted(brokers, key=lambda b: b.broker_id):
        endpoint = b.endpoint(listener)
        if endpoint is not None:
            out.append((b, endpoint[0], endpoint[1]))
    return out


ENDPOINT_TYPE_BROKERS, ENDPOINT_TYPE_CONTROLLERS = 1, 2  # DescribeCluster v1+ (KIP-919)


@handles(DescribeClusterRequest, DescribeClusterResponse, versions=(0, 2))
async def describe_cluster(ctx: RequestContext, request: Any) -> DescribeClusterResponse:
    """The live brokers. v1's endpoint type: brokers only, as a Kafka broker answers (controllers are
    asked directly, KIP-919). v2's include_fenced_brokers (KIP-1073): a broker here is registered only
    while it is alive, so there is never a fenced one to add, and each is_fenced is false."""
    cache = ctx.broker.metadata
    endpoint_type = request.endpoint_type if ctx.version >= 1 else ENDPOINT_TYPE_BROKERS
    if endpoint_type != ENDPOINT_TYPE_BROKERS:
        code = (ErrorCode.MISMATCHED_ENDPOINT_TYPE if endpoint_type == ENDPOINT_TYPE_CONTROLLERS
                else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)
        return DescribeClusterResponse(
            throttle_time_ms=0, error_code=code, endpoint_type=ENDPOINT_TYPE_BROKERS, cluster_id=ctx.broker.cluster_id,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
                          "CONTROLLER" if endpoint_type == ENDPOINT_TYPE_CONTROLLERS
                          else f"Unsupported endpoint type {endpoint_type}",
            controller_id=-1, brokers=[], authorized_operations=None)
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=ENDPOINT_TYPE_BROKERS,
        cluster_id=ctx.broker.cluster_id,
        authorized_operations=authz.operations(ctx, authz.CLUSTER, requested=request.include_cluster_authorized_operations),
        controller_id=cache.controller_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(broker_id=b.broker_id, host=host, port=port, rack=b.rack,
                                                          is_fenced=False)
            for b, host, port in listener_endpoints(cache.brokers.values(), ctx.connection.security.name)
        ],
    )


_DTP = DescribeTopicPartitionsResponse
_DTPTopic = _DTP.DescribeTopicPartitionsResponseTopic
_DTPPartition = _DTPTopic.DescribeTopicPartitionsResponsePartition


@handles(DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse, versions=(0, 0))
async def describe_topic_partitions(ctx: RequestContext, request: Any) -> DescribeTopicPartitionsResponse:
    """KIP-966's paginated topic description: topics in name order (all, or those named), at most
    `response_partition_limit` partitions per response, and a cursor where the next response starts."""
    cache = ctx.broker.metadata
    live = set(cache.brokers)
    limit = max(1, min(request.response_partition_limit, ctx.broker.config.get("max.request.partition.size.limit")))
    names = sorted({t.name for t in request.topics}) if request.topics else sorted(cache.topics)
    cursor = request.cursor
    if cursor is not None:
        names = [n for n in names if n >= cursor.topic_name]
    topics: list[Any] = []
    budget = limit
    next_cursor = None
    for name in names:
        if not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, name, log_denial=bool(request.topics)):
            if request.topics:
                topics.append(_DTPTopic(error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, name=name,
                                        topic_id=_uuid_str(ZERO_UUID), is_internal=False, partitions=[]))
            continue
        meta = cache.topics.get(name)
        if meta is None:
            topics.append(_DTPTopic(error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name,
                                    topic_id=_uuid_str(ZERO_UUID), is_internal=False, partitions=[]))
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        indexes = [p for p in sorted(meta.assignment) if p >= first]
        if budget == 0 and indexes:
            next_cursor = _DTP.Cursor(topic_name=name, partition_index=indexes[0])
            break
        shown, rest = indexes[:budget], indexes[budget:]
        budget -= len(shown)
        parts = []
        for p in shown:
            m = _partition(meta, p, live)
            parts.append(_DTPPartition(
                error_code=m.error_code, partition_index=p, leader_id=m.leader_id, leader_epoch=m.leader_epoch,
                replica_nodes=m.replica_nodes, isr_nodes=m.isr_nodes, eligible_leader_replicas=[],
                last_known_elr=[], offline_replicas=m.offline_replicas))
        topics.append(_DTPTopic(error_code=0, name=name, topic_id=_uuid_str(meta.topic_id),
                                is_internal=name in INTERNAL_TOPICS, partitions=parts,
                                topic_authorized_operations=bits(authz.operations(ctx, authz.TOPIC, name))))
        if rest:
            next_cursor = _DTP.Cursor(topic_name=name, partition_index=rest[0])
            break
    return DescribeTopicPartitionsResponse(throttle_time_ms=0, topics=topics, next_cursor=next_cursor)
