"""The broker's Prometheus endpoint (`http.listener`): the metrics match what clients did (records and
bytes in and out per topic, partitions and leaders, the controller, consumer lag = high watermark minus
the committed offset, request counts and times), readiness, and bad requests to the endpoint."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic
from kafka.protocol.producer import ProduceRequest
from prometheus_client.parser import text_string_to_metric_families

from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.clients import admin, consume_all, create_topic, produce
from tests.harness import BrokerPool, free_port
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/plain")
        text = resp.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_metrics_match_what_clients_did(brokers: BrokerPool) -> None:
    http_port = free_port()
    b = brokers.start({"http.listener": f"127.0.0.1:{http_port}"})
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/v1/status/ready", timeout=10) as resp:
        assert (resp.status, resp.read()) == (200, b"ready\n")
    create_topic(b.bootstrap, "m1", 2)
    create_topic(b.bootstrap, "m2", 1)
    produce(b.bootstrap, "m1", [b"x" * 100] * 30, partition=0)
    produce(b.bootstrap, "m1", [b"y" * 100] * 10, partition=1)
    produce(b.bootstrap, "m2", [b"z" * 50] * 5)
    consume_all(b.bootstrap, "m1", 30, partitions=1)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lagging", "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition("m1", 0, 12), TopicPartition("m1", 1, 10)], asynchronous=False)
    finally:
        c.close()
    # a KIP-848 group, still a member at the scrape
    c848 = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "lagging848", "group.protocol": "consumer",
                     "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    create_topic(b.bootstrap, "m4", 1)
    produce(b.bootstrap, "m4", [b"w"] * 5)
    c848.subscribe(["m4"])
    wait_until(lambda: (msg := c848.poll(0.5)) is not None and msg.error() is None, 60,
               "the KIP-848 consumer never got a record")
    c848.commit(offsets=[TopicPartition("m4", 0, 2)], asynchronous=False)
    tp = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "metered"})
    tp.init_transactions(30)
    tp.begin_transaction()
    create_topic(b.bootstrap, "m3", 1)
    tp.produce("m3", b"t")
    tp.flush(30)  # left open: one Ongoing transactional id
    with BlockingConnection("127.0.0.1", b.port, "metrics-test", 10) as conn:  # a produce the broker refuses
        resp = conn.request(ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000, topic_data=[
            ProduceRequest.TopicProduceData(name="m2", partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=7, records=build_batch([(None, b"v")]))])]),
            8)
    assert resp.responses[0].partition_responses[0].error_code == 3  # UNKNOWN_TOPIC_OR_PARTITION

    stable = ("kafka_server_group_coordinator_metrics_consumer_group_count", (("state", "stable"),))
    m = wait_until(lambda: (got := scrape(http_port)).get(stable) == 1 and got, 60,
                   "the KIP-848 group never counted as stable")

    def value(name: str, **labels: str) -> float:
        return m[(name, tuple(sorted(labels.items())))]

    assert value("kafka_server_brokertopicmetrics_messagesin_total", topic="m1") == 40
    assert value("kafka_server_brokertopicmetrics_messagesin_total", topic="m2") == 5
    assert value("kafka_server_brokertopicmetrics_messagesin_total") >= 45  # all topics (offsets included)
    bytes_in = value("kafka_server_brokertopicmetrics_bytesin_total", topic="m1")
    assert 4000 < bytes_in < 4000 + 40 * 100  # record bytes plus batch overhead
    assert value("kafka_server_brokertopicmetrics_bytesout_total", topic="m1") >= 3000
    assert ("kafka_server_brokertopicmetrics_bytesout_total", (("topic", "m2"),)) not in m  # never read
    assert value("kafka_server_replicamanager_partitioncount") >= 3
    assert value("kafka_server_replicamanager_leadercount") == value("kafka_server_replicamanager_partitioncount")
    assert value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value("kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert value("kafka_consumergroup_lag", consumergroup="lagging", topic="m1", partition="0") == 30 - 12
    assert value("kafka_consumergroup_lag", consumergroup="lagging", topic="m1", partition="1") == 0
    assert value("kafka_log_log_logendoffset", topic="m1", partition="0") == 30
    assert value("kafka_log_log_size", topic="m2", partition="0") > 5 * 50
    assert value("kafka_network_requestmetrics_requests_total", request="Produce") >= 3
    assert value("kafka_network_requestmetrics_totaltimems_count", request="Produce") >= 3
    assert value("kafka_network_requestmetrics_totaltimems_bucket", request="Produce", le="+Inf") >= 3
    assert value("kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= 3
    assert value("kafka_network_requestmetrics_errors_total", request="Produce",
                 error="UNKNOWN_TOPIC_OR_PARTITION") == 1
    assert value("kafka_network_requestmetrics_errors_total", request="Fetch", error="NONE") >= 1
    assert value("kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1
    assert value("kafka_coordinator_group_groupmetadatamanager_numgroupsempty") >= 1
    assert value("kafka_consumergroup_lag", consumergroup="lagging848", topic="m4", partition="0") == 5 - 2
    assert value("kafka_server_group_coordinator_metrics_group_count", protocol="consumer") == 1
    assert value("kafka_server_group_coordinator_metrics_group_count", protocol="classic") >= 1
    assert value("kafka_server_group_coordinator_metrics_consumer_group_count", state="stable") == 1
    assert value("kafka_coordinator_group_groupmetadatamanager_numgroups") >= 2
    c848.close()
    assert value("kafka_coordinator_transaction_transactionstatemanager_transactionalids", state="Ongoing") == 1
    for mbean, labels in STOCK_DASHBOARD_MBEANS:  # named as the JMX exporter's standard rules name them
        assert (jmx_exporter_name(mbean), labels) in m, jmx_exporter_name(mbean)
    assert value("process_resident_memory_bytes") > 10_000_000
    assert value("process_open_fds") > 3
    assert value("process_cpu_seconds_total") > 0
    tp.abort_transaction(30)


# MBeans a stock Kafka dashboard's panels query (throughput, replication, controller, requests), with the
# labels of the series we look for
STOCK_DASHBOARD_MBEANS = [
    ("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=m1", (("topic", "m1"),)),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=m1", (("topic", "m1"),)),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=m1", (("topic", "m1"),)),
    ("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec", ()),
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec", ()),
    ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", ()),
    ("kafka.server:type=ReplicaManager,name=PartitionCount", ()),
    ("kafka.server:type=ReplicaManager,name=LeaderCount", ()),
    ("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", ()),
    ("kafka.server:type=ReplicaManager,name=IsrExpandsPerSec", ()),
    ("kafka.controller:type=KafkaController,name=ActiveControllerCount", ()),
    ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", ()),
    ("kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Produce", (("request", "Produce"),)),
]


def jmx_exporter_name(mbean: str) -> str:
    """The Prometheus name the JMX exporter's standard Kafka rules (lowercaseOutputName) give an MBean's
    Count (rates: `PerSec` dropped, `_total` added) or Value attribute."""
    domain, _, props = mbean.partition(":")
    keys = dict(kv.split("=") for kv in props.split(","))
    name = keys["name"]
    rate = re.fullmatch(r"(.+)PerSec\w*", name)
    base = f"{domain.removeprefix('kafka.')}_{keys['type']}_{rate.group(1) if rate else name}"
    return f"kafka_{base}{'_total' if rate else ''}".lower()


def test_the_endpoint_refuses_what_it_does_not_serve(brokers: BrokerPool) -> None:
    http_port = free_port()
    b = brokers.start({"http.listener": f"127.0.0.1:{http_port}"})

    def status(path: str, method: str = "GET") -> Any:
        try:
            with urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{http_port}{path}", method=method),
                                        timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert status("/nope") == 404 and status("/metrics", "POST") == 405
    with socket.create_connection(("127.0.0.1", http_port), timeout=10) as s:
        s.sendall(b"x" * 20000)  # no end of head within the limit
        assert s.recv(100).startswith(b"HTTP/1.1 400")
    assert status("/metrics") == 200 and b.alive()


def test_cluster_metrics_add_up(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    """Three brokers, each with its endpoint: one active controller, leaders and records spread, sums right."""
    ports = [free_port() for _ in range(3)]
    cluster = brokers.start_cluster(zk_standalone.connect_string, 3,
                                    per_broker=[{"http.listener": f"127.0.0.1:{p}"} for p in ports])
    a = admin(cluster.bootstrap)
    a.create_topics([NewTopic("spread-m", 6, 2)])["spread-m"].result(30)
    wait_until(lambda: all(len(p.isrs) == 2 for p in a.list_topics("spread-m", timeout=10)
                           .topics["spread-m"].partitions.values()), 60, "every replica in sync")
    for part in range(6):
        produce(cluster.bootstrap, "spread-m", [b"v" * 10] * (part + 1), partition=part, acks="all")
    scraped = [scrape(p) for p in ports]

    def total(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return sum(m.get(key, 0.0) for m in scraped)

    assert total("kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert total("kafka_server_brokertopicmetrics_messagesin_total", topic="spread-m") == sum(range(1, 7))
    assert total("kafka_server_replicamanager_leadercount") >= 6
    assert total("kafka_server_replicamanager_partitioncount") >= 12  # 6 partitions x 2 replicas
    wait_until(lambda: sum(scrape(p)[("kafka_server_replicamanager_underreplicatedpartitions", ())] for p in ports)
               == 0, 60, "no under-replicated partitions")
