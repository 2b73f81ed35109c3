"""The client side of listener security: SASL PLAIN and SCRAM tokens checked against the broker's own
server mechanisms, client properties (Java and librdkafka names) turned into a ClientSecurity and into a
librdkafka config, and the inter-broker listener's client settings from a broker's config."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from odradek.config import BrokerConfig
from odradek.config_keys import ConfigError
from odradek.protocol.client_security import AuthenticationError, ClientSecurity, sasl_exchange
from odradek.protocol.sasl_client import PlainClient, SaslClientError, ScramClient
from odradek.security import scram
from odradek.security.client_config import client_security, librdkafka_config
from odradek.security.sasl import AuthenticationFailed, NeedCredential, Plain, Scram
from odradek.server.security import inter_broker_security

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
              'password="broker-secret" user_broker="broker-secret" user_alice="alice-secret";')


def _scram_run(mechanism: str, client_password: str, stored_password: str) -> ScramClient:
    client = ScramClient(mechanism, "alice", client_password)
    server = Scram(mechanism)
    need = server.step(client.first())
    assert isinstance(need, NeedCredential) and need.user == "alice"
    server_first = server.provide(scram.credential(mechanism, stored_password, 4096))
    client_final = client.respond(server_first)
    assert client_final is not None
    server_final = server.step(client_final)
    assert isinstance(server_final, bytes)
    assert client.respond(server_final) is None
    return client


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_against_the_broker_side(mechanism: str) -> None:
    _scram_run(mechanism, "alice-secret", "alice-secret")
    with pytest.raises(AuthenticationFailed):
        _scram_run(mechanism, "wrong", "alice-secret")


def test_scram_client_refuses_a_server_that_does_not_know_the_password() -> None:
    client = ScramClient("SCRAM-SHA-256", "alice", "alice-secret")
    server = Scram("SCRAM-SHA-256")
    server.step(client.first())
    final = client.respond(server.provide(scram.credential("SCRAM-SHA-256", "alice-secret")))
    assert final is not None
    with pytest.raises(SaslClientError, match="signature does not match"):
        client.respond(b"v=" + b"A" * 44)
    other = ScramClient("SCRAM-SHA-256", "alice", "x", nonce="abc")
    with pytest.raises(SaslClientError, match="nonce"):
        other.respond(b"r=zzz,s=c2FsdA==,i=4096")
    with pytest.raises(SaslClientError, match="below the minimum"):
        ScramClient("SCRAM-SHA-256", "alice", "x", nonce="abc").respond(b"r=abcdef,s=c2FsdA==,i=10")
    with pytest.raises(SaslClientError, match="refused"):
        ScramClient("SCRAM-SHA-256", "alice", "x").respond(b"e=unknown-user")


def test_plain_client_token_is_what_the_broker_accepts() -> None:
    token = PlainClient("alice", "alice-secret").first()
    assert token == b"\0alice\0alice-secret"
    assert Plain({"alice": "alice-secret"}).step(token) == b""


class _FakeBroker:
    """Answers the SASL requests of `sasl_exchange` with the broker's own mechanism objects."""

    def __init__(self, enabled: tuple[str, ...], mechanism: Scram | Plain) -> None:
        self.enabled, self.mechanism = enabled, mechanism

    def answer(self, request: object) -> object:
        from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

        if type(request).__name__ == "SaslHandshakeRequest":
            ok = request.mechanism in self.enabled  # type: ignore[attr-defined]
            return SaslHandshakeResponse(error_code=0 if ok else 33, mechanisms=list(self.enabled))
        try:
            out = self.mechanism.step(request.auth_bytes)  # type: ignore[attr-defined]
            if isinstance(out, NeedCredential):
                out = self.mechanism.provide(scram.credential(out.mechanism, "alice-secret"))
            return SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=out, session_lifetime_ms=0)
        except AuthenticationFailed as exc:
            return SaslAuthenticateResponse(error_code=58, error_message=str(exc), auth_bytes=b"", session_lifetime_ms=0)


def _drive(security: ClientSecurity, broker: _FakeBroker) -> int:
    steps = sasl_exchange(security)
    rounds = 0
    try:
        step = next(steps)
        while True:
            rounds += 1
            step = steps.send(broker.answer(step[0]))
    except StopIteration:
        return rounds


def test_sasl_exchange_rounds_and_refusals() -> None:
    scram_sec = ClientSecurity("SASL_PLAINTEXT", None, "SCRAM-SHA-512", "alice", "alice-secret")
    assert _drive(scram_sec, _FakeBroker(("SCRAM-SHA-512",), Scram("SCRAM-SHA-512"))) == 3  # handshake + 2 rounds
    plain = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", "alice-secret")
    assert _drive(plain, _FakeBroker(("PLAIN",), Plain({"alice": "alice-secret"}))) == 2
    with pytest.raises(AuthenticationError, match="not enabled on the listener .it offers PLAIN"):
        _drive(scram_sec, _FakeBroker(("PLAIN",), Plain({})))
    wrong = ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", "alice", "nope")
    with pytest.raises(AuthenticationError, match="Invalid username or password"):
        _drive(wrong, _FakeBroker(("PLAIN",), Plain({"alice": "alice-secret"})))


