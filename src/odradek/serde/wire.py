"""Confluent's wire format of a record's key or value: magic byte 0, the schema id (4 bytes, big-endian,
signed), then the serialized payload (Avro binary for Avro schemas)."""

from __future__ import annotations

import struct

MAGIC = 0
HEADER = struct.Struct(">bi")


class WireFormatError(ValueError):
    """The bytes are not in Confluent's wire format (no magic byte 0, or too short)."""


def frame(schema_id: int, payload: bytes) -> bytes:
    """The payload behind the magic byte and the schema id."""
    return HEADER.pack(MAGIC, schema_id) + payload


def unframe(data: bytes) -> tuple[int, memoryview]:
    """(schema id, payload) of framed bytes; WireFormatError when they are not framed."""
    if len(data) < HEADER.size:
        raise WireFormatError(f"{len(data)} bytes, fewer than the {HEADER.size} of Confluent's wire-format header "
                              "(magic byte 0 and a 4-byte schema id)")
    magic, schema_id = HEADER.unpack_from(data)
    if magic != MAGIC:
        raise WireFormatError(f"unknown magic byte 0x{data[0]:02x} (Confluent's wire format starts with 0x00): "
                              "not written by a schema-registry serializer")
    return schema_id, memoryview(data)[HEADER.size:]
