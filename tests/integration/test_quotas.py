"""Client quotas end to end: set with `odradek configs` (and AlterClientQuotas), seen by real clients as
throttle_time_ms in raw Produce and Fetch responses and librdkafka's throttle_cb, the throttled connection
muted (its next request answered only after the throttle time), user quotas for SCRAM users, and quotas
written with `--zookeeper` applied live on every broker of a ZooKeeper cluster."""

from __future__ import annotations

import json
import time
import urllib.request
import uuid

import pytest
from confluent_kafka import Consumer, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kafka.protocol.admin import (
    AlterClientQuotasRequest,
    DescribeClientQuotasRequest,
)
from kafka.protocol.consumer import FetchRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from tests.clients import create_topic, produce
from tests.harness import BrokerPool, BrokerProcess, free_port, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

RATE = 102_400  # ~100 KB/s
CHUNK = 400_000
INVALID_REQUEST = 42


def _configs(bootstrap: str, *args: str) -> str:
    r = run_cli("configs", "--bootstrap-server", bootstrap, *args)
    assert r.returncode == 0, r.stderr + r.stdout
    return r.stdout


def _produce_req(topic: str) -> ProduceRequest:
    records = build_batch([(None, b"x" * CHUNK)])
    return ProduceRequest[7](transactional_id=None, acks=1, timeout_ms=10_000, topic_data=[
        ProduceRequest.TopicProduceData(name=topic, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])])


def _throttled_produce(conn: BlockingConnection, topic: str) -> int:
    """Produce until a response carries a throttle time (the quota reaches the broker through its watch)."""
    throttle = 0

    def throttled() -> bool:
        nonlocal throttle
        throttle = conn.request(_produce_req(topic), 7).throttle_time_ms
        return throttle > 0

    wait_until(throttled, timeout=120, message="a throttled Produce response")
    return throttle


def test_producer_quota_throttles_raw_produce_and_mutes_the_connection(broker: BrokerProcess) -> None:
    topic = "quota-raw-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic)
    out = _configs(broker.bootstrap, "--alter", "--entity-type", "clients", "--entity-name", "raw-producer",
                   "--add-config", f"producer_byte_rate={RATE},consumer_byte_rate=2048")
    assert out.strip() == "Completed updating config for client raw-producer."
    out = _configs(broker.bootstrap, "--describe", "--entity-type", "clients", "--entity-name", "raw-producer")
    assert out.strip() == ("Quota configs for client-id 'raw-producer' are "
                           f"producer_byte_rate={float(RATE)}, consumer_byte_rate=2048.0")
    with BlockingConnection("127.0.0.1", broker.port, "raw-producer", 120) as conn, \
            BlockingConnection("127.0.0.1", broker.port, "other-client", 120) as other:
        _throttled_produce(conn, topic)
        # another client id has no quota
        assert other.request(_produce_req(topic), 7).throttle_time_ms == 0
        sent = time.monotonic()
        throttle = conn.request(_produce_req(topic), 7).throttle_time_ms
        assert throttle > 0
        # KIP-219: the answer came at once; the next request on the connection waits out the throttle
        conn.request(MetadataRequest[1](topics=[]), 1)
        assert time.monotonic() - sent >= throttle / 1000 * 0.95
    out = _configs(broker.bootstrap, "--alter", "--entity-type", "clients", "--entity-name", "raw-producer",
                   "--delete-config", "producer_byte_rate,consumer_byte_rate")
    assert _configs(broker.bootstrap, "--describe", "--entity-type", "clients", "--entity-name",
                    "raw-producer").strip() == ""


