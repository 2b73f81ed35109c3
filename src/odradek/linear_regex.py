"""The one engine for every regular expression a client sends: a KIP-848 subscription regex
(ConsumerGroupHeartbeat), ListTransactions v2's transactional id pattern (KIP-1152).

Kafka matches these with RE2/J, whose time is linear in the length of the input; Python's `re`
backtracks, and a pattern such as `(.|.|.|.|.)*!` takes it seconds per topic name. RE2 (the
`google-re2` binding) has RE2/J's syntax and guarantees: no back-references or look-around (such a
pattern is INVALID_REGULAR_EXPRESSION, as in Kafka), memory bounded by `MAX_MEMORY` per compiled
pattern (a pattern whose automaton needs more is refused too), at most `MAX_PATTERN_BYTES` of pattern (a
subscription regex is the key of its ConsumerGroupRegularExpression record, an int16-length string).
A pattern must match the whole name (RE2/J `matches()`).

RE2's compilation holds the GIL and is not linear in the pattern's length: a Unicode class (`\\pL`) costs
as much as a thousand literals and a counted repeat copies what it repeats (`a{0,100}` written 4,000
times took 0.3 s, `\\pL` 10,000 times 2 s, before failing on `max_mem`). So a cheap scan first estimates
the program RE2 would build and refuses a pattern over `MAX_COST` (a 32,767-byte literal passes), and a
compiled program over `MAX_PROGRAM` instructions is refused too (its matching cost grows with it).
Matching many names is linear in their total length but not free (a few microseconds a name), so
`matching` gives the event loop a turn every `SLICE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Iterable
from typing import Any

import re2

from odradek.protocol.errors import ErrorCode, KafkaError

MAX_PATTERN_BYTES = 0x7FFF
MAX_MEMORY = 8 << 20  # RE2's max_mem: the compiled program and its DFA caches
SLICE_SECONDS = 0.002
MAX_COST = 65_536  # of `estimated_cost`: about 50 ms of compilation on a loaded machine
MAX_PROGRAM = 40_000  # RE2 instructions: the longest literal pattern is ~32,800
_UNICODE_CLASS_COST = 1_000  # \pL and the like, against 1 for a literal
_COUNTED = re.compile(r"\{(\d{1,6})(?:,(\d{0,6}))?\}")  # our own fixed pattern: `re` is fine here
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


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class opening at `i` (RE2's rules: `]` first is a literal)."""
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        if pattern[j] == "\\":
            j += 1
        elif pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            j = end + 1 if end >= 0 else j
        j += 1
    return j + 1


def estimated_cost(pattern: str) -> int:
    """An upper estimate of the work RE2 does to compile `pattern`: each atom weighs 1 (a Unicode class
    `_UNICODE_CLASS_COST`, a bracketed class its length), a counted repeat multiplies the weight of what it
    repeats. Syntax errors are RE2's to report; this only has to be cheap and not underestimate much."""
    stack = [0]  # the weight of each open group so far
    last = 0  # the weight of the last atom, which a quantifier repeats
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        weight = 1
        if c == "\\":
            nxt = pattern[i + 1:i + 2]
            if nxt in ("p", "P"):
                weight = _UNICODE_CLASS_COST
                end = pattern.find("}", i) if pattern.startswith("{", i + 2) else i + 2
                i = (end if end >= 0 else n - 1) + 1
            elif nxt == "Q":
                end = pattern.find("\\E", i + 2)
                end = n if end < 0 else end
                weight, i = max(1, end - i - 2), end + 2
            else:
                i += 2
        elif c == "[":
            end = _class_end(pattern, i)
            body = pattern[i:end]
            weight = 4 + len(body) + _UNICODE_CLASS_COST * (body.count("\\p") + body.count("\\P"))
            i = end
        elif c == "(":
            stack.append(0)
            i += 1
            continue
        elif c == ")":
            weight = stack.pop() + 1 if len(stack) > 1 else 1
            i += 1
        elif c == "{" and (m := _COUNTED.match(pattern, i)):
            count = max(int(m.group(1)), int(m.group(2) or 0))
            stack[-1] += last * max(count - 1, 0)
            last *= max(count, 1)
            i = m.end()
            continue
        elif c in "*+?|":
            i += 1
            last = 0 if c == "|" else last
            continue
        else:
            weight = 4 if c == "." else 1  # `.` is a UTF-8 automaton
            i += 1
        stack[-1] += weight
        last = weight
    return sum(stack)


def compile_pattern(pattern: str, field: str = "SubscribedTopicRegex") -> LinearPattern:
    """`pattern` compiled by RE2, or KafkaError INVALID_REGULAR_EXPRESSION saying why not (naming the
    request field it came in)."""
    compiled = _compiled(pattern)
    if isinstance(compiled, str):
        raise invalid(pattern, compiled, field)
    return compiled


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> LinearPattern | str:
    """The compiled pattern or why it is refused; refusals are remembered too, as they cost the scan."""
    size = len(pattern.encode("utf-8", "surrogatepass"))
    if size > MAX_PATTERN_BYTES:
        return f"{size} bytes, at most {MAX_PATTERN_BYTES}"
    cost = estimated_cost(pattern)
    if cost > MAX_COST:
        return (f"too big to compile (an estimated {cost} units of work, at most {MAX_COST}: fewer Unicode "
                f"classes or smaller counted repeats)")
    options = re2.Options()
    options.max_mem = MAX_MEMORY
    options.log_errors = False
    options.never_capture = True
    try:
        compiled = re2.compile(pattern, options)
    except re2.error as exc:
        message = exc.args[0] if exc.args else str(exc)
        return _reason(message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message))
    program = compiled._regexp.ProgramSize()
    if program > MAX_PROGRAM:
        return f"too big ({program} RE2 instructions, at most {MAX_PROGRAM})"
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
