"""How Kafka's Java classes print themselves (`toString`), for messages that must read as Kafka's."""

from __future__ import annotations

from enum import Enum


def java_to_string(class_name: str, **fields: object) -> str:
    """`ClassName(field=value, ...)`, as a Kafka class's toString lists its fields (`class_name` may be
    empty: AccessControlEntry prints only the parentheses). An enum constant prints as its name, as
    Java's does; any other value by `str`."""
    shown = ", ".join(f"{name}={value.name if isinstance(value, Enum) else value}" for name, value in fields.items())
    return f"{class_name}({shown})"
