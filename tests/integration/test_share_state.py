"""Share-group state kept in `__share_group_state` (KIP-932's share coordinator), with confluent-kafka's
`ShareConsumer`: it survives a kill -9 and restart of a single broker (accepted records are not delivered
again, a record released and then held comes back with its delivery count, so the delivery-count limit
still archives it), and on a 3-broker ZooKeeper cluster a group of four consumers drains a replicated
one-partition topic with every record acknowledged exactly once by exactly one consumer through a kill -9
of the partition's leader, of the group coordinator (the group described at the next one with its members
and epochs at once: `__consumer_offsets` keeps them) and of the share coordinator of its state; and the
group's members survive a single broker's restart."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, KafkaException
from confluent_kafka.admin import NewTopic
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest

from odradek.groups import OFFSETS_TOPIC
from odradek.groups.share_state import ShareKey
from odradek.groups.share_state_coordinator import SHARE_STATE_TOPIC, coordinator_key
from odradek.protocol.errors import ErrorCode
from odradek.protocol.kip932 import (
    DeleteShareGroupStateRequest,
    InitializeShareGroupStateRequest,
    ReadShareGroupStateRequest,
    ReadShareGroupStateSummaryRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
    WriteShareGroupStateRequest,
)
from tests.clients import admin, create_topic, produce, unique_name
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess
from tests.rawclient import RawClient
from tests.share_consumers import CONFIG, WARM, Share, drain, until_marker, warm_up
from tests.share_consumers import share_groups_tool as tool
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

KEY_TYPE_GROUP, KEY_TYPE_SHARE = 0, 2


@pytest.fixture
def shares() -> Iterator[Any]:
    with ExitStack() as stack:
        def make(broker: Any, group: str, topic: str, n: int = 1, max_records: int = 500) -> list[Share]:
            out = [Share(broker, group, topic, max_records) for _ in range(n)]
            for s in out:
                stack.callback(s.close)
            return out

        yield make


def test_state_survives_a_broker_restart(brokers: BrokerPool, shares: Any) -> None:
    broker = brokers.start(CONFIG)  # delivery-count limit 3
    topic, group = unique_name("durable"), unique_name("sg")
    create_topic(broker.bootstrap, topic)
    (s,) = shares(broker, group, topic)
    warm_up(broker, topic, [s])
    accepted = [f"acc-{i}".encode() for i in range(10)]
    produce(broker.bootstrap, topic, accepted)
    got = drain([s], len(accepted))
    assert sorted(v for _o, v in got[0]) == sorted(accepted)
    # "rel" is released once (delivery 1), then delivered again (delivery 2) and held when the broker dies
    produce(broker.bootstrap, topic, [b"rel"])
    counts: list[int] = []

    def held() -> bool:
        msgs = s.poll(0.2)
        for m in msgs:
            assert m.value() == b"rel", m.value()
            counts.append(m.delivery_count())
            if len(counts) == 1:
                s.c.acknowledge(m, AcknowledgeType.RELEASE)
        if msgs and len(counts) == 1:
            assert all(e is None for e in s.c.commit_sync(30).values())
        return len(counts) >= 2

    wait_until(held, timeout=30, message=lambda: f"the released record again (deliveries {counts})", interval=0)
    assert counts == [1, 2]
    broker.kill()
    s.close()
    broker.start()
    (again,) = shares(broker, group, topic)
    seen: list[tuple[bytes, int]] = []

    def redelivered() -> bool:
        msgs = again.poll(0.3)
        for m in msgs:
            seen.append((m.value(), m.delivery_count()))
            again.c.acknowledge(m, AcknowledgeType.RELEASE if m.value() == b"rel" else AcknowledgeType.ACCEPT)
        if msgs:
            assert all(e is None for e in again.c.commit_sync(30).values())
        return any(v == b"rel" for v, _c in seen)

    wait_until(redelivered, timeout=60, message=lambda: f"the held record after the restart (seen {seen})", interval=0)
    assert seen == [(b"rel", 3)], "accepted records stay accepted; the held one keeps its delivery count"
    rest = until_marker(broker, topic, again, b"after")
    assert rest == [b"after"], "released at the limit (3) after the restart: archived, never delivered again"


def test_group_membership_survives_a_broker_restart(brokers: BrokerPool, shares: Any) -> None:
    """The share group's members, epochs and assignments come back from `__consumer_offsets` with the
    broker: described as before the kill -9 at once, and the same consumers, heartbeating with their
    epochs, are not fenced and go on consuming."""
    broker = brokers.start(CONFIG)
    topic, group = unique_name("members"), unique_name("sg")
    create_topic(broker.bootstrap, topic, partitions=2)
    a, b, c = shares(broker, group, topic, 3)
    warm_up(broker, topic, [a, b, c])
    c.close()  # its join and departure take the group's epoch past what a group of two rejoining would have

    def described() -> tuple[list[str], list[str]] | None:
        members = tool(broker, "--describe", "--group", group, "--members", "--verbose")
        state = tool(broker, "--describe", "--group", group, "--state", "--verbose")
        epochs = {line.split()[-2] for line in members[1:]}  # MEMBER-EPOCH, before ASSIGNMENT
        stable = len(members) == 3 and epochs == {state[1].split()[-2]}  # every member at the assignment epoch
        return (members, state) if stable else None

    members, state = wait_until(described, timeout=30, message="both members at the assignment epoch")
    assert int(state[1].split()[-2]) >= 4
    assert sorted(line.split()[-1] for line in members[1:]) == [f"{topic}:0", f"{topic}:1"]
    broker.kill()
    broker.start()
    again = wait_until(lambda: tool(broker, "--describe", "--group", group, "--members", "--verbose"),
                       timeout=30, message="the group coordinator loaded", ignoring=(AssertionError,))
    assert again == members, "the members, their epochs and assignments from before the restart"
    assert tool(broker, "--describe", "--group", group, "--state", "--verbose") == state
    values = [f"after-{i}".encode() for i in range(20)]
    produce(broker.bootstrap, topic, values)
    got = drain([a, b], len(values))
    assert sorted(v for vs in got.values() for _o, v in vs) == sorted(values)
    assert tool(broker, "--describe", "--group", group, "--state", "--verbose") == state, "nobody rejoined"


def _one(resp: Any) -> Any:
    (t,) = resp.results
    (p,) = t.partitions
    return p


def test_state_apis_over_the_wire(brokers: BrokerPool) -> None:
    """What one broker asks another: initialise, read (fencing older leader epochs), write (v1), summary
    (v1), delete; malformed writes refused per partition."""
    broker = brokers.start(CONFIG)
    topic_id, group = uuid.uuid4(), unique_name("sg")
    init, read, write = InitializeShareGroupStateRequest, ReadShareGroupStateRequest, WriteShareGroupStateRequest
    summary, delete = ReadShareGroupStateSummaryRequest, DeleteShareGroupStateRequest
    batch = write.WriteStateData.PartitionData.StateBatch

    def writing(leader_epoch: int, start: int, batches: list[tuple[int, int, int, int]]) -> Any:
        return write(group_id=group, topics=[write.WriteStateData(topic_id=topic_id, partitions=[
            write.WriteStateData.PartitionData(partition=0, state_epoch=1, leader_epoch=leader_epoch,
                                               start_offset=start, delivery_complete_count=-1, state_batches=[
                    batch(first_offset=f, last_offset=last, delivery_state=st, delivery_count=n)
                    for f, last, st, n in batches])])])

    def reading(leader_epoch: int) -> Any:
        return read(group_id=group, topics=[read.ReadStateData(topic_id=topic_id, partitions=[
            read.ReadStateData.PartitionData(partition=0, leader_epoch=leader_epoch)])])

    with RawClient(broker.port, timeout=30) as raw:
        def ask(request: Any, version: int) -> Any:  # the first call creates __share_group_state
            def answered() -> Any:
                p = _one(raw.request(request, version=version))
                return None if p.error_code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else p

            return wait_until(answered, 30, "the share coordinator")

        p = ask(init(group_id=group, topics=[init.InitializeStateData(topic_id=topic_id, partitions=[
            init.InitializeStateData.PartitionData(partition=0, state_epoch=1, start_offset=10)])]), 0)
        assert p.error_code == 0
        p = ask(reading(3), 0)
        assert (p.error_code, p.state_epoch, p.start_offset, p.state_batches) == (0, 1, 10, [])
        assert ask(writing(3, 12, [(12, 13, 2, 1), (14, 15, 0, 2)]), 1).error_code == 0
        p = ask(reading(3), 0)
        assert p.start_offset == 12
        assert [(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches] == [
            (12, 13, 2, 1), (14, 15, 0, 2)]
        assert ask(writing(2, 20, []), 0).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert ask(reading(2), 0).error_code == ErrorCode.FENCED_LEADER_EPOCH
        assert ask(writing(3, 20, [(5, 4, 0, 1)]), 1).error_code == ErrorCode.INVALID_REQUEST
        assert ask(writing(3, 20, [(20, 21, 9, 1)]), 1).error_code == ErrorCode.INVALID_REQUEST
        p = ask(summary(group_id=group, topics=[summary.ReadStateSummaryData(topic_id=topic_id, partitions=[
            summary.ReadStateSummaryData.PartitionData(partition=0, leader_epoch=3)])]), 1)
        assert (p.error_code, p.state_epoch, p.leader_epoch, p.start_offset) == (0, 1, 3, 12)
        assert p.delivery_complete_count == 2  # 12 and 13 acknowledged
        assert ask(delete(group_id=group, topics=[delete.DeleteStateData(topic_id=topic_id, partitions=[
            delete.DeleteStateData.PartitionData(partition=0)])]), 0).error_code == 0
        assert ask(reading(0), 0).start_offset == -1
        bad = raw.request(FindCoordinatorRequest(key_type=KEY_TYPE_SHARE, coordinator_keys=["no-such-key"]), version=6)
        assert bad.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
        key = coordinator_key(ShareKey(group, topic_id.bytes, 0))
        found = raw.request(FindCoordinatorRequest(key_type=KEY_TYPE_SHARE, coordinator_keys=[key]), version=6)
        assert (found.coordinators[0].error_code, found.coordinators[0].node_id) == (0, 0)


# ---- a 3-broker cluster ----
CLUSTER = {**CONFIG, "min.insync.replicas": "2", "zookeeper.session.timeout.ms": "4000",
           "replica.lag.time.max.ms": "4000", "group.share.session.timeout.ms": "45000"}


def _topic_id(broker: BrokerProcess, topic: str) -> bytes:
    with RawClient(broker.port) as raw:
        md = raw.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                         allow_auto_topic_creation=False), version=12)
    (t,) = md.topics
    return bytes(t.topic_id.bytes)


def _leader(c: BrokerCluster, topic: str, partition: int = 0) -> int:
    md = admin(c.bootstrap).list_topics(topic, timeout=10).topics[topic]
    return int(md.partitions[partition].leader)


def _isr_full(c: BrokerCluster, topic: str) -> bool:
    md = admin(c.bootstrap).list_topics(topic, timeout=10).topics[topic]
    return bool(md.partitions) and all(len(p.isrs) == 3 and p.leader >= 0 for p in md.partitions.values())


def _share_coordinator(c: BrokerCluster, key: str, key_type: int = KEY_TYPE_SHARE) -> int:
    """The share coordinator of `key`, as a broker finds it (FindCoordinator, key type "share"; or the
    group coordinator, key type "group")."""
    live = next(b for b in c.brokers if b.alive())
    with RawClient(live.port) as raw:
        resp = raw.request(FindCoordinatorRequest(key_type=key_type, coordinator_keys=[key]), version=6)
    (found,) = resp.coordinators
    assert found.error_code == 0, found
    return int(found.node_id)


def _members(broker: BrokerProcess, group: str) -> tuple[int, dict[str, tuple[int, list[int]]]] | None:
    """The share group as `broker` describes it: (group epoch, member id -> (member epoch, partitions)) once
    every member is at the assignment epoch; None before (or while `broker` does not serve the group)."""
    with RawClient(broker.port) as raw:
        (g,) = raw.request(ShareGroupDescribeRequest(group_ids=[group], include_authorized_operations=False),
                           version=1).groups
    if g.error_code != 0 or any(m.member_epoch != g.assignment_epoch for m in g.members):
        return None
    return g.group_epoch, {m.member_id: (m.member_epoch, sorted(p for tp in m.assignment.topic_partitions
                                                                 for p in tp.partitions)) for m in g.members}


def _pass_through(broker: BrokerProcess, group: str, topic: str) -> None:
    """A member joins the share group and leaves it at once (two moves of the group's epoch)."""
    with RawClient(broker.port) as raw:
        joined = raw.request(ShareGroupHeartbeatRequest(group_id=group, member_id="passer-by", member_epoch=0,
                                                        subscribed_topic_names=[topic]), version=1)
        assert joined.error_code == 0, joined
        left = raw.request(ShareGroupHeartbeatRequest(group_id=group, member_id="passer-by", member_epoch=-1),
                           version=1)
        assert left.error_code == 0, left


class Tally:
    """Every record each consumer acknowledged with success (the commit answered no error)."""

    def __init__(self, shares: list[Share]) -> None:
        self.shares = shares
        self.accepted: list[tuple[int, bytes]] = []  # (consumer, value)
        self.done: set[bytes] = set()
        self.again: list[bytes] = []  # delivered again after an acknowledgement that succeeded
        self.failed = 0

    def step(self) -> None:
        for i, s in enumerate(self.shares):
            try:
                msgs = s.poll(0.1)
            except KafkaException:
                continue
            if not msgs:
                continue
            for m in msgs:
                if m.value() in self.done:
                    self.again.append(m.value())
                s.c.acknowledge(m, AcknowledgeType.ACCEPT)
            try:
                results = s.c.commit_sync(30)
            except KafkaException:
                self.failed += 1
                continue
            if all(e is None for e in results.values()):
                self.accepted += [(i, m.value()) for m in msgs if m.value() != WARM]
                self.done.update(m.value() for m in msgs if m.value() != WARM)
            else:
                self.failed += 1

    def drain_to(self, want: int, timeout: float) -> None:
        def enough() -> bool:
            self.step()
            return len(self.accepted) >= want

        wait_until(enough, timeout=timeout, interval=0,
                   message=lambda: f"{want} records accepted (have {len(self.accepted)}, failed commits {self.failed})")


def test_cluster_drain_through_leader_and_coordinator_kills(zk_standalone: ZooKeeperChroot, brokers: BrokerPool,
                                                            shares: Any) -> None:
    c = brokers.start_cluster(zk_standalone.connect_string, 3, CLUSTER)
    topic, group = unique_name("ha-share"), unique_name("sg")
    admin(c.bootstrap).create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    wait_until(lambda: _isr_full(c, topic), 60, "a full ISR", ignoring=(KafkaException,))
    consumers = shares(c, group, topic, 4, 20)
    warm_up(c.brokers[0], topic, consumers)
    values = [f"v{i}".encode() for i in range(300)]
    # batches of 10 records: a fetch acquires whole batches (batch-optimized), so one big batch would go
    # to one consumer
    produce(c.bootstrap, topic, values, acks="all", **{"batch.num.messages": 10})
    tally = Tally(consumers)
    tally.drain_to(60, 120)
    # kill -9 the partition's leader; the survivors go on from the state in __share_group_state
    leader = c.by_id(_leader(c, topic))
    leader.kill()
    wait_until(lambda: _leader(c, topic) not in (-1, leader.broker_id), 60, "a new leader",
               ignoring=(KafkaException,))
    tally.drain_to(150, 180)
    leader.start()
    wait_until(lambda: _isr_full(c, topic) and _isr_full(c, SHARE_STATE_TOPIC) and _isr_full(c, OFFSETS_TOPIC), 120,
               "full ISRs again", ignoring=(KafkaException,))
    # kill -9 the group coordinator: the next one describes the group with its members, their epochs and
    # assignments before any member rejoined (a passer-by first takes the group's epoch past the 4 that
    # four members joining a new group would give it)
    group_coordinator = c.by_id(_share_coordinator(c, group, KEY_TYPE_GROUP))
    _pass_through(group_coordinator, group, topic)
    before = wait_until(lambda: _members(group_coordinator, group), 30, "every member at the assignment epoch")
    assert before[0] >= 6 and len(before[1]) == 4, before
    group_coordinator.kill()
    successor = wait_until(lambda: (lambda n: c.by_id(n) if n != group_coordinator.broker_id else None)(
        _share_coordinator(c, group, KEY_TYPE_GROUP)), 60, "a new group coordinator",
        ignoring=(KafkaException, AssertionError, OSError))
    after = wait_until(lambda: _members(successor, group), 30, "the group at its new coordinator",
                       ignoring=(OSError,))
    assert after == before, "the members as they were, none of them rejoined"
    tally.drain_to(220, 180)
    group_coordinator.start()
    wait_until(lambda: _isr_full(c, topic) and _isr_full(c, SHARE_STATE_TOPIC) and _isr_full(c, OFFSETS_TOPIC), 120,
               "full ISRs again", ignoring=(KafkaException,))
    # kill -9 the share coordinator of the partition's state (maybe the new leader: both move again)
    key = coordinator_key(ShareKey(group, _topic_id(c.brokers[0] if c.brokers[0].alive() else c.brokers[1], topic), 0))
    coordinator = c.by_id(_share_coordinator(c, key))
    coordinator.kill()
    wait_until(lambda: _share_coordinator(c, key) != coordinator.broker_id, 60, "a new share coordinator",
               ignoring=(KafkaException, AssertionError, OSError))
    tally.drain_to(len(values), 240)
    coordinator.start()
    by_value: dict[bytes, list[int]] = {}
    for who, v in tally.accepted:
        by_value.setdefault(v, []).append(who)
    assert sorted(by_value) == sorted(values), "every record acknowledged"
    assert all(len(who) == 1 for who in by_value.values()), {v: w for v, w in by_value.items() if len(w) > 1}
    assert tally.again == [], "a record acknowledged with success was delivered again"
    assert len({who for who, _v in tally.accepted}) >= 2, "the records were shared out"
