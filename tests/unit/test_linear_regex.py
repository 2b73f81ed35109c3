"""The engine of client-sent regular expressions (`odradek.linear_regex`, RE2): typical topic and
transactional id patterns match whole names; what RE2 refuses (back-references, look-around) and what is
too long or too big is INVALID_REGULAR_EXPRESSION; matching stays linear on the patterns that make a
backtracking matcher take exponential time, and many names are matched without holding the event loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from odradek.linear_regex import MAX_PATTERN_BYTES, SLICE_SECONDS, compile_pattern, matching
from odradek.protocol.errors import ErrorCode, KafkaError


@pytest.mark.parametrize(("pattern", "hit", "miss"), [
    (".*-prod-.*", "app-prod-1", "app-dev-1"),
    ("app-[0-9]+", "app-42", "app-4x"),
    ("orders", "orders", "orders-eu"),  # the whole name, as RE2/J matches()
    ("(orders|payments)-.*", "payments-eu", "refunds-eu"),
    ("a|ab", "ab", "abc"),
    ("(a+)+$", "aaaa", "aaab"),  # refused by the old structural filter; fine in linear time
    ("(?i)orders\\..*", "ORDERS.eu", "orders-eu"),
    ("\\p{L}+", "größe", "a1"),
    ("[[:alpha:]]+_v\\d", "abc_v2", "abc_vx"),
])
def test_typical_patterns_match_the_whole_name(pattern: str, hit: str, miss: str) -> None:
    compiled = compile_pattern(pattern)
    assert compiled.fullmatch(hit) and not compiled.fullmatch(miss)


@pytest.mark.parametrize(("pattern", "said"), [
    (r"(a)\1", "back-references"), ("(?=a)a", "look-around"), ("(?<!a)b", "look-around"),
    ("(?P<x>a)(?P=x)", "look-around"), ("(unclosed", "missing )"), ("a**", "bad repetition"),
    ("(((a{100}){100}){100})", "repetition"),  # an automaton of 10^6 states
    ("x" * (MAX_PATTERN_BYTES + 1), "at most 32767"),
    ("é" * 20_000, "40000 bytes"),
])
def test_refused_patterns_are_invalid_regular_expression(pattern: str, said: str) -> None:
    with pytest.raises(KafkaError) as info:
        compile_pattern(pattern)
    assert info.value.code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert said in info.value.message and len(info.value.message) < 400


def test_the_longest_pattern_is_taken() -> None:
    assert compile_pattern("a" * MAX_PATTERN_BYTES).fullmatch("a" * MAX_PATTERN_BYTES)


@pytest.mark.parametrize("pattern", ["(.|.|.|.|.)*!", "(a|aa)*b", "(a*)*$", "(.*a){20}", "(x+x+)+y"])
def test_pathological_patterns_match_in_linear_time(pattern: str) -> None:
    compiled = compile_pattern(pattern)
    started = time.perf_counter()
    for n in (249, 5_000, 50_000):
        compiled.fullmatch("a" * n)
        compiled.fullmatch("x" * n)
    assert time.perf_counter() - started < 0.5


def test_matching_many_names_gives_the_loop_turns() -> None:
    names = [f"topic-{i:05d}-" + "a" * 200 for i in range(10_000)]
    patterns = [compile_pattern(p) for p in ("(.|.|.|.|.)*!", "topic-0000[0-4]-.*", ".*")]

    async def run() -> tuple[dict[str, frozenset[str]], float]:
        gaps: list[float] = []
        stop = False

        async def ticker() -> None:
            last = time.perf_counter()
            while not stop:
                await asyncio.sleep(0)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        tick = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        found = await matching(patterns, names)
        stop = True
        await tick
        return found, max(gaps)

    found, worst_gap = asyncio.run(run())
    assert found["(.|.|.|.|.)*!"] == frozenset()
    assert len(found["topic-0000[0-4]-.*"]) == 5 and len(found[".*"]) == 10_000
    assert worst_gap < SLICE_SECONDS + 0.05  # a loaded machine may preempt us; never the whole scan
