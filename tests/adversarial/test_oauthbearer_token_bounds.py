"""What an unauthenticated client can make SASL/OAUTHBEARER's unsecured validator do: the token is decoded and
parsed before the client is anyone, so the initial response is capped at 64 KiB (Kafka caps it only by
sasl.server.max.receive.size, 512 KiB here): a well-formed, valid 300 KB token is refused with
SASL_AUTHENTICATION_FAILED before it is decoded; within the cap, JSON nested 20,000 deep, a 60,000-digit
expiry and NaN are refused with the JSON error challenge in milliseconds; the broker keeps serving."""

from __future__ import annotations

import time

import pytest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

from odradek.protocol.errors import ErrorCode
from tests.harness import BrokerPool, BrokerProcess, free_ports
from tests.oauth_tokens import b64url, initial_response, unsecured_jwt
from tests.rawclient import RawClient

JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="admin";')


@pytest.fixture(scope="module")
def sasl_port(module_brokers: BrokerPool) -> tuple[BrokerProcess, int]:
    plain, sasl = free_ports(2)
    broker = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "OAUTHBEARER", "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "20"}, name="oauth-bounds", port=plain)
    return broker, sasl


def _first(port: int, payload: bytes) -> tuple[RawClient, object, float]:
    client = RawClient(port)
    assert client.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"), 1).error_code == 0
    start = time.monotonic()
    answer = client.request(SaslAuthenticateRequest(auth_bytes=payload), 1)
    return client, answer, time.monotonic() - start


def _serves(broker: BrokerProcess, port: int) -> None:
    client, answer, _ = _first(port, initial_response(unsecured_jwt("alice", scope=None)))
    with client:
        assert answer.error_code == 0  # type: ignore[attr-defined]
        assert client.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9).brokers
    assert broker.alive()


def test_a_valid_token_over_64_kib_is_refused_before_it_is_parsed(sasl_port: tuple[BrokerProcess, int]) -> None:
    broker, port = sasl_port
    big = unsecured_jwt("alice", scope=None, padding="p" * 300_000)  # valid, and under the 512 KiB frame limit
    client, answer, _ = _first(port, initial_response(big))
    with client:
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED, answer  # type: ignore[attr-defined]
        assert "larger than 65536 bytes" in answer.error_message  # type: ignore[attr-defined]
    _serves(broker, port)


def _claims(raw: bytes) -> str:
    header = b64url(b'{"alg":"none"}')
    return f"{header}.{b64url(raw)}."


@pytest.mark.parametrize("claims", [
    b'{"sub":"alice","exp":' + b"[" * 20000 + b"]" * 20000 + b"}",
    b'{"sub":"alice","exp":' + b"9" * 40000 + b"}",
    b'{"sub":"alice","exp":NaN}',
    b'{"sub":"alice","exp":1e400}',
], ids=["nested", "huge-int", "nan", "infinite"])
def test_hostile_json_within_the_cap_is_refused_quickly(sasl_port: tuple[BrokerProcess, int], claims: bytes) -> None:
    broker, port = sasl_port
    client, answer, elapsed = _first(port, initial_response(_claims(claims)))
    with client:
        assert answer.error_code == 0 and answer.auth_bytes == b'{"status":"invalid_token"}', answer  # type: ignore[attr-defined]
        assert elapsed < 1.0
        final = client.request(SaslAuthenticateRequest(auth_bytes=b"\x01"), 1)
        assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    _serves(broker, port)