def test_client_properties_java_and_librdkafka_names(pem_pki: tuple[Path, Path]) -> None:
    ca, key = pem_pki
    java = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                'username="alice" password="alice-secret";',
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(ca), "client.id": "tool"}
    sec = client_security(java)
    assert (sec.protocol, sec.mechanism, sec.username, sec.password) == ("SASL_SSL", "SCRAM-SHA-256", "alice",
                                                                        "alice-secret")
    assert sec.ssl_context is not None and sec.ssl_context.check_hostname
    assert sec.ssl_context.verify_mode == ssl.CERT_REQUIRED
    assert librdkafka_config(java) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
                                       "sasl.username": "alice", "sasl.password": "alice-secret",
                                       "ssl.ca.location": str(ca), "client.id": "tool"}
    rdkafka = {"security.protocol": "ssl", "ssl.ca.location": str(ca), "ssl.endpoint.identification.algorithm": "none",
               "ssl.certificate.location": str(key), "ssl.key.location": str(key)}
    sec = client_security(rdkafka)
    assert sec.protocol == "SSL" and sec.ssl_context is not None and not sec.ssl_context.check_hostname
    mtls = librdkafka_config({"security.protocol": "SSL", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(key),
                              "ssl.endpoint.identification.algorithm": ""})
    assert mtls == {"security.protocol": "SSL", "ssl.certificate.location": str(key), "ssl.key.location": str(key),
                    "ssl.endpoint.identification.algorithm": "none"}
    assert client_security({}).protocol == "PLAINTEXT"
    with pytest.raises(ConfigError, match="security.protocol"):
        client_security({"security.protocol": "KERBEROS"})
    with pytest.raises(ConfigError, match="GSSAPI is not supported"):
        client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "a"})
    with pytest.raises(ConfigError, match="needs sasl.jaas.config"):
        client_security({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"})
    with pytest.raises(ConfigError, match="JKS is not supported"):
        client_security({"security.protocol": "SSL", "ssl.truststore.location": "/x/trust.jks"})


def _broker(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": "/tmp/x", "zookeeper.connect": "z:2181", **props})


def test_inter_broker_client_settings(pem_pki: tuple[Path, Path]) -> None:
    ca, key = pem_pki
    listeners = "INTERNAL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9092"
    base = {"listeners": listeners, "listener.security.protocol.map": "INTERNAL:SASL_SSL,PLAINTEXT:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL", "ssl.keystore.location": str(key),
            "ssl.truststore.location": str(ca), "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS}
    with pytest.raises(ConfigError, match="sasl.mechanism.inter.broker.protocol=GSSAPI"):
        inter_broker_security(_broker(**base))
    sec = inter_broker_security(_broker(**base, **{"sasl.mechanism.inter.broker.protocol": "PLAIN"}))
    assert (sec.protocol, sec.mechanism, sec.username, sec.password) == ("SASL_SSL", "PLAIN", "broker", "broker-secret")
    assert sec.ssl_context is not None
    with pytest.raises(ConfigError, match="not in the inter-broker listener INTERNAL's sasl.enabled.mechanisms"):
        inter_broker_security(_broker(**base, **{"sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}))
    scram_props = {**base, "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-256",
                   "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-256"}
    with pytest.raises(ConfigError, match="listener.name.internal.scram-sha-256.sasl.jaas.config"):
        inter_broker_security(_broker(**scram_props))
    scram_props["listener.name.internal.scram-sha-256.sasl.jaas.config"] = (
        'org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="s";')
    assert inter_broker_security(_broker(**scram_props)).username == "broker"
    tls_only = inter_broker_security(_broker(listeners="SSL://127.0.0.1:9093",
                                             **{"security.inter.broker.protocol": "SSL",
                                                "ssl.keystore.location": str(key), "ssl.truststore.location": str(ca)}))
    assert tls_only.protocol == "SSL" and tls_only.mechanism is None
    assert inter_broker_security(_broker(listeners="PLAINTEXT://127.0.0.1:9092")).protocol == "PLAINTEXT"


def test_inter_broker_oauthbearer_logs_in_from_the_listeners_jaas_entry() -> None:
    """Kafka's unsecured OAUTHBEARER inter-broker login: the listener's OAuthBearerLoginModule entry serves the
    broker's validator and its own login (its token is made per connection, from these options)."""
    jaas = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
            'unsecuredLoginStringClaim_sub="broker" unsecuredValidatorRequiredScope="";')
    sec = inter_broker_security(_broker(**{
        "listeners": "INTERNAL://127.0.0.1:9093", "listener.security.protocol.map": "INTERNAL:SASL_PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL", "listener.name.internal.sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
        "listener.name.internal.oauthbearer.sasl.jaas.config": jaas}))
    assert (sec.protocol, sec.mechanism) == ("SASL_PLAINTEXT", "OAUTHBEARER")
    assert dict(sec.login_options)["unsecuredLoginStringClaim_sub"] == "broker"
