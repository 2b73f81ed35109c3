"""Bounds on what a client's schema may cost: text size, nesting depth and the number of references, checked
before and while a format parses it, so a hostile schema is refused quickly with a SchemaError."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from odradek.schema_registry.errors import SchemaError

# 1 MiB of text per schema (Confluent's own default request limit is larger, but a schema that big is a
# mistake or an attack; Avro schemas in the wild are kilobytes).
MAX_SCHEMA_CHARS = 1 << 20
# Nesting depth of a schema's JSON value (Avro, JSON Schema) or of messages within messages (Protobuf):
# deep enough for any real schema, shallow enough that every recursive walk stays far from Python's limit.
MAX_DEPTH = 64
# References one schema may pull in (transitively) and their text all together.
MAX_REFERENCES = 256
MAX_TOTAL_CHARS = 4 * MAX_SCHEMA_CHARS


def check_text(text: object, what: str = "schema") -> str:
    if not isinstance(text, str):
        raise SchemaError(f"the {what} must be a string, not {type(text).__name__}")
    if len(text) > MAX_SCHEMA_CHARS:
        raise SchemaError(f"the {what} has {len(text)} characters, more than the limit of {MAX_SCHEMA_CHARS}")
    return text


def check_references(references: Mapping[str, str] | None) -> Mapping[str, str]:
    refs = references or {}
    if len(refs) > MAX_REFERENCES:
        raise SchemaError(f"{len(refs)} references, more than the limit of {MAX_REFERENCES}")
    total = 0
    for name, text in refs.items():
        total += len(check_text(text, f"referenced schema {name!r}"))
    if total > MAX_TOTAL_CHARS:
        raise SchemaError(f"the referenced schemas have {total} characters, more than {MAX_TOTAL_CHARS}")
    return refs


def _no_constant(name: str) -> Any:
    raise SchemaError(f"{name} is not valid JSON")


def load_json(text: str, what: str = "schema") -> Any:
    """`text` as a JSON value no deeper than MAX_DEPTH; SchemaError when it is not JSON or too deep."""
    check_text(text, what)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise SchemaError(f"the {what} nests deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as e:
        raise SchemaError(f"the {what} is not valid JSON: {e}") from None
    check_depth(value, what)
    return value


def check_depth(value: Any, what: str = "schema") -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaError(f"the {what} nests deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
