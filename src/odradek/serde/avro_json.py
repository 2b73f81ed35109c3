"""Avro's JSON encoding read straight from Avro's binary encoding, as Confluent's console consumer prints a
record: unions as {"branch": value} (null as null), bytes and fixed as text of \\u00XX characters, enums as
their symbol, logical types as their underlying type (a timestamp-millis is its long).

Why not fastavro's reader and then its JSON writer: the writer guesses each union's branch from the decoded
value, and guesses wrong (a record in a union with a map is written as the map) or fails (an IndexError in
its parser on records of a recursive type nested three deep); the binary says which branch was written.
Pure Python: Python's recursion limit bounds how deep a recursive schema's record may nest (RecursionError),
and since the caller refuses schemas with arrays of zero-byte items (`avro.has_zero_byte_arrays`), every
item a record claims costs at least a byte of it, so the work is bounded by the payload's size.
"""

from __future__ import annotations

import struct
from typing import Any

_FLOAT, _DOUBLE = struct.Struct("<f"), struct.Struct("<d")
NAMED = ("record", "error", "enum", "fixed")


class BinaryReader:
    """One payload, read as the JSON value of a schema (fastavro's parsed form) with its named types."""

    def __init__(self, data: bytes | memoryview, named: dict[str, Any]) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.named = named

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise EOFError(f"{n} bytes claimed at byte {self.pos}, {len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def long(self) -> int:
        """A zig-zag varint (int and long alike)."""
        result = shift = 0
        while True:
            if self.pos >= len(self.data):
                raise EOFError(f"a number runs past the end at byte {self.pos}")
            b = self.data[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7
            if shift > 63:
                raise ValueError(f"a number longer than 10 bytes at byte {self.pos}")

    def blocks(self) -> int:
        """The next block's item count of an array or map (0 at its end); a negative count is followed by
        the block's size in bytes, which is skipped over."""
        count = self.long()
        if count < 0:
            self.long()
            count = -count
        return count

    def read(self, s: Any) -> Any:
        if isinstance(s, str):
            named = self.named.get(s)
            return self.primitive(s) if named is None else self.read(named)
        if isinstance(s, list):
            index = self.long()
            if not 0 <= index < len(s):
                raise ValueError(f"union branch {index} of a union of {len(s)}")
            branch = s[index]
            value = self.read(branch)
            return None if branch == "null" else {branch_name(branch): value}
        kind = s["type"]
        if kind in ("record", "error"):
            return {f["name"]: self.read(f["type"]) for f in s["fields"]}
        if kind == "enum":
            index = self.long()
            if not 0 <= index < len(s["symbols"]):
                raise ValueError(f"enum symbol {index} of {len(s['symbols'])}")
            return s["symbols"][index]
        if kind == "fixed":
            return self.take(int(s["size"])).decode("latin-1")
        if kind == "array":
            items: list[Any] = []
            while count := self.blocks():
                items.extend(self.read(s["items"]) for _ in range(count))
            return items
        if kind == "map":
            entries: dict[str, Any] = {}
            while count := self.blocks():
                for _ in range(count):
                    key = self.primitive("string")
                    entries[key] = self.read(s["values"])
            return entries
        return self.read(kind)  # {"type": "long", "logicalType": ...}: the underlying type

    def primitive(self, name: str) -> Any:
        if name == "null":
            return None
        if name == "boolean":
            b = self.take(1)[0]
            if b > 1:
                raise ValueError(f"boolean byte {b} at byte {self.pos - 1}")
            return b == 1
        if name in ("int", "long"):
            return self.long()
        if name == "float":
            return _FLOAT.unpack(self.take(4))[0]
        if name == "double":
            return _DOUBLE.unpack(self.take(8))[0]
        if name == "bytes":
            return self.take(self.long()).decode("latin-1")
        if name == "string":
            return self.take(self.long()).decode("utf-8")
        raise ValueError(f"unknown type {name!r}")


def branch_name(branch: Any) -> str:
    """The name a union's branch goes by in Avro's JSON encoding: a named type's full name, else its type."""
    if isinstance(branch, str):
        return branch
    kind = branch["type"]
    if kind in NAMED:
        return str(branch["name"])
    return kind if isinstance(kind, str) else branch_name(kind)


def read_json(data: bytes | memoryview, schema: Any, named: dict[str, Any]) -> tuple[Any, int]:
    """(the JSON value of the payload, how many of its bytes it took)."""
    reader = BinaryReader(data, named)
    return reader.read(schema), reader.pos
