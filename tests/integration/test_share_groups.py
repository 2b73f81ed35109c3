"""Share groups (KIP-932) against a real broker with confluent-kafka's `ShareConsumer` (librdkafka 2.16):
one partition drained by one and by four consumers with every record accepted exactly once by exactly
one of them, release (redelivered), reject (archived), the acquisition lock expiring (redelivered), a
consumer closing without acknowledging (its records redelivered), the delivery-count limit (archived),
a hostile client answered with Kafka's error codes, and the offsets admin APIs (describe with start
offset and lag, alter and delete only when the group is empty), DeleteGroups and ListGroups' type filter; and `odradek share-groups` (list, describe, reset, delete).

The consumers read from the latest offset (`share.auto.offset.reset` defaults to latest): each test
first produces warm-up records until a consumer has received one, so the share partition is initialised,
then produces the records it counts (tests that set the group's configs read from the earliest).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import ResourceType
from kafka.protocol.admin import DeleteGroupsRequest, ListGroupsRequest
from kafka.protocol.metadata import FindCoordinatorRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import (
    ReadShareGroupStateSummaryRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)
from odradek.protocol.kip932_admin import (
    AlterShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
)
from tests.clients import admin, alter_configs, create_topic, produce, unique_name
from tests.harness import BrokerProcess, run_cli
from tests.rawclient import RawClient
from tests.share_consumers import CONFIG, WARM, Share, drain, join_share_group, until_marker, warm_up
from tests.share_consumers import share_groups_tool as _tool
from tests.share_consumers import topic_id as _topic_id
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def broker_config() -> dict[str, str]:
    return CONFIG


@pytest.fixture
def consumers(broker: BrokerProcess) -> Iterator[Any]:
    with ExitStack() as stack:
        def make(group: str, topic: str, n: int = 1, max_records: int = 500) -> list[Share]:
            out = [Share(broker, group, topic, max_records) for _ in range(n)]
            for s in out:
                stack.callback(s.close)
            return out

        yield make


def _ready(broker: BrokerProcess, consumers: Any, n: int = 1, max_records: int = 500) -> tuple[str, str, list[Share]]:
    """A new one-partition topic and `n` share consumers of a new group, warmed up: (topic, group, them)."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    shares: list[Share] = consumers(group, topic, n, max_records)
    warm_up(broker, topic, shares)
    return topic, group, shares


def _values(msgs: list[Any]) -> list[bytes]:
    return [m.value() for m in msgs if m.value() != WARM]


@pytest.mark.parametrize("n", [1, 4])
def test_one_partition_drained_exactly_once(broker: BrokerProcess, consumers: Any, n: int) -> None:
    # ten records a fetch, in batches of ten: a fetch acquires whole batches (batch-optimized), so one
    # big batch would go to one consumer
    topic, group, shares = _ready(broker, consumers, n, max_records=10)
    values = [f"r{i}".encode() for i in range(200)]
    produce(broker.bootstrap, topic, values, **{"batch.num.messages": 10})
    accepted = drain(shares, len(values))
    flat = [v for lst in accepted.values() for _o, v in lst]
    assert sorted(flat) == sorted(values), "every record accepted exactly once"
    offsets = [o for lst in accepted.values() for o, _v in lst]
    assert len(set(offsets)) == len(offsets)
    if n == 4:
        described = _describe(broker, group)
        assert described.error_code == 0 and len(described.members) == 4
        assert all(m.assignment.topic_partitions[0].partitions == [0] for m in described.members)
        assert sum(1 for lst in accepted.values() if lst) >= 2, "the records were shared out"


def test_a_poll_returns_a_whole_batch_past_max_poll_records(broker: BrokerProcess, consumers: Any) -> None:
    """max.poll.records caps a fetch at batch boundaries (Kafka 4.2's batch-optimized acquisition): twenty
    records in one batch come in one poll of a consumer asking for five (confluent-kafka-python's
    test_poll_returns_whole_batch_exceeding_max_poll_records)."""
    topic, _group, shares = _ready(broker, consumers, 1, max_records=5)
    values = [f"w{i}".encode() for i in range(20)]
    produce(broker.bootstrap, topic, values, **{"linger.ms": 1000, "batch.num.messages": 30})
    share, msgs = _first(shares)
    assert _values(msgs) == values
    share.settle(msgs)


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
    rest = until_marker(broker, topic, s, b"end")
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
    accepted = drain([other], 5, timeout=30)
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
    rest = until_marker(broker, topic, s, b"after")
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


