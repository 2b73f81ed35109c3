"""The one table of the APIs this broker serves: for each API key its name, kafka-python request and
response classes, the version range ApiVersions advertises, and the handler. Handler modules fill it with
the `handles` decorator when they are imported; the dispatcher and ApiVersions read it.

A handler is `async def handler(ctx: RequestContext, request) -> response`, where `request` is the
decoded kafka-python message (or, for raw handlers such as Produce, the frame itself) and the response is
a kafka-python message, a list of already-encoded chunks, or None (no response: acks=0).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka.protocol.api_message import ApiMessage

from odradek.protocol.validate import MalformedRequest, check_request

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
    # the authorizer's decisions for this request, (operation, resource type, name) -> allowed: each
    # resource is decided (and a denial logged) once, however many partitions name it
    decisions: dict[tuple[int, int, str], bool] | None = None

    @property
    def version(self) -> int:
        return self.header.api_version


Handler = Callable[[RequestContext, Any], Awaitable[Any]]


@dataclass(frozen=True, slots=True)
class Api:
    api_key: int
    name: str
    request: type[ApiMessage]
    response: type[ApiMessage]
    min_version: int
    max_version: int
    handler: Handler
    raw: bool  # the handler gets the frame instead of a decoded request
    # the minimum ApiVersions advertises, below min_version only where Kafka's is (Produce: KAFKA-18659)
    advertised_min: int

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def flexible(self, version: int) -> bool:
        """Whether this version uses request header v2 and response header v1 (tagged fields)."""
        return self.request.flexible_version_q(version)

    def decode(self, version: int, body: memoryview) -> Any:
        """Check the body against the schema, then decode it with kafka-python's classes; a body that
        does not match (a forbidden null, a length past the end, ...) raises MalformedRequest."""
        check_request(self.request, version, body)
        try:
            return self.request.decode(body, version=version)
        except Exception as exc:  # the decoder raises many kinds on garbage input (e.g. invalid UTF-8)
            raise MalformedRequest(str(exc)) from None


APIS: dict[int, Api] = {}


def handles(
    request: type[ApiMessage], response: type[ApiMessage], versions: tuple[int, int], raw: bool = False,
    advertised_min: int | None = None,
) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of `request`'s API at `versions` (inclusive);
    `advertised_min` lowers the minimum ApiVersions advertises without serving the versions below `versions`."""
    lo, hi = versions
    shown = lo if advertised_min is None else advertised_min
    if not 0 <= shown <= lo:
        raise ValueError(f"{request.name}: advertised minimum {shown} above the served {lo}")
    if not request.min_version <= lo <= hi <= request.max_version:
        raise ValueError(f"{request.name}: versions {lo}-{hi} outside kafka-python's "
                         f"{request.min_version}-{request.max_version}")
    if response.API_KEY != request.API_KEY:
        raise ValueError(f"{response.name} does not answer {request.name}")

    def register(fn: Handler) -> Handler:
        if request.API_KEY in APIS:
            raise ValueError(f"{request.name} has two handlers: {APIS[request.API_KEY].handler.__name__} "
                             f"and {fn.__name__}")
        name = request.name.removesuffix("Request")
        APIS[request.API_KEY] = Api(request.API_KEY, name, request, response, lo, hi, fn, raw, shown)
        return fn

    return register
