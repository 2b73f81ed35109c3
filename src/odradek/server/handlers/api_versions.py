"""ApiVersions: the table of supported API versions; unknown versions get the v0 error response."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafka.protocol.metadata import ApiVersionsResponse

from odradek.protocol.errors import ErrorCode
from odradek.server.handlers import RequestContext, handles

if TYPE_CHECKING:
    from odradek.server.dispatcher import Dispatcher

API_VERSIONS_KEY = 18


def _api_keys(dispatcher: Dispatcher) -> list[Any]:
    return [
        ApiVersionsResponse.ApiVersion(api_key=k, min_version=s.min_version, max_version=s.max_version)
        for k, s in sorted(dispatcher.supported.items())
    ]


def unsupported_version_response(dispatcher: Dispatcher) -> bytes:
    resp = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=_api_keys(dispatcher))
    return bytes(resp.encode(version=0))


@handles(API_VERSIONS_KEY)
async def api_versions(ctx: RequestContext, request: Any) -> ApiVersionsResponse:
    return ApiVersionsResponse(
        error_code=0,
        api_keys=_api_keys(ctx.broker.dispatcher),
        throttle_time_ms=0,
    )
