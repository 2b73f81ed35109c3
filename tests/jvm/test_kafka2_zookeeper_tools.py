"""The guides' `kafka-topics.sh --zookeeper` with the guides' own tool: Kafka 2.2's TopicCommand (from Maven
Central) writes an Odradek cluster's ZooKeeper directly, in Kafka's znode layout; the brokers serve what it
wrote, and `odradek topics --zookeeper` prints what Kafka 2.2's tool prints (in the layout of the last 2.x releases,
`Topic: t<TAB>PartitionCount: 2`, where 2.2 wrote `Topic:t<TAB>PartitionCount:2`; the partition lines are the
same bytes)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer

from odradek.cli.cluster import read_registry
from tests.guides.replay import parse_describe
from tests.harness import BrokerCluster, BrokerPool, run_cli
from tests.jvm.apache_kafka import run_kafka2
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

TOPIC_COMMAND = "kafka.admin.TopicCommand"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"


@pytest.fixture(scope="module")
def cluster(zk_standalone: ZooKeeperChroot, module_brokers: BrokerPool) -> BrokerCluster:
    brokers = module_brokers.start_cluster(zk_standalone.connect_string, 2)
    connect = brokers.brokers[0].overrides["zookeeper.connect"]
    wait_until(lambda: (r := read_registry(connect)) is not None and sorted(r.broker_ids) == [0, 1], 60,
               "two registered brokers")
    return brokers


def test_kafka_2_topic_command_on_an_odradek_cluster(cluster: BrokerCluster) -> None:
    zk = cluster.brokers[0].overrides["zookeeper.connect"]

    def kafka2(*args: str) -> str:
        r = run_kafka2(TOPIC_COMMAND, "--zookeeper", zk, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    def ours(*args: str) -> str:
        r = run_cli("topics", "--zookeeper", zk, *args)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout

    assert kafka2("--create", "--topic", "guide-topic", "--partitions", "2", "--replication-factor", "2") == (
        "Created topic guide-topic.\n")
    wait_until(lambda: "Leader: -1" not in ours("--describe", "--topic", "guide-topic")
               and "Leader: none" not in ours("--describe", "--topic", "guide-topic"), 30, "leaders elected")
    assert same_topics(ours("--describe", "--topic", "guide-topic"), kafka2("--describe", "--topic", "guide-topic"))
    assert "guide-topic" in kafka2("--list").split()

    # the brokers serve the topic Kafka 2.2's tool created
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(10):
        p.produce("guide-topic", value=f"m{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "guide-g", "auto.offset.reset": "earliest"})
    c.subscribe(["guide-topic"])
    got: list[bytes] = []
    wait_until(lambda: got.extend(m.value() for m in c.consume(10, 1) if not m.error()) or len(got) >= 10, 60,
               "the 10 records")
    c.close()
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(10))

    kafka2("--alter", "--topic", "guide-topic", "--partitions", "3")
    r = run_kafka2(CONFIG_COMMAND, "--zookeeper", zk, "--alter", "--entity-type", "topics", "--entity-name",
                   "guide-topic", "--add-config", "retention.ms=3600000")
    assert r.returncode == 0, r.stdout + r.stderr
    wait_until(lambda: "PartitionCount:3" in ours("--describe", "--topic", "guide-topic").replace(" ", "")
               and "Leader: -1" not in ours("--describe", "--topic", "guide-topic"), 30, "the third partition")
    described = kafka2("--describe", "--topic", "guide-topic")
    assert "retention.ms=3600000" in described
    assert same_topics(ours("--describe", "--topic", "guide-topic"), described)

    kafka2("--delete", "--topic", "guide-topic")
    wait_until(lambda: "guide-topic" not in ours("--list").split(), 60, "the topic deleted")
    assert "guide-topic" not in kafka2("--list").split()


def same_topics(ours: str, theirs: str) -> bool:
    """The two describe outputs say the same (topics, counts, configs, every partition's leader, replicas, ISR),
    and their partition lines are identical."""
    partition_lines = [[line for line in out.splitlines() if line.startswith("\t")] for out in (ours, theirs)]
    return parse_describe(ours) == parse_describe(theirs) and partition_lines[0] == partition_lines[1]
