"""The fixed row shape of the `odradek` source (Spark's Kafka source schema) and the sink's column rules."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

HEADER_TYPE = StructType([StructField("key", StringType()), StructField("value", BinaryType())])

_ARROW_HEADER = pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())])


def source_schema(include_headers: bool = False) -> StructType:
    """key binary, value binary, topic string, partition int, offset long, timestamp timestamp,
    timestampType int, and headers array<struct<key string, value binary>> when asked for."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        fields.append(StructField("headers", ArrayType(HEADER_TYPE)))
    return StructType(fields)


def arrow_schema(include_headers: bool = False) -> pa.Schema:
    """The Arrow schema Spark expects for batches of `source_schema` (timestamps in microseconds, UTC)."""
    fields = [
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")),
        pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", pa.list_(pa.field("element", _ARROW_HEADER))))
    return pa.schema(fields)


def check_user_schema(user: StructType | None, include_headers: bool) -> None:
    """Spark's Kafka source has a fixed schema; a different user-specified one is an error."""
    if user is None:
        return
    expected = source_schema(include_headers)
    if [(f.name, f.dataType) for f in user.fields] != [(f.name, f.dataType) for f in expected.fields]:
        raise ValueError(f"The odradek source has a fixed schema and cannot be set with a custom one: "
                         f"expected {expected.simpleString()}, got {user.simpleString()}")


def _is(t: DataType, *types: type) -> bool:
    return isinstance(t, types)


def check_sink_schema(schema: StructType, topic_option: str | None) -> None:
    """Columns of a DataFrame written to Kafka: value (string or binary) required; key (string or binary),
    topic (string; required unless the 'topic' option is set), partition (int), headers
    (array<struct<key string, value binary>>) optional; other columns are ignored."""
    cols = {f.name: f.dataType for f in schema.fields}
    if "value" not in cols:
        raise ValueError("Required attribute 'value' not found")
    if not _is(cols["value"], StringType, BinaryType):
        raise ValueError(f"value attribute type must be a string or binary, got {cols['value'].simpleString()}")
    if "key" in cols and not _is(cols["key"], StringType, BinaryType):
        raise ValueError(f"key attribute type must be a string or binary, got {cols['key'].simpleString()}")
    if "topic" in cols:
        if not _is(cols["topic"], StringType):
            raise ValueError(f"topic attribute type must be a string, got {cols['topic'].simpleString()}")
    elif topic_option is None:
        raise ValueError("topic option required when no 'topic' attribute is present. "
                         "Use the topic option for setting a topic.")
    if "partition" in cols and not _is(cols["partition"], IntegerType):
        raise ValueError(f"partition attribute type must be an int, got {cols['partition'].simpleString()}")
    if "headers" in cols:
        h = cols["headers"]
        ok = (_is(h, ArrayType) and _is(h.elementType, StructType)  # type: ignore[attr-defined]
              and [(f.name, type(f.dataType)) for f in h.elementType.fields]  # type: ignore[attr-defined]
              == [("key", StringType), ("value", BinaryType)])
        if not ok:
            raise ValueError("headers attribute type must be array<struct<key:string,value:binary>>, "
                             f"got {h.simpleString()}")
