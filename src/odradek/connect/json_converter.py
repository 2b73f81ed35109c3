"""Kafka's `org.apache.kafka.connect.json.JsonConverter`: Connect data as JSON, with `schemas.enable` (default
true) in Kafka's envelope `{"schema": ..., "payload": ...}` and Kafka's schema JSON (`{"type":"string",
"optional":false}`, struct fields with a `"field"` key, `"items"`, `"keys"`, `"values"`, then name, version,
doc, parameters, default), written compact as Jackson writes it. Bytes are base64 text; Decimal is base64 of
its unscaled value (`decimal.format=BASE64`) or a JSON number (`NUMERIC`); Date, Time and Timestamp are their
integer encodings. Without schemas the payload alone, read back with inferred types (ints as int64)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Mapping
from typing import Any

from odradek.connect.data import DATE, DECIMAL, TIME, TIMESTAMP, DataException, Field, Schema, Struct

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_INTS = {"int8": 1 << 7, "int16": 1 << 15, "int32": 1 << 31, "int64": 1 << 63}
ENVELOPE_ERROR = ('JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
                  "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false in "
                  "your converter configuration.")


def _dumps(node: Any) -> bytes:
    return json.dumps(node, separators=(",", ":"), ensure_ascii=False).encode()


def schema_to_json(schema: Schema, decimal_numeric: bool = False) -> dict[str, Any]:
    node: dict[str, Any] = {"type": schema.type}
    if schema.type == "array" and schema.value_schema is not None:
        node["items"] = schema_to_json(schema.value_schema, decimal_numeric)
    elif schema.type == "map" and schema.key_schema is not None and schema.value_schema is not None:
        node["keys"] = schema_to_json(schema.key_schema, decimal_numeric)
        node["values"] = schema_to_json(schema.value_schema, decimal_numeric)
    elif schema.type == "struct":
        node["fields"] = [{**schema_to_json(f.schema, decimal_numeric), "field": f.name} for f in schema.fields]
    node["optional"] = schema.optional
    if schema.name is not None:
        node["name"] = schema.name
    if schema.version is not None:
        node["version"] = schema.version
    if schema.doc is not None:
        node["doc"] = schema.doc
    if schema.parameters is not None:
        node["parameters"] = dict(schema.parameters)
    if schema.default is not None:
        node["default"] = value_to_json(schema, schema.default, decimal_numeric)
    return node


def schema_from_json(node: Any) -> Schema:
    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise DataException("Schema must contain 'type' field")
    kind = node["type"]
    optional = bool(node.get("optional", False))
    params = node.get("parameters")
    parameters = tuple((str(k), str(v)) for k, v in params.items()) if isinstance(params, dict) else None
    common: dict[str, Any] = {"optional": optional, "name": node.get("name"), "version": node.get("version"),
                              "doc": node.get("doc"), "parameters": parameters}
    if kind == "struct":
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise DataException("Struct schema's \"fields\" argument is not an array.")
        built = []
        for i, f in enumerate(fields):
            if not isinstance(f, dict) or not isinstance(f.get("field"), str):
                raise DataException("Struct schema's field name not specified properly")
            built.append(Field(f["field"], i, schema_from_json(f)))
        schema = Schema("struct", fields=tuple(built), **common)
    elif kind == "array":
        if "items" not in node:
            raise DataException("Array schema did not specify the element type")
        schema = Schema("array", value_schema=schema_from_json(node["items"]), **common)
    elif kind == "map":
        if "keys" not in node or "values" not in node:
            raise DataException("Map schema did not specify the key and value types")
        schema = Schema("map", key_schema=schema_from_json(node["keys"]), value_schema=schema_from_json(node["values"]),
                        **common)
    else:
        try:
            schema = Schema(kind, **common)
        except DataException:
            raise DataException(f"Unknown schema type: {kind}") from None
    if node.get("default") is not None:
        schema = Schema(schema.type, schema.optional, schema.name, schema.version, schema.doc, schema.parameters,
                        value_from_json(schema, node["default"]), schema.fields, schema.key_schema,
                        schema.value_schema)
    return schema


def _scale(schema: Schema) -> int:
    params = dict(schema.parameters or ())
    try:
        return int(params["scale"])
    except (KeyError, ValueError):
        raise DataException("Invalid Decimal schema: scale parameter not found.") from None


def value_to_json(schema: Schema | None, value: Any, decimal_numeric: bool = False) -> Any:
    """The JSON of `value` (Kafka's convertToJson): checked against `schema`, or inferred when it is None."""
    if value is None:
        if schema is None:
            return None
        if schema.default is not None:
            return value_to_json(schema, schema.default, decimal_numeric)
        if schema.optional:
            return None
        raise DataException("Conversion error: null value for field that is required and has no default value")
    if schema is None:
        return _infer_json(value)
    if schema.name == DECIMAL:
        if not isinstance(value, decimal.Decimal):
            raise DataException(f"Invalid type for Decimal: {type(value).__name__}")
        scaled = value.scaleb(_scale(schema)).to_integral_value()
        if decimal_numeric:
            return float(value) if value != value.to_integral_value() else int(value)
        n = int(scaled)
        size = max(1, (n + (n < 0)).bit_length() // 8 + 1)
        return base64.b64encode(n.to_bytes(size, "big", signed=True)).decode()
    if schema.name == DATE and isinstance(value, dt.date):
        return (value - _EPOCH.date()).days
    if schema.name == TIME and isinstance(value, dt.time):
        return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
    if schema.name == TIMESTAMP and isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return int((moment - _EPOCH) / dt.timedelta(milliseconds=1))
    kind = schema.type
    if kind in _INTS:
        if isinstance(value, bool) or not isinstance(value, int):
            raise DataException(f"Invalid Java object for schema type {kind.upper()}: {type(value).__name__}")
        return value
    if kind in ("float32", "float64"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise DataException(f"Invalid Java object for schema type {kind.upper()}: {type(value).__name__}")
        return float(value)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise DataException(f"Invalid Java object for schema type BOOLEAN: {type(value).__name__}")
        return value
    if kind == "string":
        if not isinstance(value, str):
            raise DataException(f"Invalid Java object for schema type STRING: {type(value).__name__}")
        return value
    if kind == "bytes":
        if not isinstance(value, bytes | bytearray | memoryview):
            raise DataException(f"Invalid Java object for schema type BYTES: {type(value).__name__}")
        return base64.b64encode(bytes(value)).decode()
    if kind == "array":
        return [value_to_json(schema.value_schema, v, decimal_numeric) for v in value]
    if kind == "map":
        assert schema.key_schema is not None
        if schema.key_schema.type == "string":
            return {k: value_to_json(schema.value_schema, v, decimal_numeric) for k, v in value.items()}
        return [[value_to_json(schema.key_schema, k, decimal_numeric), value_to_json(schema.value_schema, v,
                                                                                    decimal_numeric)]
                for k, v in value.items()]
    if not isinstance(value, Struct):
        raise DataException(f"Invalid Java object for schema type STRUCT: {type(value).__name__}")
    return {f.name: value_to_json(f.schema, value.get(f.name), decimal_numeric) for f in schema.fields}


def _infer_json(value: Any) -> Any:
    if isinstance(value, Struct):
        return value_to_json(value.schema, value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _infer_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_infer_json(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise DataException(f"Couldn't convert {value!r} to JSON.")


def value_from_json(schema: Schema | None, node: Any) -> Any:
    """Connect data from JSON (Kafka's convertToConnect), typed by `schema`, or inferred when it is None."""
    if schema is None:
        return node  # ints stay ints (Kafka's int64), objects maps, arrays lists
    if node is None:
        if schema.default is not None:
            return schema.default
        if schema.optional:
            return None
        raise DataException(f"Invalid null value for required {schema.type.upper()} field")
    if schema.name == DECIMAL:
        scale = _scale(schema)
        if isinstance(node, str):
            unscaled = int.from_bytes(base64.b64decode(node), "big", signed=True)
            return decimal.Decimal(unscaled).scaleb(-scale)
        if isinstance(node, int | float):
            return decimal.Decimal(str(node)).quantize(decimal.Decimal(1).scaleb(-scale))
    if schema.name == DATE and isinstance(node, int):
        return _EPOCH.date() + dt.timedelta(days=node)
    if schema.name == TIME and isinstance(node, int):
        return (dt.datetime.min + dt.timedelta(milliseconds=node)).time()
    if schema.name == TIMESTAMP and isinstance(node, int):
        return _EPOCH + dt.timedelta(milliseconds=node)
    kind = schema.type
    if kind in _INTS:
        if isinstance(node, bool) or not isinstance(node, int):
            raise DataException(f"Invalid JSON for {kind.upper()} value")
        return node
    if kind in ("float32", "float64"):
        if isinstance(node, bool) or not isinstance(node, int | float):
            raise DataException(f"Invalid JSON for {kind.upper()} value")
        return float(node)
    if kind == "boolean":
        if not isinstance(node, bool):
            raise DataException("Invalid JSON for BOOLEAN value")
        return node
    if kind == "string":
        if not isinstance(node, str):
            raise DataException("Invalid JSON for STRING value")
        return node
    if kind == "bytes":
        if not isinstance(node, str):
            raise DataException("Invalid JSON for BYTES value")
        try:
            return base64.b64decode(node, validate=True)
        except ValueError:
            raise DataException("Invalid bytes field") from None
    if kind == "array":
        if not isinstance(node, list):
            raise DataException("Array value's JSON does not contain an array")
        return [value_from_json(schema.value_schema, v) for v in node]
    if kind == "map":
        assert schema.key_schema is not None
        if schema.key_schema.type == "string":
            if not isinstance(node, dict):
                raise DataException("Maps with string fields should be encoded as JSON objects")
            return {k: value_from_json(schema.value_schema, v) for k, v in node.items()}
        if not isinstance(node, list) or any(not isinstance(e, list) or len(e) != 2 for e in node):
            raise DataException("Maps with non-string fields should be encoded as JSON array of tuples")
        return {value_from_json(schema.key_schema, k): value_from_json(schema.value_schema, v) for k, v in node}
    if not isinstance(node, dict):
        raise DataException("Structs should be encoded as JSON objects")
    return Struct(schema, {f.name: value_from_json(f.schema, node.get(f.name)) for f in schema.fields})


class JsonConverter:
    """See the module docstring. Keys: `schemas.enable`, `decimal.format`, `schemas.cache.size` (accepted),
    `replace.null.with.default`."""

    def __init__(self) -> None:
        self.schemas_enable = True
        self.decimal_numeric = False
        self.replace_null_with_default = True

    def configure(self, configs: Mapping[str, str], is_key: bool) -> None:
        self.schemas_enable = str(configs.get("schemas.enable", "true")).strip().lower() == "true"
        fmt = str(configs.get("decimal.format", "BASE64")).strip().upper()
        if fmt not in ("BASE64", "NUMERIC"):
            raise DataException(f"Invalid value {fmt} for configuration decimal.format: String must be one of: "
                                "BASE64, NUMERIC")
        self.decimal_numeric = fmt == "NUMERIC"
        self.replace_null_with_default = (
            str(configs.get("replace.null.with.default", "true")).strip().lower() == "true")

    def from_connect(self, topic: str, schema: Schema | None, value: Any) -> bytes | None:
        if schema is None and value is None:
            return None
        if not self.replace_null_with_default and value is None and schema is not None and schema.optional:
            payload: Any = None
        else:
            payload = value_to_json(schema, value, self.decimal_numeric)
        if not self.schemas_enable:
            return _dumps(payload)
        envelope = {"schema": None if schema is None else schema_to_json(schema, self.decimal_numeric),
                    "payload": payload}
        return _dumps(envelope)

    def to_connect(self, topic: str, data: bytes | None) -> tuple[Schema | None, Any]:
        if data is None:
            return None, None
        try:
            node = json.loads(data) if data else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise DataException(f"Converting byte[] to Kafka Connect data failed due to serialization error: "
                                f"{exc}") from None
        if not self.schemas_enable:
            return None, node
        if node is None:
            return None, None
        if not isinstance(node, dict) or set(node) != {"schema", "payload"}:
            raise DataException(ENVELOPE_ERROR)
        schema = None if node["schema"] is None else schema_from_json(node["schema"])
        return schema, value_from_json(schema, node["payload"])
