"""Deterministic sample requests built from the schemas: minimal messages, one field nulled, long arrays.

Where the hypothesis strategies explore values, these enumerate: every non-nullable string, bytes and array
field of every version (to send it as null), and every top-level array (to measure decoding cost per byte).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.base import BaseField
from kafka.protocol.schemas.fields.struct import StructField

from tests.fuzz import schema
from tests.fuzz.apis import ApiSpec
from tests.fuzz.schema import Kind

ELEMENT = "[]"  # path step: the (single) element of an array
_MINIMAL_SCALAR = {
    Kind.INT: 0,
    Kind.FLOAT: 0.0,
    Kind.BOOL: False,
    Kind.UUID: None,
    Kind.STRING: "",
    Kind.BYTES: b"",
    Kind.BITFIELD: None,
}
_NULLABLE_ON_THE_WIRE = (Kind.STRING, Kind.BYTES, Kind.ARRAY, Kind.STRUCT_ARRAY)


def _wire_fields(struct: StructField, version: int) -> list[BaseField]:
    # tagged fields are left out: absent, they read as their defaults
    return list(struct.untagged_fields(version))


def minimal_value(field: BaseField, version: int) -> Any:
    k = schema.kind(field)
    if k in (Kind.ARRAY, Kind.STRUCT_ARRAY):
        return []
    if k is Kind.STRUCT:
        return minimal_struct(field, version)
    return _MINIMAL_SCALAR[k]


def minimal_struct(struct: StructField, version: int, cls: Any = None) -> Any:
    values = {f.name: minimal_value(f, version) for f in _wire_fields(struct, version)}
    return (cls or struct.data_class)(version=version, **values)


def minimal_request(spec: ApiSpec, version: int) -> ApiMessage:
    return minimal_struct(spec.request._struct, version, cls=spec.request)


def null_targets(
    struct: StructField, version: int, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    """Paths of every place a non-null value is required: non-nullable fields and simple array elements."""
    for f in _wire_fields(struct, version):
        k = schema.kind(f)
        path = (*prefix, f.name)
        if k in _NULLABLE_ON_THE_WIRE and not schema.nullable(f, version):
            yield path
        if k is Kind.ARRAY and schema.kind(schema.element_field(f)) in (Kind.STRING, Kind.BYTES):
            yield (*path, ELEMENT)
        if k is Kind.STRUCT_ARRAY:
            yield from null_targets(schema.element_struct(f), version, (*path, ELEMENT))
        elif k is Kind.STRUCT:
            yield from null_targets(f, version, path)


def path_text(path: tuple[str, ...]) -> str:
    return ".".join(path).replace("." + ELEMENT, ELEMENT)


def request_with_null(spec: ApiSpec, version: int, path: tuple[str, ...]) -> ApiMessage:
    """A minimal request with None at `path`; every array on the way holds one minimal element."""
    message = minimal_request(spec, version)
    obj: Any = message
    struct: StructField = spec.request._struct
    steps = list(path)
    while steps:
        name = steps.pop(0)
        field = struct.fields[name]
        last = not steps
        element_null = steps == [ELEMENT]
        if last:
            setattr(obj, name, None)
        elif element_null:
            setattr(obj, name, [None])
            steps.clear()
        elif schema.kind(field) is Kind.STRUCT_ARRAY:
            steps.pop(0)  # the ELEMENT step
            struct = schema.element_struct(field)
            item = minimal_struct(struct, version)
            setattr(obj, name, [item])
            obj = item
        else:  # nested struct
            struct = field
            obj = getattr(obj, name)
    return message


def encode_as_is(message: ApiMessage, version: int) -> bytes:
    """The body exactly as the message holds it, without a class's own fix-ups (MetadataRequest.encode
    turns a None topic list into [] at v0, which would hide the null these samples mean to send)."""
    return bytes(ApiMessage.encode(message, version=version))


def top_level_arrays(spec: ApiSpec, version: int) -> list[BaseField]:
    return [
        f
        for f in _wire_fields(spec.request._struct, version)
        if schema.kind(f) in (Kind.ARRAY, Kind.STRUCT_ARRAY)
    ]


def request_with_long_array(spec: ApiSpec, version: int, field: BaseField, count: int) -> ApiMessage:
    """A minimal request whose top-level array `field` holds `count` minimal elements."""
    message = minimal_request(spec, version)
    if schema.kind(field) is Kind.STRUCT_ARRAY:
        item = minimal_struct(schema.element_struct(field), version)
    else:
        item = minimal_value(schema.element_field(field), version)
    setattr(message, field.name, [item] * count)
    return message
