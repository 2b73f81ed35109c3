"""Message classes for the APIs kafka-python 3.0.12 has no schema for, built by kafka-python's own schema
machinery from reduced JSON definitions (Kafka's message definitions cut to names, types, versions and
defaults) that a package of ours keeps beside its `__init__` (`protocol/kip848`, `protocol/kip932`), so
they encode and decode like every other message the broker handles."""

from __future__ import annotations

from collections.abc import Iterable
from types import ModuleType
from typing import Any

from kafka.protocol.api_message import ApiMessage


def message_classes(package: ModuleType, names: Iterable[str]) -> dict[str, Any]:
    """One ApiMessage class per name, read from `<name>.json` in `package`."""
    return {name: type(name, (ApiMessage,), {"__module__": package.__name__}, load_json=package) for name in names}


def no_such_message(module: str, name: str) -> AttributeError:
    """What a message package raises for a name it does not define."""
    return AttributeError(f"module {module!r} has no attribute {name!r}")
