"""`from_avro`: decode an Avro binary column (Kafka's `value` or `key`) into a Spark column, in Spark's
executors, with the interface of Spark's and Databricks' `from_avro`:

    from odradek.spark import from_avro
    df.select(from_avro("value", options={"mode": "PERMISSIVE"}, subject="orders-value",
                        schemaRegistryAddress="http://127.0.0.1:8081").alias("order"))

With `schemaRegistryAddress` the bytes are in Confluent's wire format (magic byte, schema id, Avro): each
record is decoded with its writer's schema, fetched by id (once per id and Python worker), resolved into the
reader schema, which is `jsonFormatSchema` or else the latest version of `subject`, read on the driver when
the column is built (so the column's type is known before the query runs). Without it, the bytes are plain
Avro of `jsonFormatSchema` (Spark's own from_avro).

Types as Spark's SchemaConverters map them: record -> struct, array, map (string keys), enum -> string,
fixed and bytes -> binary, a union with null -> the other branch (nullable), int+long -> long, float+double
-> double, other unions -> struct<member0, member1, ...>; logical types date, timestamp-millis/-micros,
local-timestamp-*, decimal; uuid -> string, time-* -> their int/long.

`options["mode"]`: FAILFAST (default) fails the task on a record it cannot decode, with the reason;
PERMISSIVE gives null for it. A registry that cannot be reached always fails the task (it says nothing about
the record). The Kafka row's offset is not visible to a column function: to find a bad record, read with
PERMISSIVE and select the rows whose result is null while their value is not.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from odradek.serde.avro import AvroDeserializer, DecodeError, parse_schema, schema_text
from odradek.serde.registry_client import RegistryClient

FAILFAST = "FAILFAST"
PERMISSIVE = "PERMISSIVE"
USER_INFO_OPTIONS = ("confluent.schema.registry.basic.auth.user.info", "basic.auth.user.info")
_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(), "boolean": BooleanType(), "int": IntegerType(), "long": LongType(), "float": FloatType(),
    "double": DoubleType(), "bytes": BinaryType(), "string": StringType(),
}
_LOGICAL: dict[str, DataType] = {
    "date": DateType(), "timestamp-millis": TimestampType(), "timestamp-micros": TimestampType(),
    "local-timestamp-millis": TimestampNTZType(), "local-timestamp-micros": TimestampNTZType(),
    "uuid": StringType(),
}

Convert = Callable[[Any], Any]


class _Types:
    """Spark types and value converters of one parsed Avro schema (named types resolved by full name)."""

    def __init__(self, schema: Any) -> None:
        self.named: dict[str, Any] = {}
        self._collect(schema, "")
        self._visiting: set[str] = set()

    def _collect(self, s: Any, namespace: str) -> None:
        if isinstance(s, list):
            for branch in s:
                self._collect(branch, namespace)
        elif isinstance(s, dict):
            if s.get("type") in ("record", "error", "enum", "fixed") and "name" in s:
                name = s["name"] if "." in s["name"] else ".".join(p for p in (s.get("namespace", namespace), s["name"]) if p)
                self.named.setdefault(name, s)
                namespace = name.rpartition(".")[0]
            for f in s.get("fields", ()):
                self._collect(f["type"], namespace)
            for key in ("items", "values"):
                if key in s:
                    self._collect(s[key], namespace)

    def _resolve(self, s: Any) -> Any:
        if isinstance(s, str) and s not in _PRIMITIVES:
            if s not in self.named:
                raise ValueError(f"Avro type {s!r} is not defined in the schema")
            return self.named[s]
        return s

    def spark_type(self, s: Any) -> DataType:
        s = self._resolve(s)
        if isinstance(s, str):
            return _PRIMITIVES[s]
        if isinstance(s, list):
            return self._union_type(s)
        kind, logical = s["type"], s.get("logicalType")
        if isinstance(kind, (dict, list)) or (isinstance(kind, str) and kind not in _PRIMITIVES and kind not in
                                               ("record", "error", "enum", "fixed", "array", "map")):
            return self.spark_type(kind)  # {"type": {...}} or {"type": "SomeName"}
        if logical == "decimal" and kind in ("bytes", "fixed"):
            return DecimalType(int(s["precision"]), int(s.get("scale", 0)))
        if logical in _LOGICAL and kind in ("int", "long", "string"):
            return _LOGICAL[logical]
        if kind in _PRIMITIVES:
            return _PRIMITIVES[kind]
        if kind == "enum":
            return StringType()
        if kind == "fixed":
            return BinaryType()
        if kind == "array":
            return ArrayType(self.spark_type(s["items"]), True)
        if kind == "map":
            return MapType(StringType(), self.spark_type(s["values"]), True)
        name = s.get("name", "")
        if name in self._visiting:
            raise ValueError(f"Avro type {name!r} is recursive: Spark has no type for it")
        self._visiting.add(name)
        try:
            return StructType([StructField(f["name"], self.spark_type(f["type"]), True) for f in s["fields"]])
        finally:
            self._visiting.discard(name)

    def _union_type(self, branches: list[Any]) -> DataType:
        others = [b for b in branches if self._resolve(b) != "null"]
        if not others:
            return NullType()
        if len(others) == 1:
            return self.spark_type(others[0])
        types = [self.spark_type(b) for b in others]
        if all(isinstance(t, (IntegerType, LongType)) for t in types):
            return LongType()
        if all(isinstance(t, (FloatType, DoubleType)) for t in types):
            return DoubleType()
        return StructType([StructField(f"member{i}", t, True) for i, t in enumerate(types)])

    def converter(self, s: Any) -> Convert:
        """fastavro's decoded value -> what pyarrow takes for the Spark type's Arrow type."""
        s = self._resolve(s)
        if isinstance(s, list):
            return self._union_converter(s)
        if isinstance(s, str):
            return _same
        kind, logical = s["type"], s.get("logicalType")
        if isinstance(kind, (dict, list)) or (kind not in _PRIMITIVES and kind not in
                                              ("record", "error", "enum", "fixed", "array", "map")):
            return self.converter(kind)
        if logical == "uuid":
            return lambda v: None if v is None else str(v)
        if logical in ("time-millis", "time-micros"):
            scale = 1000 if logical == "time-millis" else 1_000_000
            return lambda v: None if v is None else (
                ((v.hour * 60 + v.minute) * 60 + v.second) * scale + v.microsecond * scale // 1_000_000
                if isinstance(v, dt.time) else v)
        if kind == "array":
            item = self.converter(s["items"])
            return lambda v: None if v is None else [item(x) for x in v]
        if kind == "map":
            value = self.converter(s["values"])
            return lambda v: None if v is None else [(k, value(x)) for k, x in v.items()]
        if kind in ("record", "error"):
            name = s.get("name", "")
            if name in self._visiting:
                raise ValueError(f"Avro type {name!r} is recursive: Spark has no type for it")
            self._visiting.add(name)
            try:
                fields = [(f["name"], self.converter(f["type"])) for f in s["fields"]]
            finally:
                self._visiting.discard(name)
            return lambda v: None if v is None else {n: c(v.get(n)) for n, c in fields}
        return _same

    def _union_converter(self, branches: list[Any]) -> Convert:
        others = [b for b in branches if self._resolve(b) != "null"]
        if len(others) == 1:
            return self.converter(others[0])
        t = self._union_type(branches)
        if not isinstance(t, StructType):
            return _same
        members = [(f"member{i}", self._resolve(b), self.converter(b)) for i, b in enumerate(others)]

        def convert(v: Any) -> Any:
            if v is None:
                return None
            for name, branch, conv in members:
                if _matches(v, branch):
                    return {m: (conv(v) if m == name else None) for m, _, _ in members}
            return None

        return convert


def _same(v: Any) -> Any:
    return v


_PY_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,), "int": (int,), "long": (int,), "float": (float,), "double": (float,),
    "bytes": (bytes,), "string": (str,), "enum": (str,), "fixed": (bytes,), "array": (list,), "map": (dict,),
}
_PY_LOGICAL: dict[str, tuple[type, ...]] = {
    "date": (dt.date,), "timestamp-millis": (dt.datetime,), "timestamp-micros": (dt.datetime,),
    "local-timestamp-millis": (dt.datetime,), "local-timestamp-micros": (dt.datetime,),
    "decimal": (decimal.Decimal,), "uuid": (uuid.UUID, str), "time-millis": (dt.time,), "time-micros": (dt.time,),
}


def _matches(v: Any, branch: Any) -> bool:
    """Which branch of a union fastavro decoded (it returns the value alone)."""
    if isinstance(branch, str):
        return isinstance(v, _PY_TYPES.get(branch, ())) and not (branch != "boolean" and isinstance(v, bool))
    kind, logical = branch.get("type"), branch.get("logicalType")
    if logical in _PY_LOGICAL:
        return isinstance(v, _PY_LOGICAL[logical])
    if kind in ("record", "error"):
        return isinstance(v, dict) and set(v) == {f["name"] for f in branch["fields"]}
    if kind == "enum":
        return isinstance(v, str) and v in branch.get("symbols", ())
    return isinstance(kind, str) and _matches(v, kind)


def spark_type_of(schema: Any) -> DataType:
    """The Spark type `from_avro` gives for an Avro schema (JSON text, or the JSON as dicts and lists)."""
    parsed = parse_schema(schema_text(schema))
    return _Types(parsed).spark_type(parsed)


def _mode(options: Mapping[str, str]) -> str:
    mode = str(options.get("mode", FAILFAST)).strip().upper()
    if mode not in (FAILFAST, PERMISSIVE):
        raise ValueError(f"from_avro option 'mode': {mode!r} is not FAILFAST or PERMISSIVE")
    return mode


def from_avro(data: Column | str, jsonFormatSchema: str | None = None,  # noqa: N803 - Spark's names
              options: Mapping[str, str] | None = None, *, subject: str | None = None,
              schemaRegistryAddress: str | None = None) -> Column:  # noqa: N803
    """The decoded column of Avro binary `data` (see the module's docstring)."""
    from pyspark.sql.pandas.types import to_arrow_type

    opts = {str(k): str(v) for k, v in (options or {}).items()}
    mode = _mode(opts)
    client = None
    if schemaRegistryAddress:
        user_info = next((opts[k] for k in USER_INFO_OPTIONS if k in opts), None)
        client = RegistryClient(schemaRegistryAddress, user_info=user_info)
        if jsonFormatSchema is None:
            if not subject:
                raise ValueError("from_avro: give the subject (e.g. '<topic>-value') or jsonFormatSchema "
                                 "to read with the schema registry")
            latest = client.latest(subject)
            if latest.schema_type != "AVRO":
                raise ValueError(f"from_avro: the latest schema of subject {subject!r} (id {latest.schema_id}) is "
                                 f"{latest.schema_type}, not Avro")
            jsonFormatSchema = latest.text
    elif jsonFormatSchema is None:
        raise ValueError("from_avro: give jsonFormatSchema, or schemaRegistryAddress and subject")
    reader_text = schema_text(jsonFormatSchema)
    parsed = parse_schema(reader_text)
    types = _Types(parsed)
    spark_type = types.spark_type(parsed)
    arrow_type = to_arrow_type(spark_type, timezone="UTC")
    convert = types.converter(parsed)
    decoder = AvroDeserializer(client, reader_text) if client is not None else None

    def decode(raw: bytes) -> Any:
        if decoder is not None:
            return decoder.decode(raw)
        import io

        import fastavro

        try:
            return fastavro.schemaless_reader(io.BytesIO(raw), parse_schema(reader_text), None)
        except Exception as exc:
            raise DecodeError(f"{len(raw)} bytes do not decode with the given schema: {type(exc).__name__}: {exc}") from None

    def decode_all(values: pa.Array) -> pa.Array:
        out: list[Any] = []
        for raw in values.to_pylist():
            if raw is None:
                out.append(None)
                continue
            try:
                out.append(convert(decode(raw)))
            except DecodeError as exc:
                if mode == PERMISSIVE:
                    out.append(None)
                    continue
                raise DecodeError(f"Malformed Avro record: {exc}. Parse mode: FAILFAST; to turn malformed "
                                  "records into nulls, set the from_avro option 'mode' to 'PERMISSIVE'") from None
        return pa.array(out, type=arrow_type)

    column = F.col(data) if isinstance(data, str) else data
    # the scalar kind is told by decode_all's type hints (pyarrow Array -> Array), as Spark prefers
    return F.arrow_udf(decode_all, spark_type)(column)  # type: ignore[call-overload]
