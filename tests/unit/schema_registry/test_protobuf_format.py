"""Protobuf schemas: the compatibility matrix at Confluent's seven levels (its Protobuf rules), .proto text
and Confluent's Python serializer's base64 FileDescriptorProto, invalid schemas, canonical and normalized
text, imports from references and the well-known types, hostile inputs."""

from __future__ import annotations

import base64
import time

import pytest
from google.protobuf import descriptor_pb2

from odradek.schema_registry.schemas import SchemaError, check_compatibility, parse
from tests.unit.schema_registry.levels import assert_levels


def proto(body: str, package: str = "acme", syntax: str = "proto3") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{body}\n'


BASE = proto("message M { string name = 1; int32 n = 2; }")

# (case, old, new, backward: new reads old's data, forward: old reads new's data)
MATRIX = [
    ("same", BASE, BASE, True, True),
    ("field added", BASE, proto("message M { string name = 1; int32 n = 2; bool b = 3; }"), True, True),
    ("field removed", BASE, proto("message M { string name = 1; }"), True, True),
    ("field renamed", BASE, proto("message M { string label = 1; int32 n = 2; }"), True, True),
    ("int32 to int64 (same group)", BASE, proto("message M { string name = 1; int64 n = 2; }"), True, True),
    ("int32 to sint32 (other group)", BASE, proto("message M { string name = 1; sint32 n = 2; }"), False, False),
    ("string to bytes", BASE, proto("message M { bytes name = 1; int32 n = 2; }"), True, True),
    ("number reused with another type", BASE, proto("message M { string name = 1; string n = 2; }"),
     False, False),
    ("scalar to message", BASE, proto("message M { string name = 1; N n = 2; } message N { int32 v = 1; }"),
     False, False),
    ("message removed", proto("message M { int32 a = 1; } message O { int32 b = 1; }"),
     proto("message M { int32 a = 1; }"), False, True),
    ("package changed", BASE, proto("message M { string name = 1; int32 n = 2; }", package="other"),
     False, False),
    ("enum value added", proto("message M { E e = 1; } enum E { A = 0; }"),
     proto("message M { E e = 1; } enum E { A = 0; B = 1; }"), True, True),
    ("enum to int32", proto("message M { E e = 1; } enum E { A = 0; }"), proto("message M { int32 e = 1; }"),
     True, True),
    ("repeated numeric label changed", BASE, proto("message M { string name = 1; repeated int32 n = 2; }"),
     True, True),
    ("proto2 numeric label changed", proto("message M { optional int32 n = 1; }", syntax="proto2"),
     proto("message M { repeated int32 n = 1; }", syntax="proto2"), False, False),
    ("proto2 required field added", proto("message M { optional int32 n = 1; }", syntax="proto2"),
     proto("message M { optional int32 n = 1; required int32 r = 2; }", syntax="proto2"), False, False),
    ("field moved into a new oneof", proto("message M { int32 a = 1; }"),
     proto("message M { oneof o { int32 a = 1; } }"), True, True),
    ("two fields moved into one oneof", proto("message M { int32 a = 1; int32 b = 2; }"),
     proto("message M { oneof o { int32 a = 1; int32 b = 2; } }"), False, True),
    ("oneof member removed", proto("message M { oneof o { int32 a = 1; string b = 2; } }"),
     proto("message M { oneof o { int32 a = 1; } }"), False, True),
    ("nested message changed", proto("message M { N n = 1; } message N { int32 v = 1; }"),
     proto("message M { N n = 1; } message N { string v = 1; }"), False, False),
    ("named type changed", proto("message M { N n = 1; } message N { int32 v = 1; } message P { int32 v = 1; }"),
     proto("message M { P n = 1; } message N { int32 v = 1; } message P { int32 v = 1; }"), False, False),
    ("map value type changed", proto("message M { map<string, int32> m = 1; }"),
     proto("message M { map<string, string> m = 1; }"), False, False),
    ("map value widened", proto("message M { map<string, int32> m = 1; }"),
     proto("message M { map<string, int64> m = 1; }"), True, True),
    ("recursive message grows", proto("message T { T next = 1; int32 v = 2; }"),
     proto("message T { T next = 1; int32 v = 2; string s = 3; }"), True, True),
]


