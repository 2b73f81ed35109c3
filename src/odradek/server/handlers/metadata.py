"""Metadata (with topic auto-creation) and DescribeCluster: the cluster as this broker's cache sees it."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from kafka.protocol.admin import DescribeClusterRequest, DescribeClusterResponse
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from odradek.cluster.assignment import INTERNAL_TOPICS, validate_topic_name
from odradek.cluster.znodes import BrokerInfo
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.server.authorized_operations import CLUSTER_OPERATIONS, TOPIC_OPERATIONS, authorized
from odradek.server.registry import RequestContext, handles

log = logging.getLogger("odradek.request")
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


async def _auto_create(ctx: RequestContext, name: str) -> Any:
    broker = ctx.broker
    try:
        validate_topic_name(name)
    except KafkaError:
        return MetadataResponse.MetadataResponseTopic(
            error_code=ErrorCode.INVALID_TOPIC_EXCEPTION, name=name, topic_id=_uuid_str(ZERO_UUID),
            is_internal=False, partitions=[],
        )
    try:
        await broker.topic_admin.create_topic(name, broker.config.get("num.partitions"),
                                  broker.config.get("default.replication.factor"), {}, wait_s=2.0)
    except KafkaError as exc:
        if exc.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            log.info("Auto-creation of topic %s failed: %s", name, exc)
            return MetadataResponse.MetadataResponseTopic(
                error_code=exc.code, name=name, topic_id=_uuid_str(ZERO_UUID), is_internal=False, partitions=[],
            )
    return None


@handles(MetadataRequest, MetadataResponse, versions=(0, 12))
async def metadata(ctx: RequestContext, request: Any) -> MetadataResponse:
    broker = ctx.broker
    cache = broker.metadata
    version = ctx.version
    live = set(cache.brokers)
    requested = request.topics
    if requested is None or (version == 0 and not requested):
        names = sorted(cache.topics)
    else:
        names = [t.name for t in requested if t.name is not None]
        for t in requested:
            if t.name is None and getattr(t, "topic_id", None) is not None:
                found = cache.by_id.get(t.topic_id.bytes)
                if found:
                    names.append(found)
    auto = version < 4 or request.allow_auto_topic_creation
    topic_ops = authorized(TOPIC_OPERATIONS, version >= 8 and request.include_topic_authorized_operations)
    topics = []
    for name in names:
        if name not in cache.topics and auto and broker.config.get("auto.create.topics.enable"):
            failed = await _auto_create(ctx, name)
            if failed is not None:
                topics.append(failed)
                continue
        topics.append(_topic(broker, name, live, topic_ops))
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
        authorized_operations=authorized(
            CLUSTER_OPERATIONS, 8 <= version <= 10 and request.include_cluster_authorized_operations),
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


@handles(DescribeClusterRequest, DescribeClusterResponse, versions=(0, 1))
async def describe_cluster(ctx: RequestContext, request: Any) -> DescribeClusterResponse:
    cache = ctx.broker.metadata
    return DescribeClusterResponse(
        throttle_time_ms=0,
        error_code=0,
        error_message=None,
        endpoint_type=1,
        cluster_id=ctx.broker.cluster_id,
        authorized_operations=authorized(CLUSTER_OPERATIONS, request.include_cluster_authorized_operations),
        controller_id=cache.controller_id,
        brokers=[
            DescribeClusterResponse.DescribeClusterBroker(broker_id=b.broker_id, host=host, port=port, rack=b.rack)
            for b, host, port in listener_endpoints(cache.brokers.values(), ctx.connection.security.name)
        ],
    )
