"""The seam between the registry's server and its formats: dispatch by type, the seven levels' choice of
versions, and that parse raises nothing but SchemaError on any text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from odradek.schema_registry.schemas import SCHEMA_TYPES, SchemaError, check_compatibility, parse


class _Other:
    schema_type = "OTHER"

    def canonical(self) -> str:
        return "x"

    def normalized(self) -> str:
        return "x"

    def reader_errors(self, writer: object, reader_label: str, writer_label: str) -> list[str]:
        return []


def test_unknown_type_and_level() -> None:
    with pytest.raises(SchemaError, match="unknown schema type"):
        parse("XML", "<a/>")
    with pytest.raises(ValueError, match="level"):
        check_compatibility("SIDEWAYS", parse("AVRO", '"int"'), [])


def test_first_version_and_other_types() -> None:
    avro = parse("AVRO", '"int"')
    assert check_compatibility("FULL_TRANSITIVE", avro, []) == []
    [message] = check_compatibility("BACKWARD", avro, [_Other()])
    assert "OTHER" in message
    assert check_compatibility("NONE", avro, [_Other()]) == []
    # non-transitive levels look at the latest version only
    assert check_compatibility("BACKWARD", avro, [_Other(), parse("AVRO", '"int"')]) == []


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                       lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                           st.sampled_from(["type", "name", "fields", "items", "values", "symbols", "size",
                                            "default", "properties", "syntax", "$ref", "required"]) | st.text(max_size=5),
                           inner, max_size=4), max_leaves=12)


@settings(max_examples=150, deadline=None)
@given(schema_type=st.sampled_from(SCHEMA_TYPES), text=st.text(max_size=200) | JSONISH.map(json.dumps))
def test_parse_raises_only_schema_error(schema_type: str, text: str) -> None:
    try:
        parse(schema_type, text)
    except SchemaError:
        pass


def test_formatted() -> None:
    import base64

    from google.protobuf import descriptor_pb2

    from odradek.schema_registry.schemas import formatted

    proto = parse("PROTOBUF", 'syntax = "proto3";\nmessage M { int32 a = 1; }')
    serialized = formatted(proto, "serialized")
    assert serialized is not None
    assert descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized)).message_type[0].name == "M"
    country = '{"type": "enum", "name": "Country", "namespace": "acme", "symbols": ["FR"]}'
    avro = parse("AVRO", '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "acme.Country"},'
                         ' {"name": "b", "type": "acme.Country"}]}', {"acme.Country": country})
    resolved = formatted(avro, "resolved")
    assert resolved is not None and resolved.count('"symbols"') == 1
    assert json.loads(parse("AVRO", resolved).normalized()) == json.loads(resolved)
    assert formatted(avro, "serialized") is None and formatted(proto, "resolved") is None


def test_long_chains_of_named_types_do_not_break_the_check() -> None:
    """Each type uses the next: nesting by name, not by text, so only the comparison's depth bounds it."""
    import time

    started = time.process_time()  # CPU, not wall-clock time: the machine may be loaded
    chain = 'syntax = "proto3";\n' + "\n".join(f"message M{i} {{ M{i + 1} next = 1; }}" for i in range(3000)) + \
        "\nmessage M3000 { int32 v = 1; }\n"
    proto = parse("PROTOBUF", chain)
    assert check_compatibility("FULL", proto, [proto])
    fields = [{"name": "f0", "type": {"type": "record", "name": "R0", "fields": []}}]
    fields += [{"name": f"f{i}", "type": {"type": "record", "name": f"R{i}", "fields": [
        {"name": "x", "type": f"R{i - 1}"}]}} for i in range(1, 3000)]
    avro = parse("AVRO", json.dumps({"type": "record", "name": "Top", "fields": fields}))
    check_compatibility("FULL", avro, [avro])
    definitions = {f"d{i}": {"type": "object", "properties": {"x": {"$ref": f"#/definitions/d{i + 1}"}}}
                   for i in range(3000)}
    definitions["d3000"] = {"type": "string"}
    try:  # referencing's dynamic scope grows with each hop: such a chain is refused at parse
        schema = parse("JSON", json.dumps({"$ref": "#/definitions/d0", "definitions": definitions}))
    except SchemaError:
        pass
    else:
        check_compatibility("FULL", schema, [schema])
    assert time.process_time() - started < 5  # linear: an exponential walk would take minutes
