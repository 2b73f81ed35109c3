"""Semantic check of a decoded request: values that are None where the schema does not allow null.

kafka-python decodes a length of -1 (or compact 0) as None for every string, bytes and array field,
whether or not the field is nullable at that version; handlers then meet None where the schema promises a
value. This walk lists such places as paths like "topics[0].partitions".
"""

from __future__ import annotations

from typing import Any

from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.base import BaseField
from kafka.protocol.schemas.fields.struct import StructField

from tests.fuzz import schema
from tests.fuzz.schema import Kind

# A None in these is not a null on the wire: the all-zero UUID and the "unknown" bitfield decode as None.
_NONE_IS_A_VALUE = (Kind.UUID, Kind.BITFIELD)
_NULLABLE_ON_THE_WIRE = (Kind.STRING, Kind.BYTES, Kind.ARRAY, Kind.STRUCT_ARRAY, Kind.STRUCT)


def find_illegal_nulls(message: ApiMessage, version: int) -> list[str]:
    """Paths of fields (and array elements) that are None although not nullable at `version`."""
    flexible = type(message).flexible_version_q(version)
    found: list[str] = []
    _walk_struct(message._struct, message, version, flexible, "", found)
    return found


def _walk_struct(
    struct: StructField, value: Any, version: int, flexible: bool, path: str, found: list[str]
) -> None:
    for field in schema.version_fields(struct, version, flexible):
        if schema.is_tagged(field, version) and field.default is None:
            continue  # an absent tagged field reads as its default, None here: nothing was sent as null
        _walk_field(field, getattr(value, field.name), version, flexible, f"{path}{field.name}", found)


def _walk_field(
    field: BaseField, value: Any, version: int, flexible: bool, path: str, found: list[str]
) -> None:
    k = schema.kind(field)
    if value is None:
        if k in _NULLABLE_ON_THE_WIRE and not schema.nullable(field, version):
            found.append(path)
        return
    if k is Kind.STRUCT:
        _walk_struct(field, value, version, flexible, path + ".", found)
    elif k is Kind.STRUCT_ARRAY:
        for i, item in enumerate(value):
            _walk_struct(schema.element_struct(field), item, version, flexible, f"{path}[{i}].", found)
    elif k is Kind.ARRAY and schema.kind(schema.element_field(field)) in _NULLABLE_ON_THE_WIRE:
        # elements of an array are never nullable, whatever the array itself is
        found.extend(f"{path}[{i}]" for i, item in enumerate(value) if item is None)
