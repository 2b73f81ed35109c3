"""A broker paused (SIGSTOP) past its ZooKeeper session wakes to a cluster that moved on: its session
expired, the controller elected another leader for its partitions. On the new session it must re-read
everything it cached and set every watch again: it answers Metadata with the current leader, follows it,
rejoins the ISR, and hears the next leader change too. Before issue #29's fix it kept its old state
forever: a deposed leader that still led at its old epoch, deaf to every later change."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.protocol.transport import BlockingConnection
from tests.clients import consume_all
from tests.harness import BrokerCluster, BrokerPool
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

TOPIC = "moving"


@pytest.fixture
def trio(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> Iterator[BrokerCluster]:
    cluster = brokers.start_cluster(zk_standalone.connect_string, 3, {"min.insync.replicas": "2"}, name="expiry")
    try:
        yield cluster
    finally:
        for b in cluster.brokers:
            if b.pid is not None and b.alive():
                os.kill(b.pid, signal.SIGCONT)


def state_seen_by(broker_port: int) -> tuple[int, int, list[int]]:
    """(leader, leader epoch, ISR) of moving-0 in that broker's own metadata cache."""
    from kafka.protocol.metadata import MetadataRequest

    with BlockingConnection("127.0.0.1", broker_port, "expiry-test", 5.0) as c:
        md = c.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)]), 9)
    p = md.topics[0].partitions[0]
    return p.leader_id, p.leader_epoch, sorted(p.isr_nodes)


def produce(bootstrap: str, values: list[bytes]) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for v in values:
        p.produce(TOPIC, v, partition=0)
    assert p.flush(60) == 0


def test_a_broker_whose_session_expired_hears_every_later_leader_change(trio: BrokerCluster) -> None:
    c = trio
    admin = AdminClient({"bootstrap.servers": c.bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 0]])]).values():
        f.result(30)
    ports = {b.broker_id: b.port for b in c.brokers}
    wait_until(lambda: state_seen_by(ports[0])[0] == 1 and state_seen_by(ports[0])[2] == [0, 1, 2], 30,
               "moving-0 led by 1 with every replica in sync")
    produce(c.bootstrap, [b"a%d" % i for i in range(10)])

    paused = c.by_id(1)
    assert paused.pid is not None
    os.kill(paused.pid, signal.SIGSTOP)  # past its 6 s session: ZooKeeper expires it, 2 takes over
    try:
        wait_until(lambda: state_seen_by(ports[0])[0] == 2, 60, "broker 2 to lead moving-0")
        others = f"127.0.0.1:{ports[0]},127.0.0.1:{ports[2]}"
        produce(others, [b"b%d" % i for i in range(10)])
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    # awake on a new session: it re-reads the state and follows 2 back into the ISR
    wait_until(lambda: state_seen_by(ports[1]) == state_seen_by(ports[2]) and state_seen_by(ports[1])[0] == 2
               and state_seen_by(ports[1])[2] == [0, 1, 2], 60,
               lambda: f"broker 1 to see what broker 2 sees: {state_seen_by(ports[1])} vs {state_seen_by(ports[2])}")
    wait_until(lambda: "Re-registering after a new ZooKeeper session" in paused.output(), 10, "the new session")
    # a later change reaches it through the watches set on the new session
    c.by_id(2).stop()
    wait_until(lambda: state_seen_by(ports[0])[0] in (0, 1) and state_seen_by(ports[0])[0] == state_seen_by(ports[1])[0]
               and state_seen_by(ports[0])[1] == state_seen_by(ports[1])[1], 60,
               lambda: f"brokers 0 and 1 to agree on the next leader: {state_seen_by(ports[0])} vs "
                       f"{state_seen_by(ports[1])}")
    survivors = f"127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
    produce(survivors, [b"c%d" % i for i in range(10)])
    got = {m.value() for m in consume_all(survivors, TOPIC, 30)}
    assert got == {b"%s%d" % (k, i) for k in (b"a", b"b", b"c") for i in range(10)}
