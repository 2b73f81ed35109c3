"""Kafka's JsonConverter formats (connect-json): the envelope and schema JSON Kafka writes, byte for byte,
and back; schemaless JSON; logical types; the errors Kafka gives."""

from __future__ import annotations

import datetime as dt
import decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from odradek.connect.data import (
    DATE,
    DECIMAL,
    INT32_SCHEMA,
    STRING_SCHEMA,
    TIMESTAMP,
    DataException,
    Schema,
    Struct,
    struct_schema,
)
from odradek.connect.json_converter import ENVELOPE_ERROR, JsonConverter


def converter(**configs: str) -> JsonConverter:
    c = JsonConverter()
    c.configure(configs, False)
    return c


def test_a_string_in_kafkas_envelope() -> None:
    assert converter().from_connect("t", STRING_SCHEMA, "foo") == (
        b'{"schema":{"type":"string","optional":false},"payload":"foo"}')
    assert converter(**{"schemas.enable": "false"}).from_connect("t", STRING_SCHEMA, "foo") == b'"foo"'


def test_a_struct_schema_as_kafka_writes_it() -> None:
    schema = struct_schema("com.example.User", [("id", INT32_SCHEMA), ("name", Schema("string", True))])
    value = Struct(schema, {"id": 7, "name": None})
    assert converter().from_connect("t", schema, value) == (
        b'{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"},'
        b'{"type":"string","optional":true,"field":"name"}],"optional":false,"name":"com.example.User"},'
        b'"payload":{"id":7,"name":null}}')
    back_schema, back = converter().to_connect("t", converter().from_connect("t", schema, value))
    assert back_schema == schema and back == value


def test_maps_arrays_bytes_and_logical_types() -> None:
    schema = struct_schema(None, [
        ("tags", Schema("array", value_schema=STRING_SCHEMA)),
        ("counts", Schema("map", key_schema=INT32_SCHEMA, value_schema=INT32_SCHEMA)),
        ("raw", Schema("bytes")),
        ("price", Schema("bytes", name=DECIMAL, version=1, parameters=(("scale", "2"),))),
        ("day", Schema("int32", name=DATE, version=1)),
        ("at", Schema("int64", name=TIMESTAMP, version=1)),
    ])
    value = Struct(schema, {"tags": ["a"], "counts": {1: 2}, "raw": b"\x00\xff", "price": decimal.Decimal("-1.05"),
                            "day": dt.date(1970, 1, 11), "at": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)})
    data = converter(**{"schemas.enable": "false"}).from_connect("t", schema, value)
    assert data == b'{"tags":["a"],"counts":[[1,2]],"raw":"AP8=","price":"lw==","day":10,"at":1000}'
    assert converter().to_connect("t", converter().from_connect("t", schema, value)) == (schema, value)
    assert converter(**{"decimal.format": "NUMERIC"}).from_connect("t", schema.fields[3].schema,
                                                                   decimal.Decimal("-1.05")).endswith(b'"payload":-1.05}')


def test_nulls_and_defaults() -> None:
    assert converter().from_connect("t", None, None) is None
    assert converter().to_connect("t", None) == (None, None)
    with pytest.raises(DataException, match="null value for field that is required"):
        converter().from_connect("t", STRING_SCHEMA, None)
    defaulted = Schema("string", True, default="x")
    assert converter().from_connect("t", defaulted, None).endswith(b'"payload":"x"}')


def test_reading_plain_json_with_schemas_enabled_is_kafkas_error() -> None:
    with pytest.raises(DataException) as info:
        converter().to_connect("t", b'{"a":1}')
    assert str(info.value) == ENVELOPE_ERROR
    assert converter(**{"schemas.enable": "false"}).to_connect("t", b'{"a":[1,2.5,"x",null]}') == (
        None, {"a": [1, 2.5, "x", None]})
    with pytest.raises(DataException, match="Converting byte\\[\\] to Kafka Connect data failed"):
        converter().to_connect("t", b"{not json")


def test_a_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(DataException, match="Invalid Java object for schema type INT32"):
        converter().from_connect("t", INT32_SCHEMA, "7")


@given(st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
                    max_leaves=10))
def test_schemaless_json_round_trips(value: object) -> None:
    c = converter(**{"schemas.enable": "false"})
    assert c.to_connect("t", c.from_connect("t", None, value)) == (None, value)
