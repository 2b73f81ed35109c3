"""TLS listeners (SSL): confluent-kafka, kafka-python and kcat over TLS with certificates from trustme,
mutual TLS with ssl.client.auth=required, per-listener advertised endpoints, and a plaintext client on
the TLS port failing cleanly while the broker keeps serving."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import trustme
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from tests.clients import create_topic, kafka_python_round_trip, produce, round_trip
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, free_port, odradek_cmd, run_cli
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, a server certificate for 127.0.0.1 (key and chain in one PEM file), a client certificate."""
    root = tmp_path_factory.mktemp("pki")
    ca = trustme.CA()
    server = ca.issue_cert("127.0.0.1", "localhost")
    client = ca.issue_cert("client.example", common_name="alice")
    files = {"ca": root / "ca.pem", "server": root / "server.pem", "client_cert": root / "client.crt",
             "client_key": root / "client.key", "client": root / "client.pem"}
    ca.cert_pem.write_to_path(str(files["ca"]))
    server.private_key_and_cert_chain_pem.write_to_path(str(files["server"]))
    client.cert_chain_pems[0].write_to_path(str(files["client_cert"]))
    client.private_key_pem.write_to_path(str(files["client_key"]))
    client.private_key_and_cert_chain_pem.write_to_path(str(files["client"]))
    return files


def _start(pool: BrokerPool, props: dict[str, str], name: str) -> tuple[BrokerProcess, int]:
    """A broker with a PLAINTEXT listener (the harness waits on it) and an SSL one; -> (broker, TLS port)."""
    port, tls_port = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{tls_port}"
    return pool.start({"listeners": listeners, **props}, name=name, port=port), tls_port


@pytest.fixture(scope="module")
def tls_broker(module_brokers: BrokerPool, pki: dict[str, Path]) -> tuple[BrokerProcess, int]:
    return _start(module_brokers, {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki["server"]),
    }, "tls")


def _ssl_conf(port: int, pki: dict[str, Path]) -> dict[str, object]:
    return {"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SSL",
            "ssl.ca.location": str(pki["ca"])}


def _round_trip(conf: dict[str, object], topic: str, count: int = 20) -> list[bytes]:
    return round_trip(conf, topic, count, "m")


def test_confluent_kafka_over_tls(tls_broker: tuple[BrokerProcess, int], pki: dict[str, Path]) -> None:
    _, port = tls_broker
    got = _round_trip(_ssl_conf(port, pki), "tls-ck")
    assert got == [f"m{i}".encode() for i in range(20)]


def test_metadata_advertises_the_listener_of_the_request(tls_broker: tuple[BrokerProcess, int],
                                                         pki: dict[str, Path]) -> None:
    broker, port = tls_broker
    tls_md = AdminClient(_ssl_conf(port, pki)).list_topics(timeout=20)
    assert [(b.host, b.port) for b in tls_md.brokers.values()] == [("127.0.0.1", port)]
    plain_md = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(timeout=20)
    assert [(b.host, b.port) for b in plain_md.brokers.values()] == [("127.0.0.1", broker.port)]


def test_kafka_python_over_tls(tls_broker: tuple[BrokerProcess, int], pki: dict[str, Path]) -> None:
    _, port = tls_broker
    common = {"bootstrap_servers": f"127.0.0.1:{port}", "security_protocol": "SSL", "ssl_cafile": str(pki["ca"])}
    assert kafka_python_round_trip(common, "tls-kp", 5, "k") == [f"k{i}".encode() for i in range(5)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat not installed")
def test_kcat_over_tls(tls_broker: tuple[BrokerProcess, int], pki: dict[str, Path]) -> None:
    _, port = tls_broker
    tls = ["-b", f"127.0.0.1:{port}", "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki['ca']}"]
    subprocess.run(["kcat", *tls, "-P", "-t", "tls-kcat"], input=b"one\ntwo\n", check=True, timeout=60)
    out = subprocess.run(["kcat", *tls, "-C", "-t", "tls-kcat", "-o", "beginning", "-c", "2", "-e"],
                         capture_output=True, check=True, timeout=60)
    assert out.stdout.split() == [b"one", b"two"]


def test_plaintext_client_on_the_tls_port_fails_cleanly(tls_broker: tuple[BrokerProcess, int],
                                                        pki: dict[str, Path]) -> None:
    broker, port = tls_broker
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        # an ApiVersions v0 request in plaintext: the TLS server sees garbage and closes the socket
        sock.sendall(b"\x00\x00\x00\x0e\x00\x12\x00\x00\x00\x00\x00\x01\x00\x04test")
        data = b""
        try:
            while chunk := sock.recv(4096):
                data += chunk
        except ConnectionResetError:
            pass
    assert not data.startswith(b"\x00\x00\x00")  # no Kafka response, at most a TLS alert
    assert broker.alive()
    got = _round_trip(_ssl_conf(port, pki), "tls-after-garbage", count=3)
    assert len(got) == 3


@pytest.fixture(scope="module")
def mtls_broker(module_brokers: BrokerPool, pki: dict[str, Path]) -> tuple[BrokerProcess, int]:
    # per-listener keys, as a Kafka operator would scope them to the SSL listener
    return _start(module_brokers, {
        "listener.name.ssl.ssl.keystore.location": str(pki["server"]),
        "listener.name.ssl.ssl.keystore.type": "PEM",
        "listener.name.ssl.ssl.truststore.type": "PEM",
        "listener.name.ssl.ssl.truststore.location": str(pki["ca"]),
        "listener.name.ssl.ssl.client.auth": "required",
    }, "mtls")


def test_mtls_refuses_a_client_without_a_certificate(mtls_broker: tuple[BrokerProcess, int],
                                                     pki: dict[str, Path]) -> None:
    _, port = mtls_broker
    admin = AdminClient({**_ssl_conf(port, pki), "socket.timeout.ms": 3000})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)