def test_consumer_quota_answers_a_throttled_raw_fetch_empty(broker: BrokerProcess) -> None:
    topic = "quota-fetch-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic)
    with BlockingConnection("127.0.0.1", broker.port, "loader", 120) as conn:
        for _ in range(4):
            assert conn.request(_produce_req(topic), 7).responses[0].partition_responses[0].error_code == 0
    _configs(broker.bootstrap, "--alter", "--entity-type", "clients", "--entity-name", "raw-consumer",
             "--add-config", f"consumer_byte_rate={RATE}")

    def fetch(conn: BlockingConnection) -> tuple[int, int]:
        part = FetchRequest.FetchTopic.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=4 << 20)
        req = FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=4 << 20, isolation_level=0,
                           session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
                           topics=[FetchRequest.FetchTopic(topic=topic, partitions=[part])])
        resp = conn.request(req, 4)
        got = sum(len(p.records or b"") for t in resp.responses for p in t.partitions)
        return resp.throttle_time_ms, got

    with BlockingConnection("127.0.0.1", broker.port, "raw-consumer", 120) as conn:
        answers: list[tuple[int, int]] = []
        wait_until(lambda: answers.append(fetch(conn)) or answers[-1][0] > 0, timeout=120,
                   message="a throttled Fetch response")
        # the first answers carried one batch (at most one quota window's worth of bytes, but a whole first
        # batch); the throttled one carries none
        assert CHUNK < answers[0][1] < 2 * CHUNK and answers[-1][1] == 0, answers


def _produce_until_throttled(conf: dict[str, object], topic: str, value: bytes, message: str) -> None:
    """Send `value` 20 times a round with a confluent-kafka producer of `conf` until librdkafka's
    throttle_cb reports a throttle time above 0."""
    events: list[int] = []
    producer = Producer({**conf, "throttle_cb": lambda ev: events.append(ev.throttle_time)})

    def throttled() -> bool:
        for _ in range(20):
            producer.produce(topic, value)
        producer.flush(120)
        return any(t > 0 for t in events)

    wait_until(throttled, timeout=180, message=message)


def test_librdkafka_throttle_callbacks_fire_for_producer_and_consumer(broker: BrokerProcess) -> None:
    topic = "quota-ck-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic)
    _configs(broker.bootstrap, "--alter", "--entity-type", "clients", "--entity-name", "ck-producer",
             "--add-config", f"producer_byte_rate={RATE}")
    _configs(broker.bootstrap, "--alter", "--entity-type", "clients", "--entity-name", "ck-consumer",
             "--add-config", f"consumer_byte_rate={RATE}")
    _produce_until_throttled({"bootstrap.servers": broker.bootstrap, "client.id": "ck-producer", "linger.ms": 5},
                             topic, b"p" * 100_000, "librdkafka's throttle_cb for the producer")
    consumed: list[int] = []
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "client.id": "ck-consumer", "group.id": topic,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "throttle_cb": lambda ev: consumed.append(ev.throttle_time)})
    consumer.subscribe([topic])
    try:
        def consumer_throttled() -> bool:
            consumer.poll(1.0)
            return any(t > 0 for t in consumed)

        wait_until(consumer_throttled, timeout=180, message="librdkafka's throttle_cb for the consumer")
    finally:
        consumer.close()


def test_consumer_quota_throttles_a_share_consumer(broker: BrokerProcess) -> None:
    """ShareFetch counts against consumer_byte_rate as Fetch does (Kafka's FETCH sensor): past the quota it is
    answered empty with a throttle time and the connection muted (confluent-kafka-python's
    test_throttle_cb_fires_under_quota), and the records it acquired are undone, so once the quota is lifted
    every record comes, once, at its first delivery."""
    topic, group = "quota-share-" + uuid.uuid4().hex[:6], "quota-share-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, topic)
    with BlockingConnection("127.0.0.1", broker.port, "loader", 120) as conn:
        for _ in range(4):
            assert conn.request(_produce_req(topic), 7).responses[0].partition_responses[0].error_code == 0
    quota = ("--entity-type", "clients", "--entity-name", "share-consumer")
    _configs(broker.bootstrap, "--alter", *quota, "--add-config", f"consumer_byte_rate={RATE}")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    reset = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    for future in admin.incremental_alter_configs([ConfigResource(ResourceType.GROUP, group,
                                                                  incremental_configs=[reset])]).values():
        future.result()
    throttles: list[float] = []
    got: list[tuple[int, int]] = []
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "share-consumer",
                              "throttle_cb": lambda ev: throttles.append(ev.throttle_time)})
    consumer.subscribe([topic])

    def poll() -> None:
        got.extend((m.offset(), m.delivery_count()) for m in consumer.poll(0.5) if m.error() is None)

    try:
        wait_until(lambda: poll() or any(t > 0 for t in throttles), timeout=60,
                   message=lambda: f"a throttled ShareFetch (records {got})")
        assert len(got) < 4, got  # the quota held some back
        _configs(broker.bootstrap, "--alter", *quota, "--delete-config", "consumer_byte_rate")
        wait_until(lambda: poll() or len(got) >= 4, timeout=60, message=lambda: f"4 records (have {got})")
        assert sorted(got) == [(0, 1), (1, 1), (2, 1), (3, 1)], got
    finally:
        consumer.close()


