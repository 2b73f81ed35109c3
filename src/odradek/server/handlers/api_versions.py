"""ApiVersions: the supported API versions, straight from the registry; a request at a version we do not
support gets the v0 error response listing them (clients then retry at a version we know)."""

from __future__ import annotations

from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from odradek.protocol.errors import ErrorCode
from odradek.server.registry import APIS, RequestContext, handles


def _api_keys() -> list[Any]:
    return [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=api.min_version, max_version=api.max_version)
        for k, api in sorted(APIS.items())
    ]


def unsupported_version_response() -> bytes:
    resp = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_keys())
    return bytes(resp.encode(version=0))


@handles(ApiVersionsRequest, ApiVersionsResponse, versions=(0, 4))
async def api_versions(ctx: RequestContext, request: Any) -> ApiVersionsResponse:
    return ApiVersionsResponse(error_code=0, api_keys=_api_keys(), throttle_time_ms=0)
