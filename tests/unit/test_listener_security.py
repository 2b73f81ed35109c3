"""Listener-level security wiring: /brokers/ids registrations with every listener, the endpoints a
request's listener sees, the inter-broker listener rules, and the configs tool's SCRAM flags."""

from __future__ import annotations

import pytest

from odradek.cli.common import UsageError
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
