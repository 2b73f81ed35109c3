"""The client side of SASL/OAUTHBEARER with Kafka's unsecured login (protocol/oauthbearer_login.py and
`OAuthBearerClient`): the token built from an OAuthBearerLoginModule's JAAS options passes the broker's own
unsecured validator; the initial response is RFC 7628's; a challenge is answered with the lone separator; the
Java client's `sasl.jaas.config` becomes librdkafka's unsecured JWT settings and our clients' login options."""

from __future__ import annotations

import base64
import json

import pytest

from odradek.config_keys import ConfigError
from odradek.protocol.oauthbearer_login import LoginOptionError, login_claims, unsecured_token
from odradek.protocol.sasl_client import OAuthBearerClient, SaslClientError, sasl_client
from odradek.security.client_config import client_security, librdkafka_config
from odradek.security.oauthbearer import UnsecuredValidator, parse_initial_response

OPTIONS = {"unsecuredLoginStringClaim_sub": "alice", "unsecuredLoginListClaim_scope": ",requiredScope,other",
           "unsecuredLoginNumberClaim_level": "3", "unsecuredLoginLifetimeSeconds": "600",
           "unsecuredLoginExtension_traceId": "t1"}
JAAS = ('org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
        'unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",requiredScope";')


def _part(token: str, index: int) -> dict[str, object]:
    text = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


def test_claims_from_the_login_options() -> None:
    claims = login_claims(OPTIONS, now=1_000.5)
    assert claims == {"iat": 1000, "exp": 1600, "sub": "alice", "scope": ["requiredScope", "other"], "level": 3}
    token = unsecured_token(OPTIONS, now=1_000.0)
    assert _part(token, 0) == {"alg": "none"} and token.endswith(".")
    assert login_claims({"unsecuredLoginStringClaim_sub": "bob"}, now=0)["exp"] == 3600  # Kafka's default hour
    named = {"unsecuredLoginPrincipalClaimName": "user", "unsecuredLoginStringClaim_user": "carol"}
    assert login_claims(named, now=0)["user"] == "carol"


@pytest.mark.parametrize(("options", "message"), [
    ({}, 'unsecuredLoginStringClaim_sub="<name>"'),
    ({"unsecuredLoginPrincipalClaimName": "user", "unsecuredLoginStringClaim_sub": "a"},
     'unsecuredLoginStringClaim_user="<name>"'),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginLifetimeSeconds": "soon"}, "not a number"),
    ({"unsecuredLoginStringClaim_sub": "a", "unsecuredLoginNumberClaim_n": "x"}, "not a number"),
])
def test_options_that_make_no_token(options: dict[str, str], message: str) -> None:
    with pytest.raises(LoginOptionError, match=message):
        login_claims(options)
    with pytest.raises(SaslClientError, match=message):
        sasl_client("OAUTHBEARER", "", "", options)


def test_the_brokers_validator_takes_the_clients_token() -> None:
    client = sasl_client("OAUTHBEARER", "", "", OPTIONS)
    first = client.first()
    assert first.startswith(b"n,,\x01auth=Bearer ") and first.endswith(b"\x01\x01")
    response = parse_initial_response(first)
    assert response.extensions == {"traceId": "t1"}
    validator = UnsecuredValidator.from_options({"unsecuredValidatorRequiredScope": "requiredScope"}, "k")
    token = validator.validate(response.token, now_ms=login_claims(OPTIONS)["iat"] * 1000.0)
    assert token.principal == "alice"
    refusing = UnsecuredValidator.from_options({"unsecuredValidatorRequiredScope": "admin"}, "k")
    with pytest.raises(Exception, match="admin"):
        refusing.validate(response.token, now_ms=login_claims(OPTIONS)["iat"] * 1000.0)


def test_a_challenge_is_answered_with_the_separator() -> None:
    client = OAuthBearerClient("x.y.")
    client.first()
    assert client.respond(b"") is None  # accepted
    challenged = OAuthBearerClient("x.y.")
    assert challenged.respond(b'{"status":"invalid_token"}') == b"\x01"


def test_java_client_settings_become_librdkafkas_and_ours() -> None:
    props = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": JAAS}
    rd = librdkafka_config(props)
    assert rd["enable.sasl.oauthbearer.unsecure.jwt"] == "true"
    assert rd["sasl.oauthbearer.config"] == "principal=alice scope=requiredScope"
    assert "sasl.username" not in rd and "sasl.jaas.config" not in rd
    ours = client_security(props)
    assert ours.mechanism == "OAUTHBEARER" and dict(ours.login_options)["unsecuredLoginStringClaim_sub"] == "alice"
    # librdkafka's own form serves our clients too
    rd_only = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER",
               "sasl.oauthbearer.config": "principal=bob scope=a,b lifeSeconds=60 extension_x=1"}
    options = dict(client_security(rd_only).login_options)
    assert options == {"unsecuredLoginStringClaim_sub": "bob", "unsecuredLoginLifetimeSeconds": "60",
                       "unsecuredLoginListClaim_scope": ",a,b", "unsecuredLoginExtension_x": "1"}
    with pytest.raises(ConfigError, match="OAuthBearerLoginModule"):
        client_security({**props, "sasl.jaas.config": 'x.PlainLoginModule required username="a" password="b";'})
    with pytest.raises(ConfigError, match="without blanks"):
        librdkafka_config({**props, "sasl.jaas.config": JAAS.replace('"alice"', '"al ice"')})
