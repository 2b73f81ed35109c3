"""Avro schemas: parse (fastavro validates types and defaults; our own walk checks names, unions, fields and
fixed sizes and builds the tree the other two jobs use), the canonical and normalized texts, and Avro's
schema-resolution rules (a reader schema reading data written with a writer schema) for compatibility."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from fastavro.schema import parse_schema as _fastavro_parse

from odradek.schema_registry.errors import SchemaError
from odradek.schema_registry.limits import check_references, load_json

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# (writer type, reader type) pairs Avro's resolution promotes.
PROMOTIONS = frozenset({("int", "long"), ("int", "float"), ("int", "double"), ("long", "float"),
                        ("long", "double"), ("float", "double"), ("string", "bytes"), ("bytes", "string")})
# Attribute order of the canonical text (then the others, sorted) and of the normalized one.
_CANONICAL_ORDER = ("type", "name", "namespace", "doc", "fields", "symbols", "items", "values", "size",
                    "default", "aliases", "order")
_FIELD_ORDER = ("name", "type", "doc", "default", "order", "aliases")
_LOGICAL = ("logicalType", "precision", "scale")


class AvroSchema:
    """A parsed Avro schema: `raw` the JSON value as given, `names` every named type it can use (its own and
    its references', full name -> node), `defined_names` the full names it defines itself, in order."""

    schema_type = "AVRO"

    def __init__(self, raw: Any, root: Any, names: dict[str, dict[str, Any]], defined: tuple[str, ...],
                 fastavro_names: dict[str, Any]) -> None:
        self.raw = raw
        self.root = root
        self.names = names
        self.defined_names = defined
        self._fastavro_names = fastavro_names

    def canonical(self) -> str:
        return _compact(_ordered(self.raw))

    def normalized(self) -> str:
        return _compact(_normal(self.root))

    def resolved(self) -> str:
        """The normalized form with every referenced named type written inline where first used (Confluent's
        `format=resolved`): one self-contained schema."""
        own = set(self.defined_names)
        return _compact(_normal(self.root, {n: v for n, v in self.names.items() if n not in own}))

    def reader_errors(self, writer: object, reader_label: str, writer_label: str) -> list[str]:
        assert isinstance(writer, AvroSchema)
        return _Resolver(self, writer, reader_label, writer_label).check(self.root, writer.root, "/")


def parse(text: str, references: Mapping[str, str] | None = None) -> AvroSchema:
    """Parse `text`; the referenced schemas' named types become usable by name, in whatever order the
    references come (each is parsed once the types it needs are known)."""
    names: dict[str, dict[str, Any]] = {}
    fastavro_names: dict[str, Any] = {}
    pending = list(check_references(references).items())
    while pending:
        progress, failed = False, []
        for ref_name, ref_text in pending:
            try:
                done = _parse_one(ref_text, dict(names), dict(fastavro_names), f"referenced schema {ref_name!r}")
            except _UnknownName:
                failed.append((ref_name, ref_text))
                continue
            names, fastavro_names, progress = done.names, done._fastavro_names, True
        if not progress:
            raise SchemaError(f"referenced schema {failed[0][0]!r} uses a type no other reference defines")
        pending = failed
    try:
        return _parse_one(text, dict(names), dict(fastavro_names), "schema")
    except _UnknownName as e:
        raise SchemaError(str(e)) from None


class _UnknownName(SchemaError):
    pass


def _parse_one(text: str, names: dict[str, dict[str, Any]], fastavro_names: dict[str, Any],
               what: str) -> AvroSchema:
    raw = load_json(text, what)
    walker = _Walker(names, what)
    root = walker.node(raw, "")
    walker.check_defaults()
    try:
        _fastavro_parse(raw, named_schemas=fastavro_names, _write_hint=False)
    except RecursionError:
        raise SchemaError(f"the {what} nests too deeply") from None
    except Exception as e:  # fastavro raises several types (SchemaParseException, KeyError, TypeError...)
        raise SchemaError(f"invalid Avro {what}: {e}") from None
    return AvroSchema(raw, root, names, tuple(walker.defined), fastavro_names)


class _Walker:
    """Checks a schema's JSON value against Avro's specification and builds its tree: primitives as their
    name, named types as a dict the first time (then their full name), unions as lists."""

    def __init__(self, names: dict[str, dict[str, Any]], what: str) -> None:
        self.names = names
        self.what = what
        self.defined: list[str] = []
        self.defaults: list[tuple[str, Any, Any]] = []  # (where, type node, default) checked at the end

    def fail(self, message: str) -> SchemaError:
        return SchemaError(f"invalid Avro {self.what}: {message}")

    def node(self, js: Any, space: str) -> Any:
        if isinstance(js, str):
            return self.lookup(js, space)
        if isinstance(js, list):
            return self.union(js, space)
        if not isinstance(js, dict):
            raise self.fail(f"{json.dumps(js)[:80]} is not a schema (a type name, an object or a union)")
        kind = js.get("type")
        if kind is None:
            raise self.fail(f"no 'type' in {json.dumps(js)[:80]}")
        if kind in NAMED:
            return self.named(js, kind, space)
        if kind == "array":
            if "items" not in js:
                raise self.fail("an array has no 'items'")
            return {"type": "array", "items": self.node(js["items"], space)}
        if kind == "map":
            if "values" not in js:
                raise self.fail("a map has no 'values'")
            return {"type": "map", "values": self.node(js["values"], space)}
        if isinstance(kind, str) and kind in PRIMITIVES:
            logical = {k: js[k] for k in _LOGICAL if k in js}
            return {"type": kind, **logical} if logical else kind
        return self.node(kind, space)

    def lookup(self, name: str, space: str) -> str:
        if name in PRIMITIVES:
            return name
        full = _full(name, space)
        if full in self.names:
            return full
        if name in self.names:
            return name
        raise _UnknownName(f"invalid Avro {self.what}: unknown type {name!r}")

    def union(self, branches: list[Any], space: str) -> list[Any]:
        out: list[Any] = []
        seen: set[str] = set()
        for branch in branches:
            node = self.node(branch, space)
            if isinstance(node, list):
                raise self.fail("a union may not immediately contain another union")
            key = _branch_key(node)
            if key in seen:
                raise self.fail(f"the union has {key!r} twice")
            seen.add(key)
            out.append(node)
        return out

    def name(self, value: Any, space: str, what: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(f"{what} {json.dumps(value)[:80]} is not a name")
        full = _full(value, space)
        if not all(_NAME.match(part) for part in full.split(".")):
            raise self.fail(f"{what} {value!r} is not a valid Avro name")
        return full

    def named(self, js: dict[str, Any], kind: str, space: str) -> dict[str, Any]:
        namespace = js.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise self.fail(f"namespace {json.dumps(namespace)[:80]} is not a string")
        full = self.name(js.get("name"), space if namespace is None else namespace, f"the {kind} name")
        if full.rsplit(".", 1)[-1] in PRIMITIVES:
            raise self.fail(f"a {kind} may not be named {full!r}")
        if full in self.names:
            raise self.fail(f"the type {full!r} is defined twice")
        inner = full.rpartition(".")[0]
        node: dict[str, Any] = {"type": "record" if kind == "error" else kind, "name": full}
        self.names[full] = node
        self.defined.append(full)
        node["aliases"] = self.aliases(js, inner)
        if kind in ("record", "error"):
            node["fields"] = self.fields(js.get("fields"), inner, full)
        elif kind == "enum":
            symbols = js.get("symbols")
            if not isinstance(symbols, list):
                raise self.fail(f"the enum {full!r} has no list of 'symbols'")
            for symbol in symbols:
                if not isinstance(symbol, str) or not _NAME.match(symbol):
                    raise self.fail(f"enum symbol {json.dumps(symbol)[:80]} of {full!r} is not a valid name")
            if len(set(symbols)) != len(symbols):
                raise self.fail(f"the enum {full!r} has a symbol twice")
            node["symbols"] = list(symbols)
            if "default" in js:
                if js["default"] not in symbols:
                    raise self.fail(f"the default of enum {full!r} is not one of its symbols")
                node["default"] = js["default"]
        else:
            size = js.get("size")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise self.fail(f"the fixed {full!r} has no non-negative integer 'size'")
            node["size"] = size
            node.update({k: js[k] for k in _LOGICAL if k in js})
        return node

    def check_defaults(self) -> None:
        """Every field default is a value of the field's type (Avro's Java parser's rule, a union's default
        fitting any of its branches, as Java accepts)."""
        for where, type_node, value in self.defaults:
            if not _fits(type_node, value, self.names):
                raise self.fail(f"the default of {where} is not a {_describe(type_node).lower()}: "
                                f"{json.dumps(value)[:80]}")

    def aliases(self, js: dict[str, Any], space: str) -> list[str]:
        aliases = js.get("aliases", [])
        if not isinstance(aliases, list):
            raise self.fail("'aliases' is not a list")
        return sorted({self.name(a, space, "alias") for a in aliases})

    def fields(self, fields: Any, space: str, record: str) -> list[dict[str, Any]]:
        if not isinstance(fields, list):
            raise self.fail(f"the record {record!r} has no list of 'fields'")
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        for field in fields:
            if not isinstance(field, dict):
                raise self.fail(f"a field of {record!r} is not an object")
            name = field.get("name")
            if not isinstance(name, str) or not _NAME.match(name):
                raise self.fail(f"field name {json.dumps(name)[:80]} of {record!r} is not a valid name")
            if name in seen:
                raise self.fail(f"the record {record!r} has the field {name!r} twice")
            seen.add(name)
            if "type" not in field:
                raise self.fail(f"the field {name!r} of {record!r} has no type")
            node: dict[str, Any] = {"name": name, "type": self.node(field["type"], space)}
            if "default" in field:
                node["default"] = field["default"]
                self.defaults.append((f"field {name!r} of {record!r}", node["type"], field["default"]))
            aliases = field.get("aliases", [])
            if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
                raise self.fail(f"the aliases of field {name!r} of {record!r} are not a list of names")
            node["aliases"] = sorted(set(aliases))
            order = field.get("order", "ascending")
            if order not in ("ascending", "descending", "ignore"):
                raise self.fail(f"the order of field {name!r} of {record!r} is not ascending, descending or ignore")
            node["order"] = order
            out.append(node)
        return out


_INT_RANGE = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


def _fits(node: Any, value: Any, names: dict[str, dict[str, Any]]) -> bool:
    if isinstance(node, str) and node not in PRIMITIVES:
        node = names[node]
    if isinstance(node, list):
        return any(_fits(branch, value, names) for branch in node)
    kind = _kind(node)
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in _INT_RANGE:
        low, high = _INT_RANGE[kind]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in ("float", "double"):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("string", "bytes", "fixed"):
        return isinstance(value, str)
    if kind == "enum":
        return isinstance(value, str) and value in node["symbols"]
    if kind == "array":
        return isinstance(value, list) and all(_fits(node["items"], v, names) for v in value)
    if kind == "map":
        return isinstance(value, dict) and all(_fits(node["values"], v, names) for v in value.values())
    if not isinstance(value, dict):
        return False
    return all(_fits(f["type"], value[f["name"]], names) if f["name"] in value else "default" in f
               for f in node["fields"])


def _full(name: str, space: str) -> str:
    return name if "." in name or not space else f"{space}.{name}"


def _branch_key(node: Any) -> str:
    """What a union may hold only once: each primitive, array, map, and each named type by its name."""
    if isinstance(node, str):
        return node
    return str(node.get("name") or node["type"])


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _ordered(value: Any, order: tuple[str, ...] = _CANONICAL_ORDER) -> Any:
    """The JSON value with every object's attributes in one order (Avro's Java toString's), {"type": "int"}
    written "int"."""
    if isinstance(value, list):
        return [_ordered(v) for v in value]
    if not isinstance(value, dict):
        return value
    if set(value) == {"type"} and value["type"] in PRIMITIVES:
        return value["type"]
    keys = [k for k in order if k in value] + sorted(k for k in value if k not in order)
    out = {k: _ordered(value[k]) for k in keys}
    if isinstance(value.get("fields"), list):
        out["fields"] = [_ordered(f, _FIELD_ORDER) for f in value["fields"]]
    return out


def _normal(node: Any, inline: dict[str, Any] | None = None) -> Any:
    """The resolution form: Avro's parsing canonical form (full names, no namespaces or docs) plus what
    resolution reads: defaults, aliases (full names, sorted), non-default field order, logical types.
    Named types in `inline` are written in full where first used (and removed from it)."""
    if isinstance(node, str):
        if inline and node in inline:
            return _normal(inline.pop(node), inline)
        return node
    if isinstance(node, list):
        return [_normal(b, inline) for b in node]
    kind = node["type"]
    if kind == "array":
        return {"type": "array", "items": _normal(node["items"], inline)}
    if kind == "map":
        return {"type": "map", "values": _normal(node["values"], inline)}
    if kind in PRIMITIVES:
        return {"type": kind, **{k: node[k] for k in _LOGICAL if k in node}}
    out: dict[str, Any] = {"name": node["name"], "type": kind}
    if kind == "record":
        out["fields"] = [_normal_field(f, inline) for f in node["fields"]]
    elif kind == "enum":
        out["symbols"] = node["symbols"]
    else:
        out["size"] = node["size"]
    if "default" in node:
        out["default"] = node["default"]
    if node["aliases"]:
        out["aliases"] = node["aliases"]
    out.update({k: node[k] for k in _LOGICAL if k in node})
    return out


def _normal_field(field: dict[str, Any], inline: dict[str, Any] | None) -> dict[str, Any]:
    out = {"name": field["name"], "type": _normal(field["type"], inline)}
    if "default" in field:
        out["default"] = field["default"]
    if field["aliases"]:
        out["aliases"] = field["aliases"]
    if field["order"] != "ascending":
        out["order"] = field["order"]
    return out


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    if isinstance(node, str):
        return node
    return str(node["type"])


def _describe(node: Any) -> str:
    if isinstance(node, list):
        return "UNION"
    if isinstance(node, str):
        return node.upper()
    return str(node.get("name") or node["type"].upper())


class _Resolver:
    """Avro's schema resolution (the specification's rules, as Avro's Java SchemaCompatibility applies them
    for Confluent): every error found reading the writer's data with the reader's schema."""

    def __init__(self, reader: AvroSchema, writer: AvroSchema, reader_label: str, writer_label: str) -> None:
        self.reader_names = reader.names
        self.writer_names = writer.names
        self.r = reader_label
        self.w = writer_label
        self.done: dict[tuple[str, str], list[str]] = {}

    def error(self, kind: str, description: str, info: str) -> list[str]:
        return [f"{{errorType:'{kind}', description:'{description}', additionalInfo:'{info}'}}"]

    def check(self, reader: Any, writer: Any, path: str) -> list[str]:
        if isinstance(reader, str) and reader not in PRIMITIVES:
            reader = self.reader_names[reader]
        if isinstance(writer, str) and writer not in PRIMITIVES:
            writer = self.writer_names[writer]
        rk, wk = _kind(reader), _kind(writer)
        if wk == "union":
            errors: list[str] = []
            for i, branch in enumerate(writer):
                errors += self.check(reader, branch, f"{path.rstrip('/')}/{i}")
            return errors
        if rk == "union":
            if any(not self.check(branch, writer, path) for branch in reader):
                return []
            return self.error("MISSING_UNION_BRANCH",
                              f"The {self.r} schema is missing a type inside a union field at path '{path}' "
                              f"in the {self.w} schema", f"reader union lacking writer type: {_describe(writer)}")
        if rk != wk:
            if (wk, rk) in PROMOTIONS:
                return []
            return self.error("TYPE_MISMATCH",
                              f"The type (path '{path}') of a field in the {self.r} schema does not match "
                              f"with the {self.w} schema",
                              f"reader type: {_describe(reader).upper()} not compatible with writer type: "
                              f"{_describe(writer).upper()}")
        if rk in PRIMITIVES:
            return []
        if rk == "array":
            return self.check(reader["items"], writer["items"], f"{path.rstrip('/')}/items")
        if rk == "map":
            return self.check(reader["values"], writer["values"], f"{path.rstrip('/')}/values")
        if not _same_name(reader, writer):
            return self.error("NAME_MISMATCH", f"The name of the schema has changed (path '{path}')",
                              f"expected: {writer['name']}")
        if rk == "fixed":
            if reader["size"] != writer["size"]:
                return self.error("FIXED_SIZE_MISMATCH",
                                  f"The size of FIXED type field at path '{path}' in the {self.r} schema does "
                                  f"not match with the {self.w} schema",
                                  f"expected: {writer['size']}, found: {reader['size']}")
            return []
        if rk == "enum":
            missing = [s for s in writer["symbols"] if s not in reader["symbols"]]
            if missing and "default" not in reader:
                return self.error("MISSING_ENUM_SYMBOLS",
                                  f"The {self.r} schema is missing enum symbols '{', '.join(missing)}' at path "
                                  f"'{path}' in the {self.w} schema", f"[{', '.join(missing)}]")
            return []
        key = (reader["name"], writer["name"])
        if key in self.done:  # checked already, or being checked (a recursive type): assume it holds
            return self.done[key]
        self.done[key] = []
        self.done[key] = self.record(reader, writer, path)
        return self.done[key]

    def record(self, reader: dict[str, Any], writer: dict[str, Any], path: str) -> list[str]:
        by_name = {f["name"]: f for f in writer["fields"]}
        errors: list[str] = []
        for i, field in enumerate(reader["fields"]):
            where = f"{path.rstrip('/')}/fields/{i}"
            found = by_name.get(field["name"])
            if found is None:
                found = next((by_name[a] for a in field["aliases"] if a in by_name), None)
            if found is None:
                if "default" not in field:
                    errors += self.error("READER_FIELD_MISSING_DEFAULT_VALUE",
                                         f"The field '{field['name']}' at path '{where}' in the {self.r} schema "
                                         f"has no default value and is missing in the {self.w} schema",
                                         field["name"])
                continue
            errors += self.check(field["type"], found["type"], f"{where}/type")
        return errors


def _same_name(reader: dict[str, Any], writer: dict[str, Any]) -> bool:
    """Avro's rule: the unqualified names match, or the reader lists the writer's full name as an alias."""
    if reader["name"].rsplit(".", 1)[-1] == writer["name"].rsplit(".", 1)[-1]:
        return True
    return writer["name"] in reader["aliases"]
