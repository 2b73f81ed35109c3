"""Issue #36, left over from observation 1: a valid subscription regex can still be costly to match. Once
RE2's DFA outgrows its memory it walks the whole program for every character, and `.*[0-7].{400}` (13
bytes, ~3,200 instructions) costs ~0.7 ms a 224-character topic name: ~7 s of CPU for one resolution over
10,000 topics, again at every refresh. Now each pattern has a CPU budget per resolution (50 ms plus 20 µs a
name): past it the pattern matches nothing, the member's next heartbeat is INVALID_REGULAR_EXPRESSION and
the pattern is refused from then on. CPU is this thread's (`time.thread_time`), not wall-clock."""

from __future__ import annotations

import asyncio
import random
import time
import uuid

from odradek.groups.consumer_coordinator import ConsumerGroupCoordinator, ConsumerGroupSettings, Heartbeat
from odradek.groups.consumer_group import TopicInfo
from odradek.linear_regex import compile_pattern, match_budget, matching
from odradek.protocol.errors import ErrorCode, KafkaError
from tests.consumer_members import FakeTopics
from tests.unit.test_consumer_group import make

COSTLY = ".*[0-7].{400}"
COUNT = 10_000


class HexTopics(FakeTopics):
    """`COUNT` one-partition topics with 224-character hexadecimal names."""

    def __init__(self) -> None:
        rng = random.Random(36)
        names = [uuid.UUID(int=rng.getrandbits(128)).hex * 7 for _ in range(COUNT)]
        self.by_name = {n: TopicInfo(i.to_bytes(16, "big"), 1) for i, n in enumerate(names)}
        self.by_id = {i.topic_id: n for n, i in self.by_name.items()}

    def name_of(self, topic_id: bytes) -> str | None:
        return self.by_id.get(topic_id)


def test_a_costly_pattern_stops_at_its_cpu_budget_and_is_then_refused() -> None:
    names = HexTopics().names()
    pattern = compile_pattern(COSTLY + "(?:)")  # a pattern of its own: refusals are remembered
    started = time.thread_time()
    found = asyncio.run(matching([pattern], names))
    spent = time.thread_time() - started
    assert found == {pattern.pattern: frozenset()}
    assert spent < match_budget(COUNT) + 0.3, spent  # ~7 s of CPU without the budget
    try:
        compile_pattern(pattern.pattern)
        raise AssertionError("a pattern over its budget must be refused")
    except KafkaError as exc:
        assert exc.code == ErrorCode.INVALID_REGULAR_EXPRESSION and "too costly to match" in exc.message


def test_typical_patterns_stay_well_within_the_budget() -> None:
    names = HexTopics().names()
    typical = [compile_pattern(p) for p in (".*[0-7]", "[0-9a-f]{32}.*", "(0|1|2|3)+.*f", ".*")]
    found = asyncio.run(matching(typical, names))
    assert len(found[".*"]) == COUNT and len(found[".*[0-7]"]) > COUNT // 2
    for p in typical:
        compile_pattern(p.pattern)  # none refused


def test_a_member_with_a_costly_regex_gets_invalid_regular_expression() -> None:
    """Through the coordinator: the resolution in the background stops at the budget, the member's next
    heartbeat is refused, and so is a new member with the same regex, at once and without matching."""
    async def main() -> None:
        cg: ConsumerGroupCoordinator
        cg, _ = make(HexTopics(), ConsumerGroupSettings(session_timeout_ms=30_000))
        regex = COSTLY + "(?:x*)"
        started = time.thread_time()
        first = await cg.heartbeat(Heartbeat("g", "m", 0, rebalance_timeout_ms=1000, subscribed_topic_regex=regex,
                                             owned={}))
        assert first.error == ErrorCode.NONE, first
        for _ in range(500):
            await asyncio.sleep(0.01)
            if "g" not in cg._resolving:
                break
        res = await cg.heartbeat(Heartbeat("g", "m", first.member_epoch, owned={}))
        assert res.error == ErrorCode.INVALID_REGULAR_EXPRESSION and "too costly" in (res.message or ""), res
        other = await cg.heartbeat(Heartbeat("g2", "n", 0, rebalance_timeout_ms=1000,
                                             subscribed_topic_regex=regex, owned={}))
        assert other.error == ErrorCode.INVALID_REGULAR_EXPRESSION
        assert time.thread_time() - started < match_budget(COUNT) + 0.5
        await cg.shutdown()

    asyncio.run(main())
