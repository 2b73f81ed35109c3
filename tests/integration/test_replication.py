"""Replication and fail-over with real clients: the drills of the reference guides (kill -9 the leader,
nothing acknowledged is lost; restart, catch up, rejoin the ISR; min.insync.replicas)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.clients import admin, consume_all
from tests.harness import BrokerCluster
from tests.zkharness import ZooKeeperEnsemble


def _describe(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    md = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    return {p: (m.leader, sorted(m.isrs)) for p, m in md.partitions.items()}


def _wait(pred, timeout: float = 30.0, step: float = 0.2) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def _segment_bytes(cluster: BrokerCluster, broker: int, topic: str, p: int) -> bytes:
    d = cluster.brokers[broker].log_dir / f"{topic}-{p}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))


class NumberedProducer:
    """Sends a numbered message every few milliseconds with acks=all; records what was acknowledged."""

    def __init__(self, bootstrap: str, topic: str, partitions: int = 2, **conf: object) -> None:
        self.partitions = partitions
        self.acked: list[tuple[int, int, int]] = []  # (partition, offset, number)
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2, "retries": 1000000,
                            "retry.backoff.ms": 100, "message.timeout.ms": 60000, **conf})
        self._topic = topic
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _cb(self, err: object, msg: object) -> None:
        if err is not None:
            self.failed.append(str(err))
        else:
            self.acked.append((msg.partition(), msg.offset(), int(msg.value())))  # type: ignore[attr-defined]

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            self._p.produce(self._topic, str(i).encode(), partition=i % self.partitions, on_delivery=self._cb)
            self._p.poll(0.003)
            i += 1
        self._p.flush(60)

    def start(self) -> NumberedProducer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(90)


@pytest.fixture
def two_brokers(zk_standalone: ZooKeeperEnsemble, tmp_path: Path) -> Iterator[BrokerCluster]:
    c = BrokerCluster(tmp_path / "c2", zk_standalone.connect_string, size=2).start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture
def three_brokers(zk_standalone: ZooKeeperEnsemble, tmp_path: Path) -> Iterator[BrokerCluster]:
    c = BrokerCluster(tmp_path / "c3", zk_standalone.connect_string, size=3,
                      overrides={"min.insync.replicas": "2"}).start()
    try:
        yield c
    finally:
        c.stop()


def test_replicas_are_byte_identical(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("same", 2, 2)])["same"].result(20)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5, "compression.type": "lz4"})
    for i in range(5000):
        p.produce("same", b"value-%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    for part in (0, 1):
        assert _wait(lambda part=part: _segment_bytes(c, 0, "same", part) == _segment_bytes(c, 1, "same", part))
    assert len(consume_all(c.bootstrap, "same", 5000, partitions=2)) == 5000


def test_kill_leader_two_brokers_nothing_acknowledged_lost(two_brokers: BrokerCluster) -> None:
    """kafka-0.9-zookeeper-cluster-guide.txt section 6: 2 brokers, 2 partitions, replication factor 2."""
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("drill", 2, 2)])["drill"].result(20)
    assert _wait(lambda: all(len(isr) == 2 for _, isr in _describe(c.bootstrap, "drill").values()))
    leader1 = _describe(c.bootstrap, "drill")[1][0]
    survivor = 1 - leader1
    prod = NumberedProducer(c.bootstrap, "drill").start()
    time.sleep(1.5)
    c.by_id(leader1).kill()
    assert _wait(lambda: all(ld == survivor for ld, _ in _describe(c.brokers[survivor].bootstrap, "drill").values()))
    assert all(isr == [survivor] for _, isr in _describe(c.brokers[survivor].bootstrap, "drill").values())
    time.sleep(1.5)
    prod.stop()
    assert not prod.failed, prod.failed[:3]
    assert len(prod.acked) > 200
    got = consume_all(c.brokers[survivor].bootstrap, "drill", len(prod.acked), partitions=2)
    stored = {(m.partition(), m.offset()): int(m.value()) for m in got}
    for part, off, num in prod.acked:
        assert stored.get((part, off)) == num, f"acknowledged {num} at {part}/{off} is missing"
    for part in (0, 1):  # in order within each partition, none missing
        nums = [stored[k] for k in sorted(k for k in stored if k[0] == part)]
        assert nums == sorted(nums)
    # restart: the broker catches up and rejoins the ISR
    c.by_id(leader1).start()
    assert _wait(lambda: all(isr == [0, 1] for _, isr in _describe(c.bootstrap, "drill").values()), 40)
    for part in (0, 1):
        assert _wait(lambda part=part: _segment_bytes(c, 0, "drill", part) == _segment_bytes(c, 1, "drill", part))


def test_retries_zero_surfaces_the_failure(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("noretry", 1, 2)])["noretry"].result(20)
    assert _wait(lambda: _describe(c.bootstrap, "noretry")[0][1] == [0, 1])
    leader = _describe(c.bootstrap, "noretry")[0][0]
    prod = NumberedProducer(c.bootstrap, "noretry", partitions=1, retries=0, **{"message.timeout.ms": 5000}).start()
    time.sleep(1.0)
    c.by_id(leader).kill()
    time.sleep(4.0)
    prod.stop()
    # every message either was acknowledged (and is stored) or its callback got an error: no silent gap
    got = consume_all(c.brokers[1 - leader].bootstrap, "noretry", len(prod.acked))
    stored = {m.offset(): int(m.value()) for m in got}
    for _p, off, num in prod.acked:
        assert stored.get(off) == num
    sent_numbers = {n for _p, _o, n in prod.acked}
    assert len(sent_numbers) + len(prod.failed) >= max(sent_numbers, default=0)


def test_three_brokers_min_isr(three_brokers: BrokerCluster) -> None:
    """kafka-0.11-three-broker-cluster-guide.txt: replication factor 3, min.insync.replicas=2."""
    c = three_brokers
    admin(c.bootstrap).create_topics([NewTopic("ha", 1, 3)])["ha"].result(20)
    assert _wait(lambda: _describe(c.bootstrap, "ha")[0][1] == [0, 1, 2])
    leader = _describe(c.bootstrap, "ha")[0][0]
    prod = NumberedProducer(c.bootstrap, "ha", partitions=1).start()
    time.sleep(1.0)
    c.by_id(leader).kill()
    time.sleep(1.5)
    prod.stop()
    assert not prod.failed
    alive = [b for b in range(3) if b != leader]
    boot = ",".join(c.brokers[b].bootstrap for b in alive)
    got = consume_all(boot, "ha", len(prod.acked))
    stored = {m.offset(): int(m.value()) for m in got}
    assert all(stored.get(off) == num for _p, off, num in prod.acked)
    # kill a second broker: acks=all fails with NOT_ENOUGH_REPLICAS, acks=1 still works, reads go on
    new_leader = _describe(boot, "ha")[0][0]
    other = [b for b in alive if b != new_leader][0]
    c.by_id(other).kill()
    last = c.brokers[new_leader].bootstrap
    assert _wait(lambda: _describe(last, "ha")[0][1] == [new_leader])
    p_all = Producer({"bootstrap.servers": last, "acks": "all", "message.timeout.ms": 4000, "retries": 0})
    errors: list[str] = []
    p_all.produce("ha", b"must-fail", on_delivery=lambda e, m: errors.append(str(e)) if e else None)
    p_all.flush(10)
    assert errors and "NOT_ENOUGH_REPLICAS" in errors[0].upper().replace(" ", "_")
    p_one = Producer({"bootstrap.servers": last, "acks": "1"})
    p_one.produce("ha", b"acks-one")
    assert p_one.flush(10) == 0
    cons = Consumer({"bootstrap.servers": last, "group.id": "minisr", "enable.auto.commit": False})
    lo, hi = cons.get_watermark_offsets(TopicPartition("ha", 0), timeout=10)
    cons.close()
    assert hi == len(stored) + 1 or hi >= len(prod.acked) + 1


def test_follower_killed_mid_burst_resyncs_identically(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("burst", 1, 2)])["burst"].result(20)
    assert _wait(lambda: _describe(c.bootstrap, "burst")[0][1] == [0, 1])
    leader = _describe(c.bootstrap, "burst")[0][0]
    follower = 1 - leader
    p = Producer({"bootstrap.servers": c.brokers[leader].bootstrap, "acks": "1", "linger.ms": 1})
    for i in range(20000):
        p.produce("burst", b"b%d" % i)
        if i == 5000:
            c.by_id(follower).kill()
        p.poll(0)
    assert p.flush(30) == 0
    c.by_id(follower).start()
    assert _wait(lambda: _segment_bytes(c, 0, "burst", 0) == _segment_bytes(c, 1, "burst", 0), 40)
    assert _wait(lambda: _describe(c.bootstrap, "burst")[0][1] == [0, 1], 30)


def test_acks_all_without_enough_replicas_is_refused_before_append(three_brokers: BrokerCluster) -> None:
    c = three_brokers
    a = admin(c.bootstrap)
    a.create_topics([NewTopic("strict", 1, 2, config={"min.insync.replicas": "2"})])["strict"].result(20)
    assert _wait(lambda: len(_describe(c.bootstrap, "strict")[0][1]) == 2)
    leader, isr = _describe(c.bootstrap, "strict")[0]
    c.by_id([b for b in isr if b != leader][0]).kill()
    assert _wait(lambda: _describe(c.brokers[leader].bootstrap, "strict")[0][1] == [leader])
    before = _segment_bytes(c, leader, "strict", 0)
    p = Producer({"bootstrap.servers": c.brokers[leader].bootstrap, "acks": "all", "retries": 0,
                  "message.timeout.ms": 4000})
    errs: list[str] = []
    p.produce("strict", b"x", on_delivery=lambda e, m: errs.append(str(e)) if e else None)
    p.flush(10)
    assert errs and "NOT_ENOUGH_REPLICAS" in errs[0].upper().replace(" ", "_")
    assert _segment_bytes(c, leader, "strict", 0) == before  # nothing appended
    with pytest.raises(KafkaException):
        raise KafkaException(errs[0])


def test_controlled_shutdown_moves_leadership_first(two_brokers: BrokerCluster) -> None:
    """SIGTERM on a leader (controlled.shutdown.enable=true): leadership moves before the broker exits."""
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("ctl", 2, 2)])["ctl"].result(20)
    assert _wait(lambda: all(isr == [0, 1] for _, isr in _describe(c.bootstrap, "ctl").values()))
    leaders = {ld for ld, _ in _describe(c.bootstrap, "ctl").values()}
    assert leaders == {0, 1}
    assert c.by_id(0).stop() == 0
    out = c.by_id(0).output()
    assert "Controlled shutdown succeeded" in out
    # the survivor already led everything when broker 0 exited: no wait for a session to expire
    assert all(ld == 1 for ld, _ in _describe(c.brokers[1].bootstrap, "ctl").values())
