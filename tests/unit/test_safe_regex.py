"""Client-sent regular expressions (ListTransactions v2): what RE2 refuses is refused, and so is whatever
could make Python's backtracking matcher take more than quadratic time."""

from __future__ import annotations

import time

import pytest

from odradek.server.safe_regex import compile_safe_pattern


@pytest.mark.parametrize(("pattern", "matching", "other"), [
    (".*-prod-.*", "app-prod-1", "app-dev-1"),
    ("app-[0-9]+", "app-42", "app-4x"),
    ("(orders|payments)-.*", "payments-eu", "refunds-eu"),
    ("(a|b)*", "abba", "abc"),
    ("((ab){2})*", "abababab", "aba"),
    ("x?y?z", "yz", "xyzz"),
])
def test_accepted_patterns_match_the_whole_id(pattern: str, matching: str, other: str) -> None:
    compiled = compile_safe_pattern(pattern)
    assert compiled.fullmatch(matching) and not compiled.fullmatch(other)


@pytest.mark.parametrize("pattern", [
    "(unclosed", "a**",  # not a regular expression
    r"(a)\1", "(?=a)a", "(?<!a)b", "(a)?(?(1)b|c)",  # RE2 refuses these too
    "(a+)+$", "(a*)*", "(a|aa)*b", "(a*){5}", "(a|aa){100}",  # nested or alternating repeats
    ".*a.*b.*c",  # more than two variable-length repeats
    "x" * 1001,
])
def test_refused_patterns(pattern: str) -> None:
    with pytest.raises(ValueError):
        compile_safe_pattern(pattern)


def test_accepted_patterns_match_long_ids_quickly() -> None:
    started = time.monotonic()
    for pattern in (".*a.*b", "(ab|cd)-x", "[ab]*c"):
        compile_safe_pattern(pattern).fullmatch("a" * 20_000)
    assert time.monotonic() - started < 10
