"""Field-level mutations: decode a recorded frame, change values within their types, encode it again.

Byte-level mutations mostly break a request's structure, so the decoding boundary refuses them; these keep
it well-formed (an int at an extreme, an odd string, a null where one is allowed, an array emptied or its
elements repeated, a record batch altered with its CRC made valid again), so they reach the handlers.
Everything random comes from the `random.Random` passed in.
"""

from __future__ import annotations

import random
import struct
import uuid
from collections.abc import Iterator
from typing import Any

from kafka.protocol.schemas.fields.base import BaseField
from kafka.protocol.schemas.fields.struct import StructField

from odradek.protocol.framing import parse_request_header, peek_api
from odradek.protocol.records import ATTRIBUTES_OFFSET, CRC_OFFSET, crc32c
from tests.fuzz import mutations, samples, schema
from tests.fuzz.apis import KNOWN_APIS
from tests.fuzz.schema import Kind

_ODD_STRINGS = ("", " ", ".", "..", "a" * 249, "a" * 250, "é", "\x00", "../../etc", "-" * 1000, "x" * 32767)
_BATCH_MIN = 61  # a v2 record batch header


def _slots(obj: Any, struct: StructField, version: int) -> Iterator[tuple[Any, BaseField]]:
    """(object, field) for every untagged field of `obj` and of the structs it holds."""
    for f in struct.untagged_fields(version):
        yield obj, f
        value = getattr(obj, f.name)
        k = schema.kind(f)
        if k is Kind.STRUCT_ARRAY and value:
            for item in value:
                yield from _slots(item, schema.element_struct(f), version)
        elif k is Kind.STRUCT and value is not None:
            yield from _slots(value, f, version)


def _int(rng: random.Random, field: BaseField, value: int) -> int:
    lo, hi = schema.int_range(field)
    choices = (lo, hi, -1, 0, 1, hi - 1, value + 1, value - 1, rng.randint(lo, hi), rng.randint(-1000, 1000))
    return min(hi, max(lo, rng.choice(choices)))


def _string(rng: random.Random, value: str) -> str:
    roll = rng.random()
    if roll < 0.5:
        return rng.choice(_ODD_STRINGS)
    if roll < 0.8 and value:
        return value + rng.choice(("-x", "0", "é", "\x7f"))
    return "".join(rng.choice("abcXYZ09._-") for _ in range(rng.randint(1, 20)))


def mutate_batch(rng: random.Random, data: bytes) -> bytes:
    """A v2 record batch with a header field, or a record byte, changed and its CRC32C recomputed, so the
    change gets past the CRC check."""
    if len(data) < _BATCH_MIN:
        return mutations.flip_bit(data, rng.randrange(max(1, len(data) * 8)))
    out = bytearray(data)
    # header fields after the CRC: attributes, lastOffsetDelta, timestamps, producer id/epoch, sequence, count
    at = rng.choice((21, 23, 27, 35, 43, 51, 53, 57, rng.randrange(ATTRIBUTES_OFFSET, len(out))))
    if at == 21:
        struct.pack_into(">h", out, at, rng.randrange(1 << 16) - (1 << 15))
    elif at + 4 <= len(out) and rng.random() < 0.7:
        struct.pack_into(">i", out, at, rng.choice(mutations.INT32_EXTREMES + (0, 1, 2)))
    else:
        out[at] ^= 1 << rng.randrange(8)
    if rng.random() < 0.2:
        struct.pack_into(">i", out, 8, rng.choice((len(out) - 12 + 1, len(out) - 12 - 1, 0, 0x7FFFFFFF)))
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(bytes(out[ATTRIBUTES_OFFSET:])))
    return bytes(out)


def _new_value(rng: random.Random, field: BaseField, value: Any, version: int) -> Any:
    k = schema.kind(field)
    if schema.nullable(field, version) and k is not Kind.UUID and k is not Kind.BITFIELD and rng.random() < 0.15:
        return None
    if k is Kind.INT:
        return _int(rng, field, value if isinstance(value, int) else 0)
    if k is Kind.BOOL:
        return not value
    if k is Kind.FLOAT:
        return rng.choice((float("inf"), -1.0, 1e308))
    if k is Kind.UUID:
        return rng.choice((None, uuid.UUID(int=rng.getrandbits(128))))
    if k is Kind.STRING:
        return _string(rng, value or "")
    if k is Kind.BYTES:
        data = value or b""
        if field.name == "records" and data:
            return mutate_batch(rng, data)
        return rng.choice((b"", data[: len(data) // 2], data + rng.randbytes(8), rng.randbytes(rng.randint(1, 64))))
    if k is Kind.BITFIELD:
        return value
    if k in (Kind.ARRAY, Kind.STRUCT_ARRAY):
        items = list(value or [])
        roll = rng.random()
        if roll < 0.3 or not items:
            return []
        if roll < 0.7:
            return items * rng.choice((2, 3, 50))  # the same topic/partition/member many times
        return items[: len(items) // 2]
    return value  # a nested struct: its fields are slots of their own


def mutate_fields(rng: random.Random, frame: bytes, count: int = 1) -> bytes:
    """`frame` (a request header and body) with `count` values changed; the frame as it was when it does
    not decode (an API or version the broker does not serve)."""
    api_key, version, _ = peek_api(memoryview(frame))
    spec = KNOWN_APIS.get(api_key)
    if spec is None or not spec.supports(version):
        return frame
    header = parse_request_header(memoryview(frame), spec.flexible(version))
    message = spec.request.decode(memoryview(frame)[header.body_offset :], version=version)
    message._header = None  # decoded messages lack the slot that encode() updates
    slots = list(_slots(message, spec.request._struct, version))
    for _ in range(count):
        obj, f = rng.choice(slots)
        setattr(obj, f.name, _new_value(rng, f, getattr(obj, f.name), version))
    try:
        body = samples.encode_as_is(message, version)
    except Exception:  # a value the encoder cannot write (a too-long string): send what it was
        return frame
    return frame[: header.body_offset] + body
