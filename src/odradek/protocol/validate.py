"""Structural check of a request body against its message schema, before kafka-python decodes it.

kafka-python's generated decoders trust the wire: a null where the schema allows none comes back as
None (and fails later inside a handler), a string or bytes length past the end of the frame is
silently cut short, an array count is believed until the bytes run out, and every struct carrying
tagged fields copies the rest of the frame (quadratic work on hostile input). `check_request` walks
the body once against the message's JSON schema, in linear time and without building anything, and
raises `MalformedRequest` naming the field (``topics[2].partitions``) and the problem. Sans-io.

It also bounds what decoding costs. Kafka bounds a request by its size only, but kafka-python builds a
Python object for every struct, list, string and number it reads, 30-110 bytes each, from as little as
one byte of wire: a 100 MiB request (``socket.request.max.bytes``) of three-byte array elements decodes
into 35 million structs, several GB. So the walk counts the objects the body will decode into and
refuses a body over ``MAX_DECODED_OBJECTS``.

The schema is the message's own JSON (``request_class.json``), with Kafka's rules: a field is on the
wire when the version is in its ``versions`` and it is not tagged at that version; a null is a
negative length (a zero compact length) or, for a nested struct, a 0xff marker byte; flexible
versions use compact lengths and end every struct with a tagged-field section.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

# A step checks one piece of the body starting at `pos` and returns the position after it.
Step = Callable[[memoryview, int, "_Budget"], int]
# What compiling a field gives: (fixed size or None, minimum size, step, objects built apart from array items)
_Compiled = tuple[int | None, int, Step, int]

FIXED_SIZES = {"int8": 1, "bool": 1, "int16": 2, "uint16": 2, "int32": 4, "bitfield": 4, "uint32": 4,
               "int64": 8, "float64": 8, "uuid": 16}
# Decoding a struct whose tagged-field section is not empty copies the rest of the frame (kafka-python
# 3.0); a request may cost at most this much copying plus eight times its size. Real clients send
# tagged fields in a handful of structs per request, far below it.
TAGGED_COPY_BUDGET = 64 << 20
# A string has at most 32,767 bytes, even where a compact (varint) length could say more: Kafka refuses
# longer ones, and a longer name could not be written back in a response with int16 lengths (ListGroups v0-2).
MAX_STRING_BYTES = 0x7FFF
# At most about 110 bytes an object (a UUID; 45-70 on average measured on real requests), a million objects
# cost at most ~100 MiB, no more than one maximum-size request's own bytes. Real requests stay well below:
# Metadata naming 20,000 topics decodes into 60,000 objects; OffsetCommit of 10,000 partitions 80,000; the
# largest under the default limits, a follower's Fetch for every partition a broker may host
# (max.broker.partitions = 100,000, seven objects a partition), about 700,000.
MAX_DECODED_OBJECTS = 1_000_000

_CAPITAL = re.compile(r"(?<!^)(?=[A-Z])")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class MalformedRequest(Exception):
    """The body does not match the schema; str() is one line: the field's path and the problem."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path: list[str] = []

    def within(self, name: str) -> MalformedRequest:
        """Prefix the path with an enclosing field name or ``[index]`` while the error unwinds."""
        self.path.insert(0, name)
        return self

    def __str__(self) -> str:
        path = "".join(p if p.startswith("[") else "." + p for p in self.path).lstrip(".")
        return f"{path} {self.problem}" if path else self.problem


class _Budget:
    __slots__ = ("copy", "objects")

    def __init__(self, body_size: int, objects: int) -> None:
        self.copy = TAGGED_COPY_BUDGET + 8 * body_size
        self.objects = objects


def _versions(text: str | None) -> tuple[int, int] | None:
    """Kafka's version ranges: "3+", "0-2", "5", "none" (or absent: no versions)."""
    if text is None or not text.strip() or text.strip() == "none":
        return None
    text = text.strip()
    if text.endswith("+"):
        return int(text[:-1]), 1 << 15
    lo, _, hi = text.partition("-")
    return int(lo), int(hi or lo)


def _in(text: str | None, version: int) -> bool:
    rng = _versions(text)
    return rng is not None and rng[0] <= version <= rng[1]


