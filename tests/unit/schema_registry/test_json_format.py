"""JSON Schemas: the compatibility matrix at Confluent's seven levels (its STRICT JSON Schema rules: open and
closed content models, required, types, enums, bounds, items, oneOf/anyOf), invalid schemas, canonical and
normalized identity, references by `$ref`, hostile inputs."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from odradek.schema_registry import json_format
from odradek.schema_registry.schemas import SchemaError, check_compatibility, parse
from tests.unit.schema_registry.levels import assert_levels


def obj(props: dict[str, Any], required: tuple[str, ...] = (), **extra: Any) -> str:
    schema: dict[str, Any] = {"type": "object", "properties": props, **extra}
    if required:
        schema["required"] = list(required)
    return json.dumps(schema)


CLOSED = {"additionalProperties": False}
S, INT, N = {"type": "string"}, {"type": "integer"}, {"type": "number"}

# (case, old, new, backward: new accepts all old did, forward: old accepts all new does)
MATRIX = [
    ("same", obj({"a": S}), obj({"a": S}), True, True),
    ("optional property added to closed model", obj({"a": S}, **CLOSED), obj({"a": S, "b": INT}, **CLOSED), True, False),
    ("optional property added to open model", obj({"a": S}), obj({"a": S, "b": INT}), False, True),
    ("property removed from open model", obj({"a": S, "b": INT}), obj({"a": S}), True, False),
    ("property removed from closed model", obj({"a": S, "b": INT}, **CLOSED), obj({"a": S}, **CLOSED), False, True),
    ("required property added to closed model", obj({"a": S}, **CLOSED),
     obj({"a": S, "b": INT}, ("b",), **CLOSED), False, False),
    ("required property with default added", obj({"a": S}, **CLOSED),
     obj({"a": S, "b": {**INT, "default": 0}}, ("b",), **CLOSED), True, False),
    ("property made required", obj({"a": S}), obj({"a": S}, ("a",)), False, True),
    ("property made optional", obj({"a": S}, ("a",)), obj({"a": S}), True, False),
    ("integer widened to number", obj({"a": INT}), obj({"a": N}), True, False),
    ("string to integer", obj({"a": S}), obj({"a": INT}), False, False),
    ("type to anyOf with it", obj({"a": S}), obj({"a": {"anyOf": [S, INT]}}), True, False),
    ("oneOf grows", obj({"a": {"oneOf": [S, INT]}}), obj({"a": {"oneOf": [S, INT, {"type": "boolean"}]}}), True, False),
    ("type list grows", obj({"a": {"type": ["string", "null"]}}), obj({"a": {"type": ["string", "null", "integer"]}}),
     True, False),
    ("enum extended", obj({"a": {"enum": ["x", "y"]}}), obj({"a": {"enum": ["x", "y", "z"]}}), True, False),
    ("enum changed", obj({"a": {"enum": ["x", "y"]}}), obj({"a": {"enum": ["x", "z"]}}), False, False),
    ("maxLength increased", obj({"a": {**S, "maxLength": 5}}), obj({"a": {**S, "maxLength": 9}}), True, False),
    ("minimum added", obj({"a": INT}), obj({"a": {**INT, "minimum": 0}}), False, True),
    ("maximum removed", obj({"a": {**N, "maximum": 10}}), obj({"a": N}), True, False),
    ("pattern changed", obj({"a": {**S, "pattern": "^a"}}), obj({"a": {**S, "pattern": "^b"}}), False, False),
    ("items narrowed", obj({"a": {"type": "array", "items": N}}), obj({"a": {"type": "array", "items": INT}}),
     False, True),
    ("maxItems added", obj({"a": {"type": "array", "items": S}}),
     obj({"a": {"type": "array", "items": S, "maxItems": 3}}), False, True),
    ("additionalProperties closed", obj({"a": S}), obj({"a": S}, **CLOSED), False, True),
    ("description only", obj({"a": S}), obj({"a": {**S, "description": "the a"}}, title="T"), True, True),
    ("nested closed object grows", obj({"o": json.loads(obj({"x": S}, **CLOSED))}),
     obj({"o": json.loads(obj({"x": S, "y": S}, **CLOSED))}), True, False),
    ("property added covered by additionalProperties schema", obj({"a": S}, additionalProperties=S),
     obj({"a": S, "b": S}, additionalProperties=S), True, True),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [c[1:] for c in MATRIX], ids=[c[0] for c in MATRIX])
def test_compatibility_matrix(old: str, new: str, backward: bool, forward: bool) -> None:
    assert_levels(parse("JSON", old), parse("JSON", new), backward, forward)


def test_messages_say_what_and_where() -> None:
    messages = check_compatibility("BACKWARD", parse("JSON", obj({"a": INT})), [parse("JSON", obj({"a": S}))])
    assert len(messages) == 1 and "TYPE_CHANGED" in messages[0] and "#/properties/a" in messages[0]


HISTORIES = [
    ("closed model: property added then made required",
     [obj({"a": S}, **CLOSED), obj({"a": S, "b": {**INT, "default": 0}}, **CLOSED),
      obj({"a": S, "b": {**INT, "default": 0}}, ("b",), **CLOSED)],
     (True, True, True, False, True, False)),
    ("enum grows twice",
     [obj({"e": {"enum": [1]}}), obj({"e": {"enum": [1, 2]}}), obj({"e": {"enum": [1, 2, 3]}})],
     (True, True, False, False, False, False)),
    ("bound relaxed against the latest only",
     [obj({"n": {**INT, "maximum": 5}}), obj({"n": {**INT, "maximum": 10}}), obj({"n": {**INT, "maximum": 7}})],
     (False, False, True, False, False, False)),
]
LEVEL_ORDER = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")


@pytest.mark.parametrize(("versions", "verdicts"), [c[1:] for c in HISTORIES], ids=[c[0] for c in HISTORIES])
def test_transitive_levels_over_three_versions(versions: list[str], verdicts: tuple[bool, ...]) -> None:
    *history, new = [parse("JSON", v) for v in versions]
    for level, ok in zip(LEVEL_ORDER, verdicts, strict=True):
        assert (check_compatibility(level, new, history) == []) == ok, level
    assert check_compatibility("NONE", new, history) == []


INVALID = [
    ("not json", "{"),
    ("a number", "3"),
    ("bad type", '{"type": "strong"}'),
    ("required not a list", '{"type": "object", "required": "a"}'),
    ("minimum not a number", '{"minimum": "0"}'),
    ("bad $ref", '{"$ref": "#/definitions/missing"}'),
    ("unknown reference", '{"$ref": "other.json"}'),
    ("circular $ref chain", '{"$ref": "#/definitions/a", "definitions": {"a": {"$ref": "#/definitions/b"}, '
                            '"b": {"$ref": "#/definitions/a"}}}'),
    ("unknown $schema", '{"$schema": "http://example.com/not-a-draft", "type": "string"}'),
    ("draft 2020-12 rule", '{"$schema": "https://json-schema.org/draft/2020-12/schema", "prefixItems": 3}'),
]


@pytest.mark.parametrize("text", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(SchemaError) as e:
        parse("JSON", text)
    assert str(e.value)


@pytest.mark.parametrize("draft", ["http://json-schema.org/draft-04/schema#", "http://json-schema.org/draft-06/schema#",
                                   "http://json-schema.org/draft-07/schema#",
                                   "https://json-schema.org/draft/2019-09/schema",
                                   "https://json-schema.org/draft/2020-12/schema"])
def test_drafts(draft: str) -> None:
    schema = parse("JSON", json.dumps({"$schema": draft, "type": "object", "properties": {"a": S}}))
    assert schema.draft.rstrip("#") == draft.rstrip("#")  # type: ignore[attr-defined]


def test_canonical_and_normalized() -> None:
    a = parse("JSON", '{"type": "object",\n "properties": {"a": {"type": "string"}}}')
    b = parse("JSON", '{"properties":{"a":{"type":"string"}},"type":"object"}')
    assert a.canonical() == '{"type":"object","properties":{"a":{"type":"string"}}}'
    assert a.canonical() != b.canonical()
    assert a.normalized() == b.normalized() == '{"properties":{"a":{"type":"string"}},"type":"object"}'


ADDRESS = json.dumps({"type": "object", "properties": {"street": S}, "additionalProperties": False})


def test_references_by_name() -> None:
    text = obj({"home": {"$ref": "address.json"}, "work": {"$ref": "#/definitions/w"}},
               definitions={"w": {"$ref": "address.json"}})
    old = parse("JSON", text, {"address.json": ADDRESS})
    grown = json.dumps({"type": "object", "properties": {"street": S, "zip": S}, "additionalProperties": False})
    new = parse("JSON", text, {"address.json": grown})
    assert check_compatibility("BACKWARD", new, [old]) == []
    assert check_compatibility("FORWARD", new, [old])
    with pytest.raises(SchemaError, match="resolve"):
        parse("JSON", text)


def test_recursive_schema() -> None:
    text = json.dumps({"type": "object", "properties": {"v": INT, "next": {"$ref": "#"}}})
    grown = json.dumps({"type": "object", "properties": {"v": N, "next": {"$ref": "#"}}})
    assert check_compatibility("BACKWARD", parse("JSON", grown), [parse("JSON", text)]) == []
    assert check_compatibility("FORWARD", parse("JSON", grown), [parse("JSON", text)])


def test_hostile_inputs_refused_fast(monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.process_time()  # CPU, not wall-clock time: the machine may be loaded
    for text in ['{"not":' * 5000 + "{}" + "}" * 5000, "[" * 100_000, " " * (2 << 20)]:
        with pytest.raises(SchemaError):
            parse("JSON", text)
    # a oneOf of oneOfs: the comparison is bounded, not exponential
    member: Any = S
    for _ in range(9):
        member = {"oneOf": [member, {"type": "array", "items": member}, INT]}
    wide = parse("JSON", json.dumps(member))
    monkeypatch.setattr(json_format, "MAX_COMPARISONS", 500)
    messages = check_compatibility("BACKWARD", wide, [wide])  # too complex to compare: refused, not hung
    assert any("too complex" in m for m in messages)
    assert time.process_time() - started < 5


def test_large_legitimate_schema_is_compared() -> None:
    big = parse("JSON", obj({f"p{i}": {"type": "string", "maxLength": 10} for i in range(4000)}, **CLOSED))
    assert check_compatibility("FULL", big, [big]) == []
