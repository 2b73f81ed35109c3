"""SASL/OAUTHBEARER (KIP-255) with Kafka's unsecured validator on a SASL_PLAINTEXT listener: librdkafka's
built-in unsecured token produces and consumes as User:alice under the ACLs, a principal without ACLs is
refused; expired, unscoped, signed (HS256), garbage and oversized tokens are refused with
SASL_AUTHENTICATION_FAILED while the broker keeps serving; the session lifetime is the token's remaining
lifetime capped by connections.max.reauth.ms (KIP-368); the tools log in with a Java client's
`sasl.jaas.config` (OAuthBearerLoginModule) in --command-config, through librdkafka and through our own client."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from odradek.protocol.errors import ErrorCode
from tests.harness import BrokerPool, BrokerProcess, free_ports, run_cli
from tests.oauth_tokens import initial_response, unsecured_jwt
from tests.rawclient import RawClient
from tests.waiting import wait_until

JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin" unsecuredValidatorRequiredScope="requiredScope";')
REAUTH_MS = 60000


class OAuthBroker:
    def __init__(self, pool: BrokerPool) -> None:
        plain, self.sasl, self.reauth = free_ports(3)
        self.process: BrokerProcess = pool.start({
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{self.sasl},"
                         f"REAUTH://127.0.0.1:{self.reauth}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "OAUTHBEARER",
            "sasl.jaas.config": JAAS,  # both SASL listeners' (the fallback of listener.name.<l>.oauthbearer.sasl.jaas.config)
            "listener.name.sasl_plaintext.connections.max.reauth.ms": str(REAUTH_MS),
            "listener.name.reauth.connections.max.reauth.ms": "1500",
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            # the PLAINTEXT listener (the harness's and this test's admin) is the inter-broker one
            "super.users": "User:ANONYMOUS", "allow.everyone.if.no.acl.found": "false",
            "connection.failed.authentication.delay.ms": "20",
        }, name="oauth", port=plain)

    def conf(self, principal: str, scope: str = "requiredScope", port: int = 0) -> dict[str, Any]:
        """librdkafka's own unsecured token (enable.sasl.oauthbearer.unsecure.jwt)."""
        return {"bootstrap.servers": f"127.0.0.1:{port or self.sasl}", "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt": True,
                "sasl.oauthbearer.config": f"principal={principal} scope={scope}"}


@pytest.fixture(scope="module")
def oauth(module_brokers: BrokerPool) -> OAuthBroker:
    broker = OAuthBroker(module_brokers)
    admin = AdminClient({"bootstrap.servers": broker.process.bootstrap})
    bindings = [AclBinding(ResourceType.TOPIC, "oauth-", ResourcePatternType.PREFIXED, "User:alice", "*",
                           AclOperation.ALL, AclPermissionType.ALLOW),
                AclBinding(ResourceType.GROUP, "oauth-", ResourcePatternType.PREFIXED, "User:alice", "*",
                           AclOperation.ALL, AclPermissionType.ALLOW)]
    for future in admin.create_acls(bindings).values():
        future.result(timeout=30)
    return broker


def test_librdkafka_unsecured_token_round_trip_as_alice(oauth: OAuthBroker) -> None:
    assert "enables SASL/OAUTHBEARER with Kafka's unsecured validator" in oauth.process.output()
    producer = Producer(oauth.conf("alice"))
    for i in range(3):
        producer.produce("oauth-topic", f"o{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**oauth.conf("alice"), "group.id": "oauth-group", "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe(["oauth-topic"])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
        assert got == [b"o0", b"o1", b"o2"]
    finally:
        consumer.close()


def test_a_principal_without_acls_is_refused(oauth: OAuthBroker) -> None:
    errors: list[KafkaError] = []
    producer = Producer({**oauth.conf("bob"), "message.timeout.ms": 10000,
                         "on_delivery": lambda err, _msg: errors.append(err)})
    producer.produce("oauth-topic", b"x")
    producer.flush(20)
    assert errors and errors[0] is not None and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors


def _authenticate(port: int, token_bytes: bytes) -> tuple[RawClient, Any]:
    client = RawClient(port)
    assert client.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
    return client, client.request(SaslAuthenticateRequest(auth_bytes=token_bytes), 1)


# tokens made when the test runs, not when it is collected: a suite's module may run minutes after collection,
# past the tokens' lifetime
@pytest.mark.parametrize("make_token, reason", [
    (lambda: unsecured_jwt(lifetime_s=-60), "Expiration Time"),
    (lambda: unsecured_jwt(scope="otherScope"), "missing a required scope"),
    (lambda: unsecured_jwt(scope=None), "missing a required scope"),
    (lambda: unsecured_jwt(alg="HS256", signature="c2lnbmF0dXJl"), "must have 'none' for an algorithm"),
    (lambda: "bm90IGpzb24.bm90IGpzb24.", "malformed JSON"),
], ids=["expired", "wrong-scope", "no-scope", "hs256", "not-json"])
def test_a_refused_token_gets_the_json_challenge_then_fails(oauth: OAuthBroker, make_token: Callable[[], str],
                                                            reason: str) -> None:
    client, first = _authenticate(oauth.sasl, initial_response(make_token()))
    with client:
        assert first.error_code == 0 and first.auth_bytes.startswith(b'{"status":'), first  # RFC 7628's error
        final = client.request(SaslAuthenticateRequest(auth_bytes=b"\x01"), 1)
        assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert reason in final.error_message and "\n" not in final.error_message, final.error_message
        assert client.is_closed_by_peer()
    _still_serves(oauth)


@pytest.mark.parametrize("payload, reason", [
    (b"garbage", "Invalid OAUTHBEARER client first message"),
    (b"n,,\x01auth=Basic abc\x01\x01", "Invalid scheme"),
    (initial_response("x" * 70000), "larger than 65536 bytes"),
], ids=["garbage", "basic-scheme", "oversized"])
def test_a_malformed_response_fails_at_once(oauth: OAuthBroker, payload: bytes, reason: str) -> None:
    client, first = _authenticate(oauth.sasl, payload)
    with client:
        assert first.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert reason in first.error_message, first.error_message
    _still_serves(oauth)


def _still_serves(oauth: OAuthBroker) -> None:
    client, answer = _authenticate(oauth.sasl, initial_response(unsecured_jwt("alice")))
    with client:
        assert answer.error_code == 0 and answer.auth_bytes == b""
        assert client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9).brokers
    assert oauth.process.alive()


