"""SASL/PLAIN on SASL_PLAINTEXT and SASL_SSL listeners: confluent-kafka, kafka-python and kcat with the
right and a wrong password, Kafka's failure message and one log line, and a client that sends Metadata
before authenticating is closed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient
from kafka.protocol.metadata import ApiVersionsRequest, MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from tests.clients import kafka_python_round_trip, round_trip
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.rawclient import RawClient
from tests.waiting import wait_until

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


class Ports:
    def __init__(self) -> None:
        self.plain, self.sasl, self.sasl_ssl = free_port(), free_port(), free_port()


@pytest.fixture(scope="module")
def sasl_broker(module_brokers: BrokerPool, pem_pki: tuple[Path, Path]) -> tuple[BrokerProcess, Ports]:
    ports = Ports()
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{ports.plain},SASL_PLAINTEXT://127.0.0.1:{ports.sasl},"
                     f"SASL_SSL://127.0.0.1:{ports.sasl_ssl}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "sasl.jaas.config": JAAS.replace('user_alice="alice-secret"', 'user_bob="bob-secret"'),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pem_pki[1]),
        "connection.failed.authentication.delay.ms": "50",
    }, name="sasl", port=ports.plain)
    return broker, ports


def _conf(port: int, user: str, password: str, protocol: str = "SASL_PLAINTEXT") -> dict[str, object]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": protocol, "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": password}


def _round_trip(conf: dict[str, object], topic: str, count: int = 5) -> list[bytes]:
    return round_trip(conf, topic, count, "s")


def test_confluent_kafka_sasl_plaintext(sasl_broker: tuple[BrokerProcess, Ports]) -> None:
    _, ports = sasl_broker
    assert _round_trip(_conf(ports.sasl, "alice", "alice-secret"), "sasl-ck") == [f"s{i}".encode() for i in range(5)]


def test_confluent_kafka_wrong_password_is_refused_and_logged_once(sasl_broker: tuple[BrokerProcess, Ports]) -> None:
    broker, ports = sasl_broker
    errors: list[str] = []
    producer = Producer({**_conf(ports.sasl, "alice", "wrong"), "error_cb": lambda e: errors.append(str(e)),
                         "reconnect.backoff.ms": 60000, "reconnect.backoff.max.ms": 60000})
    wait_until(lambda: producer.poll(0.2) is not None and bool(errors), 30, "an authentication error")
    assert any("Authentication failed: Invalid username or password" in e for e in errors), errors
    wait_until(lambda: "principal User:alice, mechanism PLAIN" in broker.output(), 10, "the failure log line")
    lines = [ln for ln in broker.output().splitlines() if "Failed authentication" in ln and "User:alice" in ln]
    assert len(lines) == 1, lines  # one attempt (no reconnection within the test), one line
    assert "Authentication failed: Invalid username or password" in lines[0]
    assert "Closing connection from" not in "\n".join(ln for ln in broker.output().splitlines() if "failed authentication" in ln)
    assert broker.alive()


def test_sasl_ssl_with_the_fallback_jaas(sasl_broker: tuple[BrokerProcess, Ports], pem_pki: tuple[Path, Path]) -> None:
    _, ports = sasl_broker
    conf = {**_conf(ports.sasl_ssl, "bob", "bob-secret", "SASL_SSL"), "ssl.ca.location": str(pem_pki[0])}
    assert _round_trip(conf, "sasl-ssl") == [f"s{i}".encode() for i in range(5)]
    # alice is a user of the SASL_PLAINTEXT listener's JAAS only
    admin = AdminClient({**conf, "sasl.username": "alice", "sasl.password": "alice-secret"})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=3)


def test_kafka_python_sasl_plain(sasl_broker: tuple[BrokerProcess, Ports]) -> None:
    import kafka.errors
    from kafka import KafkaProducer

    broker, ports = sasl_broker
    common = {"bootstrap_servers": f"127.0.0.1:{ports.sasl}", "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "PLAIN", "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}
    assert kafka_python_round_trip(common, "sasl-kp", 3, "p") == [b"p0", b"p1", b"p2"]
    failures = broker.output().count("Failed authentication")
    with pytest.raises(kafka.errors.KafkaError):
        KafkaProducer(**{**common, "sasl_plain_password": "nope"}, bootstrap_timeout_ms=3000, request_timeout_ms=3000, max_block_ms=3000)
    wait_until(lambda: broker.output().count("Failed authentication") > failures, 10, "the failure log line")


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")
def test_kcat_sasl_plain(sasl_broker: tuple[BrokerProcess, Ports]) -> None:
    _, ports = sasl_broker

    def kcat(password: str, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
        opts = ["-b", f"127.0.0.1:{ports.sasl}", "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=PLAIN",
                "-X", "sasl.username=alice", "-X", f"sasl.password={password}", "-m", "3"]
        return subprocess.run(["kcat", *opts, *args], input=data, capture_output=True, timeout=60)

    assert kcat("alice-secret", "-P", "-t", "sasl-kcat", data=b"a\nb\n").returncode == 0
    out = kcat("alice-secret", "-C", "-t", "sasl-kcat", "-o", "beginning", "-c", "2", "-e")
    assert out.stdout.split() == [b"a", b"b"]
    bad = kcat("wrong", "-L")
    assert bad.returncode != 0
    assert b"Invalid username or password" in bad.stderr


def test_metadata_before_authentication_closes_the_connection(sasl_broker: tuple[BrokerProcess, Ports]) -> None:
    broker, ports = sasl_broker
    with RawClient(ports.sasl) as c:
        assert c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 3).error_code == 0
        c.send_raw(_metadata_frame())
        assert c.is_closed_by_peer()
    with RawClient(ports.sasl) as c:  # and the raw SASL exchange works
        assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
        resp = c.request(SaslAuthenticateRequest(auth_bytes=b"\0admin\0admin-secret"), 2)
        assert resp.error_code == 0
        assert c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9).brokers
    with RawClient(ports.sasl) as c:  # SaslHandshake v0: then a bare token, answered by a bare token
        assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 0).error_code == 0
        token = b"\0alice\0alice-secret"
        c.send_raw(len(token).to_bytes(4, "big") + token)
        assert c.recv_frame() == b""
        assert c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9).brokers
    assert broker.alive()


def _metadata_frame() -> bytes:
    """Metadata v1 for all topics, in plaintext framing: size, api key 3, version 1, correlation id, client id."""
    body = b"\x00\x03\x00\x01\x00\x00\x00\x07\x00\x01t" + b"\xff\xff\xff\xff"
    return len(body).to_bytes(4, "big") + body


def test_aiokafka_over_sasl_ssl(sasl_broker: tuple[BrokerProcess, Ports], pem_pki: tuple[Path, Path]) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.errors import KafkaError
    from aiokafka.helpers import create_ssl_context

    _, ports = sasl_broker

    def common(password: str) -> dict[str, object]:
        return {"bootstrap_servers": f"127.0.0.1:{ports.sasl_ssl}", "security_protocol": "SASL_SSL",
                "sasl_mechanism": "PLAIN", "sasl_plain_username": "bob", "sasl_plain_password": password,
                "ssl_context": create_ssl_context(cafile=str(pem_pki[0]))}

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**common("bob-secret"))
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait("sasl-aio", f"a{i}".encode(), partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**common("bob-secret"), auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition("sasl-aio", 0)])
            got: list[bytes] = []
            while len(got) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 60)
                got += [m.value for ms in batch.values() for m in ms]
            return got
        finally:
            await consumer.stop()

    async def refused() -> None:
        producer = AIOKafkaProducer(**common("wrong"), request_timeout_ms=5000)
        try:
            await producer.start()
        finally:
            await producer.stop()

    assert asyncio.run(run()) == [b"a0", b"a1", b"a2"]
    with pytest.raises(KafkaError):
        asyncio.run(refused())