def _need(buf: memoryview, pos: int, size: int) -> int:
    end = pos + size
    if end > len(buf):
        raise MalformedRequest(f"needs {size} bytes but the request has {max(len(buf) - pos, 0)} left")
    return end


def _uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise MalformedRequest("ends inside a varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift > 28:
            raise MalformedRequest("has a varint longer than 5 bytes")


def _length(buf: memoryview, pos: int, wide: bool, compact: bool) -> tuple[int, int]:
    """A length or count: -1 (or any negative) is null; compact lengths are stored plus one."""
    if compact:
        n, pos = _uvarint(buf, pos)
        return n - 1, pos
    codec = _INT32 if wide else _INT16
    _need(buf, pos, codec.size)
    return codec.unpack_from(buf, pos)[0], pos + codec.size


def _null(nullable: bool) -> None:
    if not nullable:
        raise MalformedRequest("is null but not nullable")


class _Compiler:
    """Turns a message schema at one version into steps; `fixed` sizes let runs and arrays be skipped."""

    def __init__(self, version: int, flexible: bool) -> None:
        self.version = version
        self.flexible = flexible

    def field(self, spec: dict[str, Any]) -> _Compiled:
        """(fixed size or None, minimum size, step, objects) of one field: `objects` is how many Python
        objects decoding it builds, apart from the elements of its arrays (counted as they are read)."""
        ftype: str = spec["type"]
        nullable = _in(spec.get("nullableVersions"), self.version)
        if ftype.startswith("[]"):
            return self.array(spec, ftype[2:], nullable)
        if "fields" in spec:
            return self.struct(spec["fields"], nested_nullable=nullable)
        if ftype in FIXED_SIZES:
            size = FIXED_SIZES[ftype]
            return size, size, lambda buf, pos, budget: _need(buf, pos, size), 1
        if ftype in ("string", "bytes", "records"):
            minimum = 1 if self.flexible else (2 if ftype == "string" else 4)
            return None, minimum, self.blob(ftype != "string", nullable), 1
        raise ValueError(f"unknown type {ftype} of field {spec['name']}")

    def blob(self, wide: bool, nullable: bool) -> Step:
        compact = self.flexible
        longest = MAX_STRING_BYTES if not wide else None

        def step(buf: memoryview, pos: int, budget: _Budget) -> int:
            n, pos = _length(buf, pos, wide, compact)
            if n < 0:
                _null(nullable)
                return pos
            if longest is not None and n > longest:
                raise MalformedRequest(f"has length {n}, longer than a string may be ({longest} bytes)")
            if pos + n > len(buf):
                raise MalformedRequest(f"has length {n} but only {len(buf) - pos} bytes are left in the request")
            return pos + n

        return step

    def array(self, spec: dict[str, Any], item_type: str, nullable: bool) -> _Compiled:
        item: Step | None
        if "fields" in spec:
            item_fixed, item_min, item, item_objects = self.struct(spec["fields"], nested_nullable=False)
        elif item_type in FIXED_SIZES:
            item_fixed = item_min = FIXED_SIZES[item_type]
            item, item_objects = None, 1
        else:
            item_fixed, item_min, item, item_objects = self.field({"name": spec["name"], "type": item_type})
        compact = self.flexible
        item_min = max(item_min, 1)

        def step(buf: memoryview, pos: int, budget: _Budget) -> int:
            count, pos = _length(buf, pos, True, compact)
            if count < 0:
                _null(nullable)
                return pos
            if count * item_min > len(buf) - pos:
                raise MalformedRequest(f"has {count} elements but only {len(buf) - pos} bytes are left in the request")
            budget.objects -= count * item_objects
            if budget.objects < 0:
                raise MalformedRequest(f"has {count} elements: the request would decode into more than "
                                       f"{MAX_DECODED_OBJECTS} objects")
            if item_fixed is not None:
                return _need(buf, pos, count * item_fixed)
            assert item is not None
            for i in range(count):
                try:
                    pos = item(buf, pos, budget)
                except MalformedRequest as exc:
                    raise exc.within(f"[{i}]") from None
            return pos

        return None, 1 if compact else 4, step, 1

    def struct(self, fields: list[dict[str, Any]], nested_nullable: bool = False) -> _Compiled:
        v = self.version
        present = [f for f in fields if _in(f.get("versions"), v) and not _in(f.get("taggedVersions"), v)]
        # Consecutive fixed-size fields become one number of bytes to skip, named after the first of them.
        names: list[str] = []
        steps: list[int | Step] = []
        fixed_total: int | None = 0
        min_total = 0
        objects = 1  # the struct itself
        for spec in present:
            fixed, minimum, sub, sub_objects = self.field(spec)
            min_total += minimum
            objects += sub_objects
            if fixed is not None and steps and isinstance(steps[-1], int):
                steps[-1] += fixed
            else:
                names.append(_snake(spec["name"]))
                steps.append(sub if fixed is None else fixed)
            fixed_total = None if fixed is None or fixed_total is None else fixed_total + fixed
        flexible = self.flexible
        if flexible:
            fixed_total = None
            min_total += 1
        if nested_nullable:
            fixed_total = None
            min_total = 1

        def step(buf: memoryview, pos: int, budget: _Budget) -> int:
            if nested_nullable:
                _need(buf, pos, 1)
                pos += 1
                if buf[pos - 1] == 0xFF:
                    return pos
            for i, field_step in enumerate(steps):
                try:
                    if isinstance(field_step, int):
                        pos = _need(buf, pos, field_step)
                    else:
                        pos = field_step(buf, pos, budget)
                except MalformedRequest as exc:
                    raise exc.within(names[i]) from None
            if flexible:
                if pos < len(buf) and buf[pos] == 0:  # no tagged fields: the usual case
                    return pos + 1
                pos = _tagged(buf, pos, budget)
            return pos

        return fixed_total, min_total, step, objects


def _snake(name: str) -> str:
    """TopicName -> topic_name, as kafka-python names the attributes."""
    return _CAPITAL.sub("_", name).lower()


def _tagged(buf: memoryview, pos: int, budget: _Budget) -> int:
    start = pos
    count, pos = _uvarint(buf, pos)
    if count == 0:
        return pos
    if count * 2 > len(buf) - pos:
        raise MalformedRequest(f"has {count} tagged fields but only {len(buf) - pos} bytes are left in the request")
    budget.copy -= len(buf) - start
    if budget.copy < 0:
        raise MalformedRequest("has too many tagged-field sections for its size")
    for _ in range(count):
        _tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        if pos + size > len(buf):
            raise MalformedRequest(f"has a tagged field of {size} bytes but only {len(buf) - pos} bytes are left")
        pos += size
    return pos


_PLANS: dict[tuple[Any, int], tuple[Step, int]] = {}


def plan(request_class: Any, version: int) -> tuple[Step, int]:
    """The compiled check of `request_class` (a kafka-python message class) at `version`, and the objects
    its top level decodes into; cached."""
    key = (request_class, version)
    found = _PLANS.get(key)
    if found is None:
        compiler = _Compiler(version, request_class.flexible_version_q(version))
        _fixed, _min, step, objects = compiler.struct(request_class.json["fields"])
        found = _PLANS[key] = step, objects
    return found


def check_request(request_class: Any, version: int, body: memoryview) -> None:
    """Raise `MalformedRequest` unless `body` is a well-formed `request_class` body at `version` that
    decodes into at most MAX_DECODED_OBJECTS objects.

    Bytes after the end of the body are not an error (kafka-python's decoder ignores them too)."""
    step, objects = plan(request_class, version)
    step(body, 0, _Budget(len(body), MAX_DECODED_OBJECTS - objects))


def decoded_objects(request_class: Any, version: int, body: memoryview) -> int:
    """How many objects decoding `body` builds, as `check_request` counts them (an upper bound: small ints,
    empty strings and None are shared); raises `MalformedRequest` as `check_request` does."""
    step, objects = plan(request_class, version)
    budget = _Budget(len(body), 1 << 62)
    step(body, 0, budget)
    return objects + (1 << 62) - budget.objects
