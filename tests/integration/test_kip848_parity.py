"""The KIP-848 behaviours librdkafka's own tests rely on (issue #27), with real confluent-kafka consumers
(librdkafka 2.16) against a real broker:

- 0113's `t_max_poll_interval_exceeded`: a consumer whose application stops polling past
  `max.poll.interval.ms` stops heartbeating (librdkafka sends its leave only when the application polls
  again); the other consumer gets its partition long before the session timeout;
- 0045's `do_test_resubscribe_with_regex`: the topics named literally are assigned by the first heartbeat,
  those of a regex (`^prefix.*`) by a later one, once the broker has resolved it in the background; a
  regex subscription alone gets exactly the matching topics;
- confluent-kafka's `test_consumer_upgrade_downgrade`: a classic member, a consumer-protocol member
  joining it (the group becomes a consumer group), the classic member leaving, a classic member joining
  the consumer group, the consumer-protocol member leaving (the group becomes classic again), every step
  with all partitions assigned once and records read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, TopicPartition

from tests.clients import admin, create_topic, produce, unique_name
from tests.harness import NO_REBALANCE_DELAY, BrokerProcess, group_timers
from tests.waiting import wait_until

SESSION_MS = 60_000  # as long as the broker allows: the tests below may only pass if nothing waits for it
CONFIG = {**NO_REBALANCE_DELAY, **group_timers("consumer", heartbeat_ms=500, session_ms=SESSION_MS)}


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return CONFIG


@pytest.fixture
def consumers() -> Iterator[list[Consumer]]:
    made: list[Consumer] = []
    yield made
    for c in made:
        try:
            c.close()
        except RuntimeError:
            pass  # closed by the test


def _consumer(made: list[Consumer], broker: BrokerProcess, group: str, **conf: Any) -> Consumer:
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "group.protocol": "consumer", **conf})
    made.append(c)
    return c


def _parts(c: Consumer) -> set[tuple[str, int]]:
    return {(tp.topic, tp.partition) for tp in c.assignment()}


def test_a_consumer_past_max_poll_interval_frees_its_partition_long_before_the_session_timeout(
        broker: BrokerProcess, consumers: list[Consumer]) -> None:
    topic, group = unique_name("maxpoll"), unique_name("g")
    create_topic(broker.bootstrap, topic, 2)
    c1 = _consumer(consumers, broker, group, **{"max.poll.interval.ms": 3000})
    c2 = _consumer(consumers, broker, group, **{"max.poll.interval.ms": 3000})
    lost: list[list[int]] = []
    c1.subscribe([topic], on_lost=lambda c, ps: lost.append([p.partition for p in ps]))
    c2.subscribe([topic])

    def both_assigned() -> bool:
        c1.poll(0.1)
        c2.poll(0.1)
        return len(c1.assignment()) == 1 and len(c2.assignment()) == 1

    wait_until(both_assigned, 30, "one partition each")
    stopped = time.monotonic()
    # c1's application stops polling; only c2 is polled from now on
    wait_until(lambda: c2.poll(0.1) is None and len(c2.assignment()) == 2, 20,
               lambda: f"c2 to get both partitions (it has {sorted(_parts(c2))})")
    assert time.monotonic() - stopped < SESSION_MS / 1000 / 2
    # c1 learns it lost its partition when it polls again, and joins again
    wait_until(lambda: c1.poll(0.1) is None and lost, 20, "c1's lost callback")
    wait_until(lambda: (c1.poll(0.1), c2.poll(0.1)) and len(c1.assignment()) == 1 == len(c2.assignment()), 30,
               "c1 back in the group with one partition")


def test_regex_topics_come_after_the_literal_ones_and_only_the_matching_ones(
        broker: BrokerProcess, consumers: list[Consumer]) -> None:
    prefix = unique_name("rx")
    topic1, topic2, topic_a, other = f"{prefix}-1", f"{prefix}-2", unique_name("lit"), unique_name("other")
    for t, n in ((topic1, 4), (topic2, 4), (topic_a, 2), (other, 3)):
        create_topic(broker.bootstrap, t, n)
    regex_parts = {(t, p) for t in (topic1, topic2) for p in range(4)}
    events: list[set[tuple[str, int]]] = []

    def on_assign(consumer: Consumer, ps: list[TopicPartition]) -> None:
        events.append({(p.topic, p.partition) for p in ps})

    c = _consumer(consumers, broker, unique_name("g"))
    c.subscribe([f"^{prefix}.*"], on_assign=on_assign)
    wait_until(lambda: c.poll(0.1) is None and _parts(c) == regex_parts, 30,
               lambda: f"the regex's 8 partitions, not {sorted(_parts(c))}")
    assert events and set().union(*events) == regex_parts
    c.unsubscribe()
    wait_until(lambda: c.poll(0.1) is None and not c.assignment(), 30, "the revocation")
    events.clear()
    c.subscribe([f"^{prefix}.*", topic_a], on_assign=on_assign)
    wanted = regex_parts | {(topic_a, 0), (topic_a, 1)}
    wait_until(lambda: c.poll(0.1) is None and _parts(c) == wanted, 30,
               lambda: f"the 10 partitions, not {sorted(_parts(c))}")
    assert [e for e in events if e][0] == {(topic_a, 0), (topic_a, 1)}, events


PARTITIONS = 10


def _group_type(broker: BrokerProcess, group: str) -> ConsumerGroupType:
    return admin(broker.bootstrap).describe_consumer_groups([group])[group].result(timeout=20).type


def _check(broker: BrokerProcess, members: list[Consumer], group: str, topic: str,
           expected: ConsumerGroupType) -> None:
    """confluent-kafka's check_consumer: every member holds its share, all partitions once, the group of
    the expected type, and 100 records produced are read by the members."""
    share = PARTITIONS // len(members)

    def balanced() -> bool:
        for c in members:
            c.poll(0.1)
        held = [tp for c in members for tp in _parts(c)]
        return all(len(c.assignment()) == share for c in members) and len(set(held)) == PARTITIONS == len(held)

    wait_until(balanced, 60, lambda: f"{share} partitions each, not {[sorted(_parts(c)) for c in members]}",
               interval=0)
    assert _group_type(broker, group) == expected
    produce(broker.bootstrap, topic, [f"v{i}" for i in range(100)])
    read = [0]

    def all_read() -> bool:
        for c in members:
            msg = c.poll(0.1)
            if msg is not None and msg.error() is None:
                read[0] += 1
        return read[0] >= 100

    wait_until(all_read, 60, lambda: f"100 records read, not {read[0]}", interval=0)


@pytest.mark.parametrize("strategy", ["roundrobin", "range", "cooperative-sticky"])
def test_online_upgrade_and_downgrade_of_a_group_with_members(broker: BrokerProcess, consumers: list[Consumer],
                                                              strategy: str) -> None:
    topic = unique_name(f"updown-{strategy}")
    create_topic(broker.bootstrap, topic, PARTITIONS)
    classic = {"group.protocol": "classic", "partition.assignment.strategy": strategy,
               "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    members: list[Consumer] = []
    steps: list[tuple[str, dict[str, Any] | None, ConsumerGroupType]] = [
        ("add", classic, ConsumerGroupType.CLASSIC),
        ("add", {}, ConsumerGroupType.CONSUMER),
        ("remove", None, ConsumerGroupType.CONSUMER),
        ("add", classic, ConsumerGroupType.CONSUMER),
        ("remove", None, ConsumerGroupType.CLASSIC),
    ]
    for op, conf, expected in steps:
        if op == "add":
            c = _consumer(consumers, broker, topic, **(conf or {}))
            c.subscribe([topic])
            members.append(c)
        else:
            members.pop(0).close()
        _check(broker, members, topic, topic, expected)
