"""Reading kafka-python 3's schema-generated message classes: the fields a version carries, and their kinds.

Every request class has a `_struct` (a StructField) built from Kafka's JSON schema; its fields are
SimpleField (int8..int64, uint16, float64, bool, uuid, string, bytes/records, bitfield), ArrayField
(array of a simple type), StructField (nested struct, maybe nullable) and StructArrayField.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from kafka.protocol.schemas.fields.array import ArrayField
from kafka.protocol.schemas.fields.base import BaseField
from kafka.protocol.schemas.fields.codecs import (
    UUID,
    BitField,
    Boolean,
    Bytes,
    Float64,
    Int8,
    Int16,
    Int32,
    Int64,
    String,
    UnsignedInt16,
)
from kafka.protocol.schemas.fields.simple import SimpleField
from kafka.protocol.schemas.fields.struct import StructField
from kafka.protocol.schemas.fields.struct_array import StructArrayField


class Kind(Enum):
    INT = "int"
    FLOAT = "float"
    BOOL = "bool"
    UUID = "uuid"
    STRING = "string"
    BYTES = "bytes"
    BITFIELD = "bitfield"
    ARRAY = "array"  # of a simple type
    STRUCT = "struct"
    STRUCT_ARRAY = "struct_array"


INT_RANGES: dict[Any, tuple[int, int]] = {
    Int8: (-(2**7), 2**7 - 1),
    Int16: (-(2**15), 2**15 - 1),
    UnsignedInt16: (0, 2**16 - 1),
    Int32: (-(2**31), 2**31 - 1),
    Int64: (-(2**63), 2**63 - 1),
}


def kind(field: BaseField) -> Kind:
    """The kind of value a field holds (StructArrayField before ArrayField: it is a subclass)."""
    if isinstance(field, StructArrayField):
        return Kind.STRUCT_ARRAY
    if isinstance(field, ArrayField):
        return Kind.ARRAY
    if isinstance(field, StructField):
        return Kind.STRUCT
    assert isinstance(field, SimpleField), field
    codec = field._type
    if codec in INT_RANGES:
        return Kind.INT
    if isinstance(codec, String):
        return Kind.STRING
    simple = {
        Float64: Kind.FLOAT,
        Boolean: Kind.BOOL,
        UUID: Kind.UUID,
        Bytes: Kind.BYTES,
        BitField: Kind.BITFIELD,
    }
    return simple[codec]


def int_range(field: SimpleField) -> tuple[int, int]:
    return INT_RANGES[field._type]


def version_fields(struct: StructField, version: int, flexible: bool) -> list[BaseField]:
    """The fields a struct carries at `version`: untagged ones, then tagged ones when the version is flexible."""
    fields = list(struct.untagged_fields(version))
    if flexible:
        fields += struct.tagged_fields(version)._fields
    return fields


def is_tagged(field: BaseField, version: int) -> bool:
    return field.tagged_field_q(version)


def nullable(field: BaseField, version: int) -> bool:
    return field.nullable_for_version_q(version)


def element_struct(field: StructArrayField) -> StructField:
    return field.array_of


def element_field(field: ArrayField) -> SimpleField:
    return field.array_of


def may_end_in_string_or_bytes(struct: StructField, version: int) -> bool:
    """Whether a non-flexible encoding of `struct` can end with the bytes of a string or bytes field
    (the last untagged field, or the last one of its last element when it is an array)."""
    fields = struct.untagged_fields(version)
    if not fields:
        return False
    last = fields[-1]
    k = kind(last)
    if k in (Kind.STRING, Kind.BYTES):
        return True
    if k is Kind.ARRAY:
        return kind(element_field(last)) in (Kind.STRING, Kind.BYTES)
    if k is Kind.STRUCT_ARRAY:
        return may_end_in_string_or_bytes(element_struct(last), version)
    if k is Kind.STRUCT:
        return may_end_in_string_or_bytes(last, version)
    return False
