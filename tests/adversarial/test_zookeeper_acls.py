"""Observation 2 of issue #36: every znode was `world:anyone ALL`, so an unauthenticated ZooKeeper client
wrote /kafka-acl/Topic/secret-alpha plus a change notice and alice then read the secret topic, and read the
SCRAM keys under /config/users; `zookeeper.set.acl` was accepted and ignored.

Here: a ZooKeeper with SASL DIGEST-MD5 users, a secured broker (tests/adversarial/secured.py) given the
JAAS `Client` section through KAFKA_OPTS as Kafka is, with `zookeeper.set.acl=true`. An unauthenticated
kazoo client may read the public znodes but write none of /kafka-acl, /config, /brokers, nor read
/config/users; the broker works as before. Then `odradek zookeeper-security-migration` turns an existing
open tree secure and back."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Permissions

from tests.adversarial.secured import SECURED, client_conf, listeners
from tests.harness import BrokerProcess, free_port, odradek_cmd
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperEnsemble

ZK_USERS = {"kafka": "kafka-secret"}
CHROOT = "/kafka"


def client_jaas(path: Path, user: str = "kafka") -> Path:
    path.write_text("Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                    f'  username="{user}"\n  password="{ZK_USERS[user]}";\n}};\n')
    path.chmod(0o600)
    return path


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(CA, key + certificate chain of `CN=odradek-broker 127.0.0.1`), PEM: the server's and the broker's."""
    from odradek.cli.cluster_security import issue_certificates, write_private

    directory = tmp_path_factory.mktemp("zkpki")
    ca, chain, _admin = issue_certificates("127.0.0.1")
    write_private(directory / "ca.pem", ca, 0o644)
    write_private(directory / "node.pem", chain)
    return directory / "ca.pem", directory / "node.pem"


@pytest.fixture(scope="module")
def zk_sasl(tmp_path_factory: pytest.TempPathFactory, pki: tuple[Path, Path]) -> Iterator[ZooKeeperEnsemble]:
    """One ZooKeeper taking SASL DIGEST-MD5 on its client port and TLS on its secure client port."""
    ensemble = ZooKeeperEnsemble(tmp_path_factory.mktemp("zksasl"), size=1, sasl_users=ZK_USERS, tls=pki)
    ensemble.start()
    try:
        yield ensemble
    finally:
        ensemble.stop_all()


@pytest.fixture(scope="module")
def jaas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return client_jaas(tmp_path_factory.mktemp("jaas") / "kafka_jaas.conf")


@pytest.fixture(scope="module")
def secured(zk_sasl: ZooKeeperEnsemble, jaas: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[BrokerProcess, str]]:
    """The broker and its SASL bootstrap; a topic `secret` only admin may read, alice allowed on `public`,
    and a SCRAM credential for alice, so /kafka-acl, /config/topics and /config/users all hold znodes."""
    sasl_port = free_port()
    broker = BrokerProcess(tmp_path_factory.mktemp("zkacl-broker"), env={
        "KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"})
    broker.overrides = {**SECURED, "listeners": listeners(broker.port, sasl_port),
                        "zookeeper.connect": zk_sasl.connect_string + CHROOT, "zookeeper.set.acl": "true"}
    broker.start()
    try:
        bootstrap = f"127.0.0.1:{sasl_port}"
        admin = AdminClient(client_conf(bootstrap, "admin"))
        for f in admin.create_topics([NewTopic("secret", 1, 1), NewTopic("public", 1, 1)]).values():
            f.result(30)
        acl = AclBinding(ResourceType.TOPIC, "public", ResourcePatternType.LITERAL, "User:alice", "*",
                         AclOperation.ALL, AclPermissionType.ALLOW)
        for f in admin.create_acls([acl]).values():
            f.result(30)
        upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096),
                                              b"alice-scram")
        for f in admin.alter_user_scram_credentials([upsert]).values():
            f.result(30)
        yield broker, bootstrap
    finally:
        broker.stop()


@pytest.fixture
def anonymous(zk_sasl: ZooKeeperEnsemble) -> Iterator[KazooClient]:
    client = KazooClient(hosts=zk_sasl.connect_string + CHROOT, timeout=10)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _refused(call: Any, *args: Any, **kwargs: Any) -> None:
    with pytest.raises(NoAuthError):
        call(*args, **kwargs)