def test_mtls_accepts_a_client_certificate_signed_by_the_ca(mtls_broker: tuple[BrokerProcess, int],
                                                            pki: dict[str, Path]) -> None:
    _, port = mtls_broker
    conf = {**_ssl_conf(port, pki), "ssl.certificate.location": str(pki["client_cert"]),
            "ssl.key.location": str(pki["client_key"])}
    assert _round_trip(conf, "mtls-topic", count=3) == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize(("props", "needle"), [
    ({"ssl.keystore.location": "/etc/kafka/server.keystore.jks"}, "ssl.keystore.type JKS is not supported"),
    ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/x.p12"}, "ssl.keystore.type PKCS12"),
    ({"ssl.keystore.location": "/nonexistent.pem"}, "cannot load the key store /nonexistent.pem"),
])
def test_bad_keystores_stop_startup_with_one_line(brokers: BrokerPool, props: dict[str, str],
                                                  needle: str) -> None:
    broker = BrokerProcess(brokers.directory("badtls"),
                           overrides={"listeners": f"SSL://127.0.0.1:{free_port()}", **props})
    broker.write_config()
    out = subprocess.run(odradek_cmd("server-start", str(broker.config_path)), capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0
    assert needle in out.stdout + out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def test_cluster_metadata_over_tls_lists_every_brokers_tls_endpoint(zk_standalone: ZooKeeperChroot,
                                                                    brokers: BrokerPool, pki: dict[str, Path]) -> None:
    cluster = BrokerCluster(brokers.directory("tls-cluster"), zk_standalone.connect_string, size=2,
                            overrides={"ssl.keystore.location": str(pki["server"])})
    tls_ports = {}
    for b in cluster.brokers:
        tls_ports[b.broker_id] = free_port()
        b.overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{b.port},SSL://127.0.0.1:{tls_ports[b.broker_id]}"
    try:
        cluster.start()
        md = AdminClient(_ssl_conf(tls_ports[1], pki)).list_topics(timeout=20)
        assert {b.id: (b.host, b.port) for b in md.brokers.values()} == {
            i: ("127.0.0.1", p) for i, p in tls_ports.items()}
        # replication between the brokers stays on the PLAINTEXT inter-broker listener
        admin = AdminClient(_ssl_conf(tls_ports[0], pki))
        for f in admin.create_topics([NewTopic("tls-replicated", 1, 2)]).values():
            f.result(30)
        got = _round_trip({**_ssl_conf(tls_ports[0], pki), "acks": "all"}, "tls-replicated", count=3)
        assert len(got) == 3
    finally:
        cluster.stop()


def test_principal_mapping_rules_name_the_mtls_user_for_the_acls(brokers: BrokerPool, pki: dict[str, Path]) -> None:
    """ssl.principal.mapping.rules turns the certificate's DN (CN=alice,OU=...,O=...) into User:alice,
    which the ACLs then name; a DN no rule maps is refused at connection time."""
    broker, port = _start(brokers, {
        "listener.name.ssl.ssl.keystore.location": str(pki["server"]),
        "listener.name.ssl.ssl.truststore.location": str(pki["ca"]),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=Testing.*$/$1/L",
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        # the set-up tools below use the harness's PLAINTEXT listener: as in Kafka, that takes naming
        # its anonymous clients a super user (no listener is privileged by itself)
        "super.users": "User:ANONYMOUS",
    }, "mtls-mapped")
    create_topic(broker.bootstrap, "mapped")
    r = run_cli("acls", "--bootstrap-server", broker.bootstrap, "--add", "--allow-principal", "User:alice",
                "--producer", "--topic", "mapped")
    assert r.returncode == 0, r.stderr
    conf = {**_ssl_conf(port, pki), "ssl.certificate.location": str(pki["client_cert"]),
            "ssl.key.location": str(pki["client_key"])}
    assert [o for _p, o in produce(conf.pop("bootstrap.servers"), "mapped", [b"a", b"b"], **conf)] == [0, 1]

    strict, strict_port = _start(brokers, {
        "listener.name.ssl.ssl.keystore.location": str(pki["server"]),
        "listener.name.ssl.ssl.truststore.location": str(pki["ca"]),
        "listener.name.ssl.ssl.client.auth": "required",
        "listener.name.ssl.ssl.principal.mapping.rules": "RULE:^CN=([^,]+),OU=Ops$/$1/",
    }, "mtls-unmapped")
    admin = AdminClient({**_ssl_conf(strict_port, pki), "ssl.certificate.location": str(pki["client_cert"]),
                         "ssl.key.location": str(pki["client_key"]), "socket.timeout.ms": 3000})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    wait_until(lambda: "No rules apply to CN=alice,OU=Testing" in strict.output(), 20, "the refusal log line")
