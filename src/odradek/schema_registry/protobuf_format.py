"""Protobuf schemas: parse .proto text (or, as Confluent's Python serializer registers it, the base64 of a
serialized FileDescriptorProto, which is rendered back to .proto text first) with protoc as grpcio-tools
bundles it, run in-process on a private temporary directory holding only the schema and its references
(import path -> text); the well-known google/protobuf types come with grpcio-tools. The canonical and
normalized texts are .proto text rendered from the compiled descriptor; compatibility follows Confluent's
Protobuf rules (message, field and oneof changes, scalar groups, named types, package)."""

from __future__ import annotations

import ast
import base64
import binascii
import functools
import os
import re
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

import grpc_tools
from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError
from grpc_tools import _protoc_compiler

from odradek.schema_registry.errors import SchemaError
from odradek.schema_registry.limits import MAX_DEPTH, check_references, check_text
from odradek.schema_registry.protobuf_render import render

FDP = descriptor_pb2.FileDescriptorProto
FIELD = descriptor_pb2.FieldDescriptorProto
_WELL_KNOWN = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
_MAIN = "odradek_schema.proto"
_IMPORT_PATH = re.compile(r"(?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_.-]+\Z")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+\Z")
_LOCK = threading.Lock()  # protoc's in-process compiler is not known to be safe to run concurrently

