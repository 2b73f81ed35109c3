"""Share groups (KIP-932) against a real broker with confluent-kafka's `ShareConsumer` (librdkafka 2.16):
one partition drained by one and by four consumers with every record accepted exactly once by exactly
one of them, release (redelivered), reject (archived), the acquisition lock expiring (redelivered), a
consumer closing without acknowledging (its records redelivered), the delivery-count limit (archived),
and a hostile client answered with Kafka's error codes.

The consumers read from the latest offset (`share.auto.offset.reset` defaults to latest and Odradek has
no group configs yet): each test first produces warm-up records until a consumer has received one, so
the share partition is initialised, then produces the records it counts.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer
from kafka.protocol.metadata import FindCoordinatorRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import (
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from tests.clients import create_topic, produce, unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.waiting import wait_until

LOCK_MS = 1000
CONFIG = {
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.min.record.lock.duration.ms": str(LOCK_MS),
    "group.share.heartbeat.interval.ms": "300",
    "group.share.min.heartbeat.interval.ms": "300",
    "group.share.delivery.count.limit": "3",
}
WARM = b"warm-up"


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return CONFIG


class Share:
    """One ShareConsumer in explicit acknowledgement mode, polled by the test's thread."""

    def __init__(self, broker: BrokerProcess, group: str, topic: str, max_records: int = 500) -> None:
        self.c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                                "share.acknowledgement.mode": "explicit", "max.poll.records": max_records})
        self.c.subscribe([topic])
        self.closed = False

    def poll(self, timeout: float = 0.2) -> list[Any]:
        return [m for m in self.c.poll(timeout) if m.error() is None]

    def settle(self, msgs: list[Any], kind: Any = AcknowledgeType.ACCEPT) -> None:
        """Acknowledge `msgs` with `kind` and wait for the broker's answer (no failure allowed)."""
        for m in msgs:
            self.c.acknowledge(m, kind)
        if msgs:
            results = self.c.commit_sync(30)
            assert all(e is None for e in results.values()), results

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.c.close()


@pytest.fixture
def consumers(broker: BrokerProcess) -> Iterator[Any]:
    with ExitStack() as stack:
        def make(group: str, topic: str, n: int = 1, max_records: int = 500) -> list[Share]:
            out = [Share(broker, group, topic, max_records) for _ in range(n)]
            for s in out:
                stack.callback(s.close)
            return out

        yield make


def _warm_up(broker: BrokerProcess, topic: str, shares: list[Share]) -> None:
    """Produce warm-up records until one reaches a consumer (the share partition is initialised), and
    accept whatever warm-up records arrive."""
    def got_one() -> bool:
        produce(broker.bootstrap, topic, [WARM])
        seen = False
        for s in shares:
            msgs = s.poll(0.3)
            s.settle(msgs)
            seen = seen or bool(msgs)
        return seen

    wait_until(got_one, timeout=60, message="a warm-up record to reach a share consumer", interval=0)


