"""Observations 1 and 5 of issue #36 and the consumer-protocol topic authorization of issue #37, against the
secured set-up (tests/adversarial/secured.py). bob may READ/WRITE topic `bobs` and READ group `bobs-group`;
the `payroll-*` topics are not his.

1. A subscription regex that makes a backtracking matcher take exponential time (`(.|.|.|.|.)*!`, ~1 s a
   ten-character topic name on Python's `re`) froze the broker for as long as it was matched. Now every
   client pattern runs on RE2: while bob heartbeats with such patterns, another client's round trips stay
   fast, and bob's heartbeats are answered at once.
5. bob's regex `.*` resolved to every topic: he was assigned `payroll-*` partitions and their names came
   back in ConsumerGroupDescribe. Now a resolution keeps the topics the heartbeat's principal may
   DESCRIBE (Kafka's rule), and a group holding a topic the caller may not describe is described by
   TOPIC_AUTHORIZATION_FAILED alone.
#37: subscribing by name to a topic one may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED in the heartbeat
   (Kafka 4.0+, KAFKA-18813), which a librdkafka consumer with `group.protocol=consumer` reports.
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip848 import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from odradek.protocol.transport import BlockingConnection
from tests.adversarial.secured import SECURED, client_conf, connect_as, listeners
from tests.harness import BrokerPool, free_port
from tests.waiting import wait_until

MINE, GROUP = "bobs", "bobs-group"
SECRET = ["payroll-01", "payroll-02"]  # ten characters: ~1 s each for `(.|.|.|.|.)*!` on Python's re
ATTACKS = ["(.|.|.|.|.)*!", "(.|.|.|.|.|.)*!", "(.|.|.|.|.|.|.|.)*#"]


@dataclass
class Target:
    sasl_port: int
    ids: dict[str, uuid.UUID]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"


@pytest.fixture(scope="module")
def target(module_brokers: BrokerPool) -> Iterator[Target]:
    plain, sasl = free_port(), free_port()
    module_brokers.start({**SECURED, "listeners": listeners(plain, sasl), "auto.create.topics.enable": "false"},
                         name="regex-target", port=plain)
    admin = AdminClient(client_conf(f"127.0.0.1:{sasl}", "admin"))
    for f in admin.create_topics([NewTopic(t, 2, 1) for t in [MINE, *SECRET]]).values():
        f.result(30)

    def allow(kind: ResourceType, name: str, op: AclOperation) -> AclBinding:
        return AclBinding(kind, name, ResourcePatternType.LITERAL, "User:bob", "*", op, AclPermissionType.ALLOW)

    for f in admin.create_acls([allow(ResourceType.TOPIC, MINE, AclOperation.READ),
                                allow(ResourceType.TOPIC, MINE, AclOperation.WRITE),
                                allow(ResourceType.GROUP, GROUP, AclOperation.READ)]).values():
        f.result(30)
    with connect_as("admin", sasl) as conn:
        md = conn.request(MetadataRequest(topics=None), 12)
        ids = {t.name: t.topic_id for t in md.topics}
    yield Target(sasl, ids)


def heartbeat(conn: BlockingConnection, group: str = GROUP, member_id: str | None = None, epoch: int = 0,
              regex: str | None = None, names: list[str] | None = None) -> Any:
    join = epoch == 0
    return conn.request(ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member_id or str(uuid.uuid4()), member_epoch=epoch, instance_id=None,
        rack_id=None, rebalance_timeout_ms=10_000 if join else -1,
        subscribed_topic_names=names if join and regex is None else None, subscribed_topic_regex=regex,
        server_assignor=None, topic_partitions=[] if join else None), 1)


def leave(conn: BlockingConnection, member_id: str, group: str = GROUP) -> None:
    heartbeat(conn, group, member_id, -1)


def ready(conn: BlockingConnection) -> None:
    """Wait for the group coordinator (and __consumer_offsets) with a plain join and leave."""
    last: list[Any] = []

    def joined() -> bool:
        conn.request(FindCoordinatorRequest(key=GROUP, key_type=0), 3)  # creates __consumer_offsets
        r = heartbeat(conn, names=[MINE])
        last[:] = [r]
        if r.error_code == 0:
            leave(conn, r.member_id)
        return r.error_code == 0

    assert wait_until(joined, timeout=30, message=lambda: f"the group coordinator ({last})")


def test_a_pathological_regex_does_not_stall_the_broker(target: Target) -> None:
    pings: list[float] = []
    stop = threading.Event()

    def pinger() -> None:
        with connect_as("alice", target.sasl_port, timeout=60) as c:
            while not stop.is_set():
                started = time.perf_counter()
                c.request(ApiVersionsRequest(client_software_name="ping", client_software_version="1"), 3)
                pings.append(time.perf_counter() - started)
                time.sleep(0.005)

    answers: list[float] = []
    with connect_as("bob", target.sasl_port, timeout=60) as conn:
        ready(conn)
        thread = threading.Thread(target=pinger, daemon=True)
        thread.start()
        try:
            assert wait_until(lambda: len(pings) >= 5, timeout=30, message="the pinger's first answers")
            for regex in ATTACKS:
                started = time.perf_counter()
                r = heartbeat(conn, regex=regex)
                assert r.error_code == 0, r
                member, epoch = r.member_id, r.member_epoch
                for _ in range(3):  # the regex is resolved in the background, then re-matched on heartbeats
                    time.sleep(0.05)
                    r = heartbeat(conn, member_id=member, epoch=epoch)
                    assert r.error_code == 0, r
                    epoch = r.member_epoch
                answers.append(time.perf_counter() - started)
                leave(conn, member)
        finally:
            stop.set()
            thread.join(60)
    assert max(answers) < 2.0, answers  # four heartbeats and three short pauses each
    assert statistics.median(pings) < 0.1, sorted(pings)[-5:]


def test_refused_patterns_are_invalid_regular_expression(target: Target) -> None:
    with connect_as("bob", target.sasl_port) as conn:
        ready(conn)
        for regex in [r"(bobs)\1", "(?=bobs).*", "((((a{100}){100}){100}){100})"]:  # the last one too big
            r = heartbeat(conn, regex=regex)
            assert r.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION, r
            assert r.error_message and len(r.error_message) < 400


def _assigned(r: Any) -> set[uuid.UUID]:
    return {t.topic_id for t in r.assignment.topic_partitions} if r.assignment is not None else set()


def test_a_regex_resolves_only_to_topics_the_member_may_describe(target: Target) -> None:
    with connect_as("bob", target.sasl_port) as conn:
        ready(conn)
        r = heartbeat(conn, regex=".*")
        assert r.error_code == 0, r
        member, epoch = r.member_id, r.member_epoch
        seen: set[uuid.UUID] = set()

        def assigned() -> bool:
            nonlocal epoch
            a = heartbeat(conn, member_id=member, epoch=epoch)
            assert a.error_code == 0, a
            epoch = a.member_epoch
            seen.update(_assigned(a))
            return target.ids[MINE] in seen

        assert wait_until(assigned, timeout=30, message="bob's assignment")
        for _ in range(3):  # the periodic re-resolution keeps the filter too
            time.sleep(0.4)
            assigned()
        assert seen == {target.ids[MINE]}
        d = conn.request(ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False), 0)
        group = d.groups[0]
        assert group.error_code == 0, group
        named = {t.topic_name for m in group.members for a in (m.assignment, m.target_assignment)
                 for t in a.topic_partitions}
        assert named == {MINE}
        leave(conn, member)


def test_describe_hides_a_group_holding_topics_the_caller_may_not_describe(target: Target) -> None:
    with connect_as("admin", target.sasl_port) as admin, connect_as("bob", target.sasl_port) as bob:
        ready(bob)
        r = heartbeat(admin, names=[SECRET[0]])
        assert r.error_code == 0, r
        try:
            def held() -> bool:
                d = admin.request(ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False),
                                  0).groups[0]
                return any(a.topic_partitions for m in d.members for a in (m.assignment, m.target_assignment))

            assert wait_until(held, timeout=30, message="admin's assignment")
            d = bob.request(ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False),
                            0).groups[0]
            assert d.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and d.members == [], d
            assert "not authorized to describe" in (d.error_message or "")
        finally:
            leave(admin, r.member_id)


def test_subscribing_by_name_to_a_forbidden_topic_is_topic_authorization_failed(target: Target) -> None:
    with connect_as("bob", target.sasl_port) as conn:
        ready(conn)
        r = heartbeat(conn, names=[MINE, SECRET[1]])
        assert r.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED, r
    errors: list[KafkaError] = []
    consumer = Consumer({**client_conf(target.bootstrap, "bob"), "group.id": GROUP, "group.protocol": "consumer",
                         "error_cb": errors.append})
    try:
        consumer.subscribe([SECRET[1]])

        def refused() -> bool:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is not None:
                errors.append(msg.error())
            return any(e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED for e in errors)

        assert wait_until(refused, timeout=30, message="TOPIC_AUTHORIZATION_FAILED"), errors
    finally:
        consumer.close()
