"""SCRAM-SHA-256/512: credentials set and described through AlterUserScramCredentials and
DescribeUserScramCredentials (confluent-kafka's admin client), stored in Kafka's format at
/config/users/<user>, then used to log in with confluent-kafka and kafka-python."""

from __future__ import annotations

import json
import sqlite3
import uuid

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from tests.harness import BrokerPool, BrokerProcess, free_port, run_cli
from tests.waiting import wait_until

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret";'


@pytest.fixture(scope="module")
def scram_broker(module_brokers: BrokerPool) -> tuple[BrokerProcess, int]:
    plain, sasl = free_port(), free_port()
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.jaas.config": JAAS,
    }, name="scram", port=plain)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    upserts = [
        UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"alice-secret"),
        UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"bob-secret"),
    ]
    for future in admin.alter_user_scram_credentials(upserts).values():
        future.result(timeout=30)
    return broker, sasl


def _conf(port: int, mechanism: str, user: str, password: str) -> dict[str, object]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def test_credentials_are_described_and_stored_as_kafka_stores_them(scram_broker: tuple[BrokerProcess, int]) -> None:
    broker, _ = scram_broker
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_user_scram_credentials(["alice", "bob"])
    alice = described["alice"].result(timeout=30)
    assert [(i.mechanism, i.iterations) for i in alice.scram_credential_infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    with pytest.raises(KafkaException, match="does not exist"):
        admin.describe_user_scram_credentials(["carol"])["carol"].result(timeout=30)
    db = sqlite3.connect(broker.log_dir / "odradek-metadata.db")
    try:
        rows = dict(db.execute("SELECT path, data FROM znodes WHERE path LIKE '/config/users/%'").fetchall())
    finally:
        db.close()
    stored = json.loads(rows["/config/users/alice"])
    assert stored["version"] == 1
    fields = dict(p.split("=", 1) for p in stored["config"]["SCRAM-SHA-256"].split(","))
    assert set(fields) == {"salt", "stored_key", "server_key", "iterations"} and fields["iterations"] == "8192"


def test_confluent_kafka_scram_sha_256(scram_broker: tuple[BrokerProcess, int]) -> None:
    _, port = scram_broker
    conf = _conf(port, "SCRAM-SHA-256", "alice", "alice-secret")
    producer = Producer(conf)
    producer.produce("scram-topic", value=b"hello")
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest"})
    consumer.subscribe(["scram-topic"])
    try:
        msg = wait_until(lambda: (m := consumer.poll(0.5)) is not None and m.error() is None and m, 60, "a record")
        assert msg.value() == b"hello"
    finally:
        consumer.close()


@pytest.mark.parametrize(("mechanism", "user", "password"), [
    ("SCRAM-SHA-256", "alice", "wrong"), ("SCRAM-SHA-256", "nobody", "x"), ("SCRAM-SHA-256", "bob", "bob-secret"),
])
def test_confluent_kafka_scram_refused(scram_broker: tuple[BrokerProcess, int], mechanism: str, user: str,
                                       password: str) -> None:
    _, port = scram_broker
    errors: list[str] = []
    producer = Producer({**_conf(port, mechanism, user, password), "error_cb": lambda e: errors.append(str(e)),
                         "reconnect.backoff.ms": 60000, "reconnect.backoff.max.ms": 60000})
    wait_until(lambda: producer.poll(0.2) is not None and bool(errors), 30, "an authentication error")
    assert any(f"invalid credentials with SASL mechanism {mechanism}" in e for e in errors), errors


def test_kafka_python_scram_sha_512_and_deletion(scram_broker: tuple[BrokerProcess, int]) -> None:
    from kafka import KafkaProducer

    broker, port = scram_broker
    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="SCRAM-SHA-512", sasl_plain_username="bob",
                             sasl_plain_password="bob-secret")
    producer.send("scram-kp", b"x").get(30)
    producer.close()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deletion = UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)
    admin.alter_user_scram_credentials([deletion])["bob"].result(timeout=30)
    with pytest.raises(KafkaException, match="does not exist"):
        admin.describe_user_scram_credentials(["bob"])["bob"].result(timeout=30)


def test_configs_tool_sets_describes_and_deletes_scram_credentials(scram_broker: tuple[BrokerProcess, int]) -> None:
    broker, port = scram_broker
    base = ["configs", "--bootstrap-server", broker.bootstrap, "--entity-type", "users", "--entity-name", "carol"]
    r = run_cli(*base, "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192,password=carol-secret]")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Completed updating config for user carol."
    r = run_cli(*base, "--describe")
    assert r.stdout.strip() == "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256=iterations=8192"
    producer = Producer(_conf(port, "SCRAM-SHA-256", "carol", "carol-secret"))
    producer.produce("scram-cli", value=b"c")
    assert producer.flush(30) == 0
    assert run_cli(*base, "--alter", "--delete-config", "SCRAM-SHA-256").returncode == 0
    assert run_cli(*base, "--describe").stdout.strip() == ""
    bad = run_cli(*base, "--alter", "--add-config", "retention.ms=1024")
    assert bad.returncode != 0 and "Invalid config(s): retention.ms" in bad.stderr + bad.stdout


def test_aiokafka_scram_sha_256(scram_broker: tuple[BrokerProcess, int]) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    _, port = scram_broker
    common = {"bootstrap_servers": f"127.0.0.1:{port}", "security_protocol": "SASL_PLAINTEXT",
              "sasl_mechanism": "SCRAM-SHA-256", "sasl_plain_username": "alice", "sasl_plain_password": "alice-secret"}

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**common)
        await producer.start()
        try:
            await producer.send_and_wait("scram-aio", b"x", partition=0)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(**common, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition("scram-aio", 0)])
            got: list[bytes] = []
            while not got:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 60)
                got += [m.value for ms in batch.values() for m in ms]
            return got
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == [b"x"]