def test_client_quota_apis_over_raw_requests(broker: BrokerProcess) -> None:
    A = AlterClientQuotasRequest
    entry = A.EntryData(entity=[A.EntryData.EntityData(entity_type="user", entity_name="alice"),
                                A.EntryData.EntityData(entity_type="client-id", entity_name=None)],
                        ops=[A.EntryData.OpData(key="request_percentage", value=50.0, remove=False)])
    bad_key = A.EntryData(entity=[A.EntryData.EntityData(entity_type="client-id", entity_name="c")],
                          ops=[A.EntryData.OpData(key="retention.ms", value=1.0, remove=False)])
    bad_rate = A.EntryData(entity=[A.EntryData.EntityData(entity_type="client-id", entity_name="c")],
                           ops=[A.EntryData.OpData(key="producer_byte_rate", value=1.5, remove=False)])
    with BlockingConnection("127.0.0.1", broker.port, "quota-admin", 30) as conn:
        resp = conn.request(A(entries=[entry, bad_key, bad_rate], validate_only=True), 1)
        assert [e.error_code for e in resp.entries] == [0, INVALID_REQUEST, INVALID_REQUEST]
        D = DescribeClientQuotasRequest
        everything = D(components=[], strict=False)
        assert not [e for e in conn.request(everything, 1).entries
                    if {x.entity_name for x in e.entity} == {"alice", None}]  # validate_only stored nothing
        assert conn.request(A(entries=[entry], validate_only=False), 0).entries[0].error_code == 0
        only_alice = D(components=[D.ComponentData(entity_type="user", match_type=0, match="alice"),
                                   D.ComponentData(entity_type="client-id", match_type=1, match=None)], strict=True)
        entries = conn.request(only_alice, 0).entries
        assert [({x.entity_type: x.entity_name for x in e.entity}, [(v.key, v.value) for v in e.values])
                for e in entries] == [({"user": "alice", "client-id": None}, [("request_percentage", 50.0)])]
        dup = D(components=[D.ComponentData(entity_type="user", match_type=2, match=None)] * 2, strict=False)
        assert conn.request(dup, 1).error_code == INVALID_REQUEST
    out = _configs(broker.bootstrap, "--describe", "--entity-type", "users", "--entity-name", "alice",
                   "--entity-type", "clients", "--entity-default")
    assert out.strip() == "Quota configs for user-principal 'alice', the default client-id are request_percentage=50.0"


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'


