"""Topic and config administration: CreateTopics, DeleteTopics, CreatePartitions, DescribeConfigs,
AlterConfigs, IncrementalAlterConfigs, DeleteRecords."""

from __future__ import annotations

import uuid
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.server.registry import RequestContext, handles

RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 4, 5
OP_SET, OP_DELETE, OP_APPEND, OP_SUBTRACT = 0, 1, 2, 3
ZERO_UUID = uuid.UUID(int=0)


def _timeout_s(request: Any) -> float:
    return max(min(getattr(request, "timeout_ms", 30000), 60000), 0) / 1000


@handles(CreateTopicsRequest, CreateTopicsResponse, versions=(2, 7))
async def create_topics(ctx: RequestContext, request: Any) -> CreateTopicsResponse:
    broker = ctx.broker
    results = []
    seen: set[str] = set()
    for t in request.topics:
        res = CreateTopicsResponse.CreatableTopicResult(
            name=t.name, topic_id=ZERO_UUID, error_code=0, error_message=None, num_partitions=-1,
            replication_factor=-1, configs=None,
        )
        try:
            if t.name in seen:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Create topics request from client contains duplicate topic {t.name}")
            seen.add(t.name)
            assignment = None
            if t.assignments:
                if t.num_partitions != -1 or t.replication_factor != -1:
                    raise KafkaError(ErrorCode.INVALID_REQUEST,
                                     "Both numPartitions or replicationFactor and replicasAssignments were set.")
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments}
            partitions = t.num_partitions if t.num_partitions != -1 else broker.config.get("num.partitions")
            rf = t.replication_factor if t.replication_factor != -1 else broker.config.get("default.replication.factor")
            configs = {c.name: c.value for c in t.configs}
            topic_id = await broker.topic_admin.create_topic(
                t.name, partitions, rf, configs, assignment=assignment, validate_only=request.validate_only,
                wait_s=_timeout_s(request),
            )
            res.topic_id = uuid.UUID(bytes=topic_id) if topic_id else ZERO_UUID
            res.num_partitions = len(assignment) if assignment else partitions
            res.replication_factor = len(next(iter(assignment.values()))) if assignment else rf
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
        results.append(res)
    return CreateTopicsResponse(throttle_time_ms=0, topics=results)


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
    for name, tid in wanted:
        res = DeleteTopicsResponse.DeletableTopicResult(name=name, topic_id=tid, error_code=0, error_message=None)
        try:
            if name is None and tid == ZERO_UUID:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Neither a topic name nor a topic id was given")
            if name is None:
                raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, "Topic id is unknown")
            meta = cache.topics.get(name)
            if meta is not None:
                res.topic_id = uuid.UUID(bytes=meta.topic_id)
            await broker.topic_admin.delete_topic(name, wait_s=_timeout_s(request))
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
        results.append(res)
    return DeleteTopicsResponse(throttle_time_ms=0, responses=results)


@handles(CreatePartitionsRequest, CreatePartitionsResponse, versions=(0, 3))
async def create_partitions(ctx: RequestContext, request: Any) -> CreatePartitionsResponse:
    results = []
    for t in request.topics:
        res = CreatePartitionsResponse.CreatePartitionsTopicResult(name=t.name, error_code=0, error_message=None)
        try:
            assignments = [list(a.broker_ids) for a in t.assignments] if t.assignments is not None else None
            await ctx.broker.topic_admin.create_partitions(
                t.name, t.count, assignments, validate_only=request.validate_only, wait_s=_timeout_s(request)
            )
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
        results.append(res)
    return CreatePartitionsResponse(throttle_time_ms=0, results=results)


def _describe_topic(ctx: RequestContext, name: str, keys: list[str] | None) -> list[Any]:
    broker = ctx.broker
    meta = broker.metadata.topics.get(name)
    if meta is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    defaults = broker.config.topic_defaults()
    out = []
    for key in sorted(defaults):
        if keys is not None and key not in keys:
            continue
        override = key in meta.config
        value = meta.config[key] if override else defaults[key]
        out.append(
            DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult(
                name=key, value=value, read_only=False,
                config_source=SOURCE_DYNAMIC_TOPIC if override else SOURCE_DEFAULT,
                is_default=not override, is_sensitive=False, synonyms=[], config_type=0, documentation=None,
            )
        )
    return out


