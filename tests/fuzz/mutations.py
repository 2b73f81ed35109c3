"""Pure mutations of encoded requests, and a hypothesis strategy that picks them.

A mutation is data (kind, position, argument) so that hypothesis can shrink it and print it; `apply` turns
it into new bytes and never fails, whatever the input length. Positions are taken modulo the input length
(and rounded down to a multiple of 4 for the aligned kinds) so one drawn mutation fits any input.
`random_mutations` draws the same mutations from a seeded `random.Random`, for runs too long for
hypothesis (the live-broker fuzz run).
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

from odradek.protocol.framing import write_uvarint

INT32_EXTREMES = (0x7FFFFFFF, -1, -(2**31), 0x7FFFFFFE, 0x10000)
INT16_EXTREMES = (0x7FFF, -1, -(2**15), -2)
# unsigned varints: compact lengths/counts are stored +1, so 0 means null and 1 means empty
UVARINT_EXTREMES = (0, 2**31 - 1, 2**32 - 1, 2**35 - 1, 2**63)
HEADER_API_KEY_AT = 0  # request header: int16 api_key, int16 api_version, ...
HEADER_API_VERSION_AT = 2

KINDS = (
    "flip_bit",
    "set_byte",
    "int32",
    "int32_aligned",
    "int16",
    "uvarint",
    "long_varint",
    "truncate",
    "append",
    "delete",
    "duplicate",
    "api_version",
    "api_key",
)
HEADER_KINDS = ("api_version", "api_key")
BODY_KINDS = tuple(k for k in KINDS if k not in HEADER_KINDS)


def flip_bit(data: bytes, bit: int) -> bytes:
    if not data:
        return data
    bit %= len(data) * 8
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def set_byte(data: bytes, pos: int, value: int) -> bytes:
    if not data:
        return data
    out = bytearray(data)
    out[pos % len(data)] = value & 0xFF
    return bytes(out)


def overwrite(data: bytes, pos: int, chunk: bytes) -> bytes:
    """`chunk` written over `data` at `pos` (mod length); the result may grow past the original end."""
    if not data:
        return chunk
    pos %= len(data)
    return data[:pos] + chunk + data[pos + len(chunk) :]


def set_int32(data: bytes, pos: int, value: int, aligned: bool = False) -> bytes:
    if aligned and data:
        pos = (pos % len(data)) & ~3
    return overwrite(data, pos, struct.pack(">i", value))


def set_int16(data: bytes, pos: int, value: int) -> bytes:
    return overwrite(data, pos, struct.pack(">h", value))


uvarint = write_uvarint


def set_uvarint(data: bytes, pos: int, value: int) -> bytes:
    return overwrite(data, pos, uvarint(value))


def long_varint(data: bytes, pos: int, length: int) -> bytes:
    """A run of continuation bytes: a varint longer than any legal one (or never ending, at the end)."""
    return overwrite(data, pos, b"\xff" * length)


def truncate(data: bytes, keep: int) -> bytes:
    return data[: keep % (len(data) + 1)]


def append(data: bytes, garbage: bytes) -> bytes:
    return data + garbage


def delete(data: bytes, pos: int, length: int) -> bytes:
    if not data:
        return data
    pos %= len(data)
    return data[:pos] + data[pos + length :]


def duplicate(data: bytes, pos: int, length: int) -> bytes:
    """Repeat a slice in place: shifts everything after it, as a miscounted length would."""
    if not data:
        return data
    pos %= len(data)
    return data[: pos + length] + data[pos:]


def set_api_version(frame: bytes, version: int) -> bytes:
    """A frame (request header first, no size prefix) claiming another api_version."""
    return frame[:HEADER_API_VERSION_AT] + struct.pack(">h", version) + frame[HEADER_API_VERSION_AT + 2 :]


def set_api_key(frame: bytes, key: int) -> bytes:
    """A frame claiming another API: its body is then read as that API's request."""
    return frame[:HEADER_API_KEY_AT] + struct.pack(">h", key) + frame[HEADER_API_KEY_AT + 2 :]


# the kinds whose function takes (data, position, argument)
_AT_POSITION: dict[str, Callable[[bytes, int, int], bytes]] = {
    "set_byte": set_byte,
    "int16": set_int16,
    "uvarint": set_uvarint,
    "long_varint": long_varint,
    "delete": delete,
    "duplicate": duplicate,
}


