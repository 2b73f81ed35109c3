"""SASL/OAUTHBEARER's pure parts: RFC 7628's initial response, Kafka's unsecured validator (its checks, their
order, its JAAS options) and the SASL state machine's exchange (JSON challenge, \\x01, failure; session
lifetime from the token's exp capped by connections.max.reauth.ms)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from odradek.config_keys import ConfigError
from odradek.security import oauthbearer
from odradek.security.oauthbearer import InvalidToken, MalformedResponse, UnsecuredValidator
from odradek.security.sasl import AuthenticationFailed, SaslServer, SaslSettings
from tests.oauth_tokens import initial_response, unsecured_jwt

NOW = 1_700_000_000.0


def test_initial_response_with_authzid_and_extensions() -> None:
    parsed = oauthbearer.parse_initial_response(b"n,a=alice,\x01auth=Bearer a.b.\x01traceId=x y\x01\x01")
    assert (parsed.token, parsed.authzid, parsed.extensions) == ("a.b.", "alice", {"traceId": "x y"})


@pytest.mark.parametrize("data", [b"", b"y,,\x01auth=Bearer t\x01\x01", b"n,,\x01auth=Bearer t\x01",
                                  b"n,,\x01\x01", b"n,,\x01auth=Bearer t t\x01\x01", b"n,,\x01k1=v\x01\x01",
                                  b"n,,\x01auth=Bearer \xff\x01\x01", b"n,b=x,\x01auth=Bearer t\x01\x01"])
def test_malformed_initial_responses(data: bytes) -> None:
    with pytest.raises(MalformedResponse):
        oauthbearer.parse_initial_response(data)


def test_validator_options_and_checks() -> None:
    v = UnsecuredValidator.from_options({"unsecuredValidatorRequiredScope": "a b",
                                         "unsecuredValidatorPrincipalClaimName": "who",
                                         "unsecuredValidatorAllowableClockSkewMs": "5000"}, "k")
    assert v == UnsecuredValidator("who", "scope", ("a", "b"), 5000)
    token = v.validate(unsecured_jwt(who="carol", scope=["a", "b", "c"], lifetime_s=-2, now=NOW, iat=NOW - 10), (NOW + 1) * 1000)
    assert token.principal == "carol"  # expired 3 s ago, within the 5 s skew
    with pytest.raises(InvalidToken) as exc:
        v.validate(unsecured_jwt(who="carol", scope="a", now=NOW), NOW * 1000)
    assert exc.value.json_error() == '{"status":"insufficient_scope", "scope":"[a, b]"}'
    with pytest.raises(ConfigError):
        UnsecuredValidator.from_options({"unsecuredValidatorAllowableClockSkewMs": "-1"}, "k")


# made when the test runs (a token made at collection may have expired by then, minutes later in a full run)
@pytest.mark.parametrize("make_token, reason", [
    (lambda: "a..b", "contains '..'"), (lambda: "a.b", "3 dot-separated"), (lambda: "e30.e30.", "Algorithm value"),
    (lambda: unsecured_jwt(alg="RS256"), "'none'"), (lambda: unsecured_jwt(signature="abc"), "digital signature"),
    (lambda: unsecured_jwt(sub=""), "No principal name"),
    (lambda: unsecured_jwt(sub=7), "incorrect type"),  # type: ignore[arg-type]
    (lambda: unsecured_jwt(exp="soon"), "'exp' claim"), (lambda: unsecured_jwt(iat=time.time() + 999999), "Issued At"),
])
def test_refused_tokens(make_token: Callable[[], str], reason: str) -> None:
    with pytest.raises(InvalidToken, match=reason):
        UnsecuredValidator().validate(make_token(), time.time() * 1000)


def test_exchange_challenge_then_failure_and_session_lifetime() -> None:
    settings = SaslSettings(("OAUTHBEARER",), max_reauth_ms=60000, oauthbearer=UnsecuredValidator(),
                            wall_clock=lambda: NOW)
    sasl = SaslServer(settings)
    assert sasl.handshake("OAUTHBEARER", 1)
    expired = unsecured_jwt(lifetime_s=-10, now=NOW)
    assert sasl.authenticate(initial_response(expired)) == b'{"status":"invalid_token"}'
    with pytest.raises(AuthenticationFailed, match=r'^\{"status":"invalid_token"\}: The indicated time'):
        sasl.authenticate(b"\x01")
    sasl = SaslServer(settings)
    sasl.handshake("OAUTHBEARER", 1)
    lifetime_s = 30
    assert sasl.authenticate(initial_response(unsecured_jwt("alice", lifetime_s=lifetime_s, now=NOW))) == b""
    assert sasl.principal == "User:alice"
    assert 29000 <= sasl.start_session(0.0) <= 30000  # exp is sooner than connections.max.reauth.ms
    with pytest.raises(AuthenticationFailed, match="authorization id"):
        s = SaslServer(settings)
        s.handshake("OAUTHBEARER", 1)
        s.authenticate(initial_response(unsecured_jwt("alice", lifetime_s=lifetime_s, now=NOW), authzid="bob"))


@pytest.mark.parametrize(("props", "message"), [
    ({}, "OAUTHBEARER needs exactly one org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule entry in "
         "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"),
    ({"sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";'},
     "OAUTHBEARER needs exactly one"),
    ({"listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": f"{oauthbearer.LOGIN_MODULE} required "
      'unsecuredValidatorAllowableClockSkewMs="soon";'}, "is not a number"),
])
def test_listener_settings_refused_at_startup(props: dict[str, str], message: str) -> None:
    from odradek.config import BrokerConfig
    from odradek.server.security import ListenerSecurity

    cfg = BrokerConfig.from_props({"listeners": "SASL_PLAINTEXT://127.0.0.1:9094", "log.dirs": "/tmp/x",
                                   "sasl.enabled.mechanisms": "OAUTHBEARER", **props})
    with pytest.raises(ConfigError, match=message):
        ListenerSecurity.for_listener(cfg, cfg.listeners[0])


def test_listener_validator_from_the_listener_jaas_over_the_broker_wide_one() -> None:
    from odradek.config import BrokerConfig
    from odradek.server.security import ListenerSecurity, unsecured_token_warnings

    cfg = BrokerConfig.from_props({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:9094", "log.dirs": "/tmp/x", "sasl.enabled.mechanisms": "OAUTHBEARER",
        "sasl.jaas.config": f'{oauthbearer.LOGIN_MODULE} required unsecuredValidatorRequiredScope="x";',
        "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config":
            f'{oauthbearer.LOGIN_MODULE} required unsecuredLoginStringClaim_sub="admin" '
            'unsecuredValidatorRequiredScope="requiredScope" unsecuredValidatorPrincipalClaimName="client_id";'})
    security = ListenerSecurity.for_listener(cfg, cfg.listeners[0])
    assert security.sasl is not None
    assert security.sasl.oauthbearer == UnsecuredValidator("client_id", "scope", ("requiredScope",), 0)
    assert len(unsecured_token_warnings([security])) == 1


def test_a_principal_with_a_newline_stays_on_one_line_in_messages() -> None:
    sasl = SaslServer(SaslSettings(("OAUTHBEARER",), oauthbearer=UnsecuredValidator()))
    sasl.handshake("OAUTHBEARER", 1)
    with pytest.raises(AuthenticationFailed) as exc:
        sasl.authenticate(initial_response(unsecured_jwt("eve\nINFO forged", scope=None), authzid="alice"))
    assert "\n" not in str(exc.value) and "\n" not in sasl.attempted_principal()


def test_base64_outside_the_alphabet_is_refused() -> None:
    with pytest.raises(InvalidToken, match="Base64"):
        UnsecuredValidator().validate("eyJhbGciOiJub25lIn0~.e30.", time.time() * 1000)
