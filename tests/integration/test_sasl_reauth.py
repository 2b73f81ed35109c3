"""KIP-368 re-authentication (`connections.max.reauth.ms`): SaslAuthenticate v1+ tells the client its
session lifetime; a connection that goes on past it without re-authenticating is closed at its next
request; re-authenticating as the same principal extends it, as another principal fails; librdkafka
re-authenticates by itself and keeps producing and consuming across several lifetimes."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from tests.clients import create_topic
from tests.harness import BrokerPool, BrokerProcess, free_port
from tests.rawclient import RawClient

LIFETIME_MS = 1500
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


@pytest.fixture(scope="module")
def reauth_broker(module_brokers: BrokerPool) -> tuple[BrokerProcess, int]:
    sasl_port = free_port()
    plain_port = free_port()
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain_port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connections.max.reauth.ms": str(LIFETIME_MS),
        "connection.failed.authentication.delay.ms": "10",
    }, name="reauth", port=plain_port)
    return broker, sasl_port


def _authenticate(c: RawClient, user: str, password: str) -> object:
    assert c.request(SaslHandshakeRequest(mechanism="PLAIN"), 1).error_code == 0
    return c.request(SaslAuthenticateRequest(auth_bytes=f"\0{user}\0{password}".encode()), 1)


def _metadata(c: RawClient) -> object:
    return c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9)


def test_a_session_past_its_lifetime_is_closed(reauth_broker: tuple[BrokerProcess, int]) -> None:
    _broker, port = reauth_broker
    with RawClient(port) as c:
        resp = _authenticate(c, "alice", "alice-secret")
        assert (resp.error_code, resp.session_lifetime_ms) == (0, LIFETIME_MS)  # type: ignore[attr-defined]
        assert _metadata(c).brokers  # type: ignore[attr-defined]
        time.sleep(LIFETIME_MS / 1000 + 0.3)  # the session's end is the event under test
        c.send_raw(_metadata_frame())
        assert c.is_closed_by_peer()


def test_reauthentication_extends_the_session_for_the_same_principal_only(
        reauth_broker: tuple[BrokerProcess, int]) -> None:
    _broker, port = reauth_broker
    with RawClient(port) as c:
        assert _authenticate(c, "alice", "alice-secret").error_code == 0  # type: ignore[attr-defined]
        time.sleep(LIFETIME_MS / 2000)
        again = _authenticate(c, "alice", "alice-secret")
        assert (again.error_code, again.session_lifetime_ms) == (0, LIFETIME_MS)  # type: ignore[attr-defined]
        time.sleep(LIFETIME_MS / 2000 + 0.3)  # past the first session's end, inside the second's
        assert _metadata(c).brokers  # type: ignore[attr-defined]
    with RawClient(port) as c:
        assert _authenticate(c, "alice", "alice-secret").error_code == 0  # type: ignore[attr-defined]
        other = _authenticate(c, "admin", "admin-secret")
        assert other.error_code == 58  # type: ignore[attr-defined]  # SASL_AUTHENTICATION_FAILED
        assert c.is_closed_by_peer()


def test_librdkafka_reauthenticates_across_lifetimes(reauth_broker: tuple[BrokerProcess, int]) -> None:
    broker, port = reauth_broker
    topic = "reauth"
    create_topic(broker.bootstrap, topic)
    log_start = len(broker.output())
    conf = {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "alice-secret"}
    p = Producer(conf)
    errors: list[object] = []
    sent = 0
    deadline = time.monotonic() + 4 * LIFETIME_MS / 1000  # several session lifetimes on one connection
    while time.monotonic() < deadline:
        p.produce(topic, b"m%d" % sent, on_delivery=lambda err, _m: err and errors.append(err))
        sent += 1
        p.flush(10)
        time.sleep(0.05)
    assert p.flush(30) == 0 and errors == []
    c = Consumer({**conf, "group.id": "reauth", "enable.partition.eof": True})
    c.assign([TopicPartition(topic, 0, 0)])
    got = 0
    try:
        while True:
            m = c.poll(10)
            assert m is not None, f"consumer stalled after {got} of {sent}"
            if m.error():
                break  # partition EOF
            got += 1
    finally:
        c.close()
    assert got == sent
    assert "expired (connections.max.reauth.ms)" not in broker.output()[log_start:]


def _metadata_frame() -> bytes:
    body = b"\x00\x03\x00\x01\x00\x00\x00\x07\x00\x01t" + b"\xff\xff\xff\xff"
    return len(body).to_bytes(4, "big") + body
