"""How a broker or tool authenticates to ZooKeeper and ACLs its znodes (issue #36, observation 2): the JAAS
`Client` section as Kafka reads it (KAFKA_OPTS system properties or zookeeper.sasl.jaas.file), the
zookeeper.ssl.* keys, and Kafka's ZkData.defaultAcls."""

from __future__ import annotations

from pathlib import Path

import pytest

from odradek.cluster.zk_security import ZkSasl, default_acls, sensitive_path
from odradek.config_keys import ConfigError
from odradek.security.zk_client import jaas_sections, system_properties, zk_client_security

JAAS = """// the brokers' file
KafkaServer {
  org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="x";
};
Client {
  org.apache.zookeeper.server.auth.DigestLoginModule required
  username="kafka"
  password="kafka-secret";
};
Other { org.apache.zookeeper.server.auth.DigestLoginModule required username="o" password="p"; };
"""


@pytest.fixture
def jaas(tmp_path: Path) -> Path:
    path = tmp_path / "jaas.conf"
    path.write_text(JAAS)
    return path


def _acls(secure: bool, path: str) -> list[tuple[str, str, int]]:
    return [(a.id.scheme, a.id.id, a.perms) for a in default_acls(secure, path)]


def test_default_acls_are_kafkas() -> None:
    assert _acls(False, "/config/users/alice") == [("world", "anyone", 31)]
    assert _acls(True, "/brokers/ids/0") == [("auth", "", 31), ("world", "anyone", 1)]
    for path in ("/config/users", "/config/users/alice", "/config/brokers/<default>", "/delegation_token/tokens/t"):
        assert sensitive_path(path) and _acls(True, path) == [("auth", "", 31)], path
    assert not sensitive_path("/config/topics/t") and not sensitive_path("/config")
    assert _acls(True, "/consumers") == [("world", "anyone", 31)]


def test_client_section_from_kafka_opts(jaas: Path) -> None:
    env = {"KAFKA_OPTS": f"-Xmx1g -Djava.security.auth.login.config={jaas} -Dzookeeper.sasl.client=true"}
    assert system_properties(env)["java.security.auth.login.config"] == str(jaas)
    security = zk_client_security({}, env=env)
    assert security.sasl == ZkSasl("kafka", "kafka-secret")
    assert security.secure_acls  # a tool ACLs what it creates once its session authenticates
    broker = zk_client_security({}, set_acl=False, env=env)
    assert broker.sasl is not None and not broker.secure_acls


def test_client_section_from_the_key_and_its_switches(jaas: Path) -> None:
    props = {"zookeeper.sasl.jaas.file": str(jaas)}
    assert zk_client_security(props, set_acl=True, env={}).sasl == ZkSasl("kafka", "kafka-secret")
    other = zk_client_security({**props, "zookeeper.sasl.clientconfig": "Other"}, env={})
    assert other.sasl == ZkSasl("o", "p")
    off = zk_client_security(props, env={"KAFKA_OPTS": "-Dzookeeper.sasl.client=false"})
    assert off.sasl is None and not off.authenticates and not off.secure_acls
    missing = zk_client_security({**props, "zookeeper.sasl.clientconfig": "Nope"}, env={})
    assert missing.sasl is None
    assert set(jaas_sections(JAAS)) == {"KafkaServer", "Client", "Other"}


def test_unreadable_or_incomplete_jaas_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the JAAS file"):
        zk_client_security({"zookeeper.sasl.jaas.file": str(tmp_path / "absent")}, env={})
    bad = tmp_path / "bad.conf"
    bad.write_text("Client { org.apache.zookeeper.server.auth.DigestLoginModule required username=\"u\"; };")
    with pytest.raises(ConfigError, match="no username and password"):
        zk_client_security({"zookeeper.sasl.jaas.file": str(bad)}, env={})


def test_tls_keys(tmp_path: Path) -> None:
    assert zk_client_security({"zookeeper.ssl.keystore.location": "k.pem"}, env={}).tls is None  # not enabled
    security = zk_client_security({"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.keystore.location": "k.pem",
                                   "zookeeper.ssl.keystore.password": "pw",
                                   "zookeeper.ssl.truststore.location": "ca.pem",
                                   "zookeeper.ssl.endpoint.identification.algorithm": ""}, env={})
    assert security.tls is not None and security.authenticates and security.secure_acls
    options = security.kazoo_options()
    assert options["use_ssl"] and options["ca"] == "ca.pem" and options["certfile"] == "k.pem"
    assert options["keyfile_password"] == "pw" and options["check_hostname"] is False
    server_only = zk_client_security({"zookeeper.ssl.client.enable": "true",
                                      "zookeeper.ssl.truststore.location": "ca.pem"}, env={})
    assert server_only.tls is not None and server_only.tls.check_hostname and not server_only.authenticates
    with pytest.raises(ConfigError, match="zookeeper.ssl.keystore.type JKS is not supported"):
        zk_client_security({"zookeeper.ssl.client.enable": "true", "zookeeper.ssl.keystore.type": "JKS"}, env={})
