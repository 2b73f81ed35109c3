"""From a frame to a response: parse the header, check the API and version, decode, run the handler,
encode and frame the response. Errors the protocol cannot carry close the connection with a reason."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafka.protocol.api_message import ApiMessage

from odradek.cluster.store import StoreError
from odradek.protocol.codecs import KNOWN_APIS, decode_request
from odradek.protocol.errors import KafkaError
from odradek.protocol.framing import FrameError, frame_chunks, parse_request_header, peek_api, response_header
from odradek.server.handlers import RequestContext, load_all
from odradek.server.handlers.api_versions import API_VERSIONS_KEY, unsupported_version_response
from odradek.server.network import CloseConnection, Connection, Response

if TYPE_CHECKING:
    from odradek.server.broker import Broker

log = logging.getLogger("odradek.request")


class Dispatcher:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.handlers = load_all()
        self.supported = {k: s for k, s in KNOWN_APIS.items() if k in self.handlers}

    async def __call__(self, conn: Connection, frame: memoryview) -> Response:
        try:
            api_key, api_version, correlation_id = peek_api(frame)
        except FrameError as exc:
            raise CloseConnection(str(exc)) from None
        spec = self.supported.get(api_key)
        if spec is None:
            raise CloseConnection(f"unknown API key {api_key} (correlation id {correlation_id})")
        if not spec.supports(api_version):
            if api_key == API_VERSIONS_KEY:
                return frame_chunks([response_header(correlation_id, False), unsupported_version_response(self)])
            raise CloseConnection(
                f"unsupported version {api_version} of {spec.name} (supported {spec.min_version}-{spec.max_version})"
            )
        flexible = spec.flexible(api_version)
        try:
            header = parse_request_header(frame, flexible)
        except (FrameError, KafkaError) as exc:
            raise CloseConnection(f"malformed request header: {exc}") from None
        reg = self.handlers[api_key]
        ctx = RequestContext(header, self.broker, conn, frame)
        try:
            if reg.raw:
                result = await reg.fn(ctx, frame)
            else:
                try:
                    request = decode_request(spec, api_version, frame[header.body_offset :])
                except KafkaError as exc:
                    raise CloseConnection(str(exc)) from None
                result = await reg.fn(ctx, request)
        except StoreError as exc:
            # e.g. ZooKeeper without quorum during an admin request: the client times out and retries,
            # as it would against Kafka; the reason is logged once here.
            log.warning("%s request from %s failed: metadata store unavailable: %s", spec.name, conn.peer, exc)
            raise CloseConnection(f"metadata store unavailable during {spec.name}") from None
        if result is None:
            return None
        if isinstance(result, ApiMessage):
            # ApiVersions responses always use header v0, whatever the version.
            resp_flexible = flexible and api_key != API_VERSIONS_KEY
            body = result.encode(version=api_version)
            return frame_chunks([response_header(correlation_id, resp_flexible), body])
        return frame_chunks(result)
