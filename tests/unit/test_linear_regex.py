"""The engine of client-sent regular expressions (`odradek.linear_regex`, RE2): typical topic and
transactional id patterns match whole names; what RE2 refuses (back-references, look-around) and what is
too long or too big is INVALID_REGULAR_EXPRESSION; matching stays linear on the patterns that make a
backtracking matcher take exponential time, and many names are matched without holding the event loop."""

from __future__ import annotations

import asyncio
import time

import pytest

from odradek.linear_regex import MAX_PATTERN_BYTES, compile_pattern, matching
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
    ("(((a{100}){100}){100})", "too big to compile"),  # an automaton of 10^6 states
    ("x{1001}", "invalid repetition size"),
    ("x" * (MAX_PATTERN_BYTES + 1), "at most 32767"),
    ("\\pL" * 100, "too big to compile"), ("a{0,100}" * 1000, "too big to compile"),  # costly to compile
    ("((\\pL){1000})", "too big to compile"), (".*a" * 10_000, "RE2 instructions"),
    ("é" * 20_000, "40000 bytes"),
])
def test_refused_patterns_are_invalid_regular_expression(pattern: str, said: str) -> None:
    with pytest.raises(KafkaError) as info:
        compile_pattern(pattern)
    assert info.value.code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert said in info.value.message and len(info.value.message) < 400


def test_the_longest_pattern_is_taken() -> None:
    assert compile_pattern("a" * MAX_PATTERN_BYTES).fullmatch("a" * MAX_PATTERN_BYTES)


@pytest.mark.parametrize("pattern", [
    "\\pL" * 10_000, "a{0,1000}" * 3_000, "(" + "x" * 30_000 + "){1000}", "[\\pL\\pN]" * 3_000, "x" * 32_767,
    "(?i)" + "[a-z]" * 6_000, ".*a" * 10_000,
])
def test_compiling_any_pattern_takes_milliseconds(pattern: str) -> None:
    """RE2's compilation holds the GIL: the cost estimate refuses what would take long (`\\pL` 10,000
    times took 2 s, `a{0,1000}` 3,000 times 1.5 s) before RE2 sees it."""
    started = time.perf_counter()
    try:
        compile_pattern(pattern[:MAX_PATTERN_BYTES] + "-unique")
    except KafkaError:
        pass
    assert time.perf_counter() - started < 0.25  # ~50 ms at most on a loaded machine


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

        async def ticker() -> None:  # CPU time of this thread between turns: preemption does not count
            last = time.thread_time()
            while not stop:
                await asyncio.sleep(0)
                now = time.thread_time()
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
    assert worst_gap < 0.012  # slices of SLICE_SECONDS (2 ms); the whole scan takes ~0.035 s of CPU