def _describe_broker(ctx: RequestContext, name: str, keys: list[str] | None) -> list[Any]:
    broker = ctx.broker
    if name and name != str(broker.broker_id):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {broker.broker_id} but received {name}")
    out = []
    for key, value, is_default, sensitive, source in broker.config.describe_broker():
        if keys is not None and key not in keys:
            continue
        out.append(
            DescribeConfigsResponse.DescribeConfigsResult.DescribeConfigsResourceResult(
                name=key, value=value, read_only=True, config_source=source, is_default=is_default,
                is_sensitive=sensitive, synonyms=[], config_type=0, documentation=None,
            )
        )
    return out


@handles(DescribeConfigsRequest, DescribeConfigsResponse, versions=(1, 4))
async def describe_configs(ctx: RequestContext, request: Any) -> DescribeConfigsResponse:
    results = []
    seen: set[tuple[Any, ...]] = set()
    for r in request.resources:
        # each resource (with its keys) once: described many times it would multiply the response
        key = (r.resource_type, r.resource_name, None if r.configuration_keys is None else tuple(r.configuration_keys))
        if key in seen:
            continue
        seen.add(key)
        res = DescribeConfigsResponse.DescribeConfigsResult(
            error_code=0, error_message=None, resource_type=r.resource_type, resource_name=r.resource_name, configs=[]
        )
        keys = list(r.configuration_keys) if r.configuration_keys is not None else None
        try:
            if r.resource_type == RESOURCE_TOPIC:
                res.configs = _describe_topic(ctx, r.resource_name, keys)
            elif r.resource_type == RESOURCE_BROKER:
                res.configs = _describe_broker(ctx, r.resource_name, keys)
            else:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {r.resource_type}")
        except KafkaError as exc:
            res.error_code, res.error_message = exc.code, exc.message
        results.append(res)
    return DescribeConfigsResponse(throttle_time_ms=0, results=results)


def _apply_ops(current: dict[str, str], configs: list[Any], incremental: bool) -> dict[str, str]:
    if not incremental:
        return {c.name: c.value for c in configs if c.value is not None}
    new = dict(current)
    for c in configs:
        op = c.config_operation
        if op == OP_SET:
            new[c.name] = c.value
        elif op == OP_DELETE:
            new.pop(c.name, None)
        elif op in (OP_APPEND, OP_SUBTRACT):
            items = [x for x in new.get(c.name, "").split(",") if x]
            values = [x for x in (c.value or "").split(",") if x]
            if op == OP_APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [x for x in items if x not in values]
            new[c.name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unknown config operation {op}")
    return new


async def _alter_one(ctx: RequestContext, resource: Any, incremental: bool, validate_only: bool) -> None:
    if resource.resource_type == RESOURCE_BROKER:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Broker configs are read-only in Odradek: set them in server.properties")
    if resource.resource_type != RESOURCE_TOPIC:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.resource_type}")
    name = resource.resource_name
    meta = ctx.broker.metadata.topics.get(name)
    if meta is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{name}' does not exist.")
    new = _apply_ops(meta.config, resource.configs, incremental)
    await ctx.broker.topic_admin.alter_topic_config(name, new, validate_only)


async def _alter(ctx: RequestContext, request: Any, response: Any, incremental: bool) -> Any:
    """AlterConfigs and IncrementalAlterConfigs share their response shape."""
    results = []
    for r in request.resources:
        code, message = ErrorCode.NONE, None
        try:
            await _alter_one(ctx, r, incremental, request.validate_only)
        except KafkaError as exc:
            code, message = exc.code, exc.message
        results.append(response.AlterConfigsResourceResponse(
            error_code=code, error_message=message, resource_type=r.resource_type, resource_name=r.resource_name))
    return response(throttle_time_ms=0, responses=results)


@handles(AlterConfigsRequest, AlterConfigsResponse, versions=(0, 2))
async def alter_configs(ctx: RequestContext, request: Any) -> AlterConfigsResponse:
    return await _alter(ctx, request, AlterConfigsResponse, incremental=False)


@handles(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, versions=(0, 1))
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> IncrementalAlterConfigsResponse:
    return await _alter(ctx, request, IncrementalAlterConfigsResponse, incremental=True)


def _delete_records(ctx: RequestContext, topic: str, p: Any) -> Any:
    res = DeleteRecordsResponse.DeleteRecordsTopicResult.DeleteRecordsPartitionResult(
        partition_index=p.partition_index, low_watermark=-1, error_code=0)
    try:
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
