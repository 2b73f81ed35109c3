"""Avro in Confluent's wire format, over fastavro: a serializer that registers its schema under a subject
and frames each datum with the schema's id, and a deserializer that reads the id, fetches the writer's
schema (cached) and decodes, optionally resolving into a reader schema.

A record that cannot be decoded (no magic byte, too short, an id the registry does not know, a schema of
another type, a payload its schema does not read, nesting deeper than Python's recursion limit) raises DecodeError with the reason; a registry that
cannot be reached raises RegistryError: that is no fault of the record, and callers that skip bad records
must not skip because of it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import fastavro
from fastavro import _read_py

from odradek.serde.avro_json import read_json
from odradek.serde.registry_client import SCHEMA_NOT_FOUND, RegistryClient, RegistryError
from odradek.serde.wire import WireFormatError, frame, unframe


class DecodeError(ValueError):
    """This record's bytes cannot be decoded; the message says why (and the schema id once known)."""


@lru_cache(maxsize=256)
def parse_schema(text: str) -> Any:
    """fastavro's parsed form of an Avro schema's JSON text (cached: parsing is the costly part)."""
    return fastavro.parse_schema(json.loads(text))


@lru_cache(maxsize=256)
def named_types(text: str) -> dict[str, Any]:
    """The named types of an Avro schema by full name, in fastavro's parsed form, whatever the top-level type
    (fastavro notes them in the parsed schema itself only when that is a record)."""
    named: dict[str, Any] = {}
    fastavro.parse_schema(json.loads(text), named_schemas=named)
    return named


@lru_cache(maxsize=256)
def has_zero_byte_arrays(text: str) -> bool:
    """Whether the schema has an array whose items can take no bytes at all (null, an empty record, a
    0-size fixed): a record could then claim 2**63 items in a few bytes and the decoder would loop and fill
    memory (Avro's Java library bounds collection sizes for that reason). With every item at least a byte,
    a claimed count runs out of payload after len(payload) items."""
    parsed = parse_schema(text)
    named = named_types(text)

    def empty(s: Any, seen: frozenset[str]) -> bool:
        if isinstance(s, str):
            if s == "null":
                return True
            return s in named and s not in seen and empty(named[s], seen | {s})
        if isinstance(s, list):
            return False  # a union's branch index takes a byte
        kind = s.get("type")
        if kind in ("record", "error"):
            return all(empty(f["type"], seen) for f in s.get("fields", ()))
        if kind == "fixed":
            return int(s.get("size", 1)) == 0
        if isinstance(kind, dict | list) or (isinstance(kind, str) and kind not in ("array", "map", "enum")):
            return empty(kind, seen)
        return False

    def walk(s: Any, seen: frozenset[str]) -> bool:
        if isinstance(s, str):
            return s in named and s not in seen and walk(named[s], seen | {s})
        if isinstance(s, list):
            return any(walk(b, seen) for b in s)
        kind = s.get("type")
        if kind == "array":
            return empty(s["items"], frozenset()) or walk(s["items"], seen)
        if kind == "map":
            return walk(s["values"], seen)
        if kind in ("record", "error"):
            return any(walk(f["type"], seen) for f in s.get("fields", ()))
        return isinstance(kind, dict | list) and walk(kind, seen)

    return walk(parsed, frozenset())


@lru_cache(maxsize=256)
def is_recursive(text: str) -> bool:
    """Whether a named type of the schema contains itself (a linked list, a tree), so that a payload decides
    how deep its data nests."""
    named = named_types(text)

    def refs(s: Any, out: set[str]) -> set[str]:
        """The named types `s` refers to, not looking inside those named types' own definitions."""
        if isinstance(s, str):
            if s in named:
                out.add(s)
        elif isinstance(s, list):
            for b in s:
                refs(b, out)
        elif isinstance(s, dict):
            for f in s.get("fields", ()):
                refs(f["type"], out)
            for key in ("items", "values"):
                if key in s:
                    refs(s[key], out)
            if isinstance(s.get("type"), dict | list):
                refs(s["type"], out)
        return out

    edges = {name: refs({k: v for k, v in d.items() if k != "name"} if isinstance(d, dict) else d, set())
             for name, d in named.items()}

    def reaches(start: str) -> bool:
        todo, seen = list(edges.get(start, ())), set()
        while todo:
            n = todo.pop()
            if n == start:
                return True
            if n not in seen:
                seen.add(n)
                todo.extend(edges.get(n, ()))
        return False

    return any(reaches(name) for name in named)


def datum_reader(*texts: str | None) -> Callable[..., Any]:
    """fastavro's schemaless reader for these (writer, reader) schemas. fastavro's compiled reader recurses on
    the C stack once per level of nesting with no limit, so a record of a recursive schema nested 100,000 deep
    (two bytes a level) overflows the stack and kills the process (SIGSEGV). For recursive schemas the pure
    Python reader, which Python's recursion limit stops with a RecursionError (a DecodeError here) a few
    hundred levels down; every other schema nests no deeper than its own text, and keeps the fast reader."""
    if any(t is not None and is_recursive(t) for t in texts):
        return _read_py.schemaless_reader
    return fastavro.schemaless_reader


