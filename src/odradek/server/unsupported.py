"""The answer to a request for an API, or a version of one, that this broker does not serve.

Clients read ApiVersions first and never send such a request; one that does (a client pinned to a broker
version, a tool that skips the negotiation) should fail at once. Kafka closes the connection, which
clients take for a network error and retry until they time out. Where the response schema (kafka-python's)
has a top-level error code at the request's version, Odradek answers instead, with UNSUPPORTED_VERSION,
which no client retries: e.g. quorum and feature requests (KRaft's), and e.g. InitProducerId v6
(KIP-939's two-phase commit). A response with error codes only per entity (Produce, OffsetCommit)
cannot carry the error without echoing the request, and an API or version kafka-python has no schema
for cannot be answered at all: those still close the connection.
"""

from __future__ import annotations

import inspect
from typing import Any

import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer
from kafka.protocol.api_message import ApiMessage

from odradek.protocol.errors import ErrorCode
from odradek.protocol.framing import frame_chunks, response_header


def _response_classes() -> dict[int, type[ApiMessage]]:
    out: dict[int, type[ApiMessage]] = {}
    for module in (kafka.protocol.admin, kafka.protocol.consumer, kafka.protocol.metadata, kafka.protocol.producer):
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and issubclass(cls, ApiMessage) and name.endswith("Response"):
                message: Any = cls
                out.setdefault(message.API_KEY, cls)
    return out


_RESPONSES = _response_classes()


def unsupported_version_body(api_key: int, version: int) -> tuple[bytes, bool] | None:
    """The UNSUPPORTED_VERSION response body for `api_key` at `version` and whether its header is flexible,
    or None when the response cannot say it."""
    cls: Any = _RESPONSES.get(api_key)
    if cls is None or not cls.min_version <= version <= cls.max_version:
        return None
    fields = cls.fields
    error_code = fields.get("error_code")
    if error_code is None or not error_code.for_version_q(version):
        return None
    values: dict[str, Any] = {"error_code": ErrorCode.UNSUPPORTED_VERSION}
    message = fields.get("error_message")
    if message is not None and message.for_version_q(version):
        values["error_message"] = f"This broker does not serve version {version} of {cls.name.removesuffix('Response')}"
    try:
        body = bytes(cls(**values).encode(version=version))
    except Exception:  # a schema whose defaults do not encode: nothing to answer with
        return None
    return body, cls.flexible_version_q(version)


def unsupported_version_response(api_key: int, version: int, correlation_id: int) -> list[Any] | None:
    """The framed answer (see the module's doc), or None: close the connection."""
    found = unsupported_version_body(api_key, version)
    if found is None:
        return None
    body, flexible = found
    return frame_chunks([response_header(correlation_id, flexible), body])
