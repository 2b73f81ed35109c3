"""Regular expressions that clients send (ListTransactions v2's transactional id pattern, KIP-1152) compiled
so that matching stays cheap.

Kafka matches these with RE2/J, whose time is linear in the input. Python's `re` backtracks: a pattern
such as `(a+)+$` takes time exponential in the length of the string it is matched against, and would
stall the event loop. So a pattern is refused (Kafka's INVALID_REGULAR_EXPRESSION) when it has what RE2
refuses too (back-references, look-around, conditional groups), and, a departure from Kafka, when it
nests a variable-length repeat or an alternation inside a repeat, has more than
`MAX_VARIABLE_REPEATS` of them, or is longer than `MAX_PATTERN_CHARS`. What is left (`.*-prod-.*`, `app-[0-9]+`, `(orders|payments)-.*`)
matches in at most quadratic time.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")

MAX_PATTERN_CHARS = 1000
MAX_VARIABLE_REPEATS = 2
_REPEATS = (_c.MAX_REPEAT, _c.MIN_REPEAT, getattr(_c, "POSSESSIVE_REPEAT", _c.MAX_REPEAT))
_REFUSED = {
    _c.GROUPREF: "back-references are not supported",
    _c.GROUPREF_EXISTS: "conditional groups are not supported",
    _c.ASSERT: "look-around assertions are not supported",
    _c.ASSERT_NOT: "look-around assertions are not supported",
}


def _subpatterns(op: Any, av: Any) -> list[Any]:
    """The sub-patterns inside one parsed item."""
    if op in _REPEATS:
        return [av[2]]
    if op == _c.SUBPATTERN:
        return [av[-1]]
    if op == _c.BRANCH:
        return list(av[1])
    if op == _c.ATOMIC_GROUP:
        return [av]
    return []


def _check(items: Any, inside_repeat: bool, counts: list[int]) -> None:
    for op, av in items:
        reason = _REFUSED.get(op)
        if reason is not None:
            raise ValueError(reason)
        if op == _c.BRANCH and inside_repeat:
            raise ValueError("an alternation inside a repeat can take exponential time to match")
        variable = op in _REPEATS and av[0] != av[1]
        if variable:
            if inside_repeat:
                raise ValueError("a repeat inside a repeat can take exponential time to match")
            counts[0] += 1
            if counts[0] > MAX_VARIABLE_REPEATS:
                raise ValueError(f"more than {MAX_VARIABLE_REPEATS} variable-length repeats")
        repeated = op in _REPEATS and av[1] > 1  # `(a*){9}` is nine variable repeats
        for sub in _subpatterns(op, av):
            _check(sub, inside_repeat or repeated, counts)


def compile_safe_pattern(pattern: str) -> re.Pattern[str]:
    """Compile `pattern`, or raise ValueError saying why it is refused."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"the pattern is longer than {MAX_PATTERN_CHARS} characters")
    try:
        parsed = _parser.parse(pattern, 0)
        compiled = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ValueError(str(exc)) from None
    _check(parsed, False, [0])
    return compiled