def schema_text(schema: Any) -> str:
    """An Avro schema (JSON text or its dict/list/str) as compact JSON text."""
    if isinstance(schema, str):
        try:
            return json.dumps(json.loads(schema), separators=(",", ":"))
        except ValueError:
            return json.dumps(schema)  # a bare primitive name such as string
    return json.dumps(schema, separators=(",", ":"))


def avro_json(parsed: Any, datum: Any) -> str:
    """Avro's JSON encoding of a decoded datum by fastavro's JSON writer (unions as {"type": value}, bytes as
    \\u00XX text), compact; it guesses union branches from the values: `AvroDeserializer.to_json` reads the
    encoding from the binary instead."""
    out = io.StringIO()
    fastavro.json_writer(out, parsed, [datum])
    return json.dumps(json.loads(out.getvalue()), separators=(",", ":"), ensure_ascii=False)


def subject_for(topic: str, is_key: bool = False) -> str:
    """TopicNameStrategy, Confluent's default: `<topic>-key` / `<topic>-value`."""
    return f"{topic}-{'key' if is_key else 'value'}"


class AvroSerializer:
    """Encodes data of one schema, registered under `subject` on first use (or by `register()`)."""

    def __init__(self, client: RegistryClient, subject: str, schema: Any) -> None:
        self.client = client
        self.subject = subject
        self.text = schema_text(schema)
        self.parsed = parse_schema(self.text)
        self._id: int | None = None

    def register(self) -> int:
        if self._id is None:
            self._id = self.client.register(self.subject, self.text)
        return self._id

    def encode(self, datum: Any) -> bytes | None:
        """The framed Avro of `datum`; None stays None (a tombstone, as Confluent's serializers do)."""
        if datum is None:
            return None
        out = io.BytesIO()
        fastavro.schemaless_writer(out, self.parsed, datum)
        return frame(self.register(), out.getvalue())


class AvroDeserializer:
    """Decodes framed Avro of any registered Avro schema; with `reader_schema`, into that schema by Avro's
    resolution rules (as a consumer with a specific reader schema does)."""

    def __init__(self, client: RegistryClient, reader_schema: Any = None) -> None:
        self.client = client
        self.reader_text = None if reader_schema is None else schema_text(reader_schema)

    def writer_schema(self, data: bytes) -> tuple[int, Any, memoryview]:
        """(schema id, parsed writer schema, payload) of framed bytes; DecodeError when there is none."""
        schema_id, parsed, payload, _ = self.writer(data)
        return schema_id, parsed, payload

    def writer(self, data: bytes) -> tuple[int, Any, memoryview, str]:
        """`writer_schema` and the writer schema's text."""
        try:
            schema_id, payload = unframe(data)
        except WireFormatError as exc:
            raise DecodeError(str(exc)) from None
        try:
            registered = self.client.schema_by_id(schema_id)
        except RegistryError as exc:
            if exc.error_code == SCHEMA_NOT_FOUND:
                raise DecodeError(f"schema id {schema_id} is unknown to the registry") from None
            raise
        if registered.schema_type != "AVRO":
            raise DecodeError(f"schema id {schema_id} is a {registered.schema_type} schema, not Avro")
        try:
            parsed = parse_schema(registered.text)
        except Exception as exc:  # the registry holds a schema fastavro cannot read
            raise DecodeError(f"schema id {schema_id}: fastavro cannot read it ({exc})") from None
        if has_zero_byte_arrays(registered.text):
            raise DecodeError(f"schema id {schema_id} has arrays of items that take no bytes (such as null): "
                              "refused, since a record could claim billions of them")
        return schema_id, parsed, payload, registered.text

    def decode(self, data: bytes) -> Any:
        """The datum of framed bytes (None for None)."""
        if data is None:
            return None
        return self.decode_with_id(data)[1]

    def decode_with_id(self, data: bytes) -> tuple[int, Any]:
        schema_id, writer, payload, text = self.writer(data)
        reader = None if self.reader_text is None else parse_schema(self.reader_text)
        try:
            return schema_id, datum_reader(text, self.reader_text)(io.BytesIO(payload), writer, reader)
        except Exception as exc:  # truncated or damaged payloads raise EOFError, UnicodeDecodeError, ...
            raise DecodeError(f"payload of {len(payload)} bytes does not decode with schema id {schema_id}: "
                              f"{type(exc).__name__}: {exc}") from None

    def to_json(self, data: bytes) -> tuple[str, int]:
        """(Avro JSON text, schema id) of framed bytes, as Confluent's AvroMessageFormatter prints them."""
        value, schema_id, _ = self.json_value(data)
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False), schema_id

    def json_value(self, data: bytes) -> tuple[Any, int, int]:
        """(the JSON value of Avro's JSON encoding, schema id, payload bytes left unread) of framed bytes,
        read straight from the binary (`avro_json.py`: fastavro's JSON writer guesses union branches)."""
        schema_id, writer, payload, text = self.writer(data)
        try:
            value, taken = read_json(payload, writer, named_types(text))
            return value, schema_id, len(payload) - taken
        except Exception as exc:  # truncated or damaged: EOFError, UnicodeDecodeError, RecursionError, ...
            raise DecodeError(f"payload of {len(payload)} bytes does not decode with schema id {schema_id}: "
                              f"{type(exc).__name__}: {exc}") from None
