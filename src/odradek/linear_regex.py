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

Linear is not cheap: when RE2's DFA outgrows its memory it falls back to an automaton that walks the whole
program for each character, and a pattern of a dozen bytes such as `.*[0-7].{400}` then costs ~0.7 ms a
224-character name (7 s of CPU over 10,000 topics, again at each refresh); a cap on the program's size
would not stop it (813 instructions still cost 0.26 ms a name) and would refuse long alternations that
match fast. So each pattern has a CPU budget per `matching` call (this thread's CPU time, measured a chunk
of names at a time): `MATCH_CPU_FLOOR` plus `MATCH_CPU_PER_NAME` per name, some 20 times what a typical
pattern takes. A pattern over it stops matching (it matched nothing) and is remembered as too costly:
`compile_pattern` refuses it from then on with INVALID_REGULAR_EXPRESSION. Kafka (RE2/J) has no such
budget; this is a departure, which no pattern a person writes for topic names comes near.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import re2

from odradek.protocol.errors import ErrorCode, KafkaError

MAX_PATTERN_BYTES = 0x7FFF
MAX_MEMORY = 8 << 20  # RE2's max_mem: the compiled program and its DFA caches
SLICE_SECONDS = 0.002
MAX_COST = 65_536  # of `estimated_cost`: about 50 ms of compilation on a loaded machine
MAX_PROGRAM = 40_000  # RE2 instructions: the longest literal pattern is ~32,800
MATCH_CPU_FLOOR = 0.05  # CPU seconds a pattern may take in one `matching` call, whatever the names
MATCH_CPU_PER_NAME = 20e-6  # and this much more per name (a typical pattern takes 1-2 µs a name)
_MATCH_CHUNK = 8  # names matched between two readings of the CPU clock (a system call, ~1 µs)
_REMEMBERED_COSTLY = 1024  # patterns found too costly, refused without being tried again
_UNICODE_CLASS_COST = 1_000  # \pL and the like, against 1 for a literal
_COUNTED = re.compile(r"\{(\d{1,6})(?:,(\d{0,6}))?\}")  # our own fixed pattern: `re` is fine here
_SHOWN_CHARS = 200  # of a refused pattern, in its error message
# re2's public `fullmatch` decodes spans in Python (several times slower); the binding's own RE2 object
# answers a whole-string match directly.
_ANCHOR_BOTH: Any = re2._Anchor.ANCHOR_BOTH
_NO_MATCH = (-1, -1)
_too_costly: OrderedDict[str, str] = OrderedDict()  # pattern -> why it is refused


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
    costly = _too_costly.get(pattern)
    if costly is not None:
        raise invalid(pattern, costly, field)
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


def too_costly(pattern: str) -> str | None:
    """Why `pattern` was refused by a `matching` call over its CPU budget, or None."""
    return _too_costly.get(pattern)


def match_budget(names: int) -> float:
    """The CPU seconds one pattern may take matching `names` names."""
    return MATCH_CPU_FLOOR + MATCH_CPU_PER_NAME * names


def _refuse_costly(pattern: str, spent: float, names: int) -> None:
    _too_costly[pattern] = (f"too costly to match (over {spent * 1e3:.0f} ms of CPU for {names} names, at most "
                            f"{MATCH_CPU_FLOOR * 1e3:.0f} ms and {MATCH_CPU_PER_NAME * 1e6:.0f} µs a name)")
    while len(_too_costly) > _REMEMBERED_COSTLY:
        _too_costly.popitem(last=False)


async def matching(patterns: Iterable[LinearPattern], names: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each pattern, the names it matches whole; yields to the event loop every SLICE_SECONDS. A pattern
    that spends more than `match_budget` CPU seconds matches nothing and is refused from then on (see
    `too_costly`)."""
    compiled = list(patterns)
    listed = list(names)
    budget = match_budget(len(listed))
    found: dict[str, set[str]] = {p.pattern: set() for p in compiled}
    spent = dict.fromkeys(found, 0.0)
    live = list(compiled)
    deadline = time.perf_counter() + SLICE_SECONDS
    for start in range(0, len(listed), _MATCH_CHUNK):
        chunk = listed[start:start + _MATCH_CHUNK]
        for p in list(live):
            began = time.thread_time()
            hits = found[p.pattern]
            for name in chunk:
                if p.fullmatch(name):
                    hits.add(name)
            spent[p.pattern] += time.thread_time() - began
            if spent[p.pattern] > budget:
                live.remove(p)
                hits.clear()
                _refuse_costly(p.pattern, spent[p.pattern], len(listed))
            if time.perf_counter() > deadline:
                await asyncio.sleep(0)
                deadline = time.perf_counter() + SLICE_SECONDS
        if not live:
            break
    return {p: frozenset(ns) for p, ns in found.items()}
