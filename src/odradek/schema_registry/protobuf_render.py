"""A compiled FileDescriptorProto written back as .proto text: the registry's canonical text of a Protobuf
schema (declarations in their order) and its normalized text (imports, options and declarations sorted,
fields by number). Type names are written fully qualified (".pkg.Msg"), which protoc reads back the same."""

from __future__ import annotations

import math
from typing import Any

from google.protobuf import descriptor_pb2, text_format
from google.protobuf.text_encoding import CEscape

from odradek.schema_registry.errors import SchemaError

FIELD = descriptor_pb2.FieldDescriptorProto
_SCALARS = {FIELD.TYPE_DOUBLE: "double", FIELD.TYPE_FLOAT: "float", FIELD.TYPE_INT64: "int64",
            FIELD.TYPE_UINT64: "uint64", FIELD.TYPE_INT32: "int32", FIELD.TYPE_FIXED64: "fixed64",
            FIELD.TYPE_FIXED32: "fixed32", FIELD.TYPE_BOOL: "bool", FIELD.TYPE_STRING: "string",
            FIELD.TYPE_BYTES: "bytes", FIELD.TYPE_UINT32: "uint32", FIELD.TYPE_SFIXED32: "sfixed32",
            FIELD.TYPE_SFIXED64: "sfixed64", FIELD.TYPE_SINT32: "sint32", FIELD.TYPE_SINT64: "sint64"}
_LABELS = {FIELD.LABEL_OPTIONAL: "optional", FIELD.LABEL_REQUIRED: "required", FIELD.LABEL_REPEATED: "repeated"}
_MAX_FIELD_NUMBER = 536_870_911


def render(file: descriptor_pb2.FileDescriptorProto, normalize: bool = False) -> str:
    return _Writer(file, normalize).file()


class _Writer:
    def __init__(self, file: descriptor_pb2.FileDescriptorProto, normalize: bool) -> None:
        if file.syntax not in ("", "proto2", "proto3"):
            raise SchemaError(f"Protobuf syntax {file.syntax!r} is not supported (proto2 and proto3 are)")
        self.f = file
        self.proto3 = file.syntax == "proto3"
        self.normalize = normalize
        self.lines: list[str] = []
        self.maps = _map_entries(file)

    def out(self, depth: int, text: str) -> None:
        self.lines.append("  " * depth + text)

    def order(self, items: Any, key: Any) -> list[Any]:
        return sorted(items, key=key) if self.normalize else list(items)

    def file(self) -> str:
        f = self.f
        self.out(0, f'syntax = "{"proto3" if self.proto3 else "proto2"}";')
        if f.package:
            self.out(0, f"package {f.package};")
        imports = []
        for i, dep in enumerate(f.dependency):
            kind = "public " if i in f.public_dependency else "weak " if i in f.weak_dependency else ""
            imports.append(f'import {kind}"{CEscape(dep, as_utf8=True)}";')
        for line in self.order(imports, str):
            self.out(0, line)
        for option in self.options(f.options):
            self.out(0, f"option {option};")
        prefix = f".{f.package}" if f.package else ""
        for m in self.order(f.message_type, lambda m: m.name):
            self.message(m, 0, f"{prefix}.{m.name}")
        for e in self.order(f.enum_type, lambda e: e.name):
            self.enum(e, 0)
        self.extensions(f.extension, 0)
        for s in self.order(f.service, lambda s: s.name):
            self.service(s)
        return "\n".join(self.lines) + "\n"

    def options(self, options: Any) -> list[str]:
        out = []
        for fd, value in options.ListFields():
            name = f"({fd.full_name})" if fd.is_extension else fd.name
            values = value if _repeated(fd) else [value]
            out += [f"{name} = {_value(fd, v)}" for v in values]
        return sorted(out) if self.normalize else out

    def message(self, m: Any, depth: int, full: str) -> None:
        self.out(depth, f"message {m.name} {{")
        for option in self.options(m.options):
            self.out(depth + 1, f"option {option};")
        real_oneofs: dict[int, list[tuple[int, Any]]] = {}
        # each plain field, and each oneof where its first field stands (by number when normalized)
        entries: list[tuple[int, tuple[str, Any]]] = []
        for i, field in enumerate(m.field):
            position = field.number if self.normalize else i
            if field.HasField("oneof_index") and not field.proto3_optional:
                real_oneofs.setdefault(field.oneof_index, []).append((position, field))
            else:
                entries.append((position, ("field", field)))
        entries += [(min(p for p, _ in members), ("oneof", index)) for index, members in real_oneofs.items()]
        for _, (kind, item) in sorted(entries, key=lambda e: e[0]):
            if kind == "field":
                self.field(item, depth + 1, in_oneof=False)
            else:
                decl = m.oneof_decl[item]
                self.out(depth + 1, f"oneof {decl.name} {{")
                for option in self.options(decl.options):
                    self.out(depth + 2, f"option {option};")
                for _, f in sorted(real_oneofs[item], key=lambda pf: pf[0]):
                    self.field(f, depth + 2, in_oneof=True)
                self.out(depth + 1, "}")
        for r in m.extension_range:
            self.out(depth + 1, f"extensions {_range(r.start, r.end)};")
        if m.reserved_range:
            self.out(depth + 1, f"reserved {', '.join(_range(r.start, r.end) for r in m.reserved_range)};")
        if m.reserved_name:
            names = ", ".join(f'"{n}"' for n in m.reserved_name)
            self.out(depth + 1, f"reserved {names};")
        for nested in self.order(m.nested_type, lambda n: n.name):
            if not nested.options.map_entry:
                self.message(nested, depth + 1, f"{full}.{nested.name}")
        for e in self.order(m.enum_type, lambda e: e.name):
            self.enum(e, depth + 1)
        self.extensions(m.extension, depth + 1)
        self.out(depth, "}")

    def field(self, f: Any, depth: int, in_oneof: bool) -> None:
        if f.type == FIELD.TYPE_GROUP:
            raise SchemaError("proto2 groups are not supported")
        entry = self.maps.get(f.type_name) if f.type == FIELD.TYPE_MESSAGE else None
        if entry is not None:
            key, value = entry.field[0], entry.field[1]
            type_ = f"map<{_type(key)}, {_type(value)}>"
            label = ""
        else:
            type_ = _type(f)
            if in_oneof:
                label = ""
            elif self.proto3:
                label = "repeated " if f.label == FIELD.LABEL_REPEATED else "optional " if f.proto3_optional else ""
            else:
                label = _LABELS[f.label] + " "
        options = []
        if f.HasField("default_value"):
            options.append(f"default = {_default(f)}")
        if f.HasField("json_name") and f.json_name != _json_name(f.name):
            options.append(f'json_name = "{CEscape(f.json_name, as_utf8=True)}"')
        options += self.options(f.options)
        suffix = f" [{', '.join(options)}]" if options else ""
        self.out(depth, f"{label}{type_} {f.name} = {f.number}{suffix};")

    def enum(self, e: Any, depth: int) -> None:
        self.out(depth, f"enum {e.name} {{")
        for option in self.options(e.options):
            self.out(depth + 1, f"option {option};")
        for v in self.order(e.value, lambda v: (v.number, v.name)):
            options = self.options(v.options)
            suffix = f" [{', '.join(options)}]" if options else ""
            self.out(depth + 1, f"{v.name} = {v.number}{suffix};")
        if e.reserved_range:  # enum reserved ranges are inclusive
            self.out(depth + 1, "reserved " + ", ".join(_range(r.start, r.end + 1) for r in e.reserved_range) + ";")
        if e.reserved_name:
            self.out(depth + 1, "reserved " + ", ".join(f'"{n}"' for n in e.reserved_name) + ";")
        self.out(depth, "}")

    def extensions(self, fields: Any, depth: int) -> None:
        for f in self.order(fields, lambda f: (f.extendee, f.number)):
            self.out(depth, f"extend {f.extendee} {{")
            self.field(f, depth + 1, in_oneof=False)
            self.out(depth, "}")

    def service(self, s: Any) -> None:
        self.out(0, f"service {s.name} {{")
        for option in self.options(s.options):
            self.out(1, f"option {option};")
        for m in self.order(s.method, lambda m: m.name):
            request = f"stream {m.input_type}" if m.client_streaming else m.input_type
            response = f"stream {m.output_type}" if m.server_streaming else m.output_type
            options = self.options(m.options)
            if options:
                self.out(1, f"rpc {m.name}({request}) returns ({response}) {{")
                for option in options:
                    self.out(2, f"option {option};")
                self.out(1, "}")
            else:
                self.out(1, f"rpc {m.name}({request}) returns ({response});")
        self.out(0, "}")