@dataclass(frozen=True)
class Mutation:
    kind: str
    pos: int
    arg: int | bytes

    def apply(self, data: bytes) -> bytes:
        k, pos, arg = self.kind, self.pos, self.arg
        if k == "append":
            assert isinstance(arg, bytes)
            return append(data, arg)
        assert isinstance(arg, int)
        if k == "flip_bit":
            return flip_bit(data, pos)
        if k in _AT_POSITION:
            return _AT_POSITION[k](data, pos, arg)
        if k in ("int32", "int32_aligned"):
            return set_int32(data, pos, arg, aligned=k == "int32_aligned")
        if k == "truncate":
            return truncate(data, pos)
        if k == "api_version":
            return set_api_version(data, arg)
        if k == "api_key":
            return set_api_key(data, arg)
        raise ValueError(f"unknown mutation {k}")


_POS = st.integers(0, 2**16)
_KIND_ARGS: dict[str, st.SearchStrategy[int | bytes]] = {
    "flip_bit": st.just(0),
    "set_byte": st.integers(0, 255),
    "int32": st.sampled_from(INT32_EXTREMES),
    "int32_aligned": st.sampled_from(INT32_EXTREMES),
    "int16": st.sampled_from(INT16_EXTREMES),
    "uvarint": st.sampled_from(UVARINT_EXTREMES),
    "long_varint": st.integers(1, 12),
    "truncate": st.just(0),
    "append": st.binary(min_size=1, max_size=16),
    "delete": st.integers(1, 8),
    "duplicate": st.integers(1, 8),
    "api_version": st.integers(-(2**15), 2**15 - 1),
    "api_key": st.integers(-(2**15), 2**15 - 1),
}
HUGE_COUNT_KINDS = ("int32", "int32_aligned", "int16", "uvarint", "long_varint")


def mutation(kinds: tuple[str, ...] = BODY_KINDS) -> st.SearchStrategy[Mutation]:
    """One mutation of one of `kinds` (api_version only makes sense on a frame with its header)."""
    return st.sampled_from(kinds).flatmap(lambda k: st.builds(Mutation, st.just(k), _POS, _KIND_ARGS[k]))


def mutations(kinds: tuple[str, ...] = BODY_KINDS, max_size: int = 3) -> st.SearchStrategy[list[Mutation]]:
    return st.lists(mutation(kinds), min_size=1, max_size=max_size)


def apply_all(data: bytes, muts: list[Mutation]) -> bytes:
    for m in muts:
        data = m.apply(data)
    return data


# random.Random counterparts of _KIND_ARGS; header values favour the small ones a broker serves, so that
# most re-versioned or re-keyed frames reach a decoder instead of being refused by the dispatcher
_RANDOM_ARGS: dict[str, Callable[[random.Random], int | bytes]] = {
    "flip_bit": lambda r: 0,
    "set_byte": lambda r: r.randrange(256),
    "int32": lambda r: r.choice(INT32_EXTREMES),
    "int32_aligned": lambda r: r.choice(INT32_EXTREMES),
    "int16": lambda r: r.choice(INT16_EXTREMES),
    "uvarint": lambda r: r.choice(UVARINT_EXTREMES),
    "long_varint": lambda r: r.randint(1, 12),
    "truncate": lambda r: 0,
    "append": lambda r: r.randbytes(r.randint(1, 16)),
    "delete": lambda r: r.randint(1, 8),
    "duplicate": lambda r: r.randint(1, 8),
    "api_version": lambda r: r.randint(-1, 17) if r.random() < 0.9 else r.randint(-(2**15), 2**15 - 1),
    "api_key": lambda r: r.randint(-1, 70) if r.random() < 0.9 else r.randint(-(2**15), 2**15 - 1),
}


def random_mutations(rng: random.Random, kinds: tuple[str, ...] = KINDS, max_size: int = 3) -> list[Mutation]:
    """One to `max_size` mutations drawn from `rng`, as `mutations()` draws them from hypothesis."""
    return [
        Mutation(kind, rng.randint(0, 2**16), _RANDOM_ARGS[kind](rng))
        for kind in (rng.choice(kinds) for _ in range(rng.randint(1, max_size)))
    ]
