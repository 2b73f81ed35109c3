"""The APIs the broker serves, as the fuzz tests see them: the server's registry (filled by importing the
dispatcher, which imports every handler module) and its decoding boundary."""

from __future__ import annotations

from typing import Any

from odradek.protocol.errors import KafkaError
from odradek.protocol.framing import FrameError
from odradek.protocol.validate import MalformedRequest
from odradek.server.dispatcher import APIS
from odradek.server.registry import Api

KNOWN_APIS: dict[int, Api] = APIS
ApiSpec = Api


def decode_request(spec: Api, version: int, body: memoryview) -> Any:
    """What the dispatcher does with a request body: validate, then decode (MalformedRequest when malformed)."""
    return spec.decode(version, body)


# The clean rejections: framing errors, Kafka errors, and requests malformed against their schema.
REJECTIONS: tuple[type[Exception], ...] = (FrameError, KafkaError, MalformedRequest)
