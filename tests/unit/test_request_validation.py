"""The structural check of request bodies (protocol/validate.py) against kafka-python's own encoder:
random well-formed requests of every API and version the broker serves pass and decode; every strict
prefix of one fails; a null in a field whose schema forbids it fails naming the field; hostile counts,
lengths and tagged-field floods fail fast."""

from __future__ import annotations

import random
import string
import struct
import time
import uuid
from typing import Any

import pytest
from kafka.protocol.consumer import ListOffsetsRequest
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from odradek.protocol.framing import write_uvarint
from odradek.protocol.validate import MalformedRequest, check_request
from odradek.server.dispatcher import APIS

CASES = [(api.request, v) for api in APIS.values() if not api.raw for v in range(api.min_version, api.max_version + 1)]
SIMPLE = {
    "int8": lambda r: r.randint(-128, 127), "int16": lambda r: r.randint(-(1 << 15), (1 << 15) - 1),
    "uint16": lambda r: r.randint(0, 65535), "int32": lambda r: r.randint(-(1 << 31), (1 << 31) - 1),
    "int64": lambda r: r.randint(-(1 << 63), (1 << 63) - 1), "bool": lambda r: r.random() < 0.5,
    "float64": lambda r: r.random(), "uuid": lambda r: uuid.UUID(int=r.getrandbits(128)),
    "string": lambda r: "".join(r.choices(string.ascii_letters, k=r.randint(0, 12))),
    "bytes": lambda r: r.randbytes(r.randint(0, 20)), "records": lambda r: r.randbytes(r.randint(0, 20)),
}


def _value(field: Any, version: int, rng: random.Random, nulls: list[str], path: str) -> Any:
    nullable = field.nullable_for_version_q(version)
    if nullable and rng.random() < 0.2:
        return None
    if not nullable and (field.is_array() or field.type_str in ("string", "bytes", "records")):
        nulls.append(path)
    if field.is_struct_array():
        return [_struct(field.array_of, version, rng, nulls, f"{path}[{i}]") for i in range(rng.randint(0, 3))]
    if field.is_array():
        return [SIMPLE[field.array_of.type_str](rng) for _ in range(rng.randint(0, 3))]
    if field.is_struct():
        return _struct(field, version, rng, nulls, path)
    return SIMPLE[field.type_str](rng)


def _struct(st: Any, version: int, rng: random.Random, nulls: list[str], path: str) -> Any:
    kwargs = {f.name: _value(f, version, rng, nulls, f"{path}.{f.name}".lstrip("."))
              for f in st.untagged_fields(version)}
    return st.data_class(version=version, **kwargs)


def random_request(cls: Any, version: int, rng: random.Random) -> tuple[Any, list[str]]:
    """A random request and the paths of its reference fields that the schema says are not nullable."""
    nulls: list[str] = []
    kwargs = {f.name: _value(f, version, rng, nulls, f.name) for f in cls._struct.untagged_fields(version)}
    return cls(version=version, **kwargs), nulls


def _parent(obj: Any, path: str) -> tuple[Any, str]:
    *parents, last = path.replace("[", ".[").split(".")
    for p in parents:
        obj = obj[int(p[1:-1])] if p.startswith("[") else getattr(obj, p)
    return obj, last


def _normal(path: str) -> str:
    """kafka-python's snake_case path and the schema's camelCase path compare equal."""
    return path.replace("_", "").lower()


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.name}-v{v}" for c, v in CASES])
def test_well_formed_requests_pass_and_prefixes_fail(cls: Any, version: int) -> None:
    rng = random.Random(f"{cls.name}{version}")
    for _ in range(5):
        request, _nulls = random_request(cls, version, rng)
        body = memoryview(bytes(request.encode(version=version)))
        check_request(cls, version, body)
        cls.decode(body, version=version)
        for cut in sorted({0, len(body) // 2, len(body) - 1} & set(range(len(body)))):
            with pytest.raises(MalformedRequest):
                check_request(cls, version, body[:cut])


@pytest.mark.parametrize(("cls", "version"), CASES, ids=[f"{c.name}-v{v}" for c, v in CASES])
def test_null_where_not_nullable_names_the_field(cls: Any, version: int) -> None:
    rng = random.Random(f"null{cls.name}{version}")
    request, nulls = random_request(cls, version, rng)
    for path in nulls:
        request, _ = random_request(cls, version, random.Random(f"null{cls.name}{version}"))
        setattr(*_parent(request, path), None)
        body = memoryview(bytes(request.encode(version=version)))
        if getattr(*_parent(cls.decode(body, version=version), path)) is not None:
            continue  # kafka-python's encoder replaced the null (Metadata v0 topics)
        with pytest.raises(MalformedRequest, match="is null but not nullable") as err:
            check_request(cls, version, body)
        assert _normal(str(err.value).split(" ")[0]) == _normal(path)


_uvarint = write_uvarint


def test_huge_array_count_fails_at_once() -> None:
    body = memoryview(struct.pack(">i", 2**31 - 1) + b"\x00" * 10)
    with pytest.raises(MalformedRequest, match="topics has 2147483647 elements but only 10 bytes"):
        check_request(MetadataRequest, 1, body)


def test_negative_count_other_than_minus_one_is_null() -> None:
    body = memoryview(struct.pack(">ii", -1, -7))  # ListOffsets v1: replica_id, then topics (never null)
    with pytest.raises(MalformedRequest, match="^topics is null but not nullable"):
        check_request(ListOffsetsRequest, 1, body)


def test_string_past_the_end_of_the_frame() -> None:
    # kafka-python alone would decode this as key='abc' (the length is cut short silently).
    body = memoryview(struct.pack(">h", 1000) + b"abc")
    with pytest.raises(MalformedRequest, match="^key has length 1000 but only 3 bytes are left"):
        check_request(FindCoordinatorRequest, 0, body)


def test_tagged_field_flood_is_refused_in_linear_time() -> None:
    # Metadata v12: each topic carries a tagged field; kafka-python would copy the rest of the frame for
    # each one (quadratic: minutes for a few MB).
    n = 400_000
    item = b"\x00" * 16 + b"\x01" + b"\x01\x05\x01\x00"
    body = memoryview(_uvarint(n + 1) + item * n + b"\x00\x00\x00")
    started = time.monotonic()
    with pytest.raises(MalformedRequest, match="too many tagged-field sections"):
        check_request(MetadataRequest, 12, body)
    assert time.monotonic() - started < 5


def test_a_few_tagged_fields_pass() -> None:
    item = b"\x00" * 16 + b"\x01" + b"\x01\x05\x01\x00"
    body = memoryview(_uvarint(4) + item * 3 + b"\x00\x00\x00")
    check_request(MetadataRequest, 12, body)
    assert len(MetadataRequest.decode(body, version=12).topics) == 3


def test_overlong_varint() -> None:
    with pytest.raises(MalformedRequest, match="varint longer than 5 bytes"):
        check_request(MetadataRequest, 12, memoryview(b"\xff" * 50))