def _repeated(fd: Any) -> bool:
    """protobuf 7 has FieldDescriptor.is_repeated and no label; older ones the other way round."""
    if hasattr(fd, "is_repeated"):
        return bool(fd.is_repeated)
    return bool(fd.label == fd.LABEL_REPEATED)


def _map_entries(file: descriptor_pb2.FileDescriptorProto) -> dict[str, Any]:
    out: dict[str, Any] = {}
    prefix = f".{file.package}" if file.package else ""
    stack = [(f"{prefix}.{m.name}", m) for m in file.message_type]
    while stack:
        full, m = stack.pop()
        if m.options.map_entry and len(m.field) == 2:
            out[full] = m
        stack.extend((f"{full}.{n.name}", n) for n in m.nested_type)
    return out


def _type(f: Any) -> str:
    if f.type in _SCALARS:
        return _SCALARS[f.type]
    if not f.type_name:
        raise SchemaError(f"field {f.name!r} has no type")
    return str(f.type_name)


def _range(start: int, end: int) -> str:
    """A descriptor's half-open [start, end) range as .proto writes it (inclusive, "max" for the top)."""
    last = end - 1
    if start == last:
        return str(start)
    return f"{start} to {'max' if last >= _MAX_FIELD_NUMBER else last}"


def _json_name(name: str) -> str:
    out, upper = [], False
    for c in name:
        if c == "_":
            upper = True
        elif upper:
            out.append(c.upper())
            upper = False
        else:
            out.append(c)
    return "".join(out)


def _default(f: Any) -> str:
    value = f.default_value
    if f.type == FIELD.TYPE_STRING:
        return f'"{CEscape(value, as_utf8=True)}"'
    if f.type == FIELD.TYPE_BYTES:  # the descriptor holds bytes defaults C-escaped already
        return f'"{value}"'
    return str(value)


def _value(fd: Any, value: Any) -> str:
    if fd.type == fd.TYPE_ENUM:
        named = fd.enum_type.values_by_number.get(value)
        return named.name if named is not None else str(value)
    if fd.type == fd.TYPE_BOOL:
        return "true" if value else "false"
    if fd.type == fd.TYPE_STRING:
        return f'"{CEscape(value, as_utf8=True)}"'
    if fd.type == fd.TYPE_BYTES:
        return f'"{CEscape(value, as_utf8=False)}"'
    if fd.type in (fd.TYPE_MESSAGE, fd.TYPE_GROUP):
        return "{ " + text_format.MessageToString(value, as_one_line=True) + " }"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return repr(value) if isinstance(value, float) else str(value)
