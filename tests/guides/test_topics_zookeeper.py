"""`topics --zookeeper HOST:PORT/chroot` beyond what the guides type: Kafka 2.x TopicCommand's manual
assignment, alter (--partitions, --config), delete and its error lines, always read back both through
ZooKeeper and through a broker (--bootstrap-server), which must print the same."""

from __future__ import annotations

import pytest

from odradek.cli.cluster import read_registry
from tests.guides.replay import parse_describe
from tests.harness import BrokerCluster, BrokerPool, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

PREFIX = "Error while executing topic command : "


@pytest.fixture(scope="module")
def cluster(zk_standalone: ZooKeeperChroot, module_brokers: BrokerPool) -> BrokerCluster:
    """Two brokers in their own chroot of a standalone ZooKeeper."""
    brokers = module_brokers.start_cluster(zk_standalone.connect_string, 2)
    connect = connect_of(brokers)
    wait_until(lambda: (r := read_registry(connect)) is not None and sorted(r.broker_ids) == [0, 1], 60,
               "two registered brokers")
    return brokers


def connect_of(brokers: BrokerCluster) -> str:
    return brokers.brokers[0].overrides["zookeeper.connect"]


def zk_topics(brokers: BrokerCluster, *args: str) -> tuple[int, str, str]:
    r = run_cli("topics", "--zookeeper", connect_of(brokers), *args)
    return r.returncode, r.stdout, r.stderr


def same_describe(brokers: BrokerCluster, topic: str) -> str:
    """`--describe --topic` through ZooKeeper, checked equal to the broker's answer."""
    code, by_zookeeper, err = zk_topics(brokers, "--describe", "--topic", topic)
    assert code == 0, err
    r = run_cli("topics", "--bootstrap-server", brokers.bootstrap, "--describe", "--topic", topic)
    assert r.stdout == by_zookeeper, r.stderr
    return by_zookeeper


def one_error(result: tuple[int, str, str]) -> str:
    code, out, err = result
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and out == "" and len(lines) == 1 and "Traceback" not in err, (code, out, err)
    return lines[0]


def test_create_with_assignment_configs_and_errors(cluster: BrokerCluster) -> None:
    assert zk_topics(cluster, "--create", "--topic", "ra", "--replica-assignment", "1:0,0:1",
                     "--config", "retention.ms=1000")[:2] == (0, "Created topic ra.\n")
    topic = parse_describe(same_describe(cluster, "ra"))["ra"]
    assert topic.configs == "retention.ms=1000"
    assert {p: part.replicas for p, part in topic.partitions.items()} == {0: [1, 0], 1: [0, 1]}
    assert {p: part.leader for p, part in topic.partitions.items()} == {0: 1, 1: 0}

    assert one_error(zk_topics(cluster, "--create", "--topic", "ra", "--partitions", "1",
                               "--replication-factor", "1")) == PREFIX + "Topic 'ra' already exists."
    assert zk_topics(cluster, "--create", "--topic", "ra", "--partitions", "1", "--replication-factor", "1",
                     "--if-not-exists")[:2] == (0, "")
    assert one_error(zk_topics(cluster, "--create", "--topic", "r3", "--partitions", "1",
                               "--replication-factor", "3")) == (
        PREFIX + "Replication factor: 3 larger than available brokers: 2.")
    assert "Unknown broker(s) [5]" in one_error(zk_topics(cluster, "--create", "--topic", "r5",
                                                          "--replica-assignment", "0:5"))
    assert "Unknown topic config name: nosuch" in one_error(zk_topics(
        cluster, "--create", "--topic", "rc", "--partitions", "1", "--replication-factor", "1", "--config", "nosuch=1"))
    assert one_error(zk_topics(cluster, "--create", "--topic", "rp", "--replication-factor", "1")) == (
        'Error: Missing required argument "[partitions]"')
    assert "Only one of --bootstrap-server or --zookeeper" in one_error(zk_topics(
        cluster, "--bootstrap-server", cluster.bootstrap, "--list"))
    assert "r3" not in zk_topics(cluster, "--list")[1].split()


def test_alter_and_delete(cluster: BrokerCluster) -> None:
    assert zk_topics(cluster, "--create", "--topic", "al", "--partitions", "1", "--replication-factor", "2")[0] == 0
    code, out, err = zk_topics(cluster, "--alter", "--topic", "al", "--partitions", "3")
    assert code == 0 and out.splitlines()[-1] == "Adding partitions succeeded!", err
    topic = parse_describe(same_describe(cluster, "al"))["al"]
    assert topic.partition_count == 3 and all(len(p.replicas) == 2 and p.leader is not None
                                              for p in topic.partitions.values())
    assert "can only be increased" in one_error(zk_topics(cluster, "--alter", "--topic", "al", "--partitions", "2"))

    assert zk_topics(cluster, "--alter", "--topic", "al", "--config", "cleanup.policy=compact")[:2] == (
        0, "Updated config for topic al.\n")
    assert parse_describe(same_describe(cluster, "al"))["al"].configs == "cleanup.policy=compact"
    assert zk_topics(cluster, "--alter", "--topic", "al", "--delete-config", "cleanup.policy")[0] == 0
    assert parse_describe(same_describe(cluster, "al"))["al"].configs == ""

    assert zk_topics(cluster, "--delete", "--topic", "al")[:2] == (0, (
        "Topic al is marked for deletion.\nNote: This will have no impact if delete.topic.enable is not set to true.\n"))
    wait_until(lambda: "al" not in zk_topics(cluster, "--list")[1].split(), 30, "topic al gone")
    assert zk_topics(cluster, "--create", "--topic", "al", "--partitions", "1", "--replication-factor", "1")[0] == 0
    run_cli("console-consumer", "--bootstrap-server", cluster.bootstrap, "--topic", "al", "--timeout-ms", "500")
    wait_until(lambda: "__consumer_offsets" in zk_topics(cluster, "--list")[1].split(), 30, "__consumer_offsets")
    assert "not allowed to be marked for deletion" in one_error(zk_topics(cluster, "--delete", "--topic",
                                                                          "__consumer_offsets"))
    assert "does not exist" in one_error(zk_topics(cluster, "--describe", "--topic", "nosuch"))
    assert zk_topics(cluster, "--describe", "--topic", "nosuch", "--if-exists")[:2] == (0, "")