def test_user_quota_throttles_a_scram_user(brokers: BrokerPool) -> None:
    plain, sasl, http = free_port(), free_port(), free_port()
    b = brokers.start({"listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
                       "sasl.enabled.mechanisms": "SCRAM-SHA-256", "sasl.jaas.config": JAAS,
                       "http.listener": f"127.0.0.1:{http}"}, port=plain)
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    upsert = UserScramCredentialUpsertion("carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"pw")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    topic = "quota-user-" + uuid.uuid4().hex[:6]
    create_topic(b.bootstrap, topic)
    _configs(b.bootstrap, "--alter", "--entity-type", "users", "--entity-name", "carol",
             "--add-config", f"producer_byte_rate={RATE}")
    out = _configs(b.bootstrap, "--describe", "--entity-type", "users", "--entity-name", "carol")
    assert out.splitlines() == [f"Quota configs for user-principal 'carol' are producer_byte_rate={float(RATE)}",
                                "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=4096"]
    conf = {"bootstrap.servers": f"127.0.0.1:{sasl}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "carol", "sasl.password": "pw",
            "client.id": "any-client"}
    _produce_until_throttled(conf, topic, b"u" * 100_000, "the SCRAM user's producer throttled")
    with urllib.request.urlopen(f"http://127.0.0.1:{http}/metrics", timeout=30) as resp:
        text = resp.read().decode()
    # the user-level quota's entity: user carol, any client id
    line = next(x for x in text.splitlines()
                if x.startswith('kafka_server_produce_throttled_requests_total{client_id="",user="carol"}'))
    assert float(line.split()[-1]) > 0
    # the same client id over PLAINTEXT (User:ANONYMOUS) is not carol
    produce(b.bootstrap, topic, [b"a" * 1000])
    with BlockingConnection("127.0.0.1", b.port, "any-client", 60) as conn:
        for _ in range(4):
            assert conn.request(_produce_req(topic), 7).throttle_time_ms == 0


def test_zookeeper_quotas_apply_live_on_every_broker(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    cluster = brokers.start_cluster(zk_standalone.connect_string, 2)
    zk = cluster.brokers[0].overrides["zookeeper.connect"]  # the cluster's chroot
    r = run_cli("configs", "--zookeeper", zk, "--alter", "--entity-type", "clients", "--entity-default",
                "--add-config", f"producer_byte_rate={RATE}")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Completed Updating config for entity: default client-id."
    r = run_cli("configs", "--zookeeper", zk, "--describe", "--entity-type", "clients")
    assert r.stdout.strip() == f"Configs for default client-id are producer_byte_rate={RATE}"
    with cluster.zookeeper() as kz:
        data, _ = kz.get("/config/clients/<default>")
        assert json.loads(data) == {"version": 1, "config": {"producer_byte_rate": str(RATE)}}
        changes = kz.get_children("/config/changes")
        assert {"version": 2, "entity_path": "clients/<default>"} in [
            json.loads(kz.get(f"/config/changes/{c}")[0]) for c in changes]
    topic = "quota-zk-" + uuid.uuid4().hex[:6]
    for b in cluster.brokers:
        with BlockingConnection("127.0.0.1", b.port, f"zk-client-{b.broker_id}", 120) as conn:
            assert _throttled_produce(conn, topic) > 0


@pytest.mark.parametrize("flags", [["--entity-type", "ips", "--entity-name", "1.2.3.4"]])
def test_unsupported_quota_entities_are_refused(broker: BrokerProcess, flags: list[str]) -> None:
    r = run_cli("configs", "--bootstrap-server", broker.bootstrap, "--describe", *flags)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1


def test_controller_mutation_rate_refuses_strict_create_topics(broker: BrokerProcess) -> None:
    from kafka.protocol.admin import CreateTopicsRequest

    _configs(broker.bootstrap, "--alter", "--entity-type", "clients", "--entity-name", "mut-admin",
             "--add-config", "controller_mutation_rate=1")
    # a burst of 1 x 11 windows x 1 s = 11 partitions
    prefix = "quota-mut-" + uuid.uuid4().hex[:6]

    def create(conn: BlockingConnection, name: str, version: int) -> tuple[int, int]:
        topic = CreateTopicsRequest.CreatableTopic(name=name, num_partitions=20, replication_factor=1,
                                                   assignments=[], configs=[])
        resp = conn.request(CreateTopicsRequest(topics=[topic], timeout_ms=10_000, validate_only=False), version)
        return resp.topics[0].error_code, resp.throttle_time_ms

    with BlockingConnection("127.0.0.1", broker.port, "mut-admin", 120) as conn, \
            BlockingConnection("127.0.0.1", broker.port, "mut-admin", 120) as strict, \
            BlockingConnection("127.0.0.1", broker.port, "mut-admin", 120) as lenient:
        # the quota reaches the broker through its watch: the first throttled creation shows it
        n = iter(range(1000))
        wait_until(lambda: create(conn, f"{prefix}-{next(n)}", 6)[1] > 0, timeout=60,
                   message="a throttled CreateTopics")
        # 20 partitions against a burst of 11 leave the bucket ~9 s below zero; `conn` is muted for that
        # long, the same client id on other connections is not: v6 is refused with
        # THROTTLING_QUOTA_EXCEEDED (89), v5 creates its topic and is throttled
        assert create(strict, f"{prefix}-strict", 6)[0] == 89
        code, throttle = create(lenient, f"{prefix}-lenient", 5)
        assert code == 0 and throttle > 0