# The differences Confluent accepts (the reader, `update`, reads what the writer, `original`, wrote).
COMPATIBLE = frozenset({"MESSAGE_ADDED", "MESSAGE_MOVED", "ENUM_ADDED", "ENUM_REMOVED", "ENUM_CONST_ADDED",
                        "ENUM_CONST_CHANGED", "ENUM_CONST_REMOVED", "FIELD_ADDED", "FIELD_REMOVED",
                        "FIELD_NAME_CHANGED", "FIELD_STRING_OR_BYTES_LABEL_CHANGED", "ONEOF_ADDED",
                        "ONEOF_REMOVED", "ONEOF_FIELD_ADDED", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"})
# Scalar types whose values read back across a change (protobuf's "updating a message type" groups).
_SCALAR_GROUP = {
    FIELD.TYPE_INT32: "GENERAL_NUMBER", FIELD.TYPE_INT64: "GENERAL_NUMBER", FIELD.TYPE_UINT32: "GENERAL_NUMBER",
    FIELD.TYPE_UINT64: "GENERAL_NUMBER", FIELD.TYPE_BOOL: "GENERAL_NUMBER", FIELD.TYPE_ENUM: "GENERAL_NUMBER",
    FIELD.TYPE_SINT32: "SIGNED_NUMBER", FIELD.TYPE_SINT64: "SIGNED_NUMBER",
    FIELD.TYPE_FIXED32: "FIXED32", FIELD.TYPE_SFIXED32: "FIXED32",
    FIELD.TYPE_FIXED64: "FIXED64", FIELD.TYPE_SFIXED64: "FIXED64",
    FIELD.TYPE_STRING: "STRING_OR_BYTES", FIELD.TYPE_BYTES: "STRING_OR_BYTES",
    FIELD.TYPE_FLOAT: "FLOAT", FIELD.TYPE_DOUBLE: "DOUBLE",
}


class ProtobufSchema:
    """A parsed Protobuf schema: `descriptor` its compiled FileDescriptorProto, `files` every file it was
    compiled with (its imports, transitively, by path), `text` the .proto text protoc compiled."""

    schema_type = "PROTOBUF"

    def __init__(self, descriptor: descriptor_pb2.FileDescriptorProto,
                 files: dict[str, descriptor_pb2.FileDescriptorProto]) -> None:
        self.descriptor = descriptor
        self.files = files
        self._types = _index(files)

    def canonical(self) -> str:
        return render(self.descriptor)

    def normalized(self) -> str:
        return render(self.descriptor, normalize=True)

    def serialized(self) -> str:
        """The base64 of the FileDescriptorProto: what `GET /schemas/ids/{id}?format=serialized` returns
        to Confluent's Python deserializer."""
        return base64.standard_b64encode(self.descriptor.SerializeToString()).decode("ascii")

    def message_names(self) -> list[str]:
        """The full names of the file's top-level messages, in order (a record's message index 0 is the
        first)."""
        package = f"{self.descriptor.package}." if self.descriptor.package else ""
        return [package + m.name for m in self.descriptor.message_type]

    def reader_errors(self, writer: object, reader_label: str, writer_label: str) -> list[str]:
        assert isinstance(writer, ProtobufSchema)
        diff = _Diff(writer, self)
        found = diff.file()
        return list(dict.fromkeys(
            f"Found incompatible change: Difference{{fullPath='#/{path}', type={kind}}} "
            f"({reader_label} schema reading data of the {writer_label})"
            for path, kind in found if kind not in COMPATIBLE))


def parse(text: str, references: Mapping[str, str] | None = None) -> ProtobufSchema:
    sources = {_MAIN: _as_proto_text(check_text(text), "schema"), **_builtins()}
    for name, ref_text in check_references(references).items():
        if not _IMPORT_PATH.match(name) or ".." in name.split("/") or not name.endswith(".proto"):
            raise SchemaError(f"reference name {name[:200]!r} is not a relative .proto import path")
        if name.startswith("google/protobuf/") or name == _MAIN:
            continue  # the well-known types come with the compiler
        sources[name] = _as_proto_text(ref_text, f"referenced schema {name!r}")
    files = _compile(sources)
    main = files[_MAIN]
    _check_depth(main)
    return ProtobufSchema(main, files)


@functools.cache
def _builtins() -> dict[str, str]:
    """Confluent's own types (confluent/meta.proto, confluent/type/decimal.proto), which its clients import
    without registering them, as confluent-kafka ships them."""
    from confluent_kafka.schema_registry.confluent import meta_pb2
    from confluent_kafka.schema_registry.confluent.type import decimal_pb2

    out = {}
    for module in (meta_pb2, decimal_pb2):
        descriptor = FDP.FromString(module.DESCRIPTOR.serialized_pb)
        out[descriptor.name] = render(descriptor)
    return out


def _as_proto_text(text: str, what: str) -> str:
    """.proto text as is; the base64 of a serialized FileDescriptorProto rendered back to .proto text."""
    stripped = text.strip()
    if not stripped:
        raise SchemaError(f"the {what} is empty")
    if not _BASE64.match(stripped):
        return text
    try:
        descriptor = FDP.FromString(base64.b64decode(stripped, validate=False))
    except (binascii.Error, DecodeError, ValueError) as e:
        raise SchemaError(f"the {what} is neither .proto text nor a base64 FileDescriptorProto: {e}") from None
    _check_depth(descriptor)
    return render(descriptor)


def _compile(sources: dict[str, str]) -> dict[str, descriptor_pb2.FileDescriptorProto]:
    with tempfile.TemporaryDirectory(prefix="odradek-proto-") as root:
        for name, source in sources.items():
            path = os.path.join(root, *name.split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(source)
        try:
            with _LOCK:
                generated = _protoc_compiler.get_protos(_MAIN.encode(), [root.encode(), _WELL_KNOWN.encode()])
        except Exception as e:  # protoc's ProtocErrors: "file:line:column error: message" per error
            message = str(e).replace(root + os.sep, "")
            raise SchemaError(f"invalid Protobuf schema: {message[:1000]}") from None
    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}
    for _module, code in generated:
        descriptor = FDP.FromString(_serialized_file(code))
        files[descriptor.name] = descriptor
    return files


def _serialized_file(code: bytes) -> bytes:
    """The FileDescriptorProto protoc embedded in the Python module it generated (read, never run)."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "AddSerializedFile" and node.args \
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes):
            return node.args[0].value
    raise SchemaError("protoc produced no descriptor")


def _check_depth(descriptor: descriptor_pb2.FileDescriptorProto) -> None:
    stack = [(m, 1) for m in descriptor.message_type]
    while stack:
        message, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise SchemaError(f"messages nest deeper than {MAX_DEPTH} levels")
        stack.extend((m, depth + 1) for m in message.nested_type)


class _Type:
    __slots__ = ("proto", "package", "is_map")

    def __init__(self, proto: Any, package: str, is_map: bool) -> None:
        self.proto = proto
        self.package = package
        self.is_map = is_map


def _index(files: dict[str, descriptor_pb2.FileDescriptorProto]) -> dict[str, _Type]:
    """Every message and enum of the files by full name (with the leading dot descriptors use)."""
    types: dict[str, _Type] = {}
    for f in files.values():
        prefix = f".{f.package}" if f.package else ""
        stack: list[tuple[str, Any]] = [(prefix, m) for m in f.message_type]
        for e in f.enum_type:
            types[f"{prefix}.{e.name}"] = _Type(e, f.package, False)
        while stack:
            scope, message = stack.pop()
            full = f"{scope}.{message.name}"
            types[full] = _Type(message, f.package, message.options.map_entry)
            stack.extend((full, m) for m in message.nested_type)
            for e in message.enum_type:
                types[f"{full}.{e.name}"] = _Type(e, f.package, False)
    return types


class _Diff:
    """Confluent's Protobuf differences from an original (writer) schema to an update (reader)."""

    def __init__(self, original: ProtobufSchema, update: ProtobufSchema) -> None:
        self.original = original
        self.update = update
        self.done: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self.o_proto3 = original.descriptor.syntax == "proto3"
        self.u_proto3 = update.descriptor.syntax == "proto3"

    def file(self) -> list[tuple[str, str]]:
        o, u = self.original.descriptor, self.update.descriptor
        diffs: list[tuple[str, str]] = []
        if o.package != u.package:
            diffs.append(("", "PACKAGE_CHANGED"))
        return diffs + self.types(list(o.message_type), list(o.enum_type), list(u.message_type),
                                  list(u.enum_type), "")

    def types(self, o_messages: list[Any], o_enums: list[Any], u_messages: list[Any], u_enums: list[Any],
              path: str) -> list[tuple[str, str]]:
        diffs: list[tuple[str, str]] = []
        om = {m.name: m for m in o_messages}
        um = {m.name: m for m in u_messages}
        for name in sorted(set(om) | set(um)):
            where = f"{path}{name}"
            if name not in um:
                if not om[name].options.map_entry:
                    diffs.append((where, "MESSAGE_REMOVED"))
            elif name not in om:
                if not um[name].options.map_entry:
                    diffs.append((where, "MESSAGE_ADDED"))
            else:
                diffs += self.message(om[name], um[name], where)
        oe = {e.name: e for e in o_enums}
        ue = {e.name: e for e in u_enums}
        for name in sorted(set(oe) | set(ue)):
            if name in oe and name in ue:
                diffs += _enum(oe[name], ue[name], f"{path}{name}")
            else:
                diffs.append((f"{path}{name}", "ENUM_REMOVED" if name in oe else "ENUM_ADDED"))
        return diffs

    def message(self, o: Any, u: Any, path: str) -> list[tuple[str, str]]:
        diffs: list[tuple[str, str]] = []
        o_tags, o_oneof, o_oneofs = _fields(o)
        u_tags, u_oneof, u_oneofs = _fields(u)
        deleted = {name for name, tags in o_oneofs.items()
                   if name not in u_oneofs and not any(t in u_tags for t in tags)}
        for name, tags in sorted(u_oneofs.items()):
            groups = set()
            moved_in = 0
            for tag in tags:
                if tag in o_oneof:
                    groups.add(f"oneof:{o_oneof[tag]}")
                elif tag in o_tags:
                    groups.add(f"field:{tag}")
                    moved_in += 1
            if len(groups) > 1:
                diffs.append((f"{path}/{name}", "MULTIPLE_FIELDS_MOVED_TO_ONEOF" if moved_in > 1
                              else "FIELD_MOVED_TO_EXISTING_ONEOF"))
        for name in sorted(set(o_oneofs) | set(u_oneofs)):
            if name not in u_oneofs:
                diffs.append((f"{path}/{name}", "ONEOF_REMOVED"))
            elif name not in o_oneofs:
                diffs.append((f"{path}/{name}", "ONEOF_ADDED"))
        for tag in sorted(set(o_tags) | set(u_tags)):
            of, uf = o_tags.get(tag), u_tags.get(tag)
            if uf is None:
                assert of is not None
                if tag in o_oneof:
                    if o_oneof[tag] not in deleted:
                        diffs.append((f"{path}/{o_oneof[tag]}/{tag}", "ONEOF_FIELD_REMOVED"))
                else:
                    diffs.append((f"{path}/{tag}", "REQUIRED_FIELD_REMOVED"
                                  if of.label == FIELD.LABEL_REQUIRED else "FIELD_REMOVED"))
            elif of is None:
                if tag in u_oneof:
                    diffs.append((f"{path}/{u_oneof[tag]}/{tag}", "ONEOF_FIELD_ADDED"))
                else:
                    diffs.append((f"{path}/{tag}", "REQUIRED_FIELD_ADDED"
                                  if uf.label == FIELD.LABEL_REQUIRED else "FIELD_ADDED"))
            else:
                if tag in o_oneof and tag not in u_oneof:
                    diffs.append((f"{path}/{tag}", "ONEOF_FIELD_MOVED_TO_TOP_LEVEL"))
                where = f"{path}/{u_oneof[tag]}/{tag}" if tag in u_oneof else f"{path}/{tag}"
                if of.name != uf.name:
                    diffs.append((where, "FIELD_NAME_CHANGED"))
                diffs += self.field(_label(self.o_proto3, of, tag in o_oneof), of.type, of.type_name,
                                    _label(self.u_proto3, uf, tag in u_oneof), uf.type, uf.type_name, where)
        return diffs + self.types(list(o.nested_type), list(o.enum_type), list(u.nested_type),
                                  list(u.enum_type), f"{path}/")

    def field(self, o_label: Any, o_type: int, o_name: str, u_label: Any, u_type: int, u_name: str,
              where: str) -> list[tuple[str, str]]:
        o_info = self.original._types.get(o_name)
        u_info = self.update._types.get(u_name)
        o_kind, u_kind = _kind(o_type, o_info), _kind(u_type, u_info)
        if o_kind != u_kind:
            return [(where, "FIELD_KIND_CHANGED")]
        if o_kind == "SCALAR":
            og, ug = _SCALAR_GROUP.get(o_type), _SCALAR_GROUP.get(u_type)
            if og != ug:
                return [(where, "FIELD_SCALAR_KIND_CHANGED")]
            if o_label is not None and u_label is not None and o_label != u_label:
                return [(where, "FIELD_STRING_OR_BYTES_LABEL_CHANGED" if og == "STRING_OR_BYTES"
                         else "FIELD_NUMERIC_LABEL_CHANGED")]
            return []
        assert o_info is not None and u_info is not None
        if o_kind == "MAP":
            ok, ov = o_info.proto.field[0], o_info.proto.field[1]
            uk, uv = u_info.proto.field[0], u_info.proto.field[1]
            return self.field(None, ok.type, ok.type_name, None, uk.type, uk.type_name, where) + \
                self.field(None, ov.type, ov.type_name, None, uv.type, uv.type_name, where)
        o_local = _local(o_name, o_info.package)
        if o_local != _local(u_name, u_info.package):
            return [(where, "FIELD_NAMED_TYPE_CHANGED")]
        key = (o_name, u_name)
        if key not in self.done:  # being compared (a recursive type) counts as compatible meanwhile
            self.done[key] = []
            self.done[key] = self.message(o_info.proto, u_info.proto, o_local)
        found = self.done[key]
        if any(kind not in COMPATIBLE for _, kind in found):
            return [*found, (where, "FIELD_NAMED_TYPE_CHANGED")]
        return []


def _fields(message: Any) -> tuple[dict[int, Any], dict[int, str], dict[str, list[int]]]:
    """A message's fields by number, the real oneof each belongs to, and each oneof's field numbers
    (proto3 `optional` makes a synthetic oneof that is no oneof at all)."""
    by_tag: dict[int, Any] = {}
    oneof_of: dict[int, str] = {}
    oneofs: dict[str, list[int]] = {}
    for field in message.field:
        by_tag[field.number] = field
        if field.HasField("oneof_index") and not field.proto3_optional:
            name = message.oneof_decl[field.oneof_index].name
            oneof_of[field.number] = name
            oneofs.setdefault(name, []).append(field.number)
    return by_tag, oneof_of, oneofs


def _label(proto3: bool, field: Any, in_oneof: bool) -> Any:
    """The field's label as Confluent's parser sees it: none for oneof members and implicit proto3 fields."""
    if in_oneof or (proto3 and field.label == FIELD.LABEL_OPTIONAL and not field.proto3_optional):
        return None
    return field.label


def _kind(type_: int, info: _Type | None) -> str:
    if type_ == FIELD.TYPE_ENUM or type_ in _SCALAR_GROUP:
        return "SCALAR"
    if info is not None and info.is_map:
        return "MAP"
    return "MESSAGE"


def _local(full_name: str, package: str) -> str:
    name = full_name.lstrip(".")
    return name[len(package) + 1:] if package and name.startswith(package + ".") else name


def _enum(o: Any, u: Any, path: str) -> list[tuple[str, str]]:
    ov = {v.number: v.name for v in o.value}
    uv = {v.number: v.name for v in u.value}
    diffs = []
    for number in sorted(set(ov) | set(uv)):
        if number not in uv:
            diffs.append((f"{path}/{number}", "ENUM_CONST_REMOVED"))
        elif number not in ov:
            diffs.append((f"{path}/{number}", "ENUM_CONST_ADDED"))
        elif ov[number] != uv[number]:
            diffs.append((f"{path}/{number}", "ENUM_CONST_CHANGED"))
    return diffs

