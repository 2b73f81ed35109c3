"""Converters between Connect data and the bytes of a record's key, value or header, as Kafka's `Converter` and
`HeaderConverter`: `configure(configs, is_key)`, `from_connect(topic, schema, value) -> bytes | None` and
`to_connect(topic, data) -> (schema, value)`. The plain ones are here (String, ByteArray, the number converters);
JsonConverter is in `json_converter`."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any, Protocol

from odradek.connect.data import (
    OPTIONAL_BYTES_SCHEMA,
    OPTIONAL_STRING_SCHEMA,
    DataException,
    Schema,
)


class Converter(Protocol):
    def configure(self, configs: Mapping[str, str], is_key: bool) -> None: ...

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None: ...

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]: ...


class StringConverter:
    """`org.apache.kafka.connect.storage.StringConverter`: a value's text in UTF-8 (`converter.encoding`)."""

    def __init__(self) -> None:
        self.encoding = "utf-8"

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        key = "converter.encoding"
        specific = ("key." if is_key else "value.") + key
        self.encoding = configs.get(specific, configs.get(key, "UTF-8")).lower()

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        return str(value).encode(self.encoding)

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return OPTIONAL_STRING_SCHEMA, None
        try:
            return OPTIONAL_STRING_SCHEMA, data.decode(self.encoding)
        except UnicodeDecodeError as exc:
            raise DataException(f"Failed to deserialize string: {exc}") from None


class ByteArrayConverter:
    """`org.apache.kafka.connect.converters.ByteArrayConverter`: bytes as they are."""

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        pass

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is not None and schema.type != "bytes":
            raise DataException(f"Invalid schema type for ByteArrayConverter: {schema.type}")
        if value is not None and not isinstance(value, bytes | bytearray | memoryview):
            raise DataException(f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")
        return None if value is None else bytes(value)

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        return OPTIONAL_BYTES_SCHEMA, data


class NumberConverter:
    """Kafka's number converters (`IntegerConverter`, `LongConverter`, ...): the big-endian bytes of Kafka's
    serializers for the type."""

    def __init__(self, schema_type: str, fmt: str) -> None:
        self.schema = Schema(schema_type, True)
        self.fmt = fmt

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        pass

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if value is None:
            return None
        try:
            return struct.pack(self.fmt, value)
        except struct.error as exc:
            raise DataException(f"Failed to serialize to {self.schema.type}: {exc}") from None

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return self.schema, None
        if len(data) != struct.calcsize(self.fmt):
            raise DataException(f"Size of data received by the {self.schema.type} deserializer is not "
                                f"{struct.calcsize(self.fmt)}")
        return self.schema, struct.unpack(self.fmt, data)[0]


def number_converter(schema_type: str) -> NumberConverter:
    formats = {"int16": ">h", "int32": ">i", "int64": ">q", "float32": ">f", "float64": ">d"}
    return NumberConverter(schema_type, formats[schema_type])
