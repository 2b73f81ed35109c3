"""Transactions on a 3-broker ZooKeeper cluster with replication factor 3: markers reach leaders on other
brokers (WriteTxnMarkers), and the kill drill: brokers are killed with -9 at random points of a stream of
transactions; read_committed readers never see aborted or partial transactions and nothing committed is
lost. A few rounds in CI; ODRADEK_TXN_DRILL_ROUNDS or --run-slow for a long run."""

from __future__ import annotations

import os
import random
import re
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.clients import admin
from tests.harness import BrokerCluster, BrokerPool
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

PARTITIONS = 3
CLUSTER = {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "4000", "replica.lag.time.max.ms": "4000",
           "group.initial.rebalance.delay.ms": "0"}


def _isr_full(bootstrap: str, topic: str) -> bool:
    md = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    return bool(md.partitions) and all(len(p.isrs) == 3 and p.leader >= 0 for p in md.partitions.values())


def _create(c: BrokerCluster, topic: str) -> None:
    admin(c.bootstrap).create_topics([NewTopic(topic, PARTITIONS, 3)])[topic].result(30)
    wait_until(lambda: _isr_full(c.bootstrap, topic), 60, "a full ISR", ignoring=(KafkaException,))


def _read_committed(bootstrap: str, topic: str, timeout: float = 120.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.monotonic_ns()}",
                  "isolation.level": "read_committed", "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: list[bytes] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(m.partition())
                continue
            got.append(m.value())
    finally:
        c.close()
    assert len(at_end) == PARTITIONS, "read_committed reader did not reach the end of every partition"
    return got


def test_markers_reach_leaders_on_other_brokers(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    c = brokers.start_cluster(zk_standalone.connect_string, 3, CLUSTER)
    topic = "txn-spread"
    _create(c, topic)
    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "spread"})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, b"keep-%d" % i, partition=i % PARTITIONS)
    p.commit_transaction(60)
    p.begin_transaction()
    for i in range(30):
        p.produce(topic, b"drop-%d" % i, partition=i % PARTITIONS)
    p.flush(60)
    p.abort_transaction(60)
    assert sorted(_read_committed(c.bootstrap, topic)) == sorted(b"keep-%d" % i for i in range(30))


@pytest.mark.timeout(3600)
def test_kill_drill_never_exposes_aborted_or_partial_transactions(
        zk_standalone: ZooKeeperChroot, brokers: BrokerPool, request: pytest.FixtureRequest) -> None:
    rounds = int(os.environ.get("ODRADEK_TXN_DRILL_ROUNDS",
                                "50" if request.config.getoption("--run-slow") else "3"))
    rng = random.Random(20261124)
    c = brokers.start_cluster(zk_standalone.connect_string, 3, CLUSTER)
    topic = "txn-drill"
    _create(c, topic)
    committed: set[int] = set()  # transactions whose commit_transaction returned
    aborted: set[int] = set()  # transactions aborted before any commit was attempted
    stop = threading.Event()
    errors: list[str] = []

    def run() -> None:
        n = 0
        p: Producer | None = None
        while not stop.is_set():
            try:
                if p is None:
                    p = Producer({"bootstrap.servers": c.bootstrap, "transactional.id": "drill",
                                  "transaction.timeout.ms": 20000, "message.timeout.ms": 20000})
                    p.init_transactions(60)
                n += 1
                size = rng.randrange(1, 20)
                p.begin_transaction()
                for i in range(size):
                    p.produce(topic, b"t%d-%d/%d" % (n, i, size), partition=(n + i) % PARTITIONS)
                if n % 3 == 0:
                    p.flush(30)
                    p.abort_transaction(60)
                    aborted.add(n)
                else:
                    p.commit_transaction(60)
                    committed.add(n)
            except KafkaException as exc:
                err = exc.args[0]
                errors.append(str(err))
                if p is not None and err.txn_requires_abort():
                    try:
                        p.abort_transaction(60)
                        continue
                    except KafkaException:
                        pass
                p = None  # fatal or unknown: a new instance fences the old one and aborts what it left open

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        wait_until(lambda: len(committed) >= 3, 120, "the first committed transactions")
        for _ in range(rounds):
            victim = c.brokers[rng.randrange(3)]
            time.sleep(rng.uniform(0.2, 1.5))
            victim.kill()
            time.sleep(rng.uniform(0.3, 1.5))
            victim.start(60)
            wait_until(lambda: _isr_full(c.bootstrap, topic), 90, "the ISR to refill", ignoring=(KafkaException,))
        before = len(committed)
        wait_until(lambda: len(committed) > before, 120, "a transaction committed after the last restart")
    finally:
        stop.set()
        t.join(180)
    got = _read_committed(c.bootstrap, topic)
    seen: dict[int, set[int]] = {}
    sizes: dict[int, int] = {}
    for v in got:
        m = re.fullmatch(rb"t(\d+)-(\d+)/(\d+)", v)
        assert m is not None, v
        n, i, size = (int(g) for g in m.groups())
        seen.setdefault(n, set()).add(i)
        sizes[n] = size
    print(f"\ntxn drill: {rounds} rounds, {len(committed)} committed, {len(aborted)} aborted, "
          f"{len(seen)} transactions visible, {len(errors)} client errors")
    assert not (aborted & set(seen)), f"aborted transactions visible: {sorted(aborted & set(seen))[:10]}"
    partial = {n: (len(idx), sizes[n]) for n, idx in seen.items() if len(idx) != sizes[n]}
    assert not partial, f"partial transactions visible: {partial}"
    lost = committed - set(seen)
    assert not lost, f"committed transactions missing: {sorted(lost)[:10]}"
    assert len(got) == sum(sizes[n] for n in seen), "a record was read twice"