def test_session_lifetime_is_the_token_lifetime_capped_by_max_reauth(oauth: OAuthBroker) -> None:
    client, short = _authenticate(oauth.sasl, initial_response(unsecured_jwt("alice", lifetime_s=20)))
    with client:
        assert short.error_code == 0 and 15000 < short.session_lifetime_ms <= 20000, short
    client, long = _authenticate(oauth.sasl, initial_response(unsecured_jwt("alice", lifetime_s=3600)))
    with client:
        assert long.error_code == 0 and long.session_lifetime_ms == REAUTH_MS, long
        # KIP-368: the same principal re-authenticates on the open connection; another one may not
        assert client.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
        again = client.request(SaslAuthenticateRequest(auth_bytes=initial_response(unsecured_jwt("alice"))), 1)
        assert again.error_code == 0
        assert client.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
        other = client.request(SaslAuthenticateRequest(auth_bytes=initial_response(unsecured_jwt("bob"))), 1)
        assert other.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    wait_until(lambda: "principal User:bob, mechanism OAUTHBEARER" in oauth.process.output(), 10, "the failure log")


def test_librdkafka_reauthenticates_before_the_session_ends(oauth: OAuthBroker) -> None:
    """KIP-368: on a listener with connections.max.reauth.ms=1500, librdkafka re-authenticates on the same
    connection before each session ends and keeps producing across several sessions, never refused or cut."""
    errors: list[KafkaError] = []
    producer = Producer({**oauth.conf("alice", port=oauth.reauth), "error_cb": errors.append})
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        producer.produce("oauth-reauth", b"r")
        producer.poll(0.2)
    assert producer.flush(10) == 0
    assert not errors, errors  # librdkafka reports a refused re-authentication, and the broker's closing
    assert "expired (connections.max.reauth.ms)" not in oauth.process.output()


def test_tools_log_in_with_the_java_clients_unsecured_login(oauth: OAuthBroker, tmp_path: Path) -> None:
    admin = AdminClient({"bootstrap.servers": oauth.process.bootstrap})
    admin.create_topics([NewTopic("oauth-tools", 1, 1)])["oauth-tools"].result(30)
    config = tmp_path / "oauth.properties"
    config.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config="
                      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                      'unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",requiredScope";\n')
    bootstrap = f"127.0.0.1:{oauth.sasl}"
    # librdkafka's clients (topics): alice sees her topics and no others
    listed = run_cli("topics", "--bootstrap-server", bootstrap, "--command-config", str(config), "--list")
    assert listed.returncode == 0 and "oauth-tools" in listed.stdout.split(), listed.stderr
    assert "__consumer_offsets" not in listed.stdout
    # our own protocol client (transactions): the exchange succeeds and the request is answered
    txns = run_cli("transactions", "--bootstrap-server", bootstrap, "--command-config", str(config), "list")
    assert txns.returncode == 0 and txns.stdout.split()[:2] == ["TransactionalId", "Coordinator"], txns
    # without the scope the broker requires, both are refused in one line
    unscoped = tmp_path / "unscoped.properties"
    unscoped.write_text(config.read_text().replace(' unsecuredLoginListClaim_scope=",requiredScope"', ""))
    for tool in (["topics", "--list"], ["transactions", "list"]):
        refused = run_cli(tool[0], "--bootstrap-server", bootstrap, "--command-config", str(unscoped), *tool[1:],
                          timeout=90)
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode != 0 and len(lines) == 1 and "Traceback" not in refused.stderr, refused
