"""ApiVersions: the supported API versions, straight from the registry, and the feature levels
(server/features.py); a request at a version we do not support gets the v0 error response listing them
(clients then retry at a version we know). From v5 (KIP-1242) a client may name the cluster and node it
means to reach: a connection that reached another one (stale bootstrap addresses, a reused address) gets
REBOOTSTRAP_REQUIRED, and naming only one of the two is INVALID_REQUEST, as Kafka answers."""

from __future__ import annotations

from typing import Any

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kafka44 import ApiVersionsRequest, ApiVersionsResponse
from odradek.server.features import features, finalized_epoch
from odradek.server.registry import APIS, RequestContext, handles


def _api_keys() -> list[Any]:
    return [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=api.advertised_min, max_version=api.max_version)
        for k, api in sorted(APIS.items())
    ]


def unsupported_version_response() -> bytes:
    resp = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_keys())
    return bytes(resp.encode(version=0))


def _misrouted(ctx: RequestContext, request: Any) -> ErrorCode | None:
    if ctx.version < 5:
        return None
    if (request.cluster_id is None) != (request.node_id == -1):
        return ErrorCode.INVALID_REQUEST
    if request.cluster_id is not None and (request.cluster_id != ctx.broker.cluster_id
                                           or request.node_id != ctx.broker.broker_id):
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return None


@handles(ApiVersionsRequest, ApiVersionsResponse, versions=(0, 5))
async def api_versions(ctx: RequestContext, request: Any) -> ApiVersionsResponse:
    error = _misrouted(ctx, request)
    if error is not None:
        return ApiVersionsResponse(error_code=error, api_keys=[], throttle_time_ms=0)
    feats = features(APIS, ctx.broker.groups.consumer.settings.enabled, ctx.broker.config.get("transaction.version"))
    # before v4 a client refuses a supported range starting at 0 (KAFKA-17011): Kafka leaves those out
    supported = [ApiVersionsResponse.SupportedFeatureKey(name=f.name, min_version=f.min_version,
                                                         max_version=f.max_version)
                 for f in feats if ctx.version >= 4 or f.min_version > 0]
    finalized = [ApiVersionsResponse.FinalizedFeatureKey(name=f.name, max_version_level=f.level,
                                                         min_version_level=f.level)
                 for f in feats if f.level > 0]
    return ApiVersionsResponse(error_code=0, api_keys=_api_keys(), throttle_time_ms=0, supported_features=supported,
                               finalized_features_epoch=finalized_epoch(feats), finalized_features=finalized)
