"""From a frame to a response: parse the header, check the API and version against the registry, decode,
run the handler, encode and frame the response. Errors the protocol cannot carry close the connection
with a reason."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import ApiVersionsRequest

from odradek.cluster.store import StoreError
from odradek.protocol.errors import KafkaError
from odradek.protocol.framing import FrameError, frame_chunks, parse_request_header, peek_api, response_header
from odradek.protocol.validate import MalformedRequest
from odradek.security.sasl import PRE_AUTH_APIS, State
from odradek.server.authz import AuthorizationFailed

# Every handler module, imported for its registrations (the `handles` decorators fill the registry).
from odradek.server.handlers import (  # noqa: F401
    acls,
    admin,
    api_versions,
    client_quotas,
    cluster,
    configs,
    consumer_groups,
    fetch,
    groups,
    log_dirs,
    metadata,
    produce,
    producers,
    scram_credentials,
    share_group_offsets,
    share_groups,
    share_state,
    streams_groups,
    transactions,
)
from odradek.server.handlers import sasl as sasl_handlers
from odradek.server.network import CloseConnection, Connection, Response
from odradek.server.registry import APIS, RequestContext
from odradek.server.unsupported import unsupported_version_response

if TYPE_CHECKING:
    from odradek.server.broker import Broker

log = logging.getLogger("odradek.request")
API_VERSIONS_KEY = ApiVersionsRequest.API_KEY


def denied_response(response: type[ApiMessage], exc: AuthorizationFailed) -> ApiMessage:
    """The response to a request refused as a whole: its top-level error code (and message), every
    other field at its default."""
    fields = set(getattr(response, "fields", ()))
    kwargs: dict[str, object] = {"throttle_time_ms": 0, "error_code": int(exc.code)}
    if "error_message" in fields:
        kwargs["error_message"] = exc.message
    return response(**{k: v for k, v in kwargs.items() if not fields or k in fields})


class Dispatcher:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    async def __call__(self, conn: Connection, frame: memoryview) -> Response:
        sasl = conn.sasl
        if sasl is not None and not sasl.complete:
            if sasl.state is State.RAW_TOKEN:
                return await sasl_handlers.raw_token(self.broker, conn, sasl, frame)
            if sasl.state is State.FAILED:
                return None  # the connection closes after connection.failed.authentication.delay.ms
        try:
            api_key, api_version, correlation_id = peek_api(frame)
        except FrameError as exc:
            raise CloseConnection(str(exc)) from None
        if sasl is not None and sasl.complete and api_key not in PRE_AUTH_APIS and sasl.expired(time.monotonic()):
            # KIP-368: past connections.max.reauth.ms without re-authenticating, as Kafka does
            raise CloseConnection(f"SASL session of {conn.principal} expired (connections.max.reauth.ms) "
                                  f"before re-authentication")
        if sasl is not None and not sasl.complete and api_key not in PRE_AUTH_APIS:
            # Kafka closes such a connection too: nothing but ApiVersions and the SASL exchange before authentication.
            name = APIS[api_key].name if api_key in APIS else f"API key {api_key}"
            raise CloseConnection(f"unexpected {name} request before SASL authentication completed "
                                  f"(listener {conn.security.name})")
        api = APIS.get(api_key)
        if api is None:
            # an API we do not serve: UNSUPPORTED_VERSION where its response can say so (server/unsupported.py)
            answer = unsupported_version_response(api_key, api_version, correlation_id)
            if answer is not None:
                log.debug("answered UNSUPPORTED_VERSION to API key %s v%s from %s", api_key, api_version, conn.peer)
                return answer
            raise CloseConnection(f"unknown API key {api_key} (correlation id {correlation_id})")
        if not api.supports(api_version):
            if api_key == API_VERSIONS_KEY:
                unsupported = api_versions.unsupported_version_response()
                return frame_chunks([response_header(correlation_id, False), unsupported])
            answer = unsupported_version_response(api_key, api_version, correlation_id)
            if answer is not None:
                log.debug("answered UNSUPPORTED_VERSION to %s v%s (supported %s-%s) from %s", api.name, api_version,
                         api.min_version, api.max_version, conn.peer)
                return answer
            raise CloseConnection(
                f"unsupported version {api_version} of {api.name} (supported {api.min_version}-{api.max_version})"
            )
        flexible = api.flexible(api_version)
        try:
            header = parse_request_header(frame, flexible)
        except (FrameError, KafkaError) as exc:
            raise CloseConnection(f"malformed request header: {exc}") from None
        ctx = RequestContext(header, self.broker, conn, frame)
        started = time.perf_counter()
        try:
            if api.raw:
                result = await api.handler(ctx, frame)
            else:
                try:
                    request = api.decode(api_version, frame[header.body_offset :])
                except MalformedRequest as exc:
                    # Kafka closes the connection on a request it cannot parse; one line says why.
                    raise CloseConnection(
                        f"malformed {api.name} v{api_version} request (client id {header.client_id!r}, "
                        f"correlation id {correlation_id}): {exc}"
                    ) from None
                result = await api.handler(ctx, request)
        except AuthorizationFailed as exc:
            # a request refused as a whole: the response's top-level error code says so
            result = denied_response(api.response, exc)
        except StoreError as exc:
            # e.g. ZooKeeper without quorum during an admin request: the client times out and retries,
            # as it would against Kafka; the reason is logged once here.
            log.warning("%s request from %s failed: metadata store unavailable: %s", api.name, conn.peer, exc)
            raise CloseConnection(f"metadata store unavailable during {api.name}") from None
        self.broker.metrics.request_done(api.name, started)
        quotas = self.broker.quotas
        if quotas.enabled:
            throttle = quotas.request_time(conn.principal, header.client_id or "", time.perf_counter() - started)
            if throttle:
                conn.mute_s = max(conn.mute_s, throttle / 1000)
                if isinstance(result, ApiMessage) and hasattr(result, "throttle_time_ms"):
                    result.throttle_time_ms = max(result.throttle_time_ms or 0, throttle)
        if result is None:
            return None
        if isinstance(result, ApiMessage):
            self.broker.metrics.response_errors(api.name, result)
            # ApiVersions responses always use header v0, whatever the version (KIP-511).
            resp_flexible = api_key != API_VERSIONS_KEY and api.response.flexible_version_q(api_version)
            body = result.encode(version=api_version)
            return frame_chunks([response_header(correlation_id, resp_flexible), body])
        return frame_chunks(result)