def test_unauthenticated_client_writes_no_kafka_znode(secured: tuple[BrokerProcess, str],
                                                       anonymous: KazooClient) -> None:
    acl = b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow","operation":"All","host":"*"}]}'
    _refused(anonymous.create, "/kafka-acl/Topic/secret-alpha", acl)
    _refused(anonymous.set, "/kafka-acl/Topic/public", acl)
    _refused(anonymous.create, "/kafka-acl-changes/acl_changes_", b"Topic:LITERAL:secret", sequence=True)
    _refused(anonymous.create, "/config/changes/config_change_", b'{"version":2,"entity_path":"topics/secret"}',
             sequence=True)
    _refused(anonymous.set, "/config/topics/secret", b'{"version":1,"config":{"retention.ms":"1"}}')
    _refused(anonymous.create, "/brokers/ids/7", b"{}")
    _refused(anonymous.delete, "/brokers/ids/0")
    _refused(anonymous.set, "/brokers/topics/secret", b"{}")
    _refused(anonymous.delete, "/controller")


def test_unauthenticated_client_reads_no_credentials(secured: tuple[BrokerProcess, str],
                                                      anonymous: KazooClient) -> None:
    _refused(anonymous.get, "/config/users/alice")
    _refused(anonymous.get_children, "/config/users")
    assert anonymous.get("/brokers/ids/0")[0]  # the public znodes stay world-readable, as in Kafka
    acls, _stat = anonymous.get_acls("/brokers/ids/0")
    assert sorted((a.id.scheme, a.id.id, a.perms) for a in acls) == [
        ("sasl", "kafka", Permissions.ALL), ("world", "anyone", Permissions.READ)]
    _refused(anonymous.get_acls, "/config/users/alice")  # ZooKeeper shows an ACL only to those who may read


