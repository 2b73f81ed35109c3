"""Listener-level security wiring: /brokers/ids registrations with every listener, the endpoints a
request's listener sees, the inter-broker listener rules, and the configs tool's SCRAM flags."""

from __future__ import annotations

import pytest

from odradek.admin_client.errors import UsageError
from odradek.cli.configs import parse_command, scram_settings
from odradek.cluster.znodes import BrokerInfo
from odradek.config import BrokerConfig
from odradek.config_keys import ConfigError
from odradek.server.handlers.metadata import listener_endpoints


def test_registration_lists_every_listener_inter_broker_first() -> None:
    info = BrokerInfo(1, "10.0.0.1", 9092, None, "PLAINTEXT",
                      {"PLAINTEXT": ("10.0.0.1", 9092), "SSL": ("b1.example", 9093)},
                      {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"})
    data = info.to_json()
    assert data["endpoints"] == ["PLAINTEXT://10.0.0.1:9092", "SSL://b1.example:9093"]
    assert data["listener_security_protocol_map"] == {"PLAINTEXT": "PLAINTEXT", "SSL": "SSL"}
    back = BrokerInfo.from_json(1, data)
    assert (back.host, back.port, back.endpoint("SSL")) == ("10.0.0.1", 9092, ("b1.example", 9093))
    legacy = BrokerInfo.from_json(2, {"host": "h", "port": 1, "version": 1})
    assert legacy.endpoint("SSL") == ("h", 1)  # a registration without listeners serves every listener
    assert [(b.broker_id, h, p) for b, h, p in listener_endpoints([back, legacy], "SASL_SSL")] == [(2, "h", 1)]


def _cfg(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({"log.dirs": "/tmp/x", **props})


def test_inter_broker_listener_rules() -> None:
    single = _cfg(listeners="SSL://127.0.0.1:9093")
    assert single.inter_broker_listener.name == "SSL"  # a single node has no other broker to reach
    with pytest.raises(ConfigError, match="inter-broker listener PLAINTEXT must be defined"):
        BrokerConfig.from_props({"log.dirs": "/tmp/x", "listeners": "SSL://127.0.0.1:9093", "zookeeper.connect": "z:2181"})
    secured = BrokerConfig.from_props({"log.dirs": "/tmp/x", "listeners": "PLAINTEXT://:9092,SASL_SSL://:9094",
                                       "inter.broker.listener.name": "SASL_SSL"})
    assert secured.inter_broker_listener.security_protocol == "SASL_SSL"  # brokers authenticate to each other
    with pytest.raises(ConfigError, match="String must be one of"):
        BrokerConfig.from_props({"log.dirs": "/tmp/x", "security.inter.broker.protocol": "KERBEROS"})
    both = BrokerConfig.from_props({"log.dirs": "/tmp/x", "listeners": "SSL://:9093,PLAINTEXT://127.0.0.1:9092",
                                    "zookeeper.connect": "z:2181"})
    assert both.inter_broker_listener.name == "PLAINTEXT"


def test_configs_tool_scram_flags() -> None:
    assert scram_settings("SCRAM-SHA-256", "iterations=8192,password=a=b") == (8192, "a=b")
    assert scram_settings("SCRAM-SHA-512", "password=x") == (4096, "x")
    base = ["--bootstrap-server", "h:1", "--entity-type", "users"]
    cmd = parse_command([*base, "--entity-name", "alice", "--alter", "--add-config",
                         "SCRAM-SHA-256=[iterations=8192,password=alice-secret]"])
    assert cmd.add == (("SCRAM-SHA-256", "iterations=8192,password=alice-secret"),)
    with pytest.raises(UsageError, match="Invalid config"):
        parse_command([*base, "--entity-name", "alice", "--alter", "--add-config", "retention.ms=1"])
    with pytest.raises(UsageError, match="a password must be given"):
        parse_command([*base, "--entity-name", "alice", "--alter", "--add-config", "SCRAM-SHA-256=[iterations=8192]"])
    with pytest.raises(UsageError, match="entity-default is not allowed"):
        parse_command([*base, "--entity-default", "--alter", "--add-config", "SCRAM-SHA-256=[password=x]"])


def test_trust_warnings_name_every_unauthenticated_listener() -> None:
    """Kafka's trust model (issue #25): no listener is privileged; start-up warns about each listener whose
    clients are User:ANONYMOUS, louder when super.users makes them super users or brokers would be refused."""
    import ssl

    from odradek.security.sasl import SaslSettings
    from odradek.server.security import ListenerSecurity, trust_warnings

    plain = ListenerSecurity.plaintext()
    sasl = ListenerSecurity("SASL_PLAINTEXT", "SASL_PLAINTEXT", None, SaslSettings(("PLAIN",), {}, 0, 0))
    required = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    required.verify_mode = ssl.CERT_REQUIRED
    optional = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    optional.verify_mode = ssl.CERT_OPTIONAL
    mtls, tls = ListenerSecurity("MTLS", "SSL", required), ListenerSecurity("SSL", "SSL", optional)
    assert [s.authenticates for s in (plain, sasl, mtls, tls)] == [False, True, True, False]
    assert trust_warnings([sasl, mtls], frozenset({"User:admin"}), "SASL_PLAINTEXT", True) == []
    lines = trust_warnings([plain, sasl, tls], frozenset({"User:admin"}), "SASL_PLAINTEXT", True)
    assert [line.split(" does not")[0] for line in lines] == ["Listener PLAINTEXT (PLAINTEXT)", "Listener SSL (SSL)"]
    assert all("they are all User:ANONYMOUS" in line for line in lines)
    refused = trust_warnings([plain, sasl], frozenset({"User:admin"}), "PLAINTEXT", True)
    assert len(refused) == 2 and "replica fetches and transaction markers will be refused" in refused[1]
    assert len(trust_warnings([plain, sasl], frozenset({"User:admin"}), "PLAINTEXT", False)) == 1  # one node
    loud = trust_warnings([plain, sasl], frozenset({"User:admin", "User:ANONYMOUS"}), "PLAINTEXT", True)
    assert loud == ["Listener PLAINTEXT (PLAINTEXT) does not authenticate its clients and super.users names "
                    "User:ANONYMOUS: every client that reaches it is a super user and no ACL applies to it"]
