"""DescribeClientQuotas and AlterClientQuotas (KIP-546): the client quotas of `cluster/quotas.py`,
filtered and validated as Kafka does (INVALID_REQUEST for an unknown entity type or key, a repeated
entity type, a byte rate that is not a whole number). DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster when
an authorizer is configured."""

from __future__ import annotations

import math
from typing import Any

from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)

from odradek.cluster import quotas as cq
from odradek.protocol.errors import ErrorCode
from odradek.server import authz
from odradek.server.registry import RequestContext, handles

USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
WHOLE_NUMBER_KEYS = (cq.PRODUCER_BYTE_RATE, cq.CONSUMER_BYTE_RATE)

_DEntry = DescribeClientQuotasResponse.EntryData
_AEntry = AlterClientQuotasResponse.EntryData


class InvalidRequest(Exception):
    pass


def _parts(entity: cq.Entity) -> dict[str, str | None]:
    """The entity as KIP-546 names it: type -> name, None for the default."""
    out: dict[str, str | None] = {}
    for kind, value in zip((USER, CLIENT_ID), entity, strict=True):
        if value is not None:
            out[kind] = None if value == cq.DEFAULT else value
    return out


def matches(entity: cq.Entity, components: list[tuple[str, int, str | None]], strict: bool) -> bool:
    parts = _parts(entity)
    for kind, match_type, match in components:
        if kind not in parts:
            return False
        name = parts[kind]
        if match_type == MATCH_EXACT and name != match:
            return False
        if match_type == MATCH_DEFAULT and name is not None:
            return False
        if match_type == MATCH_SPECIFIED and name is None:
            return False
    return not strict or len(parts) == len(components)


def check_components(components: list[tuple[str, int, str | None]]) -> None:
    seen: set[str] = set()
    for kind, match_type, match in components:
        if kind not in (USER, CLIENT_ID, IP):
            raise InvalidRequest(f"Custom entity type '{kind}' not supported")
        if kind in seen:
            raise InvalidRequest(f"Duplicate {kind} filter component entity type")
        seen.add(kind)
        if match_type == MATCH_EXACT and match is None:
            raise InvalidRequest("Exact match requires a non-null match string")
        if match_type not in (MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED):
            raise InvalidRequest(f"Unknown match type {match_type}")


@handles(DescribeClientQuotasRequest, DescribeClientQuotasResponse, versions=(0, 1))
async def describe_client_quotas(ctx: RequestContext, request: Any) -> DescribeClientQuotasResponse:
    authz.require(ctx, authz.Op.DESCRIBE_CONFIGS, authz.CLUSTER)
    components = [(c.entity_type, c.match_type, c.match) for c in request.components]
    try:
        check_components(components)
    except InvalidRequest as exc:
        return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=ErrorCode.INVALID_REQUEST,
                                            error_message=str(exc), entries=None)
    entries = []
    for entity, values in sorted((await cq.read_all(ctx.broker.store)).items(), key=lambda e: str(e[0])):
        if not matches(entity, components, request.strict):
            continue
        entries.append(_DEntry(
            entity=[_DEntry.EntityData(entity_type=k, entity_name=v) for k, v in _parts(entity).items()],
            values=[_DEntry.ValueData(key=k, value=v) for k, v in values.items()]))
    return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=0, error_message=None, entries=entries)


def parse_entity(parts: list[tuple[str, str | None]]) -> cq.Entity:
    seen: dict[str, str | None] = {}
    for kind, name in parts:
        if kind in seen:
            raise InvalidRequest(f"Duplicate {kind} entity type in quota entity")
        if kind == IP:
            raise InvalidRequest("IP connection rate quotas are not supported by Odradek")
        if kind not in (USER, CLIENT_ID):
            raise InvalidRequest(f"Unhandled client quota entity type: {kind}")
        if name == "":
            raise InvalidRequest(f"Empty {kind} not supported")
        seen[kind] = name
    if not seen:
        raise InvalidRequest("Invalid empty client quota entity")

    def part(kind: str) -> str | None:
        if kind not in seen:
            return None
        name = seen[kind]
        return cq.DEFAULT if name is None else name

    return part(USER), part(CLIENT_ID)


def parse_ops(ops: list[tuple[str, float, bool]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, value, remove in ops:
        if key not in cq.QUOTA_KEYS:
            raise InvalidRequest(f"Invalid configuration key {key}")
        if key in out:
            raise InvalidRequest(f"Duplicate quota configuration key {key}")
        if remove:
            out[key] = None
            continue
        if math.isnan(value) or math.isinf(value) or value <= 0:
            raise InvalidRequest(f"Illegal value {value} for configuration key {key}: it must be positive")
        if key in WHOLE_NUMBER_KEYS and value != int(value):
            raise InvalidRequest(f"Configuration {key} must be a Long value")
        out[key] = value
    return out


@handles(AlterClientQuotasRequest, AlterClientQuotasResponse, versions=(0, 1))
async def alter_client_quotas(ctx: RequestContext, request: Any) -> AlterClientQuotasResponse:
    # the response has no top-level error: a refusal is each entry's, as Kafka answers it
    refused = not authz.allowed(ctx, authz.Op.ALTER_CONFIGS, authz.CLUSTER)
    results = []
    for entry in request.entries:
        described = [_AEntry.EntityData(entity_type=e.entity_type, entity_name=e.entity_name) for e in entry.entity]
        if refused:
            results.append(_AEntry(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                   error_message="Cluster authorization failed.", entity=described))
            continue
        try:
            entity = parse_entity([(e.entity_type, e.entity_name) for e in entry.entity])
            changes = parse_ops([(o.key, o.value, o.remove) for o in entry.ops])
        except InvalidRequest as exc:
            results.append(_AEntry(error_code=ErrorCode.INVALID_REQUEST, error_message=str(exc), entity=described))
            continue
        if not request.validate_only and changes:
            await cq.alter(ctx.broker.store, entity, changes)
        results.append(_AEntry(error_code=0, error_message=None, entity=described))
    return AlterClientQuotasResponse(throttle_time_ms=0, entries=results)