def _ready(broker: BrokerProcess, consumers: Any, n: int = 1, max_records: int = 500) -> tuple[str, str, list[Share]]:
    """A new one-partition topic and `n` share consumers of a new group, warmed up: (topic, group, them)."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    shares: list[Share] = consumers(group, topic, n, max_records)
    _warm_up(broker, topic, shares)
    return topic, group, shares


def _values(msgs: list[Any]) -> list[bytes]:
    return [m.value() for m in msgs if m.value() != WARM]


def _drain(shares: list[Share], want: int, timeout: float = 60) -> dict[int, list[tuple[int, bytes]]]:
    """Poll every consumer, accepting every record, until `want` non-warm-up records were accepted; the
    (offset, value) accepted by each consumer."""
    accepted: dict[int, list[tuple[int, bytes]]] = {i: [] for i in range(len(shares))}

    def step() -> bool:
        for i, s in enumerate(shares):
            msgs = s.poll(0.1)
            s.settle(msgs)
            accepted[i] += [(m.offset(), m.value()) for m in msgs if m.value() != WARM]
        return sum(len(v) for v in accepted.values()) >= want

    wait_until(step, timeout=timeout, message=lambda: f"{want} records accepted (have {accepted})", interval=0)
    return accepted


@pytest.mark.parametrize("n", [1, 4])
def test_one_partition_drained_exactly_once(broker: BrokerProcess, consumers: Any, n: int) -> None:
    # ten records a fetch: a fetch acquires part of a batch, the client keeps only what was acquired
    topic, group, shares = _ready(broker, consumers, n, max_records=10)
    values = [f"r{i}".encode() for i in range(200)]
    produce(broker.bootstrap, topic, values)
    accepted = _drain(shares, len(values))
    flat = [v for lst in accepted.values() for _o, v in lst]
    assert sorted(flat) == sorted(values), "every record accepted exactly once"
    offsets = [o for lst in accepted.values() for o, _v in lst]
    assert len(set(offsets)) == len(offsets)
    if n == 4:
        described = _describe(broker, group)
        assert described.error_code == 0 and len(described.members) == 4
        assert all(m.assignment.topic_partitions[0].partitions == [0] for m in described.members)
        assert sum(1 for lst in accepted.values() if lst) >= 2, "the records were shared out"


def _describe(broker: BrokerProcess, group: str) -> Any:
    with RawClient(broker.port) as raw:
        resp = raw.request(ShareGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                           version=1)
    return resp.groups[0]


def _first(shares: list[Share], timeout: float = 30) -> tuple[Share, list[Any]]:
    """The first consumer to receive non-warm-up records, and those records."""
    found: list[tuple[Share, list[Any]]] = []

    def step() -> bool:
        for s in shares:
            msgs = s.poll(0.1)
            warm = [m for m in msgs if m.value() == WARM]
            s.settle(warm)
            real = [m for m in msgs if m.value() != WARM]
            if real:
                found.append((s, real))
                return True
        return False

    wait_until(step, timeout=timeout, message="records to arrive", interval=0)
    return found[0]


def _until_marker(broker: BrokerProcess, topic: str, s: Share, marker: bytes) -> list[bytes]:
    """Produce `marker`, then accept everything `s` receives until the marker: the values received."""
    produce(broker.bootstrap, topic, [marker])
    rest: list[bytes] = []

    def step() -> bool:
        msgs = s.poll(0.2)
        s.settle(msgs)
        rest.extend(m.value() for m in msgs)
        return marker in rest

    wait_until(step, timeout=30, message=f"the marker {marker!r}", interval=0)
    return rest


def test_release_redelivers_and_reject_archives(broker: BrokerProcess, consumers: Any) -> None:
    topic, _group, (s,) = _ready(broker, consumers)
    produce(broker.bootstrap, topic, [b"keep", b"again", b"bad"])
    seen: list[tuple[bytes, int]] = []
    kinds = {b"keep": AcknowledgeType.ACCEPT, b"again": AcknowledgeType.RELEASE, b"bad": AcknowledgeType.REJECT}

    def step() -> bool:
        msgs = s.poll(0.2)
        for m in msgs:
            if m.value() == WARM:
                s.c.acknowledge(m, AcknowledgeType.ACCEPT)
                continue
            count = m.delivery_count()
            seen.append((m.value(), count or 0))
            s.c.acknowledge(m, AcknowledgeType.ACCEPT if (m.value() == b"again" and sum(
                1 for v, _c in seen if v == b"again") > 1) else kinds[m.value()])
        if msgs:
            s.c.commit_sync(30)
        return sum(1 for v, _c in seen if v == b"again") >= 2

    wait_until(step, timeout=30, message=lambda: f"the released record again (seen {seen})", interval=0)
    # nothing else comes back: "bad" was archived, "keep" and the second "again" accepted
    rest = _until_marker(broker, topic, s, b"end")
    values = [v for v, _c in seen]
    assert values.count(b"bad") == 1 and values.count(b"keep") == 1 and values.count(b"again") == 2
    assert [c for v, c in seen if v == b"again"] == [1, 2], "the redelivery counts as a second delivery"
    assert rest == [b"end"]


def test_lock_timeout_redelivers(broker: BrokerProcess, consumers: Any) -> None:
    topic, _group, (a, b) = _ready(broker, consumers, 2)
    produce(broker.bootstrap, topic, [b"slow"])
    holder, msgs = _first([a, b])
    assert _values(msgs) == [b"slow"]
    other = b if holder is a else a
    # the holder never acknowledges and stops polling: after the lock (1 s) the record comes back
    redelivered = [m for m in _first([other], timeout=30)[1] if m.value() != WARM]
    assert [(m.value(), m.delivery_count()) for m in redelivered] == [(b"slow", 2)]
    other.settle(redelivered)


def test_closed_consumer_records_redelivered(broker: BrokerProcess, consumers: Any) -> None:
    topic, _group, (a, b) = _ready(broker, consumers, 2)
    produce(broker.bootstrap, topic, [f"c{i}".encode() for i in range(5)])
    holder, msgs = _first([a, b])
    got = _values(msgs)
    holder.close()  # without acknowledging: its records go back to the group
    other = b if holder is a else a
    accepted = _drain([other], 5, timeout=30)
    assert sorted(v for _o, v in accepted[0]) == [f"c{i}".encode() for i in range(5)]
    assert got


def test_delivery_count_limit_archives(broker: BrokerProcess, consumers: Any) -> None:
    topic, _group, (s,) = _ready(broker, consumers)
    produce(broker.bootstrap, topic, [b"poison"])
    deliveries = 0

    def step() -> bool:
        nonlocal deliveries
        msgs = s.poll(0.2)
        for m in msgs:
            if m.value() == b"poison":
                deliveries += 1
                s.c.acknowledge(m, AcknowledgeType.RELEASE)
            else:
                s.c.acknowledge(m, AcknowledgeType.ACCEPT)
        if msgs:
            s.c.commit_sync(30)
        return deliveries >= 3

    wait_until(step, timeout=30, message=lambda: f"three deliveries (have {deliveries})", interval=0)
    rest = _until_marker(broker, topic, s, b"after")
    assert rest == [b"after"], "the poison record was archived at the limit (3), not delivered a fourth time"


def test_hostile_client(broker: BrokerProcess) -> None:
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    member = uuid.uuid4().hex
    with RawClient(broker.port) as raw:
        raw.request(FindCoordinatorRequest(key=group), 1)  # creates __consumer_offsets

        def join() -> Any:
            hb = raw.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=0,
                                                        subscribed_topic_names=[topic]), version=1)
            return hb if hb.error_code == 0 else None

        hb = wait_until(join, message="the share group coordinator")
        assert hb.member_epoch > 0 and hb.assignment is not None
        assert raw.request(ShareGroupHeartbeatRequest(group_id=group, member_id=member, member_epoch=99),
                           version=1).error_code == ErrorCode.FENCED_MEMBER_EPOCH
        assert raw.request(ShareGroupHeartbeatRequest(group_id=group, member_id="", member_epoch=0,
                                                      subscribed_topic_names=[topic]),
                           version=1).error_code == ErrorCode.INVALID_REQUEST
        topic_id = wait_until(lambda: _topic_id(raw, topic), message="the topic id")

        def fetch(epoch: int, acks: list[Any] | None = None) -> Any:
            part = ShareFetchRequest.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=acks or [])
            return raw.request(ShareFetchRequest(
                group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
                max_bytes=1 << 20, max_records=100, batch_size=100,
                topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[part])],
                forgotten_topics_data=[]), version=1)

        assert fetch(5).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
        assert fetch(0).error_code == 0
        assert fetch(7).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        batch = ShareFetchRequest.FetchTopic.FetchPartition.AcknowledgementBatch
        # acknowledging offsets never acquired
        resp = fetch(1, [batch(first_offset=0, last_offset=10, acknowledge_types=[1])])
        assert resp.error_code == 0
        assert resp.responses[0].partitions[0].acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
        # a huge range, and a huge array of types that does not match it
        resp = fetch(2, [batch(first_offset=0, last_offset=2**62, acknowledge_types=[1])])
        assert resp.responses[0].partitions[0].acknowledge_error_code == ErrorCode.INVALID_RECORD_STATE
        resp = fetch(3, [batch(first_offset=0, last_offset=3, acknowledge_types=[1] * 100_000)])
        assert resp.responses[0].partitions[0].acknowledge_error_code == ErrorCode.INVALID_REQUEST
        # acknowledgements in a request that opens a session; ShareAcknowledge cannot open one
        assert fetch(0, [batch(first_offset=0, last_offset=0, acknowledge_types=[1])]).error_code == \
            ErrorCode.INVALID_REQUEST
        ack = raw.request(ShareAcknowledgeRequest(group_id=group, member_id=member, share_session_epoch=0,
                                                  topics=[]), version=1)
        assert ack.error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
        # a share heartbeat for a group of another type
        produce(broker.bootstrap, topic, [b"x"])
        other = unique_name("classic")
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": other, "enable.auto.commit": False})
        try:
            from confluent_kafka import TopicPartition

            c.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        finally:
            c.close()
        assert raw.request(ShareGroupHeartbeatRequest(group_id=other, member_id=member, member_epoch=0,
                                                      subscribed_topic_names=[topic]),
                           version=1).error_code == ErrorCode.GROUP_ID_NOT_FOUND


def _topic_id(raw: RawClient, topic: str) -> uuid.UUID | None:
    from kafka.protocol.metadata import MetadataRequest

    resp = raw.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(topic_id=None, name=topic)],
                                       allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                                       include_topic_authorized_operations=False), version=12)
    tid = resp.topics[0].topic_id
    return tid if tid and tid.int else None


def test_implicit_acknowledgement(broker: BrokerProcess) -> None:
    """The default mode: a poll accepts what the previous poll returned (acknowledgements ride on the
    next ShareFetch); none of it is delivered again."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    c = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "max.poll.records": 7})
    try:
        c.subscribe([topic])

        def warm() -> bool:
            produce(broker.bootstrap, topic, [WARM])
            return any(m.error() is None for m in c.poll(0.3))

        wait_until(warm, timeout=60, message="a warm-up record", interval=0)
        values = [f"i{i}".encode() for i in range(50)]
        produce(broker.bootstrap, topic, values)
        got: list[bytes] = []

        def step() -> bool:
            got.extend(m.value() for m in c.poll(0.2) if m.error() is None and m.value() != WARM)
            return len(got) >= len(values)

        wait_until(step, timeout=30, message=lambda: f"50 records (have {len(got)})", interval=0)
        assert sorted(got) == sorted(values)
        # the last poll's records are accepted by a commit (closing without one gives them back, as it
        # gives back anything not acknowledged)
        assert all(e is None for e in c.commit_sync(30).values())
    finally:
        c.close()
    # a new member of the group gets none of the 50 again: only markers come
    d = Share(broker, group, topic)
    rest: list[bytes] = []
    try:
        def marker() -> bool:
            produce(broker.bootstrap, topic, [b"late"])
            msgs = d.poll(0.3)
            d.settle(msgs)
            rest.extend(m.value() for m in msgs)
            return b"late" in rest

        wait_until(marker, timeout=60, message="the marker", interval=0)
        assert set(rest) == {b"late"}
    finally:
        d.close()
