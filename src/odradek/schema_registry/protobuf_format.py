"""protobuf schemas (not yet written: every schema is refused)."""

from __future__ import annotations

from collections.abc import Mapping

from odradek.schema_registry.errors import SchemaError


def parse(text: str, references: Mapping[str, str] | None = None) -> object:
    raise SchemaError("this schema type is not supported yet")