# ---- the offsets admin APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets),
# DeleteGroups and ListGroups on share groups ----


def _offsets(raw: RawClient, group: str, topics: list[tuple[str, list[int]]] | None = None) -> Any:
    """DescribeShareGroupOffsets v1 for one group: the group's entry."""
    req_topic = DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup.DescribeShareGroupOffsetsRequestTopic
    topic_list = None if topics is None else [req_topic(topic_name=t, partitions=ps) for t, ps in topics]
    resp = raw.request(DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=topic_list)]),
        version=1)
    return resp.groups[0]


def _partition_row(group: Any) -> tuple[int, int]:
    (topic,) = group.topics
    (p,) = topic.partitions
    assert p.error_code == 0
    return p.start_offset, p.lag


def _alter(raw: RawClient, group: str, topic: str, offset: int, partition: int = 0) -> Any:
    t = AlterShareGroupOffsetsRequest.AlterShareGroupOffsetsRequestTopic
    return raw.request(AlterShareGroupOffsetsRequest(group_id=group, topics=[
        t(topic_name=topic, partitions=[t.AlterShareGroupOffsetsRequestPartition(partition_index=partition,
                                                                                 start_offset=offset)])]), version=0)


def _delete_offsets(raw: RawClient, group: str, topic: str) -> Any:
    t = DeleteShareGroupOffsetsRequest.DeleteShareGroupOffsetsRequestTopic
    return raw.request(DeleteShareGroupOffsetsRequest(group_id=group, topics=[t(topic_name=topic)]), version=0)


def _listed(raw: RawClient, types: list[str]) -> dict[str, tuple[str, str]]:
    resp = raw.request(ListGroupsRequest(states_filter=[], types_filter=types), version=5)
    return {g.group_id: (g.group_type, g.group_state) for g in resp.groups}


def test_share_group_offsets_admin(broker: BrokerProcess, consumers: Any) -> None:
    topic, group, (s,) = _ready(broker, consumers)
    produce(broker.bootstrap, topic, [f"o{i}".encode() for i in range(10)])
    drain([s], 10)
    with RawClient(broker.port) as raw:
        end = wait_until(lambda: _partition_row(_offsets(raw, group)) if _partition_row(_offsets(raw, group))[1] == 0
                         else None, message="the start offset to pass every accepted record")[0]
        assert end >= 11  # the warm-up record and the ten
        produce(broker.bootstrap, topic, [b"later"] * 3)
        assert _partition_row(_offsets(raw, group)) == (end, 3)
        assert _partition_row(_offsets(raw, group, [(topic, [0])])) == (end, 3)
        missing = _offsets(raw, group, [("no-such-topic", [0])]).topics[0].partitions[0]
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert _listed(raw, ["share"])[group] == ("share", "Stable")
        assert group not in _listed(raw, ["classic", "consumer"])
        # members present: nothing may change
        assert _alter(raw, group, topic, 0).error_code == ErrorCode.NON_EMPTY_GROUP
        assert _delete_offsets(raw, group, topic).error_code == ErrorCode.NON_EMPTY_GROUP
        assert raw.request(DeleteGroupsRequest(groups_names=[group]), version=2).results[0].error_code == \
            ErrorCode.NON_EMPTY_GROUP
        s.close()
        wait_until(lambda: _listed(raw, ["share"])[group][1] == "Empty", message="the group to be empty")
        altered = _alter(raw, group, topic, 2)
        assert altered.error_code == 0 and altered.responses[0].partitions[0].error_code == 0
        assert _partition_row(_offsets(raw, group)) == (2, end + 3 - 2)
        bad = _alter(raw, group, topic, 0, partition=7).responses[0].partitions[0]
        assert bad.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        deleted = _delete_offsets(raw, group, topic)
        assert deleted.error_code == 0 and deleted.responses[0].error_code == 0
        assert _offsets(raw, group).topics == []
        assert raw.request(DeleteGroupsRequest(groups_names=[group]), version=2).results[0].error_code == 0
        assert group not in _listed(raw, ["share"])
        assert _offsets(raw, group).error_code == ErrorCode.GROUP_ID_NOT_FOUND
        # altering offsets of a group that does not exist creates it, empty
        assert _alter(raw, group, topic, 1).error_code == 0
        assert _partition_row(_offsets(raw, group)) == (1, end + 3 - 1)
        assert _listed(raw, ["share"])[group] == ("share", "Empty")


