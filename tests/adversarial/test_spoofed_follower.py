"""Finding 1 of issue #25: a user with no ACLs claimed to be the follower (Fetch with the follower's replica
id and a huge fetch offset) and the leader recorded that position before refusing the request, so acks=all
records were acknowledged that only the leader had; a kill -9 of the leader then lost them all.

Here: two brokers on ZooKeeper, `min.insync.replicas=2`, a topic on replicas [0, 1] led by 0. alice spoofs
the follower every 100 ms while the real follower is frozen (SIGSTOP): nothing sent meanwhile may be
acknowledged. Then the leader is killed (-9), the follower resumed, the old leader restarted: every record
that was acknowledged is read back. A super user's fetch as a replica also cannot move a follower past the
leader's log end, nor claim a replica id outside the assignment."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from odradek.protocol.errors import ErrorCode
from tests.adversarial.secured import SECURED, client_conf, connect_as, follower_fetch, listeners
from tests.harness import BrokerCluster, BrokerPool, free_port
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

TOPIC = "precious"


@pytest.fixture
def pair(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> Iterator[tuple[BrokerCluster, list[int]]]:
    cluster = BrokerCluster(brokers.directory("spoof"), zk_standalone.connect_string, size=2,
                            overrides={**SECURED, "min.insync.replicas": "2", "auto.create.topics.enable": "false",
                                       "offsets.topic.replication.factor": "1"})
    sasl_ports = [free_port() for _ in cluster.brokers]
    for b, port in zip(cluster.brokers, sasl_ports, strict=True):
        b.overrides["listeners"] = listeners(b.port, port)
    try:
        cluster.start()
        yield cluster, sasl_ports
    finally:
        for b in cluster.brokers:
            if b.pid is not None and b.alive():
                os.kill(b.pid, signal.SIGCONT)
        cluster.stop()


def _create(bootstrap: str) -> None:
    admin = AdminClient(client_conf(bootstrap, "admin"))
    for f in admin.create_topics([NewTopic(TOPIC, 1, replica_assignment=[[0, 1]])]).values():
        f.result(30)


def _sasl(ports: list[int], *ids: int) -> str:
    return ",".join(f"127.0.0.1:{ports[i]}" for i in ids)


def _produce(bootstrap: str, values: list[bytes], timeout_ms: int) -> list[bytes]:
    """Send `values` with acks=all; the values acknowledged."""
    acked: list[bytes] = []
    p = Producer({**client_conf(bootstrap, "admin"), "acks": "all", "enable.idempotence": True,
                  "message.timeout.ms": timeout_ms, "request.timeout.ms": min(timeout_ms, 5000),
                  "linger.ms": 5})

    def done(err: object, msg: object) -> None:
        if err is None:
            acked.append(msg.value())  # type: ignore[attr-defined]

    for v in values:
        p.produce(TOPIC, v, partition=0, on_delivery=done)
    p.flush(timeout_ms / 1000 + 30)
    return acked


def _read_all(bootstrap: str, expected_end: int) -> list[bytes]:
    c = Consumer({**client_conf(bootstrap, "admin"), "group.id": "audit", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        got: list[bytes] = []

        def drained() -> bool:
            for m in c.consume(100, 1.0):
                if m.error() is None:
                    got.append(m.value())
            return len(got) >= expected_end

        wait_until(drained, 60, lambda: f"{expected_end} records (read {len(got)})")
        return got
    finally:
        c.close()


def _in_sync(bootstrap: str) -> bool:
    md = AdminClient(client_conf(bootstrap, "admin")).list_topics(TOPIC, timeout=5)
    part = md.topics[TOPIC].partitions[0]
    return part.leader == 0 and sorted(part.isrs) == [0, 1]


def test_a_spoofed_follower_cannot_get_acks_all_data_acknowledged(pair: tuple[BrokerCluster, list[int]]) -> None:
    cluster, ports = pair
    both = _sasl(ports, 0, 1)
    _create(both)
    wait_until(lambda: _in_sync(both), 30, "precious-0 led by 0 with ISR [0, 1]")
    before = [b"before-%d" % i for i in range(10)]
    assert _produce(both, before, 30000) == before

    answers: list[int] = []
    stop = threading.Event()

    def spoof() -> None:
        with connect_as("alice", ports[0]) as alice:
            while not stop.is_set():
                answers.append(alice.request(follower_fetch(TOPIC, 0, replica_id=1, fetch_offset=1 << 40), 12).error_code)
                stop.wait(0.1)

    spoofer = threading.Thread(target=spoof, daemon=True)
    spoofer.start()
    follower = cluster.by_id(1)
    assert follower.pid is not None
    os.kill(follower.pid, signal.SIGSTOP)
    try:
        wait_until(lambda: len(answers) >= 3, 20, "alice's first spoofed fetches")
        during = [b"during-%d" % i for i in range(100)]
        acked_during = _produce(_sasl(ports, 0), during, 8000)
    finally:
        stop.set()
        spoofer.join(15)
    assert set(answers) == {ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
    assert acked_during == [], f"{len(acked_during)} records acknowledged with the only follower frozen"
    assert "Principal = User:alice is Denied operation = CLUSTER_ACTION" in cluster.by_id(0).output()

    cluster.by_id(0).kill()  # kill -9 of the leader, then the follower wakes
    os.kill(follower.pid, signal.SIGCONT)
    cluster.by_id(0).start()
    wait_until(lambda: _in_sync(both) or _leader_is_known(both), 60, "a leader for precious-0 again")
    got = _read_all(both, len(before))
    missing = [v for v in before + acked_during if v not in got]
    assert missing == [], f"acknowledged records lost: {missing[:5]}"


def _leader_is_known(bootstrap: str) -> bool:
    md = AdminClient(client_conf(bootstrap, "admin")).list_topics(TOPIC, timeout=5)
    return md.topics[TOPIC].partitions[0].leader >= 0


def test_even_a_super_user_cannot_move_a_follower_past_the_log_end(pair: tuple[BrokerCluster, list[int]]) -> None:
    cluster, ports = pair
    both = _sasl(ports, 0, 1)
    _create(both)
    wait_until(lambda: _in_sync(both), 30, "precious-0 led by 0 with ISR [0, 1]")
    assert len(_produce(both, [b"x%d" % i for i in range(5)], 30000)) == 5
    with connect_as("admin", ports[0]) as admin:
        past_end = admin.request(follower_fetch(TOPIC, 0, replica_id=1, fetch_offset=1 << 40), 12)
        stranger = admin.request(follower_fetch(TOPIC, 0, replica_id=7, fetch_offset=0), 12)
        itself = admin.request(follower_fetch(TOPIC, 0, replica_id=0, fetch_offset=5), 12)
    assert past_end.error_code == 0
    assert past_end.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert stranger.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert itself.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    # the real follower keeps replicating: the next acks=all records are acknowledged
    assert len(_produce(both, [b"y%d" % i for i in range(5)], 30000)) == 5
