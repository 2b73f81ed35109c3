"""Avro schemas: the compatibility matrix at Confluent's seven levels (Avro's schema-resolution rules),
invalid schemas, canonical and normalized identity, references, hostile inputs."""

from __future__ import annotations

import json
import time

import pytest

from odradek.schema_registry.schemas import SchemaError, check_compatibility, parse
from tests.unit.schema_registry.levels import assert_levels


def rec(*fields: object, name: str = "R", **extra: object) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields), **extra})


def f(name: str, type_: object, **extra: object) -> dict[str, object]:
    return {"name": name, "type": type_, **extra}


def enum(*symbols: str, **extra: object) -> dict[str, object]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **extra}


INNER_A = {"type": "record", "name": "In", "fields": [f("a", "int")]}
INNER_AB = {"type": "record", "name": "In", "fields": [f("a", "int"), f("b", "string", default="")]}
INNER_AB_NODEFAULT = {"type": "record", "name": "In", "fields": [f("a", "int"), f("b", "string")]}

# (case, old, new, backward: new reads old's data, forward: old reads new's data)
MATRIX = [
    ("same", rec(f("a", "int")), rec(f("a", "int")), True, True),
    ("add field with default", rec(f("a", "int")), rec(f("a", "int"), f("b", "string", default="x")), True, True),
    ("add field without default", rec(f("a", "int")), rec(f("a", "int"), f("b", "string")), False, True),
    ("remove field with default", rec(f("a", "int"), f("b", "int", default=0)), rec(f("a", "int")), True, True),
    ("remove field without default", rec(f("a", "int"), f("b", "int")), rec(f("a", "int")), True, False),
    ("int to long", rec(f("a", "int")), rec(f("a", "long")), True, False),
    ("int to float", rec(f("a", "int")), rec(f("a", "float")), True, False),
    ("long to double", rec(f("a", "long")), rec(f("a", "double")), True, False),
    ("float to double", rec(f("a", "float")), rec(f("a", "double")), True, False),
    ("double to int", rec(f("a", "double")), rec(f("a", "int")), False, True),
    ("string to bytes", rec(f("a", "string")), rec(f("a", "bytes")), True, True),
    ("string to int", rec(f("a", "string")), rec(f("a", "int")), False, False),
    ("logical type only", rec(f("a", "int")), rec(f("a", {"type": "int", "logicalType": "date"})), True, True),
    ("enum symbol added", rec(f("e", enum("A", "B"))), rec(f("e", enum("A", "B", "C"))), True, False),
    ("enum symbol removed", rec(f("e", enum("A", "B"))), rec(f("e", enum("A"))), False, True),
    ("enum symbol removed, reader default", rec(f("e", enum("A", "B", default="A"))),
     rec(f("e", enum("A", default="A"))), True, True),
    ("enum renamed", rec(f("e", enum("A"))), rec(f("e", {**enum("A"), "name": "F"})), False, False),
    ("union grows", rec(f("a", ["null", "int"])), rec(f("a", ["null", "int", "string"])), True, False),
    ("union shrinks", rec(f("a", ["null", "int", "string"])), rec(f("a", ["null", "int"])), False, True),
    ("type to union with it", rec(f("a", "int")), rec(f("a", ["null", "int"])), True, False),
    ("union with promotion", rec(f("a", ["null", "int"])), rec(f("a", ["null", "long"])), True, False),
    ("record renamed", rec(f("a", "int")), rec(f("a", "int"), name="S"), False, False),
    ("record renamed with alias", rec(f("a", "int")), rec(f("a", "int"), name="S", aliases=["R"]), True, False),
    ("namespace changed", rec(f("a", "int"), namespace="x"), rec(f("a", "int"), namespace="y"), True, True),
    ("field renamed with alias", rec(f("a", "int")), rec(f("b", "int", aliases=["a"])), True, False),
    ("nested field added with default", rec(f("in", INNER_A)), rec(f("in", INNER_AB)), True, True),
    ("nested field added without default", rec(f("in", INNER_A)), rec(f("in", INNER_AB_NODEFAULT)), False, True),
    ("array items promoted", rec(f("a", {"type": "array", "items": "int"})),
     rec(f("a", {"type": "array", "items": "long"})), True, False),
    ("array to map", rec(f("a", {"type": "array", "items": "int"})),
     rec(f("a", {"type": "map", "values": "int"})), False, False),
    ("map values narrowed", rec(f("a", {"type": "map", "values": "double"})),
     rec(f("a", {"type": "map", "values": "float"})), False, True),
    ("fixed size changed", rec(f("a", {"type": "fixed", "name": "F", "size": 4})),
     rec(f("a", {"type": "fixed", "name": "F", "size": 8})), False, False),
    ("fixed same", rec(f("a", {"type": "fixed", "name": "F", "size": 4})),
     rec(f("a", {"type": "fixed", "name": "F", "size": 4, "doc": "d"})), True, True),
    ("primitive schemas", '"int"', '"long"', True, False),
    ("recursive record", rec(f("next", ["null", "R"])), rec(f("next", ["null", "R"]), f("v", "int", default=1)),
     True, True),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [c[1:] for c in MATRIX], ids=[c[0] for c in MATRIX])
