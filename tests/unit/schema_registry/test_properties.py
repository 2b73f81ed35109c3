"""Properties every format keeps on generated schemas: a schema is FULL_TRANSITIVE compatible with itself,
its normalized text parses to the same normalized text, and compatibility never raises."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.schema_registry.schemas import check_compatibility, parse

PRIMITIVES = ["null", "boolean", "int", "long", "float", "double", "bytes", "string"]


@st.composite
def avro_types(draw: st.DrawFn, depth: int = 0) -> Any:
    choice = draw(st.integers(0, 5 if depth < 3 else 0))
    if choice in (0, 1):
        return draw(st.sampled_from(PRIMITIVES))
    if choice == 2:
        return {"type": "array", "items": draw(avro_types(depth + 1))}
    if choice == 3:
        return {"type": "map", "values": draw(avro_types(depth + 1))}
    if choice == 4:
        return draw(st.lists(st.sampled_from(PRIMITIVES), min_size=1, max_size=4, unique=True))
    names = draw(st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True), max_size=4, unique=True))
    return {"type": "record", "name": "R",
            "fields": [{"name": n, "type": draw(avro_types(depth + 1))} for n in names]}


def json_schemas() -> st.SearchStrategy[Any]:
    leaves = st.one_of(
        st.builds(lambda t: {"type": t}, st.sampled_from(["string", "integer", "number", "boolean", "null"])),
        st.builds(lambda n: {"type": "string", "maxLength": n}, st.integers(0, 10)),
        st.builds(lambda v: {"enum": v}, st.lists(st.integers(0, 5), min_size=1, max_size=3, unique=True)),
        st.just({}), st.just(True))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.builds(lambda p, closed: {"type": "object", "properties": p, **({"additionalProperties": False}
                                                                          if closed else {})},
                  st.dictionaries(st.from_regex(r"[a-z]{1,4}", fullmatch=True), inner, max_size=3), st.booleans()),
        st.builds(lambda i: {"type": "array", "items": i}, inner),
        st.builds(lambda m: {"oneOf": m}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda m: {"anyOf": m}, st.lists(inner, min_size=1, max_size=3))), max_leaves=10)


def check(schema_type: str, text: str) -> None:
    schema = parse(schema_type, text)
    assert check_compatibility("FULL_TRANSITIVE", schema, [schema, schema]) == []
    again = parse(schema_type, schema.normalized())
    assert again.normalized() == schema.normalized()
    assert parse(schema_type, schema.canonical()).canonical() == schema.canonical()


@settings(max_examples=60, deadline=None)
@given(avro_types())
def test_avro_properties(schema: Any) -> None:
    if isinstance(schema, dict) and schema["type"] == "record":
        check("AVRO", json.dumps(_unique_names(schema, iter(range(10**6)))))


def _unique_names(node: Any, numbers: Any) -> Any:
    """The generated schema with each record named once (Avro allows one definition per name)."""
    if isinstance(node, list):
        return [_unique_names(n, numbers) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _unique_names(v, numbers) for k, v in node.items()}
    if node.get("type") == "record":
        out["name"] = f"R{next(numbers)}"
    return out


@settings(max_examples=60, deadline=None)
@given(json_schemas())
def test_json_properties(schema: Any) -> None:
    check("JSON", json.dumps(schema))


@st.composite
def protos(draw: st.DrawFn) -> str:
    scalars = ["int32", "int64", "uint32", "sint64", "fixed32", "bool", "string", "bytes", "double"]
    fields = draw(st.lists(st.sampled_from(scalars), min_size=1, max_size=6))
    oneof = draw(st.integers(0, len(fields)))
    lines = [f"{'repeated ' if draw(st.booleans()) and i < oneof else ''}{t} f{i} = {i + 1};"
             for i, t in enumerate(fields[:oneof])]
    if oneof < len(fields):
        lines.append("oneof o { " + " ".join(f"{t} f{i} = {i + 1};" for i, t in enumerate(fields) if i >= oneof)
                     + " }")
    return 'syntax = "proto3";\npackage p;\nmessage M { ' + " ".join(lines) + " map<string, int32> m = 99; }\n"


@settings(max_examples=30, deadline=None)
@given(protos())
def test_protobuf_properties(text: str) -> None:
    check("PROTOBUF", text)