def test_a_deleted_topics_share_state_goes_with_it(broker: BrokerProcess, consumers: Any) -> None:
    """Deleting a topic deletes its share partitions' state and takes them out of the group, as Kafka does."""
    topic, group, (s,) = _ready(broker, consumers)
    produce(broker.bootstrap, topic, [b"d1", b"d2"])
    drain([s], 2)
    summary = ReadShareGroupStateSummaryRequest
    with RawClient(broker.port) as raw:
        tid = _topic_id(raw, topic)
        assert tid is not None
        ask = summary(group_id=group, topics=[summary.ReadStateSummaryData(topic_id=tid, partitions=[
            summary.ReadStateSummaryData.PartitionData(partition=0, leader_epoch=-1)])])

        def start_offset() -> int:
            (p,) = [p for t in raw.request(ask, version=1).results for p in t.partitions]
            assert p.error_code == 0
            return int(p.start_offset)

        assert wait_until(lambda: start_offset() >= 3, message="the accepted records in the state")
        s.close()
        admin(broker.bootstrap).delete_topics([topic])[topic].result(30)
        wait_until(lambda: start_offset() == -1, message="the deleted topic's share state to be deleted")
        assert _offsets(raw, group).topics == []


# ---- `odradek share-groups` ----


def test_share_groups_tool(broker: BrokerProcess, consumers: Any) -> None:
    topic, group, (a, b) = _ready(broker, consumers, 2)
    produce(broker.bootstrap, topic, [f"t{i}".encode() for i in range(4)])
    drain([a, b], 4)
    assert group in _tool(broker, "--list")
    assert f"{group} Stable" in _tool(broker, "--list", "--state", "stable")
    assert _tool(broker, "--list", "--state", "Empty").count(f"{group} Stable") == 0
    offsets = wait_until(lambda: (lambda lines: lines if lines[-1].endswith(" 0") else None)(
        _tool(broker, "--describe", "--group", group)), message="the lag to reach 0")
    assert offsets[0] == "GROUP TOPIC PARTITION START-OFFSET LAG"
    start = int(offsets[1].split()[3])
    assert offsets[1] == f"{group} {topic} 0 {start} 0" and start >= 5
    assert _tool(broker, "--describe", "--group", group, "--offsets", "--verbose")[0] == \
        "GROUP TOPIC PARTITION LEADER-EPOCH START-OFFSET LAG"
    members = _tool(broker, "--describe", "--group", group, "--members")
    assert members[0] == "GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS ASSIGNMENT"
    assert len(members) == 3 and all(m.endswith(f" 1 {topic}:0") for m in members[1:])
    state = _tool(broker, "--describe", "--group", group, "--state", "--verbose")
    assert state[0] == "GROUP COORDINATOR (ID) STATE GROUP-EPOCH ASSIGNMENT-EPOCH #MEMBERS"
    assert state[1].startswith(f"{group} 127.0.0.1:{broker.port} (0) Stable") and state[1].endswith(" 2")
    assert "is not empty" in _tool(broker, "--reset-offsets", "--group", group, "--to-earliest", code=1)[0]
    a.close()
    b.close()
    wait_until(lambda: f"{group} Empty" in _tool(broker, "--list", "--state"), message="the group to be empty")
    assert _tool(broker, "--describe", "--group", group, "--members")[0] == \
        f"Share group '{group}' has no active members."
    planned = _tool(broker, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest")
    assert planned == ["GROUP TOPIC PARTITION NEW-OFFSET", f"{group} {topic} 0 0"]
    assert _tool(broker, "--describe", "--group", group)[1] == f"{group} {topic} 0 {start} 0", "a dry run"
    _tool(broker, "--reset-offsets", "--group", group, "--to-offset", "2", "--execute")
    assert _tool(broker, "--describe", "--group", group)[1] == f"{group} {topic} 0 2 {start - 2}"
    future = _tool(broker, "--reset-offsets", "--group", group, "--topic", f"{topic}:0", "--to-datetime",
                   "2999-01-01T00:00:00.000")
    assert future[1:] == [f"{group} {topic} 0 {start}",  # stdout, then stderr
                          f"Warn: Partition 0 from topic {topic} is empty. Falling back to latest known offset."]
    assert _tool(broker, "--delete-offsets", "--group", group, "--topic", "no-such-topic", code=1) == [
        "TOPIC STATUS", "no-such-topic Error: This server does not host this topic-partition.",
        "Error: Encountered some topic-level error, see the follow-up details."]
    assert _tool(broker, "--delete-offsets", "--group", group, "--topic", topic) == \
        ["TOPIC STATUS", f"{topic} Successful"]
    assert _tool(broker, "--describe", "--group", group) == [f"Share group '{group}' has no offset information."]
    assert _tool(broker, "--delete", "--group", group) == [f"Deletion of requested share groups ('{group}') was "
                                                           "successful."]
    assert group not in _tool(broker, "--list")
    assert _tool(broker, "--describe", "--group", group) == [f"Error: Share group '{group}' does not exist."]
    failed = run_cli("share-groups", "--bootstrap-server", broker.bootstrap, "--delete", "--group", group)
    assert failed.returncode == 1 and failed.stderr.splitlines() == [
        "Error: Deletion of some share groups failed:",
        f"* Group '{group}' could not be deleted due to: GroupIdNotFoundException: Group '{group}' is not a share "
        "group."]


def test_share_groups_tool_flags(broker: BrokerProcess) -> None:
    done = run_cli("share-groups", "--help")
    assert done.returncode == 0 and "--reset-offsets" in done.stdout and "--to-datetime" in done.stdout
    assert _tool(broker, "--group", "g", code=1) == [
        "Error: Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
        "--delete-offsets."]
    assert _tool(broker, "--describe", "--group", "g", "--members", "--state", code=1)[0].startswith(
        "Error: Option [describe] takes at most one of these options")
    assert _tool(broker, "--reset-offsets", "--group", "g", code=1)[0].startswith(
        "Error: Option [reset-offsets] requires one of the following scenarios")
    assert _tool(broker, "--list", "--state", "Rebalancing", code=1) == [
        "Error: Invalid state list 'Rebalancing'. Valid states are: Empty, Stable, Dead"]
    unreachable = run_cli("share-groups", "--bootstrap-server", "127.0.0.1:1", "--list", "--timeout", "2000")
    assert unreachable.returncode == 1 and len(unreachable.stderr.strip().splitlines()) == 1


def test_group_configs_override_the_brokers(broker: BrokerProcess, consumers: Any) -> None:
    """A group's own configs (GROUP config resource): `share.auto.offset.reset=earliest` makes its first
    consumer read what the topic held before anyone joined (the broker's default is latest), and its
    members are told its `share.heartbeat.interval.ms`, while another group keeps the broker's."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    old = [f"old{i}".encode() for i in range(5)]
    produce(broker.bootstrap, topic, old)
    alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest",
                  share__heartbeat__interval__ms="700")
    (share,) = consumers(group, topic)
    accepted = drain([share], len(old))
    assert sorted(v for _o, v in accepted[0]) == old
    with RawClient(broker.port) as raw:
        def interval(of_group: str) -> int | None:
            hb = raw.request(ShareGroupHeartbeatRequest(group_id=of_group, member_id=uuid.uuid4().hex,
                                                        member_epoch=0, subscribed_topic_names=[topic]), version=1)
            return hb.heartbeat_interval_ms if hb.error_code == 0 else None

        assert wait_until(lambda: interval(group), message="a heartbeat answer") == 700
        assert wait_until(lambda: interval(unique_name("sg")), message="a heartbeat answer") == 300


def test_altered_offsets_are_read_from(broker: BrokerProcess, consumers: Any) -> None:
    """A group that read a partition, emptied and reset to offset 0 (AlterShareGroupOffsets, the next
    state epoch): a new consumer gets every record from 0 again, its acknowledgements are accepted (the
    leader writes at the new state epoch) and the lag ends at 0."""
    topic, group, (s,) = _ready(broker, consumers)
    produce(broker.bootstrap, topic, [b"a", b"b"])
    drain([s], 2)
    s.close()
    with RawClient(broker.port) as raw:
        wait_until(lambda: _listed(raw, ["share"])[group][1] == "Empty", message="the group to be empty")
        assert _alter(raw, group, topic, 0).error_code == 0
        end = _partition_row(_offsets(raw, group))[1]
        (again,) = consumers(group, topic)
        accepted = drain([again], 2)  # and the warm-up records before them, accepted by _drain
        assert sorted(v for _o, v in accepted[0]) == [b"a", b"b"]
        wait_until(lambda: _partition_row(_offsets(raw, group)) == (end, 0), message="the lag to reach 0")


def test_read_committed_group_sees_only_committed_records(broker: BrokerProcess, consumers: Any) -> None:
    """`share.isolation.level=read_committed` for a group: records of aborted transactions are archived and
    never delivered, those of open transactions wait for the commit; a read_uncommitted group sees all."""
    topic, committed_group, all_group = unique_name("share"), unique_name("sg"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    for group, level in ((committed_group, "read_committed"), (all_group, "read_uncommitted")):
        alter_configs(broker.bootstrap, ResourceType.GROUP, group, share__auto__offset__reset="earliest",
                      share__isolation__level=level)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": unique_name("tx")})
    p.init_transactions(30)
    for i, outcome in enumerate(["commit", "abort", "commit", "abort"]):
        p.begin_transaction()
        for j in range(3):
            p.produce(topic, f"{outcome}-{i}-{j}".encode())
        p.flush(30)  # in the log before the end (an abort would purge what is still queued)
        (p.commit_transaction if outcome == "commit" else p.abort_transaction)(30)
    p.begin_transaction()
    p.produce(topic, b"open-0")  # not committed yet
    p.flush(30)
    committed = sorted(f"commit-{i}-{j}".encode() for i in (0, 2) for j in range(3))
    (reader,) = consumers(committed_group, topic)
    assert sorted(v for _o, v in drain([reader], len(committed))[0]) == committed
    (everything,) = consumers(all_group, topic)
    assert len(drain([everything], 13)[0]) == 13  # every data record, the open one included
    p.commit_transaction(30)
    assert [v for _o, v in drain([reader], 1)[0]] == [b"open-0"]
    assert reader.poll(1.0) == []  # nothing aborted came afterwards


def test_a_share_session_ends_with_its_connection(broker: BrokerProcess) -> None:
    """A share session belongs to the connection that opened it (Kafka's disconnect listener): once that
    connection is gone, the session is gone too, so a crashed consumer cannot fill the session cache."""
    topic, group = unique_name("share"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    member = uuid.uuid4().hex

    def fetch(raw: RawClient, topic_id: uuid.UUID, epoch: int) -> Any:
        part = ShareFetchRequest.FetchTopic.FetchPartition(partition_index=0, acknowledgement_batches=[])
        return raw.request(ShareFetchRequest(
            group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=0, min_bytes=1,
            max_bytes=1 << 20, max_records=100, batch_size=100,
            topics=[ShareFetchRequest.FetchTopic(topic_id=topic_id, partitions=[part])],
            forgotten_topics_data=[]), version=1)

    with RawClient(broker.port) as first:
        join_share_group(first, group, member, [topic])
        topic_id = wait_until(lambda: _topic_id(first, topic), message="the topic id")
        assert fetch(first, topic_id, 0).error_code == 0  # opens the session; its next epoch is 1
    with RawClient(broker.port) as second:
        assert wait_until(lambda: fetch(second, topic_id, 1).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND,
                          message="the closed connection's session to be gone")
