"""JSON Schema schemas: parse (the `jsonschema` library checks the schema against its draft's meta-schema,
draft 7 unless `$schema` names another; `referencing` resolves every `$ref`, local or to a referenced schema
by name), the canonical and normalized texts, and Confluent's JSON Schema compatibility: the differences
from a writer schema to a reader schema, each of a kind Confluent calls compatible or not (its STRICT
policy: a property added to an open content model breaks backward compatibility)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import referencing.jsonschema
from jsonschema.exceptions import SchemaError as MetaSchemaError
from jsonschema.validators import validator_for
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable

from odradek.schema_registry.errors import SchemaError
from odradek.schema_registry.limits import check_references, load_json

# Comparisons one compatibility check may make (pairs of subschemas): a bound on hostile schemas whose
# oneOf/anyOf nests make the matching grow fast. Past it the check reports the schemas as incompatible.
MAX_COMPARISONS = 50_000
# how deep comparisons may nest ($ref hops, each a few Python frames and a call into referencing's Rust maps):
# deeper, the schemas are "too complex to compare", well before Python's recursion limit, which a RecursionError
# raised inside a Rust extension turns into a panic
MAX_COMPARE_DEPTH = 100

# The differences Confluent's STRICT policy accepts: the reader accepts all the writer did.
COMPATIBLE = frozenset("""ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED PATTERN_REMOVED
MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED EXCLUSIVE_MAXIMUM_INCREASED
EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED
MULTIPLE_OF_REMOVED REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED
DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED MAX_PROPERTIES_REMOVED
MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED ADDITIONAL_PROPERTIES_ADDED ADDITIONAL_PROPERTIES_EXTENDED
PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL
PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED
MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED UNIQUE_ITEMS_REMOVED ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED
ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL ENUM_ARRAY_EXTENDED
COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED NOT_TYPE_NARROWED""".split())  # noqa: SIM905

_OBJECT_WORDS = ("properties", "required", "additionalProperties", "patternProperties", "minProperties",
                 "maxProperties", "dependencies", "dependentRequired", "dependentSchemas", "propertyNames")
_ARRAY_WORDS = ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains")
_STRING_WORDS = ("minLength", "maxLength", "pattern")
_NUMBER_WORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_COMBINERS = ("allOf", "anyOf", "oneOf")
_ANNOTATIONS = frozenset({"$schema", "$id", "id", "title", "description", "default", "examples", "$comment",
                          "definitions", "$defs", "format", "readOnly", "writeOnly", "deprecated"})


class JsonSchema:
    """A parsed JSON Schema: `raw` the JSON value as given, `draft` the meta-schema's URI it was checked
    against, `resolver` the `referencing` resolver its `$ref`s go through."""

    schema_type = "JSON"

    def __init__(self, raw: Any, draft: str, registry: Registry[Any], root: Resource[Any]) -> None:
        self.raw = raw
        self.draft = draft
        self.registry = registry
        self.root = root

    def resolver(self) -> Any:
        return self.registry.resolver_with_root(self.root)

    def canonical(self) -> str:
        return json.dumps(self.raw, separators=(",", ":"), ensure_ascii=False)

    def normalized(self) -> str:
        return json.dumps(self.raw, separators=(",", ":"), ensure_ascii=False, sort_keys=True)

    def reader_errors(self, writer: object, reader_label: str, writer_label: str) -> list[str]:
        assert isinstance(writer, JsonSchema)
        diff = _Diff()
        found = diff.compare(_Node(writer.raw, writer.resolver()), _Node(self.raw, self.resolver()))
        messages = [f"Found incompatible change: Difference{{jsonPath='#{path}', type={kind}}} "
                    f"({reader_label} schema reading data of the {writer_label})"
                    for path, kind in found if kind not in COMPATIBLE]
        if diff.exhausted:
            return [f"The schemas are too complex to compare (more than {MAX_COMPARISONS} comparisons "
                    f"of subschemas, or nested more than {MAX_COMPARE_DEPTH} deep): treated as incompatible"]
        return list(dict.fromkeys(messages))


def parse(text: str, references: Mapping[str, str] | None = None) -> JsonSchema:
    raw = load_json(text)
    if not isinstance(raw, dict | bool):
        raise SchemaError("a JSON Schema is an object or a boolean")
    default = validator_for({}, default=_draft7())
    cls = validator_for(raw, default=default) if isinstance(raw, dict) else default
    if isinstance(raw, dict) and "$schema" in raw and cls is default and raw["$schema"] not in _draft7_ids():
        raise SchemaError(f"unknown $schema {str(raw['$schema'])[:100]!r}")
    try:
        cls.check_schema(raw)
    except MetaSchemaError as e:
        where = "/".join(str(p) for p in e.absolute_path)
        raise SchemaError(f"invalid JSON Schema at '#/{where}': {e.message[:300]}") from None
    spec = referencing.jsonschema.specification_with(cls.META_SCHEMA["$schema"],
                                                     default=referencing.jsonschema.DRAFT7)
    resources: list[tuple[str, Resource[Any]]] = []
    for name, ref_text in check_references(references).items():
        contents = load_json(ref_text, f"referenced schema {name!r}")
        resource = spec.create_resource(contents) if not isinstance(contents, dict) else \
            Resource.from_contents(contents, default_specification=spec)
        resources.append((name, resource))
        if resource.id():
            resources.append((str(resource.id()), resource))
    root = spec.create_resource(raw) if not isinstance(raw, dict) else \
        Resource.from_contents(raw, default_specification=spec)
    registry: Registry[Any] = Registry().with_resources(resources)
    schema = JsonSchema(raw, cls.META_SCHEMA["$schema"], registry, root)
    _check_refs(schema)
    return schema


def _draft7() -> Any:
    from jsonschema import Draft7Validator
    return Draft7Validator


def _draft7_ids() -> tuple[str, ...]:
    return ("http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-07/schema")


def _check_refs(schema: JsonSchema) -> None:
    """Every `$ref` in the schema resolves (locally, or to a referenced schema)."""
    seen: set[int] = set()
    stack = [_Node(schema.raw, schema.resolver())]
    while stack:
        node = stack.pop()
        if id(node.value) in seen:
            continue
        seen.add(id(node.value))
        if isinstance(node.value, dict):
            if isinstance(node.value.get("$ref"), str):
                stack.append(node.resolved())  # refuses a circular chain of bare $refs here, not mid-check
            stack.extend(node.child(v) for k, v in node.value.items()
                         if k not in ("const", "enum", "default", "examples") and isinstance(v, dict | list))
        elif isinstance(node.value, list):
            stack.extend(node.child(v) for v in node.value if isinstance(v, dict | list))


class _Node:
    """A subschema and the resolver its `$ref`s resolve with."""

    __slots__ = ("value", "resolver")

    def __init__(self, value: Any, resolver: Any) -> None:
        self.value = value
        self.resolver = resolver

    def child(self, value: Any) -> _Node:
        return _Node(value, self.resolver)

    def follow(self) -> _Node:
        ref = self.value["$ref"]
        try:
            resolved = self.resolver.lookup(ref)
        except RecursionError:
            raise
        except Unresolvable:
            raise SchemaError(f"$ref {ref[:200]!r} does not resolve (a local definition or a reference's name)")\
                from None
        except Exception as e:  # referencing raises a few others on malformed pointers
            raise SchemaError(f"$ref {ref[:200]!r}: {e}") from None
        return _Node(resolved.contents, resolved.resolver)

    def resolved(self) -> _Node:
        node, hops = self, 0
        while isinstance(node.value, dict) and isinstance(node.value.get("$ref"), str):
            node, hops = node.follow(), hops + 1
            if hops > 32:
                raise SchemaError("$ref chain too long or circular")
        return node


def _kind(value: Any) -> str:
    """What Everit (Confluent's model) would make of a subschema: empty, false, combined, enum, const, not,
    or a type (number covers integer)."""
    if value is True or value == {}:
        return "empty"
    if value is False:
        return "false"
    if not isinstance(value, dict):
        return "empty"
    if any(k in value for k in _COMBINERS):
        return "combined"
    if "enum" in value:
        return "enum"
    if "const" in value:
        return "const"
    if "not" in value:
        return "not"
    t = value.get("type")
    if isinstance(t, list):
        return "combined" if len(t) != 1 else _type_kind(t[0])
    if isinstance(t, str):
        return _type_kind(t)
    for words, kind in ((_OBJECT_WORDS, "object"), (_ARRAY_WORDS, "array"), (_STRING_WORDS, "string"),
                        (_NUMBER_WORDS, "number")):
        if any(w in value for w in words):
            return kind
    return "empty"


def _type_kind(t: str) -> str:
    return "number" if t == "integer" else t


def _subschemas(value: dict[str, Any]) -> tuple[str, list[Any]]:
    """A combined subschema's criterion and members: its one combiner, a list of types as anyOf, or
    several combiners (or one beside other keywords) as allOf of the parts."""
    combiners = [k for k in _COMBINERS if k in value]
    rest = {k: v for k, v in value.items() if k not in _COMBINERS}
    if not combiners:  # "type": [a, b]
        return "anyOf", [{**rest, "type": t} for t in value["type"]]
    if len(combiners) == 1 and not (set(rest) - _ANNOTATIONS):
        members = value[combiners[0]]
        return combiners[0], members if isinstance(members, list) else []
    return "allOf", ([rest] if set(rest) - _ANNOTATIONS else []) + [{k: value[k]} for k in combiners]


def _number(value: Any) -> Fraction | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        return Fraction(value)
    except (ValueError, OverflowError):
        return None


class _Diff:
    """Confluent's JSON Schema differences, from an original (writer) schema to an update (reader)."""

    def __init__(self) -> None:
        self.memo: dict[tuple[int, int], list[tuple[str, str]]] = {}
        self.budget = MAX_COMPARISONS
        self.depth = 0
        self.exhausted = False
        # keyed by id(): the values are kept alive with their entries, so no id is reused for another value
        # (a "type" list's members are dicts made on the fly)
        self.texts: dict[int, tuple[Any, str]] = {}
        self.alive: list[tuple[Any, Any]] = []

    def distinct(self, members: list[Any]) -> list[Any]:
        """The members less repeats (Confluent compares them as a set)."""
        out: dict[str, Any] = {}
        for member in members:
            if id(member) not in self.texts:
                self.texts[id(member)] = (member, json.dumps(member, sort_keys=True))
            out.setdefault(self.texts[id(member)][1], member)
        return list(out.values())

    def compatible(self, diffs: list[tuple[str, str]]) -> bool:
        return all(kind in COMPATIBLE for _, kind in diffs)

    def compare(self, original: _Node, update: _Node) -> list[tuple[str, str]]:
        original, update = original.resolved(), update.resolved()
        key = (id(original.value), id(update.value))
        if key in self.memo:  # done, or under way (a recursive $ref): assumed compatible meanwhile
            return self.memo[key]
        self.budget -= 1
        if self.budget < 0 or self.depth >= MAX_COMPARE_DEPTH:
            self.exhausted = True
            return [("", "TOO_COMPLEX_TO_COMPARE")]
        self.memo[key] = []
        self.alive.append((original.value, update.value))
        self.depth += 1
        try:
            self.memo[key] = self.types(original, update)
        finally:
            self.depth -= 1
        return self.memo[key]

    def sub(self, path: str, original: _Node, update: _Node) -> list[tuple[str, str]]:
        return [(f"/{path}{p}", kind) for p, kind in self.compare(original, update)]

    def types(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        ok, uk = _kind(o.value), _kind(u.value)
        if ok != "combined" and uk == "combined":
            criterion, members = _subschemas(u.value)
            if len(members) == 1:
                diffs = self.compare(o, u.child(members[0]))
                if self.compatible(diffs):
                    return diffs
            elif criterion in ("anyOf", "oneOf"):
                for member in members:
                    diffs = self.compare(o, u.child(member))
                    if self.compatible(diffs):
                        return [*diffs, ("", "SUM_TYPE_EXTENDED")]
        elif ok == "combined" and uk != "combined":
            criterion, members = _subschemas(o.value)
            if len(members) == 1:
                diffs = self.compare(o.child(members[0]), u)
                if self.compatible(diffs):
                    return diffs
            elif criterion == "allOf":
                for member in members:
                    diffs = self.compare(o.child(member), u)
                    if self.compatible(diffs):
                        return [*diffs, ("", "PRODUCT_TYPE_NARROWED")]
        if ok != uk:
            if ok == "false" or uk == "empty":
                return []
            return [("", "TYPE_CHANGED")]
        if ok in ("empty", "false", "boolean", "null"):
            return []
        diffs = getattr(self, ok)(o, u)
        if o.value.get("default") != u.value.get("default"):
            diffs.append(("", "DEFAULT_CHANGED"))
        return diffs

    def string(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        diffs = _limit(o.value, u.value, "maxLength", "MAX_LENGTH", upper=True)
        diffs += _limit(o.value, u.value, "minLength", "MIN_LENGTH", upper=False)
        op, up = o.value.get("pattern"), u.value.get("pattern")
        if op != up:
            kind = "PATTERN_ADDED" if op is None else "PATTERN_REMOVED" if up is None else "PATTERN_CHANGED"
            diffs.append(("/pattern", kind))
        return diffs

    def number(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        ov, uv = o.value, u.value
        diffs = _limit(ov, uv, "maximum", "MAXIMUM", upper=True)
        diffs += _limit(ov, uv, "minimum", "MINIMUM", upper=False)
        diffs += _limit(ov, uv, "exclusiveMaximum", "EXCLUSIVE_MAXIMUM", upper=True)
        diffs += _limit(ov, uv, "exclusiveMinimum", "EXCLUSIVE_MINIMUM", upper=False)
        om, um = _number(ov.get("multipleOf")), _number(uv.get("multipleOf"))
        if om != um:
            if om is None:
                diffs.append(("/multipleOf", "MULTIPLE_OF_ADDED"))
            elif um is None:
                diffs.append(("/multipleOf", "MULTIPLE_OF_REMOVED"))
            elif um and (om / um).denominator == 1:
                diffs.append(("/multipleOf", "MULTIPLE_OF_REDUCED"))
            elif om and (um / om).denominator == 1:
                diffs.append(("/multipleOf", "MULTIPLE_OF_EXPANDED"))
            else:
                diffs.append(("/multipleOf", "MULTIPLE_OF_CHANGED"))
        o_int, u_int = _is_integer(ov), _is_integer(uv)
        if o_int != u_int:
            diffs.append(("", "TYPE_EXTENDED" if o_int else "TYPE_NARROWED"))
        return diffs

    def enum(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        ov, uv = _values(o.value.get("enum")), _values(u.value.get("enum"))
        if ov == uv:
            return []
        if ov <= uv:
            return [("/enum", "ENUM_ARRAY_EXTENDED")]
        return [("/enum", "ENUM_ARRAY_NARROWED" if uv <= ov else "ENUM_ARRAY_CHANGED")]

    def const(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        return [] if _values([o.value["const"]]) == _values([u.value["const"]]) else [("/const", "CONST_CHANGED")]

    def not_(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        # not A accepts all not B did when A accepts no more than B: B reads A's data
        diffs = self.compare(u.child(u.value["not"]), o.child(o.value["not"]))
        if not diffs:
            return []
        return [("/not", "NOT_TYPE_NARROWED" if self.compatible(diffs) else "NOT_TYPE_EXTENDED")]

    def combined(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        oc, om = _subschemas(o.value)
        uc, um = _subschemas(u.value)
        diffs: list[tuple[str, str]] = []
        if oc != uc:
            if uc == "anyOf" or (len(om) == 1 and (len(um) == 1 or uc == "oneOf")) or \
                    (len(um) == 1 and oc == "allOf"):
                diffs.append(("", "COMBINED_TYPE_EXTENDED"))
            else:
                return [("", "COMBINED_TYPE_CHANGED")]
        om, um = self.distinct(om), self.distinct(um)
        if len(om) < len(um):
            diffs.append(("", "PRODUCT_TYPE_EXTENDED" if uc == "allOf" else "SUM_TYPE_EXTENDED"))
        elif len(om) > len(um):
            diffs.append(("", "SUM_TYPE_NARROWED" if oc in ("anyOf", "oneOf") else "PRODUCT_TYPE_NARROWED"))
        edges: dict[int, dict[int, list[tuple[str, str]]]] = {}
        for i, a in enumerate(om):
            for j, b in enumerate(um):
                found = self.compare(o.child(a), u.child(b))
                if self.compatible(found):
                    edges.setdefault(i, {})[j] = [(f"/{oc}/{i}{p}", k) for p, k in found]
        matching = _match(edges)
        for i, j in matching.items():
            diffs += edges[i][j]
        if len(matching) < min(len(om), len(um)):
            diffs.append(("", "COMBINED_TYPE_SUBSCHEMAS_CHANGED"))
        return diffs

    def object(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        ov, uv = o.value, u.value
        op, up = _dict(ov.get("properties")), _dict(uv.get("properties"))
        oreq, ureq = set(_list(ov.get("required"))), set(_list(uv.get("required")))
        diffs: list[tuple[str, str]] = []
        for name in op:
            if name in up:
                if name in oreq and name not in ureq:
                    diffs.append((f"/required/{name}", "REQUIRED_ATTRIBUTE_REMOVED"))
                elif name in ureq and name not in oreq:
                    diffs.append((f"/required/{name}", "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
                                  if _has_default(up[name]) else "REQUIRED_ATTRIBUTE_ADDED"))
        for name in sorted(set(op) | set(up)):
            where = f"/properties/{name}"
            if name not in up:
                if _open(uv):
                    diffs.append((where, "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"))
                    continue
                partial = _partial(uv, name)
                if partial is not None:
                    found = self.compare(o.child(op[name]), u.child(partial))
                    diffs += [(where + p, k) for p, k in found]
                    diffs.append((where, "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                                  if self.compatible(found) else
                                  "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"))
                elif op[name] is False:
                    diffs.append((where, "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"))
                else:
                    diffs.append((where, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"))
            elif name not in op:
                if _open(ov):
                    if _kind(up[name]) == "empty":
                        diffs.append((where, "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"))
                    elif name in ureq:
                        diffs.append((where, "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"
                                      if _has_default(up[name]) else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"))
                    else:
                        diffs.append((where, "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"))
                    continue
                partial = _partial(ov, name)
                if partial is not None:
                    found = self.compare(o.child(partial), u.child(up[name]))
                    diffs += [(where + p, k) for p, k in found]
                    diffs.append((where, "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
                                  if self.compatible(found) else
                                  "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"))
                if name in ureq:
                    diffs.append((where, "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                                  if _has_default(up[name]) else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"))
                else:
                    diffs.append((where, "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"))
            else:
                diffs += self.sub(f"properties/{name}", o.child(op[name]), u.child(up[name]))
        diffs += self.extra(o, u, "additionalProperties", "ADDITIONAL_PROPERTIES")
        diffs += _limit(ov, uv, "maxProperties", "MAX_PROPERTIES", upper=True)
        diffs += _limit(ov, uv, "minProperties", "MIN_PROPERTIES", upper=False)
        od, ud = _dict(ov.get("dependencies")), _dict(uv.get("dependencies"))
        for name in sorted(set(od) | set(ud)):
            if isinstance(od.get(name), list) or isinstance(ud.get(name), list):
                a, b = set(_list(od.get(name))), set(_list(ud.get(name)))
                kind = ("DEPENDENCY_ARRAY_REMOVED" if name not in ud else "DEPENDENCY_ARRAY_ADDED"
                        if name not in od else None if a == b else "DEPENDENCY_ARRAY_EXTENDED" if b >= a
                        else "DEPENDENCY_ARRAY_NARROWED" if a >= b else "DEPENDENCY_ARRAY_CHANGED")
                if kind:
                    diffs.append((f"/dependencies/{name}", kind))
            elif name not in ud:
                diffs.append((f"/dependencies/{name}", "DEPENDENCY_SCHEMA_REMOVED"))
            elif name not in od:
                diffs.append((f"/dependencies/{name}", "DEPENDENCY_SCHEMA_ADDED"))
            else:
                diffs += self.sub(f"dependencies/{name}", o.child(od[name]), u.child(ud[name]))
        return diffs

    def extra(self, o: _Node, u: _Node, word: str, kind: str) -> list[tuple[str, str]]:
        """additionalProperties / additionalItems: allowed or not, and with which schema."""
        oa, ua = o.value.get(word, True), u.value.get(word, True)
        if (oa is not False) != (ua is not False):
            return [(f"/{word}", f"{kind}_ADDED" if ua is not False else f"{kind}_REMOVED")]
        o_schema = None if oa in (True, False, {}) else oa
        u_schema = None if ua in (True, False, {}) else ua
        if o_schema is None and u_schema is not None:
            return [(f"/{word}", f"{kind}_NARROWED")]
        if u_schema is None and o_schema is not None:
            return [(f"/{word}", f"{kind}_EXTENDED")]
        if o_schema is None:
            return []
        return self.sub(word, o.child(o_schema), u.child(u_schema))

    def array(self, o: _Node, u: _Node) -> list[tuple[str, str]]:
        ov, uv = o.value, u.value
        oi, ui = _items(ov), _items(uv)
        diffs: list[tuple[str, str]] = []
        if isinstance(oi, list) or isinstance(ui, list):
            ot, ut = _list(oi), _list(ui)
            o_extra, u_extra = _extra_items(ov), _extra_items(uv)
            for i in range(max(len(ot), len(ut))):
                where = f"/items/{i}"
                if i < len(ot) and i < len(ut):
                    diffs += self.sub(f"items/{i}", o.child(ot[i]), u.child(ut[i]))
                elif i < len(ot):  # the update has fewer positional items
                    diffs.append((where, "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL" if u_extra is True else
                                  "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL" if ot[i] is False else
                                  "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"))
                else:
                    diffs.append((where, "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL" if o_extra is False else
                                  "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL" if _kind(ut[i]) == "empty"
                                  else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"))
            diffs += self.extra(_Node(_as_extra(ov), o.resolver), _Node(_as_extra(uv), u.resolver),
                                "additionalItems", "ADDITIONAL_ITEMS")
        elif oi is not None or ui is not None:
            diffs += self.sub("items", o.child(True if oi is None else oi), u.child(True if ui is None else ui))
        diffs += _limit(ov, uv, "maxItems", "MAX_ITEMS", upper=True)
        diffs += _limit(ov, uv, "minItems", "MIN_ITEMS", upper=False)
        if bool(ov.get("uniqueItems")) != bool(uv.get("uniqueItems")):
            diffs.append(("/uniqueItems", "UNIQUE_ITEMS_REMOVED" if ov.get("uniqueItems") else "UNIQUE_ITEMS_ADDED"))
        return diffs


setattr(_Diff, "not", _Diff.not_)  # noqa: B010 - the kind's name is a keyword


def _limit(o: dict[str, Any], u: dict[str, Any], word: str, kind: str, upper: bool) -> list[tuple[str, str]]:
    """An upper bound may grow or go, a lower bound may shrink or go: the reader then accepts more."""
    a, b = _number(o.get(word)), _number(u.get(word))
    if a == b:
        return []
    if a is None:
        return [(f"/{word}", f"{kind}_ADDED")]
    if b is None:
        return [(f"/{word}", f"{kind}_REMOVED")]
    grew = b > a
    if upper:
        return [(f"/{word}", f"{kind}_INCREASED" if grew else f"{kind}_DECREASED")]
    return [(f"/{word}", f"{kind}_INCREASED" if grew else f"{kind}_DECREASED")]


def _is_integer(value: dict[str, Any]) -> bool:
    t = value.get("type")
    return t == "integer" or t == ["integer"]


def _values(values: Any) -> frozenset[str]:
    return frozenset(json.dumps(v, sort_keys=True) for v in _list(values))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _has_default(value: Any) -> bool:
    return isinstance(value, dict) and "default" in value


def _open(value: dict[str, Any]) -> bool:
    return value.get("additionalProperties", True) in (True, {}) and not value.get("patternProperties")


def _partial(value: dict[str, Any], name: str) -> Any:
    """The schema a partially open content model gives an undeclared property, or None (closed)."""
    for pattern, schema in _dict(value.get("patternProperties")).items():
        try:
            if re.search(pattern, name):
                return schema
        except re.error:
            continue
    extra = value.get("additionalProperties", True)
    return extra if isinstance(extra, dict) and extra else None


def _items(value: dict[str, Any]) -> Any:
    """Positional item schemas (a list) or one schema for all items (or None)."""
    if "prefixItems" in value:
        return value["prefixItems"]
    return value.get("items")


def _extra_items(value: dict[str, Any]) -> Any:
    extra = value.get("items", True) if "prefixItems" in value else value.get("additionalItems", True)
    return True if extra == {} else extra


def _as_extra(value: dict[str, Any]) -> dict[str, Any]:
    return {"additionalItems": _extra_items(value)}


def _match(edges: dict[int, dict[int, list[tuple[str, str]]]]) -> dict[int, int]:
    """A maximum matching of the compatible (original, update) member pairs (augmenting paths)."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in edges.get(i, {}):
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in edges:
        augment(i, set())
    return {i: j for j, i in owner.items()}
