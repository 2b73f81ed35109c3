"""What the broker does with a request frame before a handler runs, without a broker.

Mirrors the dispatcher's order: peek the API, check it is known and the version supported, parse the
header (v1, or v2 for flexible versions), then decode the body (the Produce fast path for Produce).
"""

from __future__ import annotations

from typing import Any

from odradek.protocol.framing import RequestHeader, parse_request_header, peek_api
from odradek.protocol.produce import parse_produce_request
from tests.fuzz.apis import KNOWN_APIS, ApiSpec
from tests.fuzz.apis import decode_request as decode_body

PRODUCE = KNOWN_APIS[0]


def decode_frame(frame: bytes) -> tuple[ApiSpec, RequestHeader, Any] | None:
    """(spec, header, decoded request) of a frame (header and body, no size prefix); None for an API or
    version the broker does not serve. Raises FrameError or KafkaError on malformed input, like the broker."""
    view = memoryview(frame)
    api_key, api_version, _ = peek_api(view)
    spec = KNOWN_APIS.get(api_key)
    if spec is None or not spec.supports(api_version):
        return None
    header = parse_request_header(view, spec.flexible(api_version))
    if spec is PRODUCE:
        return spec, header, parse_produce_request(view, header.body_offset, api_version)
    return spec, header, decode_body(spec, api_version, view[header.body_offset :])