def test_compatibility_matrix(old: str, new: str, backward: bool, forward: bool) -> None:
    assert_levels(parse("AVRO", old), parse("AVRO", new), backward, forward)


def test_messages_say_what_and_where() -> None:
    [message] = check_compatibility("BACKWARD", parse("AVRO", rec(f("a", "int"), f("b", "string"))),
                                    [parse("AVRO", rec(f("a", "int")))])
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in message and "'b'" in message and "/fields/1" in message
    [message] = check_compatibility("FORWARD", parse("AVRO", rec(f("a", "long"))), [parse("AVRO", rec(f("a", "int")))])
    assert "TYPE_MISMATCH" in message and "INT" in message and "LONG" in message


V1 = rec(f("a", "int"))

# (case, three versions, the verdict at BACKWARD, B_TRANSITIVE, FORWARD, F_TRANSITIVE, FULL, FULL_TRANSITIVE)
HISTORIES = [
    ("backward breaks only against the oldest",
     [rec(f("a", "int")), rec(f("a", "int"), f("b", "int", default=0)), rec(f("a", "int"), f("b", "int"))],
     (True, False, True, True, True, False)),
    ("forward breaks only against the oldest",
     [rec(f("a", "int"), f("b", "int")), rec(f("a", "int"), f("b", "int", default=0)), rec(f("a", "int"))],
     (True, True, True, False, True, False)),
    ("compatible all along",
     [rec(f("a", "int")), rec(f("a", "int"), f("b", "int", default=0)),
      rec(f("a", "int"), f("b", "int", default=0), f("c", "int", default=0))],
     (True, True, True, True, True, True)),
]
LEVEL_ORDER = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")


@pytest.mark.parametrize(("versions", "verdicts"), [c[1:] for c in HISTORIES], ids=[c[0] for c in HISTORIES])
def test_transitive_levels_over_three_versions(versions: list[str], verdicts: tuple[bool, ...]) -> None:
    *history, new = [parse("AVRO", v) for v in versions]
    for level, ok in zip(LEVEL_ORDER, verdicts, strict=True):
        assert (check_compatibility(level, new, history) == []) == ok, level
    assert check_compatibility("NONE", new, history) == []


INVALID = [
    ("not json", "{"),
    ("empty", ""),
    ("unknown type", '"integer"'),
    ("unknown named type", rec(f("a", "Missing"))),
    ("record without fields", '{"type": "record", "name": "R"}'),
    ("record without name", '{"type": "record", "fields": []}'),
    ("bad name", rec(f("a", "int"), name="1R")),
    ("duplicate field", rec(f("a", "int"), f("a", "long"))),
    ("bad field name", rec(f("a-b", "int"))),
    ("default of wrong type", rec(f("a", "int", default="x"))),
    ("default of wrong item type", rec(f("a", {"type": "array", "items": "int"}, default=[1, "x"]))),
    ("int default out of range", rec(f("a", "int", default=1 << 31))),
    ("record default missing a field", rec(f("in", INNER_A, default={}))),
    ("union default fits no branch", rec(f("a", ["null", "int"], default="x"))),
    ("enum duplicate symbol", rec(f("e", enum("A", "A")))),
    ("enum default not a symbol", rec(f("e", enum("A", default="B")))),
    ("fixed without size", rec(f("x", {"type": "fixed", "name": "F"}))),
    ("fixed size negative", rec(f("x", {"type": "fixed", "name": "F", "size": -1}))),
    ("union twice int", '["int", "int"]'),
    ("nested union", '["int", ["null", "string"]]'),
    ("array without items", '{"type": "array"}'),
    ("type redefined", rec(f("a", INNER_A), f("b", INNER_A))),
    ("number", "3"),
    ("NaN", rec(f("a", "double", default=0)).replace("0", "NaN")),
]