@pytest.mark.parametrize(("old", "new", "backward", "forward"), [c[1:] for c in MATRIX], ids=[c[0] for c in MATRIX])
def test_compatibility_matrix(old: str, new: str, backward: bool, forward: bool) -> None:
    assert_levels(parse("PROTOBUF", old), parse("PROTOBUF", new), backward, forward)


def test_messages_say_what_and_where() -> None:
    [message] = check_compatibility("BACKWARD", parse("PROTOBUF", proto("message M { string name = 1; }")),
                                    [parse("PROTOBUF", proto("message M { string name = 1; } message O {}"))])
    assert "MESSAGE_REMOVED" in message and "#/O" in message


HISTORIES = [
    ("message removed, then compatible with the latest",
     [proto("message M { int32 a = 1; } message O {}"), proto("message M { int32 a = 1; }"),
      proto("message M { int32 a = 1; int32 b = 2; }")],
     (True, False, True, True, True, False)),
]
LEVEL_ORDER = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL", "FULL_TRANSITIVE")


@pytest.mark.parametrize(("versions", "verdicts"), [c[1:] for c in HISTORIES], ids=[c[0] for c in HISTORIES])
def test_transitive_levels_over_three_versions(versions: list[str], verdicts: tuple[bool, ...]) -> None:
    *history, new = [parse("PROTOBUF", v) for v in versions]
    for level, ok in zip(LEVEL_ORDER, verdicts, strict=True):
        assert (check_compatibility(level, new, history) == []) == ok, level


INVALID = [
    ("syntax error", "message M { int32 a = 1 }"),
    ("unknown type", proto("message M { Missing m = 1; }")),
    ("duplicate number", proto("message M { int32 a = 1; int32 b = 1; }")),
    ("missing import", proto('import "other.proto";\nmessage M { int32 a = 1; }')),
    ("not base64 of a descriptor", "AAAAAAAAAA=="),
    ("empty", ""),
]


@pytest.mark.parametrize("text", [c[1] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_schemas(text: str) -> None:
    with pytest.raises(SchemaError) as e:
        parse("PROTOBUF", text)
    assert str(e.value)


def test_reference_names_stay_in_the_temporary_directory() -> None:
    for name in ["../etc/passwd.proto", "/etc/x.proto", "a/../../b.proto", "x.txt"]:
        with pytest.raises(SchemaError, match="import path"):
            parse("PROTOBUF", proto(f'import "{name}";'), {name: proto("message X {}")})


def test_canonical_and_normalized() -> None:
    a = parse("PROTOBUF", proto("message M {\n  int32 b = 2;   string a = 1;\n}\nmessage A {}"))
    b = parse("PROTOBUF", proto("message A {} message M { int32 b = 2; string a = 1; }"))
    c = parse("PROTOBUF", proto("message A { } message M { string a = 1; int32 b = 2; }"))
    assert a.canonical() == parse("PROTOBUF", a.canonical()).canonical()
    assert a.canonical() != b.canonical()
    assert a.normalized() == b.normalized() == c.normalized()
    assert "message M {\n  string a = 1;\n  int32 b = 2;\n}" in a.normalized()


def test_base64_descriptor_as_the_python_serializer_sends_it() -> None:
    text = proto('import "google/protobuf/timestamp.proto";\nimport "common/money.proto";\n'
                 "message Order { string id = 1; google.protobuf.Timestamp at = 2; Money total = 3; "
                 "map<string, Money> lines = 4; optional int32 qty = 5; oneof pay { string card = 6; } }")
    money = proto("message Money { int64 units = 1; string currency = 2; }")
    refs = {"common/money.proto": money}
    from_text = parse("PROTOBUF", text, refs)
    serialized = from_text.serialized()  # type: ignore[attr-defined]
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized))
    assert [m.name for m in descriptor.message_type] == ["Order"]
    from_base64 = parse("PROTOBUF", serialized, refs)
    assert from_base64.canonical() == from_text.canonical()
    assert check_compatibility("FULL_TRANSITIVE", from_base64, [from_text]) == []
    assert from_text.message_names() == ["acme.Order"]  # type: ignore[attr-defined]
    # references may be base64 too
    money_b64 = parse("PROTOBUF", money).serialized()  # type: ignore[attr-defined]
    assert parse("PROTOBUF", text, {"common/money.proto": money_b64}).canonical() == from_text.canonical()


