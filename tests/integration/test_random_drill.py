"""The randomized fail-over drill: for N rounds kill -9 a random broker while producing with acks=all
(idempotence off), then restart it. At the end every acknowledged record is readable exactly where its
acknowledgement said, and the replicas of every partition are identical. 200 rounds with --run-slow
(or ODRADEK_DRILL_ROUNDS), a short version otherwise."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic

from tests.clients import admin, consume_to_end
from tests.harness import BrokerPool
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

TOPIC, PARTITIONS = "drill", 3


def _isr_full(bootstrap: str) -> bool:
    md = admin(bootstrap).list_topics(TOPIC, timeout=10).topics[TOPIC]
    return all(len(p.isrs) == 3 and p.leader >= 0 for p in md.partitions.values())


@pytest.mark.timeout(3600)  # 200 rounds take several minutes; the suite's default is 300 s per test
def test_random_kill_drill(zk_standalone: ZooKeeperChroot, brokers: BrokerPool,
                           request: pytest.FixtureRequest) -> None:
    rounds = int(os.environ.get("ODRADEK_DRILL_ROUNDS", "200" if request.config.getoption("--run-slow") else "3"))
    rng = random.Random(20261121)
    c = brokers.start_cluster(zk_standalone.connect_string, 3, {
        "min.insync.replicas": "2", "zookeeper.session.timeout.ms": "4000", "replica.lag.time.max.ms": "4000"})
    acked: list[tuple[int, int, bytes]] = []
    failed = [0]
    stop = threading.Event()

    def produce() -> None:
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "enable.idempotence": False,
                      "linger.ms": 5, "retries": 1000000, "retry.backoff.ms": 100, "message.timeout.ms": 120000})

        def cb(err: object, msg: object) -> None:
            if err is None:
                acked.append((msg.partition(), msg.offset(), msg.value()))  # type: ignore[attr-defined]
            else:
                failed[0] += 1

        i = 0
        while not stop.is_set():
            try:
                p.produce(TOPIC, b"rec-%d" % i, partition=i % PARTITIONS, on_delivery=cb)
                i += 1
            except BufferError:
                pass
            p.poll(0.002)
        left[0] = p.flush(120)

    left = [0]
    try:
        admin(c.bootstrap).create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
        wait_until(lambda: _isr_full(c.bootstrap), 30, "a full ISR", ignoring=(KafkaException,))
        t = threading.Thread(target=produce, daemon=True)
        t.start()
        for _ in range(rounds):
            victim = c.brokers[rng.randrange(3)]
            victim.kill()
            time.sleep(rng.uniform(0.3, 1.5))
            victim.start(60)
            wait_until(lambda: _isr_full(c.bootstrap), 60, "the ISR to refill after a restart", ignoring=(KafkaException,))
        stop.set()
        t.join(150)
        wait_until(lambda: _isr_full(c.bootstrap), 60, "a full ISR", ignoring=(KafkaException,))
        got = consume_to_end(c.bootstrap, TOPIC, PARTITIONS, timeout=120)
        stored = {(m.partition(), m.offset()): m.value() for m in got}
        missing = [(p, o) for p, o, v in acked if stored.get((p, o)) != v]
        print(f"\ndrill: {rounds} rounds, {len(acked)} acknowledged, {failed[0]} failed deliveries, "
              f"{len(stored)} stored, {len(missing)} acknowledged but missing, {left[0]} undelivered at the end")
        assert not missing, missing[:5]

        def identical() -> bool:
            for part in range(PARTITIONS):
                images = [b"".join(f.read_bytes() for f in sorted((b.log_dir / f"{TOPIC}-{part}").glob("*.log")))
                          for b in c.brokers]
                if not images[0] == images[1] == images[2]:
                    return False
            return True

        wait_until(identical, 60, "identical replica logs", ignoring=(OSError,))
    finally:
        stop.set()
