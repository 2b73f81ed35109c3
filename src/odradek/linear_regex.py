"""The one engine for every regular expression a client sends: a KIP-848 subscription regex
(ConsumerGroupHeartbeat), ListTransactions v2's transactional id pattern (KIP-1152).

Kafka matches these with RE2/J, whose time is linear in the length of the input; Python's `re`
backtracks, and a pattern such as `(.|.|.|.|.)*!` takes it seconds per topic name. RE2 (the
`google-re2` binding) has RE2/J's syntax and guarantees: no back-references or look-around (such a
pattern is INVALID_REGULAR_EXPRESSION, as in Kafka), memory bounded by `MAX_MEMORY` per compiled
pattern (a pattern whose automaton needs more is refused too), at most `MAX_PATTERN_BYTES` of pattern (a
subscription regex is the key of its ConsumerGroupRegularExpression record, an int16-length string).
A pattern must match the whole name (RE2/J `matches()`).

Matching many names is linear in their total length but not free (a few microseconds a name), so
`matching` gives the event loop a turn every `SLICE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterable
from typing import Any

import re2

from odradek.protocol.errors import ErrorCode, KafkaError

MAX_PATTERN_BYTES = 0x7FFF
MAX_MEMORY = 8 << 20  # RE2's max_mem: the compiled program and its DFA caches
SLICE_SECONDS = 0.002
_SHOWN_CHARS = 200  # of a refused pattern, in its error message
# re2's public `fullmatch` decodes spans in Python (several times slower); the binding's own RE2 object
# answers a whole-string match directly.
_ANCHOR_BOTH: Any = re2._Anchor.ANCHOR_BOTH
_NO_MATCH = (-1, -1)


class LinearPattern:
    """A compiled client pattern; `fullmatch` takes time linear in the name's length."""

    __slots__ = ("pattern", "_re")

    def __init__(self, pattern: str, compiled: Any) -> None:
        self.pattern = pattern
        self._re = compiled

    def fullmatch(self, name: str) -> bool:
        text = name.encode("utf-8", "surrogatepass")
        return bool(self._re.Match(_ANCHOR_BOTH, text, 0, len(text))[0] != _NO_MATCH)


def invalid(pattern: str, reason: str, field: str) -> KafkaError:
    """Kafka's wording (GroupMetadataManager), the pattern cut short."""
    shown = pattern if len(pattern) <= _SHOWN_CHARS else pattern[:_SHOWN_CHARS] + "..."
    return KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                      f"{field} `{shown}` is not a valid regular expression: {reason}.")


def _reason(message: str) -> str:
    if "invalid perl operator" in message or any(f"escape sequence: \\{d}" in message for d in "123456789"):
        return f"{message} (RE2 syntax: back-references and look-around are not supported)"
    if "pattern too large" in message:
        return f"{message} (the pattern needs more than {MAX_MEMORY >> 20} MiB to match)"
    return message


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str, field: str = "SubscribedTopicRegex") -> LinearPattern:
    """`pattern` compiled by RE2, or KafkaError INVALID_REGULAR_EXPRESSION saying why not (naming the
    request field it came in)."""
    size = len(pattern.encode("utf-8", "surrogatepass"))
    if size > MAX_PATTERN_BYTES:
        raise invalid(pattern, f"{size} bytes, at most {MAX_PATTERN_BYTES}", field)
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False
    options.never_capture = True
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        message = exc.args[0] if exc.args else str(exc)
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
        raise invalid(pattern, _reason(text), field) from None
    return LinearPattern(pattern, compiled._regexp)


async def matching(patterns: Iterable[LinearPattern], names: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each pattern, the names it matches whole; yields to the event loop every SLICE_SECONDS."""
    compiled = list(patterns)
    found: dict[str, set[str]] = {p.pattern: set() for p in compiled}
    deadline = time.perf_counter() + SLICE_SECONDS
    for i, name in enumerate(names):
        for p in compiled:
            if p.fullmatch(name):
                found[p.pattern].add(name)
        if i % 32 == 31 and time.perf_counter() > deadline:
            await asyncio.sleep(0)
            deadline = time.perf_counter() + SLICE_SECONDS
    return {p: frozenset(ns) for p, ns in found.items()}
