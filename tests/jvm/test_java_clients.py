"""Apache Kafka's Java clients (4.4) against Odradek, each scenario run against Apache Kafka too and the facts
compared: the idempotent producer with every codec, classic consumers with the eager and cooperative-sticky
assignors, the KIP-848 consumer protocol with names and a regex, transactions read by a read_committed
consumer, the share consumer (KIP-932) with implicit and explicit acknowledgement, and the admin client; and
the producer and consumer through a leader's kill -9 on a 3-broker Odradek cluster.
The programs are tests/jvm/JavaClients.java, run in the tools' JVM."""

from __future__ import annotations

import threading

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from tests.clients import admin, create_topic, unique_name
from tests.harness import BrokerPool, BrokerProcess
from tests.jvm.apache_kafka import ApacheKafkaBroker, KafkaTools, ToolResult
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot


def java_clients(tools: KafkaTools, *args: str) -> ToolResult:
    return tools.run_main("JavaClients", *args, timeout=180)


def on_both(tools: KafkaTools, odradek: BrokerProcess, apache: ApacheKafkaBroker, *args: str) -> str:
    """Run the scenario against each broker ({bootstrap} in an argument is its address); both must succeed with
    the same output, which is returned."""
    outs = []
    for bootstrap in (odradek.bootstrap, apache.bootstrap):
        r = java_clients(tools, *(a.replace("{bootstrap}", bootstrap) for a in args))
        assert r.exit == 0, f"{' '.join(args)} against {bootstrap}:\n{r.stdout}{r.stderr[-3000:]}"
        outs.append(r.stdout)
    assert outs[0] == outs[1], f"{' '.join(args)}\n--- Odradek:\n{outs[0]}--- Apache Kafka:\n{outs[1]}"
    return outs[0]


