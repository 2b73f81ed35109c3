"""Kafka's single message transforms and predicates as a connector configures them (`transforms=...`), on
schemaless maps and on structs with schemas."""

from __future__ import annotations

import pytest

from odradek.connect.api import ConfigException, SinkRecord, SourceRecord
from odradek.connect.data import INT32_SCHEMA, STRING_SCHEMA, DataException, Schema, Struct, struct_schema
from odradek.connect.transforms import chain

USER = struct_schema("user", [("id", INT32_SCHEMA), ("name", STRING_SCHEMA),
                              ("address", struct_schema("address", [("city", STRING_SCHEMA)]))])


def user_record(topic: str = "users") -> SinkRecord:
    address = Struct(USER.fields[2].schema, {"city": "Oslo"})
    return SinkRecord(topic, 0, None, None, USER, Struct(USER, {"id": 7, "name": "ada", "address": address}),
                      1000, [], kafka_offset=42)


def map_record(value: object, topic: str = "users") -> SourceRecord:
    return SourceRecord(topic, None, None, None, None, value)


def run(config: dict[str, str], record: object) -> object:
    return chain(config)(record)  # type: ignore[arg-type]


def test_insert_field_on_a_struct_and_a_map() -> None:
    config = {"transforms": "ins", "transforms.ins.type": "org.apache.kafka.connect.transforms.InsertField$Value",
              "transforms.ins.topic.field": "t", "transforms.ins.offset.field": "o!", "transforms.ins.static.field": "s",
              "transforms.ins.static.value": "v"}
    out = run(config, user_record())
    assert [f.name for f in out.value_schema.fields] == ["id", "name", "address", "t", "o", "s"]
    assert out.value_schema.field("o").schema == Schema("int64", False)
    assert (out.value.get("t"), out.value.get("o"), out.value.get("s")) == ("users", 42, "v")
    del config["transforms.ins.offset.field"]
    assert run(config, map_record({"a": 1})).value == {"a": 1, "t": "users", "s": "v"}


def test_replace_mask_extract_hoist_and_value_to_key() -> None:
    replace = {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
               "transforms.r.exclude": "address", "transforms.r.renames": "name:full_name"}
    out = run(replace, user_record())
    assert [f.name for f in out.value_schema.fields] == ["id", "full_name"] and out.value.get("full_name") == "ada"
    mask = {"transforms": "m", "transforms.m.type": "org.apache.kafka.connect.transforms.MaskField$Value",
            "transforms.m.fields": "name,id"}
    assert run(mask, user_record()).value.values["name"] == "" and run(mask, map_record({"id": 5})).value == {"id": 0}
    extract = {"transforms": "e", "transforms.e.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
               "transforms.e.field": "name"}
    out = run(extract, user_record())
    assert (out.value_schema, out.value) == (STRING_SCHEMA, "ada")
    hoist = {"transforms": "h", "transforms.h.type": "org.apache.kafka.connect.transforms.HoistField$Key",
             "transforms.h.field": "k"}
    assert run(hoist, SourceRecord("t", None, None, "x", None, None)).key == {"k": "x"}
    to_key = {"transforms": "k", "transforms.k.type": "org.apache.kafka.connect.transforms.ValueToKey",
              "transforms.k.fields": "id"}
    out = run(to_key, user_record())
    assert [f.name for f in out.key_schema.fields] == ["id"] and out.key.get("id") == 7


def test_flatten_and_cast() -> None:
    flat = {"transforms": "f", "transforms.f.type": "org.apache.kafka.connect.transforms.Flatten$Value",
            "transforms.f.delimiter": "_"}
    out = run(flat, user_record())
    assert [f.name for f in out.value_schema.fields] == ["id", "name", "address_city"]
    assert run(flat, map_record({"a": {"b": {"c": 1}}, "d": 2})).value == {"a_b_c": 1, "d": 2}
    cast = {"transforms": "c", "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value",
            "transforms.c.spec": "id:string"}
    out = run(cast, user_record())
    assert out.value_schema.field("id").schema.type == "string" and out.value.get("id") == "7"
    whole = {"transforms": "c", "transforms.c.type": "org.apache.kafka.connect.transforms.Cast$Value",
             "transforms.c.spec": "int64"}
    assert run(whole, map_record("12")).value == 12


def test_routing_headers_filter_and_predicates() -> None:
    config = {"transforms": "route,hdr,drop", "predicates": "isTest,tomb",
              "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
              "transforms.route.regex": "(.*)-raw", "transforms.route.replacement": "$1-clean",
              "transforms.hdr.type": "org.apache.kafka.connect.transforms.InsertHeader",
              "transforms.hdr.header": "origin", "transforms.hdr.value.literal": "odradek",
              "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter",
              "transforms.drop.predicate": "tomb",
              "predicates.isTest.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
              "predicates.isTest.pattern": "test-.*",
              "predicates.tomb.type": "org.apache.kafka.connect.transforms.predicates.RecordIsTombstone"}
    out = run(config, map_record({"a": 1}, "orders-raw"))
    assert out.topic == "orders-clean" and out.headers == [("origin", Schema("string"), "odradek")]
    assert run(config, map_record(None, "orders-raw")) is None  # a tombstone is filtered
    config["transforms.drop.negate"] = "true"
    assert run(config, map_record(None, "x")) is not None and run(config, map_record({"a": 1}, "x")) is None
    drop = {"transforms": "d", "transforms.d.type": "org.apache.kafka.connect.transforms.DropHeaders",
            "transforms.d.headers": "origin"}
    assert run(drop, out).headers == []


def test_configuration_errors() -> None:
    with pytest.raises(ConfigException, match="could not be found"):
        chain({"transforms": "x", "transforms.x.type": "org.apache.kafka.connect.transforms.InsertField"})
    with pytest.raises(ConfigException, match='"transforms.x.type"'):
        chain({"transforms": "x"})
    with pytest.raises(ConfigException, match="Predicate not found"):
        chain({"transforms": "x", "transforms.x.type": "org.apache.kafka.connect.transforms.Filter",
               "transforms.x.predicate": "nope"})
    with pytest.raises(DataException, match="Only Map objects supported"):
        run({"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
             "transforms.r.exclude": "a"}, map_record("text"))
