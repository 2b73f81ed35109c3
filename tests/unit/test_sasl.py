"""The sans-io SASL state machine (security/sasl.py): Kafka's JAAS syntax, PLAIN (RFC 4616) with Kafka's
messages, and the order of the exchange."""

from __future__ import annotations

import pytest

from odradek.config_keys import ConfigError
from odradek.security.sasl import (
    INVALID_CREDENTIALS,
    AuthenticationFailed,
    IllegalState,
    SaslServer,
    SaslSettings,
    State,
    parse_jaas,
    plain_users,
)

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')
SETTINGS = SaslSettings(("PLAIN",), plain_users(JAAS, "k"))


def test_jaas_entries_and_file_sections() -> None:
    assert plain_users(JAAS, "k") == {"admin": "admin-secret", "alice": "alice-secret"}
    (module,) = parse_jaas("KafkaServer {\n  " + JAAS + "\n};")
    assert module.flag == "required" and module.options["username"] == "admin"
    (quoted,) = parse_jaas(r'a.B optional k="x\"y;z" bare=v;')
    assert quoted.options == {"k": 'x"y;z', "bare": "v"}


@pytest.mark.parametrize("text", ["", "a.B required k=v", "a.B sometimes k=v;", "a.B required k v;",
                                  'a.B required k="unterminated;'])
def test_malformed_jaas(text: str) -> None:
    with pytest.raises(ConfigError, match="sasl.jaas.config"):
        parse_jaas(text)


def test_plain_needs_its_login_module() -> None:
    with pytest.raises(ConfigError, match="PlainLoginModule"):
        plain_users("org.apache.kafka.common.security.scram.ScramLoginModule required;", "k")


def test_plain_success_sets_the_principal() -> None:
    sasl = SaslServer(SETTINGS)
    assert not sasl.complete
    assert sasl.handshake("PLAIN", 1)
    assert sasl.authenticate(b"\0alice\0alice-secret") == b""
    assert sasl.complete and sasl.principal == "User:alice"


@pytest.mark.parametrize(("token", "message"), [
    (b"\0alice\0wrong", INVALID_CREDENTIALS),
    (b"\0mallory\0alice-secret", INVALID_CREDENTIALS),
    (b"\0alice\0", "password not specified"),
    (b"\0\0x", "username not specified"),
    (b"alice\0", "expected 3 tokens"),
    (b"admin\0alice\0alice-secret", "authorization id that is different"),
])
def test_plain_failures(token: bytes, message: str) -> None:
    sasl = SaslServer(SETTINGS)
    sasl.handshake("PLAIN", 1)
    with pytest.raises(AuthenticationFailed, match=message):
        sasl.authenticate(token)
    assert sasl.state is State.FAILED and not sasl.complete


def test_order_of_the_exchange() -> None:
    sasl = SaslServer(SETTINGS)
    with pytest.raises(IllegalState):
        sasl.authenticate(b"\0alice\0alice-secret")
    assert not sasl.handshake("SCRAM-SHA-256", 1)  # not enabled: the connection is to be closed
    assert sasl.state is State.FAILED
    v0 = SaslServer(SETTINGS)
    v0.handshake("PLAIN", 0)
    assert v0.state is State.RAW_TOKEN
    v0.authenticate(b"\0admin\0admin-secret")
    assert v0.principal == "User:admin"
    with pytest.raises(IllegalState):
        v0.handshake("PLAIN", 1)


@pytest.mark.parametrize(("props", "message"), [
    ({}, "sasl.enabled.mechanisms=GSSAPI: Odradek supports PLAIN"),
    ({"sasl.enabled.mechanisms": "PLAIN"}, "PLAIN needs the users in listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    ({"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config": "oops"}, "sasl.jaas.config"),
])
def test_listener_settings_refused_at_startup(props: dict[str, str], message: str) -> None:
    from odradek.config import BrokerConfig
    from odradek.server.security import ListenerSecurity

    cfg = BrokerConfig.from_props({"listeners": "SASL_PLAINTEXT://127.0.0.1:9094", "log.dirs": "/tmp/x", **props})
    with pytest.raises(ConfigError, match=message):
        ListenerSecurity.for_listener(cfg, cfg.listeners[0])


def test_listener_settings_per_listener_over_broker_wide() -> None:
    from odradek.config import BrokerConfig
    from odradek.server.security import ListenerSecurity

    cfg = BrokerConfig.from_props({
        "listeners": "SASL_PLAINTEXT://127.0.0.1:9094", "log.dirs": "/tmp/x",
        "sasl.enabled.mechanisms": "GSSAPI", "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN",
        "sasl.jaas.config": JAAS.replace("alice", "bob"),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
    })
    settings = ListenerSecurity.for_listener(cfg, cfg.listeners[0]).sasl
    assert settings is not None and settings.mechanisms == ("PLAIN",)
    assert set(settings.plain_users) == {"admin", "alice"}
    assert settings.failed_delay_ms == 100
    assert not [w for w in cfg.warnings if "sasl" in w]
