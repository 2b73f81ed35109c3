"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords. (The config APIs
are in `configs`.)"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kafka.protocol.admin import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.server import authz
from odradek.server.handlers.configs import topic_config_rows
from odradek.server.registry import RequestContext, handles

ZERO_UUID = uuid.UUID(int=0)


def _timeout_s(request: Any) -> float:
    return max(min(getattr(request, "timeout_ms", 30000), 60000), 0) / 1000


class _Mutations:
    """controller_mutation_rate (KIP-599) for one request: strict versions refuse a topic once the quota
    is exceeded; every version records the partitions mutated and is throttled."""

    def __init__(self, ctx: RequestContext, strict: bool) -> None:
        self.ctx = ctx
        self.on = ctx.broker.quotas.enabled
        self.strict = strict
        self.who = (ctx.connection.principal, ctx.header.client_id or "")

    def check(self) -> None:
        if self.on and self.strict and self.ctx.broker.quotas.mutation_exceeded(*self.who):
            raise KafkaError(ErrorCode.THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")

    def record(self, partitions: int) -> None:
        if self.on:
            self.ctx.broker.quotas.record_mutation(*self.who, partitions)

    def throttle_ms(self) -> int:
        if not self.on:
            return 0
        throttle = self.ctx.broker.quotas.mutation_throttle_ms(*self.who)
        if throttle:
            self.ctx.connection.mute_s = max(self.ctx.connection.mute_s, throttle / 1000)
        return throttle


@contextmanager
def _error_into(res: Any) -> Iterator[None]:
    """A KafkaError raised inside becomes the per-topic result's error code and message."""
    try:
        yield
    except KafkaError as exc:
        res.error_code, res.error_message = exc.code, exc.message


Result = CreateTopicsResponse.CreatableTopicResult


@handles(CreateTopicsRequest, CreateTopicsResponse, versions=(2, 7))
async def create_topics(ctx: RequestContext, request: Any) -> CreateTopicsResponse:
    broker = ctx.broker
    results = []
    seen: set[str] = set()
    mutations = _Mutations(ctx, strict=ctx.version >= 6)
    for t in request.topics:
        res = Result(
            name=t.name, topic_id=ZERO_UUID, error_code=0, error_message=None, num_partitions=-1,
            replication_factor=-1, configs=[],
        )
        with _error_into(res):
            if t.name in seen:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Create topics request from client contains duplicate topic {t.name}")
            seen.add(t.name)
            authz.require_create_topic(ctx, t.name)
            assignment = None
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Both numPartitions or replicationFactor and replicasAssignments were set.")
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            partitions = t.num_partitions if t.num_partitions != -1 else broker.config.get("num.partitions")
            rf = t.replication_factor if t.replication_factor != -1 else broker.config.get("default.replication.factor")
            configs = {c.name: c.value for c in t.configs}
            mutations.check()
            topic_id = await broker.topic_admin.create_topic(
                t.name, partitions, rf, configs, assignment=assignment, validate_only=request.validate_only,
                wait_s=_timeout_s(request),
            )
            res.topic_id = uuid.UUID(bytes=topic_id) if topic_id else ZERO_UUID
            res.num_partitions = len(assignment) if assignment else partitions
            res.replication_factor = len(next(iter(assignment.values()))) if assignment else rf
            if not request.validate_only:
                mutations.record(res.num_partitions)
            # v5+: the topic's configs as DescribeConfigs would give them, for a principal allowed to see them
            if not authz.allowed(ctx, authz.Op.DESCRIBE_CONFIGS, authz.TOPIC, t.name, False):
                res.topic_config_error_code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            else:
                res.configs = [Result.CreatableTopicConfigs(name=key, value=value, read_only=False,
                                                            config_source=source, is_sensitive=False)
                               for key, value, source, _ in topic_config_rows(ctx, configs)]
        results.append(res)
    return CreateTopicsResponse(throttle_time_ms=mutations.throttle_ms(), topics=results)


@handles(DeleteTopicsRequest, DeleteTopicsResponse, versions=(1, 6))
async def delete_topics(ctx: RequestContext, request: Any) -> DeleteTopicsResponse:
    broker = ctx.broker
    cache = broker.metadata
    if ctx.version >= 6:
        # a null name with the zero id (which decodes as None) names nothing: INVALID_REQUEST
        wanted = [(t.name or (cache.by_id.get(t.topic_id.bytes) if t.topic_id else None), t.topic_id or ZERO_UUID)
                  for t in request.topics]
    else:
        wanted = [(name, ZERO_UUID) for name in request.topic_names]
    results = []
    mutations = _Mutations(ctx, strict=ctx.version >= 5)
    for name, tid in wanted:
        res = DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=tid, error_code=0, error_message=None)
        with _error_into(res):
            if name is None and tid == ZERO_UUID:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither a topic name nor a topic id was given")
            if name is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "Topic id is unknown")
            if not authz.allowed(ctx, authz.Op.DELETE, authz.TOPIC, name):
                if tid != ZERO_UUID and not authz.allowed(ctx, authz.Op.DESCRIBE, authz.TOPIC, name, False):
                    # named by id, by a principal that may not see the name: the answer keeps it secret
                    # (Kafka does not count the id as a secret)
                    res.name = None
                    raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed.")
                raise authz.failure(authz.TOPIC, name)
            meta = cache.topics.get(name)
            if meta is not None:
                res.topic_id = uuid.UUID(bytes=meta.topic_id)
            mutations.check()
            await broker.topic_admin.delete_topic(name, wait_s=_timeout_s(request))
            mutations.record(len(meta.assignment) if meta is not None else 0)
        results.append(res)
    return DeleteTopicsResponse(throttle_time_ms=mutations.throttle_ms(), responses=results)


@handles(CreatePartitionsRequest, CreatePartitionsResponse, versions=(0, 3))
async def create_partitions(ctx: RequestContext, request: Any) -> CreatePartitionsResponse:
    results = []
    mutations = _Mutations(ctx, strict=ctx.version >= 3)
    for t in request.topics:
        res = CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None)
        with _error_into(res):
            authz.require(ctx, authz.Op.ALTER, authz.TOPIC, t.name)
            assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
            mutations.check()
            meta = ctx.broker.metadata.topics.get(t.name)
            before = len(meta.assignment) if meta is not None else 0
            await ctx.broker.topic_admin.create_partitions(
                t.name, t.count, assignments, validate_only=request.validate_only, wait_s=_timeout_s(request)
            )
            if not request.validate_only:
                mutations.record(max(t.count - before, 0))
        results.append(res)
    return CreatePartitionsResponse(throttle_time_ms=mutations.throttle_ms(), results=results)


def _delete_records(ctx: RequestContext, topic: str, p: Any) -> Any:
    res = DeleteRecordsResponse.DeleteRecordsTopicResult.DeleteRecordsPartitionResult(
        partition_index=p.partition_index, low_watermark=-1, error_code=0)
    try:
        authz.require(ctx, authz.Op.DELETE, authz.TOPIC, topic)
        part = ctx.broker.replicas.leader_partition(topic, p.partition_index)
        res.low_watermark = part.log.delete_records_before(p.offset)
    except KafkaError as exc:
        res.error_code = exc.code
    return res


@handles(DeleteRecordsRequest, DeleteRecordsResponse, versions=(0, 2))
async def delete_records(ctx: RequestContext, request: Any) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(throttle_time_ms=0, topics=[
        DeleteRecordsResponse.DeleteRecordsTopicResult(
            name=t.name, partitions=[_delete_records(ctx, t.name, p) for p in t.partitions])
        for t in request.topics
    ])