def create(tools: KafkaTools, odradek: BrokerProcess, apache: ApacheKafkaBroker, topic: str, partitions: int = 1) -> None:
    for bootstrap in (odradek.bootstrap, apache.bootstrap):
        r = tools.run("kafka-topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                      "--partitions", str(partitions))
        assert r.exit == 0, r.stdout + r.stderr


@pytest.mark.parametrize("compression", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_idempotent_producer_every_codec(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker,
                                         compression: str) -> None:
    t = unique_name(f"java-{compression}")
    create(tools, broker, apache, t)
    assert on_both(tools, broker, apache, "produce", "{bootstrap}", t, "300", compression, "true") == (
        "acked 300 last offset 299\n")
    out = on_both(tools, broker, apache, "consume", "{bootstrap}", t, t + "-g", "300", "classic", "range")
    assert out.startswith("consumed 300 [300]\ncommitted {0=300}")


@pytest.mark.parametrize(("protocol", "assignor"), [("classic", "range"), ("classic", "cooperative-sticky"),
                                                    ("consumer", "-")])
def test_consumer_protocols(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker, protocol: str,
                            assignor: str) -> None:
    t = unique_name(f"java-{protocol}")
    create(tools, broker, apache, t)
    on_both(tools, broker, apache, "produce", "{bootstrap}", t, "50", "none", "false")
    assert on_both(tools, broker, apache, "consume", "{bootstrap}", t, t + "-g", "50", protocol, assignor) == (
        "consumed 50 [50]\ncommitted {0=50}\n")


def test_regex_subscription_with_the_consumer_protocol(tools: KafkaTools, broker: BrokerProcess,
                                                       apache: ApacheKafkaBroker) -> None:
    prefix = unique_name("java-rx")
    for suffix in ("a", "b"):
        create(tools, broker, apache, f"{prefix}-{suffix}")
        on_both(tools, broker, apache, "produce", "{bootstrap}", f"{prefix}-{suffix}", "20", "none", "false")
    assert on_both(tools, broker, apache, "regex", "{bootstrap}", f"{prefix}-.*", prefix + "-g", "40", "consumer"
                   ).startswith("consumed 40 [20, 20]\n")


def test_transactions_and_read_committed(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    """At transaction version 2 (both brokers finalize it): the producer sends no AddPartitionsToTxn or
    AddOffsetsToTxn (its Produce v12+ and TxnOffsetCommit v5 add the partitions), and each EndTxn v5 bumps
    the epoch: 0 after InitProducerId, 2 after the commit and the abort, at the coordinator and in the
    partition's producer state (the abort marker's epoch)."""
    t = unique_name("java-txn")
    create(tools, broker, apache, t)
    on_both(tools, broker, apache, "txn", "{bootstrap}", t, t + "-tx", "10")
    assert on_both(tools, broker, apache, "read-committed", "{bootstrap}", t, t + "-g", "10") == (
        "read 10 end 22\naborted seen 0\n")
    assert on_both(tools, broker, apache, "txn-state", "{bootstrap}", t, t + "-tx") == (
        "transaction CompleteAbort epoch 2\nproducer epoch 2 open false\ngroup offset 10\n")


@pytest.mark.parametrize("mode", ["implicit", "explicit"])
def test_share_consumer(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker, mode: str) -> None:
    t = unique_name(f"java-share-{mode}")
    create(tools, broker, apache, t)
    on_both(tools, broker, apache, "produce", "{bootstrap}", t, "100", "none", "false")
    assert on_both(tools, broker, apache, "share", "{bootstrap}", t, t + "-sg", "100", mode) == (
        "share consumed 100 redelivered 0\n")


def test_admin_client(tools: KafkaTools, broker: BrokerProcess, apache: ApacheKafkaBroker) -> None:
    assert on_both(tools, broker, apache, "admin", "{bootstrap}", unique_name("java-admin")) == (
        "partitions 3 internal false\ncluster nodes 1\nlatest 5\nearliest 3\nretention.ms 86400000\ndeleted true\n")


def test_fail_over_on_a_three_broker_cluster(tools: KafkaTools, zk_standalone: ZooKeeperChroot,
                                             brokers: BrokerPool) -> None:
    """The Java idempotent producer (acks=all) keeps going while its partition's leader is killed -9; a Java
    consumer then reads every acknowledged record exactly once."""
    cluster = brokers.start_cluster(zk_standalone.connect_string, 3, {"min.insync.replicas": "2"})
    t = unique_name("java-failover")
    create_topic(cluster.bootstrap, t, partitions=1, rf=3)
    result: list[ToolResult] = []
    producing = threading.Thread(target=lambda: result.append(java_clients(
        tools, "produce-slowly", cluster.bootstrap, t, "300", "10")))
    producing.start()
    watcher = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": t + "-watch"})
    watcher.assign([TopicPartition(t, 0)])  # so that librdkafka knows the partition it is asked the offsets of
    try:
        wait_until(lambda: watcher.get_watermark_offsets(TopicPartition(t, 0), timeout=5)[1] >= 50, 60,
                   "50 records acknowledged", ignoring=(KafkaException,))
        leader = admin(cluster.bootstrap).list_topics(t, timeout=10).topics[t].partitions[0].leader
    finally:
        watcher.close()
    next(b for b in cluster.brokers if b.broker_id == leader).kill()
    producing.join(200)
    assert result and result[0].exit == 0 and result[0].stdout == "acked 300\n", result
    out = java_clients(tools, "consume", cluster.bootstrap, t, t + "-g", "300", "classic", "range")
    assert out.exit == 0 and out.stdout.startswith("consumed 300 [300]\n"), out


def test_transactions_through_a_coordinators_kill(tools: KafkaTools, zk_standalone: ZooKeeperChroot,
                                                  brokers: BrokerPool) -> None:
    """Exactly once at transaction version 2 through a kill -9 of the transactional id's coordinator (its
    `__transaction_state` partition moves, loaded from Kafka's v1 values; the partition's leader too when
    it is the same broker): every committed transaction's records are read once by a read_committed
    consumer, in order, and nothing of an aborted one."""
    from kafka.protocol.metadata import FindCoordinatorRequest

    from odradek.protocol.transport import BlockingConnection
    from tests.clients import consume_all

    cluster = brokers.start_cluster(zk_standalone.connect_string, 3, {"min.insync.replicas": "2"})
    t, tid = unique_name("java-txn-kill"), unique_name("java-txn-kill-tid")
    create_topic(cluster.bootstrap, t, partitions=1, rf=3)
    result: list[ToolResult] = []
    producing = threading.Thread(target=lambda: result.append(java_clients(
        tools, "txn-slowly", cluster.bootstrap, t, tid, "40", "5")))
    producing.start()
    watcher = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": t + "-watch"})
    watcher.assign([TopicPartition(t, 0)])  # so that librdkafka knows the partition it is asked the offsets of
    try:
        wait_until(lambda: watcher.get_watermark_offsets(TopicPartition(t, 0), timeout=5)[1] >= 60, 90,
                   "10 transactions written", ignoring=(KafkaException,))
    finally:
        watcher.close()
    port = cluster.brokers[0].port
    conn = BlockingConnection("127.0.0.1", port, "kill-drill", 10.0)
    try:
        coordinator = conn.request(FindCoordinatorRequest(key=tid, key_type=1), 1).node_id
    finally:
        conn.close()
    next(b for b in cluster.brokers if b.broker_id == coordinator).kill()
    producing.join(240)
    assert result and result[0].exit == 0 and result[0].stdout.startswith("committed 40"), result
    values = [m.value().decode() for m in consume_all(
        cluster.bootstrap, t, 200, timeout=60, **{"isolation.level": "read_committed"})]
    assert values == [f"{k}-{i}" for k in range(40) for i in range(5)]
