"""The schema ids of produced records in Confluent's wire format (magic byte 0, then the schema id as a 4-byte
big-endian int, then the serialized data), for Schema ID Validation; sans-io.

`scan_schema_ids` reads, for every record of a partition's produced data, what its key and its value carry: a
schema id, NULL (a null key or value, which validation lets through as Confluent's does) or NOT_WIRE (bytes that
do not start with the wire format). It walks each record's length-prefixed fields without building records,
and decompresses compressed batches within a byte budget (`decompress_bounded`): a batch that inflates past it
is refused, never held (`records.decompress_bounded`). Only topics that turn validation on pay for any of this."""

from __future__ import annotations

import struct

from odradek.protocol.errors import CorruptRecordError
from odradek.protocol.records import BATCH_OVERHEAD, BatchHeader, decompress_bounded, read_varint

# outside the int32 range of schema ids (a record may carry any id, -1 included)
NULL = -(1 << 32)  # the key or value is null
NOT_WIRE = NULL - 1  # present, but not in Confluent's wire format (no magic byte 0, or under 5 bytes)
WIRE_MAGIC = 0
_ID = struct.Struct(">i")


def scan_schema_ids(records: memoryview, batches: list[tuple[int, BatchHeader]],
                    limit: int) -> tuple[list[int], list[int]]:
    """The keys' and the values' schema ids of every record of the partition's data, in order (the index in
    the lists is KIP-467's batch_index): each a schema id, NULL or NOT_WIRE. `batches` are the batches of `records` (positions and
    headers, their sizes checked); the compressed ones may decompress to `limit` bytes in all. Malformed
    records are CORRUPT_MESSAGE."""
    keys: list[int] = []
    values: list[int] = []
    budget = limit
    for pos, header in batches:
        payload = records[pos + BATCH_OVERHEAD : pos + header.size]
        if header.compression:
            data = bytes(decompress_bounded(header.compression, payload, budget))
            budget -= len(data)
        else:
            data = bytes(payload)
        try:
            _scan(data, header.records_count, keys, values)
        except IndexError:
            raise CorruptRecordError(message=f"Record batch at offset {header.base_offset} is malformed") from None
    return keys, values


def _scan(data: bytes, count: int, keys: list[int], values: list[int]) -> None:
    """The hot loop, a microsecond or so a record: varints of one byte (lengths under 64) are read inline, a
    null key (the common case) is one comparison, the timestamp and offset deltas are skipped, not decoded."""
    end = len(data)
    unpack = _ID.unpack_from
    add_key, add_value = keys.append, values.append
    p = 0
    for _ in range(count):
        length = data[p]
        if length < 0x80:
            p += 1
            length = (length >> 1) ^ -(length & 1)
        else:
            length, p = read_varint(data, p)
        stop = p + length
        if length <= 0 or stop > end:
            raise CorruptRecordError(message=f"Record of length {length} does not fit its batch")
        q = p + 1  # record attributes
        while data[q] > 0x7F:  # timestamp delta
            q += 1
        q += 1
        while data[q] > 0x7F:  # offset delta
            q += 1
        q += 1
        b = data[q]
        if b == 1:  # zigzag -1: a null key
            add_key(NULL)
            q += 1
        else:
            if b < 0x80:
                key_length = (b >> 1) ^ -(b & 1)
                q += 1
            else:
                key_length, q = read_varint(data, q)
            if key_length < 0:
                add_key(NULL)
            elif key_length < 5 or data[q]:  # a first byte other than WIRE_MAGIC (0)
                add_key(NOT_WIRE)
            else:
                add_key(unpack(data, q + 1)[0])
            if key_length > 0:
                q += key_length
            if q >= stop:
                raise CorruptRecordError(message="Record key runs past the end of the record")
        b = data[q]
        if b < 0x80:
            value_length = (b >> 1) ^ -(b & 1)
            q += 1
        else:
            value_length, q = read_varint(data, q)
        if value_length > 0 and q + value_length > stop:
            raise CorruptRecordError(message="Record value runs past the end of the record")
        if value_length < 0:
            add_value(NULL)
        elif value_length < 5 or data[q]:
            add_value(NOT_WIRE)
        else:
            add_value(unpack(data, q + 1)[0])
        p = stop