def test_the_broker_works_with_acled_znodes(secured: tuple[BrokerProcess, str]) -> None:
    broker, bootstrap = secured
    # observation 3: its server.properties (written 0644 by the harness) holds a JAAS config
    assert any("WARN" in line and "holds secrets" in line for line in broker.output().splitlines()), \
        broker.output()[-2000:]
    producer = Producer(client_conf(bootstrap, "alice"))
    producer.produce("public", b"hello")
    assert producer.flush(30) == 0
    consumer = Consumer({**client_conf(bootstrap, "admin"), "group.id": "zkacl", "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition("public", 0, 0)])
        got: list[bytes] = []

        def received() -> bool:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            return bool(got)

        wait_until(received, 30, "the record back")
        assert got == [b"hello"]
    finally:
        consumer.close()


# ---- the migration tool ------------------------------------------------------------------------------


def _migrate(zk_connect: str, mode: str, jaas: Path) -> subprocess.CompletedProcess[str]:
    env = {"KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"}
    return subprocess.run(odradek_cmd("zookeeper-security-migration", "--zookeeper.acl", mode,
                                      "--zookeeper.connect", zk_connect),
                          capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def _acl_of(client: KazooClient, path: str) -> list[tuple[str, str, int]]:
    acls: list[ACL] = client.get_acls(path)[0]
    return sorted((a.id.scheme, a.id.id, a.perms) for a in acls)


def test_migration_secures_and_unsecures_an_existing_tree(zk_sasl: ZooKeeperEnsemble, jaas: Path) -> None:
    chroot = "/migrated"
    zk = zk_sasl.connect_string + chroot
    setup = KazooClient(hosts=zk_sasl.connect_string, timeout=10)
    setup.start(timeout=15)
    try:  # an open tree, as an unsecured cluster leaves it
        for path in ("/brokers/ids", "/brokers/topics/t/partitions/0/state", "/config/users/alice",
                     "/config/topics/t", "/kafka-acl/Topic/t", "/consumers"):
            setup.ensure_path(chroot + path)
    finally:
        setup.stop()
        setup.close()
    result = _migrate(zk, "secure", jaas)
    assert result.returncode == 0, result.stderr + result.stdout
    anonymous = KazooClient(hosts=zk, timeout=10)
    anonymous.start(timeout=15)
    kafka = KazooClient(hosts=zk, timeout=10, sasl_options={"mechanism": "DIGEST-MD5", "username": "kafka",
                                                            "password": ZK_USERS["kafka"]})
    kafka.start(timeout=15)
    try:
        creator_read = [("sasl", "kafka", Permissions.ALL), ("world", "anyone", Permissions.READ)]
        for path in ("/brokers", "/brokers/topics/t/partitions/0/state", "/config/topics/t", "/kafka-acl/Topic/t"):
            assert _acl_of(anonymous, path) == creator_read, path
        assert _acl_of(kafka, "/config/users/alice") == [("sasl", "kafka", Permissions.ALL)]
        assert _acl_of(anonymous, "/consumers") == [("world", "anyone", Permissions.ALL)]
        _refused(anonymous.create, "/kafka-acl/Topic/secret-alpha", b"{}")
        _refused(anonymous.get, "/config/users/alice")
        result = _migrate(zk, "unsecure", jaas)
        assert result.returncode == 0, result.stderr + result.stdout
        for path in ("/brokers/ids", "/config/users/alice", "/kafka-acl/Topic/t"):
            assert _acl_of(anonymous, path) == [("world", "anyone", Permissions.ALL)], path
        anonymous.create("/kafka-acl/Topic/now-open", b"{}")
    finally:
        for client in (anonymous, kafka):
            client.stop()
            client.close()


def test_migration_without_credentials_is_one_line(zk_sasl: ZooKeeperEnsemble, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from odradek.cli import zookeeper_security_migration

    monkeypatch.delenv("KAFKA_OPTS", raising=False)
    code = zookeeper_security_migration.main(["--zookeeper.acl", "secure", "--zookeeper.connect",
                                              zk_sasl.connect_string])
    err = capsys.readouterr().err
    assert code != 0 and "No JAAS configuration file" in err and len(err.strip().splitlines()) == 1


def test_set_acl_without_credentials_refuses_to_start(zk_sasl: ZooKeeperEnsemble,
                                                       tmp_path_factory: pytest.TempPathFactory) -> None:
    """As Kafka's broker: zookeeper.set.acl=true with nothing to log in with is a start-up error, not open
    znodes."""
    broker = BrokerProcess(tmp_path_factory.mktemp("zkacl-nocreds"), env={"KAFKA_OPTS": ""})
    broker.overrides = {"zookeeper.connect": zk_sasl.connect_string + "/nocreds", "zookeeper.set.acl": "true"}
    with pytest.raises(RuntimeError, match="zookeeper.set.acl is true, but the ZooKeeper session would not "
                                           "authenticate"):
        broker.start(timeout=30)
    broker.stop()


def test_a_broker_over_tls_acls_its_znodes_to_its_certificate(zk_sasl: ZooKeeperEnsemble, pki: tuple[Path, Path],
                                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    """KIP-515: the broker reaches ZooKeeper over TLS with a client certificate and no SASL; the creator of its
    znodes is that certificate's subject (x509), and the unauthenticated still write nothing."""
    ca, node = pki
    broker = BrokerProcess(tmp_path_factory.mktemp("zkacl-tls"), env={"KAFKA_OPTS": ""})
    broker.overrides = {
        "zookeeper.connect": zk_sasl.secure_connect_string + "/kafka-tls", "zookeeper.set.acl": "true",
        "zookeeper.ssl.client.enable": "true", "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.keystore.location": str(node), "zookeeper.ssl.keystore.type": "PEM",
        "zookeeper.ssl.truststore.location": str(ca), "zookeeper.ssl.truststore.type": "PEM"}
    broker.start()
    anonymous = KazooClient(hosts=zk_sasl.connect_string + "/kafka-tls", timeout=10)
    try:
        anonymous.start(timeout=15)
        wait_until(lambda: anonymous.exists("/brokers/ids/0"), 30, "the broker to register")
        assert _acl_of(anonymous, "/brokers/ids/0") == [("world", "anyone", Permissions.READ),
                                                         ("x509", "CN=odradek-broker 127.0.0.1", Permissions.ALL)]
        _refused(anonymous.create, "/brokers/ids/9", b"{}")
        _refused(anonymous.create, "/config/changes/config_change_", b"{}", sequence=True)
    finally:
        anonymous.stop()
        anonymous.close()
        broker.stop()


def test_tools_through_zookeeper_log_in_as_kafkas_do(secured: tuple[BrokerProcess, str], zk_sasl: ZooKeeperEnsemble,
                                                     jaas: Path) -> None:
    """`configs --zookeeper` logs in with the JAAS Client section of KAFKA_OPTS and may then write the SCRAM
    credentials (creator-only); without it ZooKeeper refuses the write, in one line."""
    zk = zk_sasl.connect_string + CHROOT
    args = ("configs", "--zookeeper", zk, "--alter", "--entity-type", "users", "--entity-name", "bob",
            "--add-config", "SCRAM-SHA-256=[password=bob-scram]")
    anonymous = subprocess.run(odradek_cmd(*args), capture_output=True, text=True, timeout=60,
                               env={k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"})
    assert anonymous.returncode != 0 and "NoAuth" in anonymous.stderr, anonymous.stdout + anonymous.stderr
    assert len(anonymous.stderr.strip().splitlines()) == 1
    logged_in = subprocess.run(odradek_cmd(*args), capture_output=True, text=True, timeout=60,
                               env={**os.environ, "KAFKA_OPTS": f"-Djava.security.auth.login.config={jaas}"})
    assert logged_in.returncode == 0, logged_in.stdout + logged_in.stderr


def test_configs_over_tls_with_a_zk_tls_config_file(zk_sasl: ZooKeeperEnsemble, pki: tuple[Path, Path],
                                                    tmp_path: Path) -> None:
    """`configs --zookeeper --zk-tls-config-file` (KIP-515): the tool's session is its certificate, so the
    credential it writes is that certificate's alone."""
    ca, node = pki
    tls = tmp_path / "zk-tls.properties"
    tls.write_text(f"zookeeper.ssl.client.enable=true\nzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty\n"
                   f"zookeeper.ssl.keystore.location={node}\nzookeeper.ssl.keystore.type=PEM\n"
                   f"zookeeper.ssl.truststore.location={ca}\nzookeeper.ssl.truststore.type=PEM\n")
    result = subprocess.run(odradek_cmd("configs", "--zookeeper", zk_sasl.secure_connect_string + "/tls-tool",
                                        "--zk-tls-config-file", str(tls), "--alter", "--entity-type", "users",
                                        "--entity-name", "carol", "--add-config", "SCRAM-SHA-512=[password=c]"),
                            capture_output=True, text=True, timeout=60,
                            env={k: v for k, v in os.environ.items() if k != "KAFKA_OPTS"})
    assert result.returncode == 0, result.stdout + result.stderr
    anonymous = KazooClient(hosts=zk_sasl.connect_string + "/tls-tool", timeout=10)
    anonymous.start(timeout=15)
    try:
        assert anonymous.exists("/config/users/carol") is not None
        _refused(anonymous.get, "/config/users/carol")
        assert _acl_of(anonymous, "/config") == [("world", "anyone", Permissions.READ),
                                                 ("x509", "CN=odradek-broker 127.0.0.1", Permissions.ALL)]
    finally:
        anonymous.stop()
        anonymous.close()


def test_a_wrong_zookeeper_password_stops_start_up_in_one_line(zk_sasl: ZooKeeperEnsemble, tmp_path: Path) -> None:
    wrong = tmp_path / "wrong_jaas.conf"
    wrong.write_text('Client {\n  org.apache.zookeeper.server.auth.DigestLoginModule required username="kafka" '
                     'password="not-it";\n};\n')
    wrong.chmod(0o600)
    broker = BrokerProcess(tmp_path / "broker", env={"KAFKA_OPTS": f"-Djava.security.auth.login.config={wrong}"})
    broker.overrides = {"zookeeper.connect": zk_sasl.connect_string + "/wrong", "zookeeper.set.acl": "true"}
    with pytest.raises(RuntimeError, match=r"Error: ZooKeeper authentication failed \(SASL DIGEST-MD5 as kafka\)"):
        broker.start(timeout=30)
    broker.stop()
    assert "Traceback" not in broker.output()
