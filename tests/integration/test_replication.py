"""Replication and fail-over with real clients: the drills of the reference guides (kill -9 the leader,
nothing acknowledged is lost; restart, catch up, rejoin the ISR; min.insync.replicas)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from tests.clients import NumberedProducer, admin, consume_all, consume_to_end, produce
from tests.harness import BrokerCluster, BrokerPool
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot


def _describe(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int]]]:
    md = admin(bootstrap).list_topics(topic, timeout=10).topics[topic]
    return {p: (m.leader, sorted(m.isrs)) for p, m in md.partitions.items()}


@pytest.fixture
def two_brokers(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> BrokerCluster:
    return brokers.start_cluster(zk_standalone.connect_string, 2)


@pytest.fixture
def three_brokers(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> BrokerCluster:
    return brokers.start_cluster(zk_standalone.connect_string, 3, {"min.insync.replicas": "2"})


def test_replicas_are_byte_identical(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("same", 2, 2)])["same"].result(20)
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5, "compression.type": "lz4"})
    for i in range(5000):
        p.produce("same", b"value-%d" % i, partition=i % 2)
    assert p.flush(30) == 0
    for part in (0, 1):
        wait_until(lambda part=part: c.brokers[0].partition_log_bytes("same", part) == c.brokers[1].partition_log_bytes("same", part), 30,
                   f"identical replicas of same-{part}")
    assert len(consume_all(c.bootstrap, "same", 5000, partitions=2)) == 5000


def test_kill_leader_two_brokers_nothing_acknowledged_lost(two_brokers: BrokerCluster) -> None:
    """kafka-0.9-zookeeper-cluster-guide.txt section 6: 2 brokers, 2 partitions, replication factor 2."""
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("drill", 2, 2)])["drill"].result(20)
    wait_until(lambda: all(len(isr) == 2 for _, isr in _describe(c.bootstrap, "drill").values()), 30, "a full ISR")
    leader1 = _describe(c.bootstrap, "drill")[1][0]
    survivor = 1 - leader1
    # idempotent: Kafka's guarantee of no duplicates and order across a leader change (a plain producer
    # retrying the batches the dead leader had appended but not answered may write them twice)
    prod = NumberedProducer(c.bootstrap, "drill", **{"enable.idempotence": True}).start()
    prod.wait_acked(200)
    c.by_id(leader1).kill()
    wait_until(lambda: all(ld == survivor for ld, _ in _describe(c.brokers[survivor].bootstrap, "drill").values()),
               30, f"broker {survivor} to lead everything")
    assert all(isr == [survivor] for _, isr in _describe(c.brokers[survivor].bootstrap, "drill").values())
    prod.wait_acked(200)  # acknowledged by the survivor alone
    prod.stop()
    assert not prod.failed, prod.failed[:3]
    assert len(prod.acked) > 200
    got = consume_to_end(c.brokers[survivor].bootstrap, "drill", 2)
    stored = {(m.partition(), m.offset()): int(m.value()) for m in got}
    for part, off, num in prod.acked:
        assert stored.get((part, off)) == num, f"acknowledged {num} at {part}/{off} is missing"
    for part in (0, 1):  # in order within each partition, once each
        nums = [stored[k] for k in sorted(k for k in stored if k[0] == part)]
        assert nums == sorted(set(nums))
    # restart: the broker catches up and rejoins the ISR
    c.by_id(leader1).start()
    wait_until(lambda: all(isr == [0, 1] for _, isr in _describe(c.bootstrap, "drill").values()), 40,
               "the restarted broker back in the ISR")
    for part in (0, 1):
        wait_until(lambda part=part: c.brokers[0].partition_log_bytes("drill", part) == c.brokers[1].partition_log_bytes("drill", part), 30,
                   f"identical replicas of drill-{part}")


def test_retries_zero_surfaces_the_failure(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("noretry", 1, 2)])["noretry"].result(20)
    wait_until(lambda: _describe(c.bootstrap, "noretry")[0][1] == [0, 1], 30, "a full ISR")
    leader = _describe(c.bootstrap, "noretry")[0][0]
    survivor = c.brokers[1 - leader].bootstrap
    prod = NumberedProducer(c.bootstrap, "noretry", partitions=1, retries=0, **{"message.timeout.ms": 5000}).start()
    prod.wait_acked(50)
    c.by_id(leader).kill()
    wait_until(lambda: _describe(survivor, "noretry")[0][0] == 1 - leader, 30, "the survivor to lead")
    prod.wait_acked(50)  # the producer carries on with the new leader
    prod.stop()
    # every message got exactly one callback, an acknowledgement (and is stored) or an error: no silent gap
    assert len(prod.acked) + len(prod.failed) == prod.sent
    got = consume_all(survivor, "noretry", len(prod.acked))
    stored = {m.offset(): int(m.value()) for m in got}
    for _p, off, num in prod.acked:
        assert stored.get(off) == num


def test_three_brokers_min_isr(three_brokers: BrokerCluster) -> None:
    """kafka-0.11-three-broker-cluster-guide.txt: replication factor 3, min.insync.replicas=2."""
    c = three_brokers
    admin(c.bootstrap).create_topics([NewTopic("ha", 1, 3)])["ha"].result(20)
    wait_until(lambda: _describe(c.bootstrap, "ha")[0][1] == [0, 1, 2], 30, "a full ISR")
    leader = _describe(c.bootstrap, "ha")[0][0]
    prod = NumberedProducer(c.bootstrap, "ha", partitions=1).start()
    prod.wait_acked(50)
    c.by_id(leader).kill()
    prod.wait_acked(50)  # acknowledged by the new leader and the remaining follower
    prod.stop()
    assert not prod.failed
    alive = [b for b in range(3) if b != leader]
    boot = ",".join(c.brokers[b].bootstrap for b in alive)
    got = consume_to_end(boot, "ha", 1)
    stored = {m.offset(): int(m.value()) for m in got}
    for _p, off, num in prod.acked:
        assert stored.get(off) == num, f"acknowledged {num} at offset {off} is missing"
    # kill a second broker: acks=all fails with NOT_ENOUGH_REPLICAS, acks=1 still works, reads go on
    new_leader = _describe(boot, "ha")[0][0]
    other = [b for b in alive if b != new_leader][0]
    c.by_id(other).kill()
    last = c.brokers[new_leader].bootstrap
    wait_until(lambda: _describe(last, "ha")[0][1] == [new_leader], 30, f"an ISR of broker {new_leader} alone")
    cons = Consumer({"bootstrap.servers": last, "group.id": "minisr", "enable.auto.commit": False})
    end = cons.get_watermark_offsets(TopicPartition("ha", 0), timeout=10)[1]
    assert end >= len(prod.acked)
    p_all = Producer({"bootstrap.servers": last, "acks": "all", "message.timeout.ms": 4000, "retries": 0})
    errors: list[KafkaError] = []
    p_all.produce("ha", b"must-fail", on_delivery=lambda e, m: errors.append(e) if e else None)
    p_all.flush(10)
    assert [e.code() for e in errors] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert produce(last, "ha", [b"acks-one"], acks=1) == [(0, end)]  # the refused record took no offset
    assert cons.get_watermark_offsets(TopicPartition("ha", 0), timeout=10)[1] == end + 1
    cons.close()


def test_follower_killed_mid_burst_resyncs_identically(two_brokers: BrokerCluster) -> None:
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("burst", 1, 2)])["burst"].result(20)
    wait_until(lambda: _describe(c.bootstrap, "burst")[0][1] == [0, 1], 30, "a full ISR")
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
    wait_until(lambda: c.brokers[0].partition_log_bytes("burst", 0) == c.brokers[1].partition_log_bytes("burst", 0), 40,
               "identical replicas after the follower's restart")
    wait_until(lambda: _describe(c.bootstrap, "burst")[0][1] == [0, 1], 30, "the follower back in the ISR")


def test_acks_all_without_enough_replicas_is_refused_before_append(three_brokers: BrokerCluster) -> None:
    c = three_brokers
    a = admin(c.bootstrap)
    a.create_topics([NewTopic("strict", 1, 2, config={"min.insync.replicas": "2"})])["strict"].result(20)
    wait_until(lambda: len(_describe(c.bootstrap, "strict")[0][1]) == 2, 30, "a full ISR")
    leader, isr = _describe(c.bootstrap, "strict")[0]
    c.by_id([b for b in isr if b != leader][0]).kill()
    wait_until(lambda: _describe(c.brokers[leader].bootstrap, "strict")[0][1] == [leader], 30,
               f"an ISR of broker {leader} alone")
    before = c.brokers[leader].partition_log_bytes("strict", 0)
    p = Producer({"bootstrap.servers": c.brokers[leader].bootstrap, "acks": "all", "retries": 0,
                  "message.timeout.ms": 4000})
    errs: list[KafkaError] = []
    p.produce("strict", b"x", on_delivery=lambda e, m: errs.append(e) if e else None)
    p.flush(10)
    assert [e.code() for e in errs] == [KafkaError.NOT_ENOUGH_REPLICAS]
    assert c.brokers[leader].partition_log_bytes("strict", 0) == before  # nothing appended
    assert produce(c.brokers[leader].bootstrap, "strict", [b"y"], acks=1) == [(0, 0)]  # offset 0 is still free


def test_controlled_shutdown_moves_leadership_first(two_brokers: BrokerCluster) -> None:
    """SIGTERM on a leader (controlled.shutdown.enable=true): leadership moves before the broker exits."""
    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("ctl", 2, 2)])["ctl"].result(20)
    wait_until(lambda: all(isr == [0, 1] for _, isr in _describe(c.bootstrap, "ctl").values()), 30, "a full ISR")
    leaders = {ld for ld, _ in _describe(c.bootstrap, "ctl").values()}
    assert leaders == {0, 1}
    assert c.by_id(0).stop() == 0
    out = c.by_id(0).output()
    assert "Controlled shutdown succeeded" in out
    # the survivor already led everything when broker 0 exited: no wait for a session to expire
    assert all(ld == 1 for ld, _ in _describe(c.brokers[1].bootstrap, "ctl").values())


def test_list_offsets_through_a_leader_kill_never_reads_an_unanswered_offset(two_brokers: BrokerCluster) -> None:
    """librdkafka answers ListOffsets for a partition whose leader's request failed (the leader killed,
    still named leader until the controller moves it) with offset -1001 and no error. The tools take that
    as no answer and the Spark source's offset look-ups retry with fresh metadata; neither ever takes it for
    an offset (a streaming query once checkpointed -1001 as a batch's end and then failed on "offsets went
    backwards")."""
    from confluent_kafka.admin import OffsetSpec

    from odradek.admin_client.offsets import list_offsets
    from odradek.spark.metadata import ClusterOffsets
    from odradek.spark.offsets import TP

    c = two_brokers
    admin(c.bootstrap).create_topics([NewTopic("lo", 1, 2)])["lo"].result(20)
    wait_until(lambda: _describe(c.bootstrap, "lo")[0][1] == [0, 1], 30, "a full ISR")
    produce(c.bootstrap, "lo", [b"x"] * 100, acks="all")
    leader = _describe(c.bootstrap, "lo")[0][0]
    survivor = c.brokers[1 - leader].bootstrap
    c.by_id(leader).kill()
    found = list_offsets(admin(survivor), [("lo", 0)], OffsetSpec.latest(), 3.0)
    assert found[("lo", 0)] in (None, 100), found
    spark_side = ClusterOffsets({"bootstrap.servers": survivor}, timeout_s=3.0, retries=10)
    assert spark_side.latest([TP("lo", 0)]) == {TP("lo", 0): 100}
    assert spark_side.earliest([TP("lo", 0)]) == {TP("lo", 0): 0}
