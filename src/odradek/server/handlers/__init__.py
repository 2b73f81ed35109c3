"""One module per API family. Each handler is registered here by API key.

A handler is `async def handler(ctx: RequestContext, request) -> response`, where `request` is the
decoded kafka-python message (or, for raw handlers such as Produce/Fetch, the frame itself) and the
response is a kafka-python message, a list of already-encoded chunks, or None (no response: acks=0).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from odradek.protocol.framing import RequestHeader
    from odradek.server.broker import Broker
    from odradek.server.network import Connection


@dataclass(slots=True)
class RequestContext:
    header: RequestHeader
    broker: Broker
    connection: Connection
    frame: memoryview

    @property
    def version(self) -> int:
        return self.header.api_version


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Registration:
    fn: Handler
    raw: bool  # gets the frame instead of a decoded request


HANDLERS: dict[int, Registration] = {}


def handles(api_key: int, raw: bool = False) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[api_key] = Registration(fn, raw)
        return fn

    return register


def load_all() -> dict[int, Registration]:
    """Import every handler module so each registers itself."""
    from odradek.server.handlers import (  # noqa: F401
        admin,
        api_versions,
        cluster,
        fetch,
        groups,
        metadata,
        produce,
    )

    return HANDLERS
