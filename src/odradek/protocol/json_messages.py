"""Message classes for the APIs (or versions) kafka-python 3.0.12 has no schema for, built by kafka-python's
own schema machinery from reduced JSON definitions (Kafka's message definitions cut to names, types, versions
and defaults) that a package of ours keeps beside its `__init__` (`protocol/kip848`, `protocol/kip932`,
`protocol/kafka44`), so they encode and decode like every other message the broker handles.

kafka-python finds the class that decodes a response by API key in one registry per process, the last class
made for that key winning. A class of ours for an API kafka-python already has (ApiVersions v5) must not
take kafka-python's place there: kafka-python's clients in the same process (tools, tests) check for their
own class (ApiVersions' response header is v0 at every version), so `message_classes` puts theirs back, and
`response_class` finds a request's answer beside the request's own class instead."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import ModuleType
from typing import Any

from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.api_message import ApiMessage


def message_classes(package: ModuleType, names: Iterable[str]) -> dict[str, Any]:
    """One ApiMessage class per name, read from `<name>.json` in `package`."""
    registry: dict[int, Any] = ResponseClassRegistry._response_class_registry
    before = dict(registry)
    classes = {name: type(name, (ApiMessage,), {"__module__": package.__name__}, load_json=package)
               for name in names}
    registry.update(before)  # kafka-python's own response classes stay where its clients look for them
    return classes


def response_class(request: ApiMessage) -> Any:
    """The class of `request`'s response: the one beside the request's class when its module has one (ours,
    or kafka-python's), else the one kafka-python registered for the API key."""
    cls: Any = type(request)
    primary = cls if getattr(cls, "_class_version", None) is None else cls.mro()[1]
    sibling = getattr(sys.modules.get(primary.__module__), primary.__name__.removesuffix("Request") + "Response",
                      None)
    if isinstance(sibling, type) and issubclass(sibling, ApiMessage) and getattr(sibling, "API_KEY", None) == cls.API_KEY:
        return sibling
    return request.header.get_response_class()


def no_such_message(module: str, name: str) -> AttributeError:
    """What a message package raises for a name it does not define."""
    return AttributeError(f"module {module!r} has no attribute {name!r}")