def test_compatibility_through_references() -> None:
    text = proto('import "n.proto";\nmessage M { N n = 1; }')
    old = parse("PROTOBUF", text, {"n.proto": proto("message N { int32 v = 1; }")})
    new = parse("PROTOBUF", text, {"n.proto": proto("message N { string v = 1; }")})
    messages = check_compatibility("BACKWARD", new, [old])
    assert any("FIELD_SCALAR_KIND_CHANGED" in m for m in messages)


def test_hostile_inputs_refused_fast() -> None:
    started = time.process_time()  # CPU, not wall-clock time: the machine may be loaded
    for text in ["message A {" * 5000 + "}" * 5000, "syntax = " * 100_000, "x" * (2 << 20),
                 proto("message M {" + " ".join(f"int32 f{i} = {i};" for i in range(1, 3000)) + "}")]:
        try:
            parse("PROTOBUF", text)
        except SchemaError:
            pass
    with pytest.raises(SchemaError):
        parse("PROTOBUF", proto("message A {" * 100 + "}" * 100))
    assert time.process_time() - started < 5


@pytest.mark.parametrize("module", ["google.protobuf.descriptor_pb2", "google.protobuf.struct_pb2",
                                    "google.protobuf.type_pb2",
                                    "confluent_kafka.schema_registry.confluent.meta_pb2"])
def test_rendered_text_compiles_to_the_same_descriptor(module: str) -> None:
    """Real descriptors (proto2 defaults, extension ranges, reserved names, options, maps, oneofs) rendered
    to .proto text and compiled again give the descriptor they came from."""
    import importlib

    original = descriptor_pb2.FileDescriptorProto.FromString(importlib.import_module(module).DESCRIPTOR.serialized_pb)
    original.name = "renamed.proto"  # not to clash with the bundled file of the same name
    schema = parse("PROTOBUF", base64.b64encode(original.SerializeToString()).decode())
    compiled = descriptor_pb2.FileDescriptorProto()
    compiled.CopyFrom(schema.descriptor)  # type: ignore[attr-defined]
    original.name = compiled.name
    for d in (original, compiled):
        stack = list(d.message_type)
        while stack:
            message = stack.pop()
            stack.extend(message.nested_type)
            for field in message.field:
                field.ClearField("json_name")
    assert compiled == original


def test_confluent_builtin_imports() -> None:
    schema = parse("PROTOBUF", proto('import "confluent/meta.proto";\nimport "confluent/type/decimal.proto";\n'
                                     "message M { confluent.type.Decimal amount = 1 [(confluent.field_meta).doc = \"x\"]; }"))
    assert "confluent.type.Decimal" in schema.canonical()


def test_large_message_renders_in_linear_time() -> None:
    started = time.process_time()  # CPU, not wall-clock time: the machine may be loaded
    schema = parse("PROTOBUF", proto("message M {" + " ".join(f"string f{i} = {i};" for i in range(1, 5000))
                                     + " oneof o { int32 x = 5000; int32 y = 5001; } }"))
    assert schema.normalized().count(" = ") == 5002 and check_compatibility("FULL", schema, [schema]) == []
    assert time.process_time() - started < 3
