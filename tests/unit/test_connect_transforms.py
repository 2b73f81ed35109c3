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


TC = "org.apache.kafka.connect.transforms.TimestampConverter$Value"


def test_timestamp_converter_between_unix_strings_and_logical_types() -> None:
    import datetime as dt

    from odradek.connect.data import DATE, TIMESTAMP
    to_string = {"transforms": "t", "transforms.t.type": TC, "transforms.t.field": "at",
                 "transforms.t.target.type": "string", "transforms.t.format": "yyyy-MM-dd'T'HH:mm:ss.SSSXXX"}
    assert run(to_string, map_record({"at": 1_700_000_000_123, "x": 1})).value == {
        "at": "2023-11-14T22:13:20.123Z", "x": 1}
    to_unix = {"transforms": "t", "transforms.t.type": TC, "transforms.t.field": "at",
               "transforms.t.target.type": "unix", "transforms.t.format": "dd/MMM/yyyy HH:mm:ss Z",
               "transforms.t.unix.precision": "seconds"}
    assert run(to_unix, map_record({"at": "14/Nov/2023 23:13:20 +0100"})).value == {"at": 1_700_000_000}
    stamp = struct_schema("event", [("id", INT32_SCHEMA), ("at", Schema("int64"))])
    to_date = {"transforms": "t", "transforms.t.type": TC, "transforms.t.field": "at",
               "transforms.t.target.type": "Date"}
    out = run(to_date, SinkRecord("e", 0, None, None, stamp, Struct(stamp, {"id": 1, "at": 1_700_000_000_123}), 0, []))
    assert out.value_schema.field("at").schema == Schema("int32", False, DATE, 1)
    assert out.value.get("at") == dt.date(2023, 11, 14) and out.value.get("id") == 1
    tombstone = run(to_date, SinkRecord("e", 0, None, None, stamp, None, 0, []))
    assert tombstone.value is None and tombstone.value_schema.field("at").schema.name == DATE
    whole = {"transforms": "t", "transforms.t.type": "org.apache.kafka.connect.transforms.TimestampConverter$Key",
             "transforms.t.target.type": "Timestamp", "transforms.t.unix.precision": "microseconds"}
    out = run(whole, SourceRecord("t", None, Schema("int64"), 1_700_000_000_123_456, None, None))
    assert out.key_schema == Schema("int64", False, TIMESTAMP, 1)
    assert out.key == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)
    with pytest.raises(DataException, match=r"Could not parse timestamp: value \(nope\)"):
        run(to_unix, map_record({"at": "nope"}))
    with pytest.raises(ConfigException, match="requires format option"):
        chain({"transforms": "t", "transforms.t.type": TC, "transforms.t.target.type": "string"})
    with pytest.raises(ConfigException, match="String must be one of"):
        chain({"transforms": "t", "transforms.t.type": TC, "transforms.t.target.type": "epoch"})
    with pytest.raises(ConfigException, match="SimpleDateFormat-compatible pattern"):
        chain({"transforms": "t", "transforms.t.type": TC, "transforms.t.target.type": "string",
               "transforms.t.format": "yyyy-bb"})


def test_date_format_round_trips_common_patterns() -> None:
    from odradek.connect.date_format import DateFormat
    millis = 1_700_000_000_123
    for pattern in ("yyyyMMdd", "yyyy-MM-dd HH:mm:ss.SSS", "EEE, d MMM yyyy hh:mm:ss a z", "yyyy-DDD'T'HHmmssSSSZ",
                    "yy-M-d k:m:s.S X"):
        fmt = DateFormat(pattern)
        text = fmt.format(millis)
        expect = millis if "S" in pattern else millis - millis % (1000 if "s" in pattern else 86_400_000)
        assert fmt.parse(text) == expect, (pattern, text)
    assert DateFormat("EEE, d MMM yyyy hh:mm:ss a").format(millis) == "Tue, 14 Nov 2023 10:13:20 PM"
    assert DateFormat("'at' HH 'o''clock'").format(millis) == "at 22 o'clock"


def test_timestamp_router_and_header_from() -> None:
    router = {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.TimestampRouter",
              "transforms.r.topic.format": "${topic}_${timestamp}", "transforms.r.timestamp.format": "yyyy-MM"}
    record = SourceRecord("logs", None, None, None, None, {"a": 1}, timestamp=1_700_000_000_000)
    assert run(router, record).topic == "logs_2023-11"
    default = {"transforms": "r", "transforms.r.type": "org.apache.kafka.connect.transforms.TimestampRouter"}
    assert run(default, record).topic == "logs-20231114"
    with pytest.raises(DataException, match="Timestamp missing on record"):
        run(default, map_record({"a": 1}))
    move = {"transforms": "h", "transforms.h.type": "org.apache.kafka.connect.transforms.HeaderFrom$Value",
            "transforms.h.fields": "id,name", "transforms.h.headers": "h_id,h_name", "transforms.h.operation": "move"}
    out = run(move, user_record())
    assert [f.name for f in out.value_schema.fields] == ["address"]
    assert out.headers == [("h_id", INT32_SCHEMA, 7), ("h_name", STRING_SCHEMA, "ada")]
    copy = {**move, "transforms.h.operation": "copy"}
    out = run(copy, map_record({"id": 3, "name": "x", "z": 0}))
    assert out.value == {"id": 3, "name": "x", "z": 0} and out.headers == [("h_id", None, 3), ("h_name", None, "x")]
    with pytest.raises(ConfigException, match="same number of elements"):
        chain({**move, "transforms.h.headers": "only_one"})
    with pytest.raises(ConfigException, match="String must be one of: move, copy"):
        chain({**move, "transforms.h.operation": "swap"})
