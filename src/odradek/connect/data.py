"""Connect's data model, as Kafka's `org.apache.kafka.connect.data`: a `Schema` (a type, optional, a name,
version, doc, parameters and default; fields of a struct, the key and value schemas of a map, the items of an
array) and the values that match it: None, bool, int, float, str, bytes, list, dict and `Struct`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PRIMITIVE_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string", "bytes")
TYPES = (*PRIMITIVE_TYPES, "array", "map", "struct")


class DataException(ValueError):
    """A value does not match its schema, or bytes are not what a converter reads (Kafka's DataException)."""


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    index: int
    schema: Schema


@dataclass(frozen=True, slots=True)
class Schema:
    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: tuple[tuple[str, str], ...] | None = None
    default: Any = None
    fields: tuple[Field, ...] = ()
    key_schema: Schema | None = None
    value_schema: Schema | None = None  # a map's values, an array's items

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise DataException(f"Unknown schema type: {self.type}")

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def as_optional(self) -> Schema:
        return Schema(self.type, True, self.name, self.version, self.doc, self.parameters, self.default, self.fields,
                      self.key_schema, self.value_schema)


def struct_schema(name: str | None, fields: list[tuple[str, Schema]], optional: bool = False) -> Schema:
    return Schema("struct", optional, name, fields=tuple(Field(n, i, s) for i, (n, s) in enumerate(fields)))


STRING_SCHEMA = Schema("string")
OPTIONAL_STRING_SCHEMA = Schema("string", True)
BYTES_SCHEMA = Schema("bytes")
OPTIONAL_BYTES_SCHEMA = Schema("bytes", True)
INT32_SCHEMA = Schema("int32")
INT64_SCHEMA = Schema("int64")
OPTIONAL_INT64_SCHEMA = Schema("int64", True)
BOOLEAN_SCHEMA = Schema("boolean")
FLOAT64_SCHEMA = Schema("float64")

# logical types (their schema names, as Kafka's)
DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIME = "org.apache.kafka.connect.data.Time"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


@dataclass(slots=True)
class Struct:
    """A value of a struct schema: field values by name."""

    schema: Schema
    values: dict[str, Any] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        f = self.schema.field(name)
        if f is None:
            raise DataException(f"{name} is not a valid field name")
        return self.values.get(name, f.schema.default)

    def put(self, name: str, value: Any) -> Struct:
        if self.schema.field(name) is None:
            raise DataException(f"{name} is not a valid field name")
        self.values[name] = value
        return self