@pytest.mark.parametrize("text", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(SchemaError) as e:
        parse("AVRO", text)
    assert str(e.value)


def test_defaults_that_fit() -> None:
    parse("AVRO", rec(f("a", ["null", "int"], default=1), f("b", ["null", "int"], default=None),
                      f("in", INNER_AB, default={"a": 1}), f("m", {"type": "map", "values": "long"}, default={"x": 2}),
                      f("d", "double", default=1), f("e", enum("A", "B"), default="B"),
                      f("next", ["null", "R"], default=None)))


def test_canonical_ignores_whitespace_and_attribute_order() -> None:
    a = parse("AVRO", '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":1}]}')
    b = parse("AVRO", '{ "fields" : [ { "default": 1, "type" : {"type": "int"}, "name": "a" } ],\n "name": "R",'
                      ' "type": "record" }')
    assert a.canonical() == b.canonical() == \
        '{"type":"record","name":"R","fields":[{"name":"a","type":"int","default":1}]}'
    assert a.normalized() == b.normalized()


def test_normalized_uses_full_names_and_drops_docs() -> None:
    a = parse("AVRO", rec(f("in", INNER_A), f("again", "In"), namespace="ns", doc="a record"))
    b = parse("AVRO", rec(f("in", {**INNER_A, "name": "ns.In"}), f("again", "ns.In"), name="ns.R"))
    assert a.canonical() != b.canonical()
    assert a.normalized() == b.normalized()
    assert '"name":"ns.R"' in a.normalized() and '"type":"ns.In"' in a.normalized()
    assert a.defined_names == ("ns.R", "ns.In")  # type: ignore[attr-defined]
    # defaults are part of the normalized form: they change what resolution does
    assert parse("AVRO", rec(f("a", "int", default=1))).normalized() != parse("AVRO", rec(f("a", "int"))).normalized()


ADDRESS = json.dumps({"type": "record", "name": "Address", "namespace": "acme",
                      "fields": [f("street", "string"), f("country", "acme.Country")]})
COUNTRY = json.dumps({"type": "enum", "name": "Country", "namespace": "acme", "symbols": ["FR", "DE"]})


def test_references_in_any_order() -> None:
    text = rec(f("home", "acme.Address"), f("born", "acme.Country"))
    schema = parse("AVRO", text, {"acme.Address": ADDRESS, "acme.Country": COUNTRY})
    assert '"acme.Address"' in schema.normalized()
    with pytest.raises(SchemaError, match="unknown type"):
        parse("AVRO", text, {"acme.Country": COUNTRY})
    with pytest.raises(SchemaError):
        parse("AVRO", text, {"acme.Address": ADDRESS})
    with pytest.raises(SchemaError, match="referenced schema"):
        parse("AVRO", text, {"acme.Address": ADDRESS, "acme.Country": "{oops"})


def test_compatibility_through_references() -> None:
    country2 = json.dumps({"type": "enum", "name": "Country", "namespace": "acme", "symbols": ["FR"]})
    text = rec(f("born", "acme.Country"))
    old = parse("AVRO", text, {"acme.Country": COUNTRY})
    new = parse("AVRO", text, {"acme.Country": country2})
    messages = check_compatibility("BACKWARD", new, [old])
    assert len(messages) == 1 and "MISSING_ENUM_SYMBOLS" in messages[0] and "DE" in messages[0]
    assert check_compatibility("FORWARD", new, [old]) == []


def test_hostile_inputs_refused_fast() -> None:
    started = time.process_time()  # CPU, not wall-clock time: the machine may be loaded
    for text in ["[" * 100_000 + "]" * 100_000, '{"type":' * 5000 + '"int"' + "}" * 5000,
                 json.dumps({"type": "array", "items": {"type": "array", "items": "int"}}).replace(
                     '"int"', json.dumps({"type": "array", "items": "int"}) * 1),
                 " " * (2 << 20), rec(f("a", "string", default="x" * (2 << 20)))]:
        try:
            parse("AVRO", text)
        except SchemaError:
            pass
    deep: object = "int"
    for _ in range(200):
        deep = {"type": "array", "items": deep}
    with pytest.raises(SchemaError, match="deeper"):
        parse("AVRO", json.dumps(deep))
    assert time.process_time() - started < 2


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [c[1:] for c in MATRIX], ids=[c[0] for c in MATRIX])
def test_compatible_means_fastavro_resolves_the_data(old: str, new: str, backward: bool, forward: bool) -> None:
    """An independent oracle: where we say a reader can read a writer's data, fastavro's schema resolution
    reads records generated with the writer schema."""
    import io

    from fastavro import schemaless_reader, schemaless_writer
    from fastavro.schema import parse_schema
    from fastavro.utils import generate_many

    for ok, writer, reader in ((backward, old, new), (forward, new, old)):
        if not ok or ('"bytes"' in writer and '"string"' in reader):  # random bytes are seldom UTF-8
            continue
        w, r = parse_schema(json.loads(writer)), parse_schema(json.loads(reader))
        for record in generate_many(w, 10):
            buffer = io.BytesIO()
            schemaless_writer(buffer, w, record)
            buffer.seek(0)
            schemaless_reader(buffer, w, r)
