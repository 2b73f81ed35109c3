"""Hypothesis strategies for valid requests of every API the broker knows, derived from the message schemas.

One generic walk over kafka-python's schema fields (see schema.py) instead of one strategy per API: ints in
their type's range, strings and bytes (None where the version allows it), arrays and arrays of structs,
nested (nullable) structs and tagged fields. Sizes stay small so that examples are cheap.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.schemas.fields.base import BaseField
from kafka.protocol.schemas.fields.struct import StructField

from tests.fuzz import schema
from tests.fuzz.apis import KNOWN_APIS, ApiSpec
from tests.fuzz.schema import Kind

MAX_ARRAY = 3
MAX_DEPTH_ARRAY = 2  # arrays nested deeper than the top level hold at most this many items
MAX_TEXT = 8
MAX_BYTES = 24


def api_versions() -> list[tuple[ApiSpec, int]]:
    """Every (API, version) pair the broker may be asked, in a stable order (test ids)."""
    return [(spec, v) for spec in KNOWN_APIS.values() for v in range(spec.min_version, spec.max_version + 1)]


def _scalar(field: BaseField) -> st.SearchStrategy[Any]:
    k = schema.kind(field)
    if k is Kind.INT:
        lo, hi = schema.int_range(field)
        return st.integers(lo, hi)
    if k is Kind.FLOAT:
        return st.floats(allow_nan=False)
    if k is Kind.BOOL:
        return st.booleans()
    if k is Kind.UUID:
        # the all-zero UUID is the wire form of "no id": it decodes as None, so generate None for it
        return st.none() | st.uuids().filter(lambda u: u.int != 0)
    if k is Kind.STRING:
        return st.text(max_size=MAX_TEXT)
    if k is Kind.BYTES:
        return st.binary(max_size=MAX_BYTES)
    if k is Kind.BITFIELD:
        return st.none() | st.frozensets(st.integers(0, 30), max_size=4).map(set)
    raise AssertionError(f"not a scalar: {field!r}")


def field_value(field: BaseField, version: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values a field may take at `version`; `flexible` says whether nested tagged fields are on the wire."""
    k = schema.kind(field)
    if schema.is_tagged(field, version):
        flexible = False  # a tagged struct's own tagged fields are not encoded (kafka-python writes none)
    size = MAX_ARRAY if depth == 0 else MAX_DEPTH_ARRAY
    if k is Kind.STRUCT_ARRAY:
        elem = struct_value(schema.element_struct(field), version, flexible, depth + 1)
        values: st.SearchStrategy[Any] = st.lists(elem, max_size=size)
    elif k is Kind.ARRAY:
        values = st.lists(_scalar(schema.element_field(field)), max_size=size)
    elif k is Kind.STRUCT:
        values = struct_value(field, version, flexible, depth + 1)
    else:
        values = _scalar(field)
    if schema.nullable(field, version) and k is not Kind.UUID and k is not Kind.BITFIELD:
        values = st.none() | values
    return values


def struct_value(struct: StructField, version: int, flexible: bool, depth: int = 0) -> st.SearchStrategy[Any]:
    fields = schema.version_fields(struct, version, flexible)
    parts = {f.name: field_value(f, version, flexible, depth) for f in fields}
    return st.fixed_dictionaries(parts).map(lambda kw: struct.data_class(version=version, **kw))


def request(spec: ApiSpec, version: int) -> st.SearchStrategy[ApiMessage]:
    """Valid requests of one API at one version."""
    flexible = spec.flexible(version)
    fields = schema.version_fields(spec.request._struct, version, flexible)
    parts = {f.name: field_value(f, version, flexible) for f in fields}
    return st.fixed_dictionaries(parts).map(lambda kw: spec.request(version=version, **kw))


def encoded_request(spec: ApiSpec, version: int) -> st.SearchStrategy[tuple[ApiMessage, bytes]]:
    """(request, its encoded body) pairs."""
    return request(spec, version).map(lambda m: (m, bytes(m.encode(version=version))))


def framed_request(spec: ApiSpec, version: int) -> st.SearchStrategy[bytes]:
    """Header (v1, or v2 for flexible versions) plus body: what the dispatcher gets, without the size prefix."""

    def frame(args: tuple[ApiMessage, int, str | None]) -> bytes:
        message, correlation_id, client_id = args
        message.with_header(correlation_id=correlation_id, client_id=client_id)
        return bytes(message.encode(version=version, header=True))

    ids = st.integers(-(2**31), 2**31 - 1)
    clients = st.none() | st.text(max_size=MAX_TEXT)
    return st.tuples(request(spec, version), ids, clients).map(frame)
