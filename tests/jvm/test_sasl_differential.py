"""SASL with Kafka's Java client, both ways: Apache Kafka 4.4's tools log in to Odradek and to an Apache Kafka
broker with PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (Kafka's unsecured login and validator) on a
SASL_PLAINTEXT listener, and both brokers answer alike (the same topics listed, the same records read back,
the same refusal of a wrong password); the Java producer re-authenticates (KIP-368) on an Odradek listener whose
sessions last a second and keeps producing; and Odradek's own tools log in to Apache Kafka with the Java
client's OAUTHBEARER `sasl.jaas.config`, through librdkafka and through Odradek's protocol client."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.clients import unique_name
from tests.harness import BrokerPool, BrokerProcess, free_ports, run_cli
from tests.jvm.apache_kafka import ApacheKafkaBroker, KafkaTools

MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"]
PASSWORD = "alice-secret"
# each mechanism's server-side JAAS entry, as Kafka's docs configure a SASL listener
SERVER_JAAS = {
    "PLAIN": f'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="{PASSWORD}";',
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    "OAUTHBEARER": ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                    'unsecuredLoginStringClaim_sub="admin";'),
}
REAUTH_MS = 1000


def client_jaas(mechanism: str, password: str = PASSWORD) -> str:
    """The Java client's `sasl.jaas.config` logging in as alice."""
    if mechanism == "OAUTHBEARER":
        return ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                'unsecuredLoginStringClaim_sub="alice";')
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    return f'org.apache.kafka.common.security.{module} required username="alice" password="{password}";'


def listener_config(name: str, mechanisms: list[str]) -> dict[str, str]:
    return {f"listener.name.{name.lower()}.{m.lower()}.sasl.jaas.config": SERVER_JAAS[m] for m in mechanisms}


@dataclass
class SaslBrokers:
    odradek: BrokerProcess
    odradek_sasl: str
    odradek_reauth: str
    apache: ApacheKafkaBroker
    apache_sasl: str

    def pairs(self) -> list[tuple[str, str]]:
        """(name, SASL bootstrap) of each broker: Odradek first."""
        return [("odradek", self.odradek_sasl), ("apache", self.apache_sasl)]


@pytest.fixture(scope="module")
def sasl(module_brokers: BrokerPool, tmp_path_factory: pytest.TempPathFactory,
         tools: KafkaTools) -> Iterator[SaslBrokers]:
    mechanisms = ",".join(MECHANISMS)
    plain, sasl_port, reauth = free_ports(3)
    odradek = module_brokers.start({
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl_port},"
                     f"REAUTH://127.0.0.1:{reauth}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,REAUTH:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": mechanisms,
        **listener_config("SASL_PLAINTEXT", MECHANISMS), **listener_config("REAUTH", MECHANISMS),
        "listener.name.reauth.connections.max.reauth.ms": str(REAUTH_MS),
    }, name="sasl", port=plain)
    kafka_plain, kafka_controller, kafka_sasl = free_ports(3)
    kafka = ApacheKafkaBroker(tmp_path_factory.mktemp("apache-sasl"), port=kafka_plain,
                              controller_port=kafka_controller, overrides={
        "listeners": f"PLAINTEXT://127.0.0.1:{kafka_plain},CONTROLLER://127.0.0.1:{kafka_controller},"
                     f"SASL_PLAINTEXT://127.0.0.1:{kafka_sasl}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{kafka_plain},SASL_PLAINTEXT://127.0.0.1:{kafka_sasl}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": mechanisms,
        **listener_config("SASL_PLAINTEXT", MECHANISMS),
    }).start()
    try:
        # alice's SCRAM credentials, over PLAINTEXT; a mechanism a request, as a KRaft controller takes one
        # alteration a user a request (ZooKeeper-mode Kafka and Odradek, one a user and mechanism)
        for bootstrap in (odradek.bootstrap, kafka.bootstrap):
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                r = tools.run("kafka-configs", "--bootstrap-server", bootstrap, "--alter", "--entity-type", "users",
                              "--entity-name", "alice", "--add-config", f"{mechanism}=[password={PASSWORD}]")
                assert r.exit == 0, r
        yield SaslBrokers(odradek, f"127.0.0.1:{sasl_port}", f"127.0.0.1:{reauth}", kafka, f"127.0.0.1:{kafka_sasl}")
    finally:
        kafka.stop()


def properties(path: Path, mechanism: str, password: str = PASSWORD) -> str:
    path.write_text(f"security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n"
                    f"sasl.jaas.config={client_jaas(mechanism, password)}\n")
    return str(path)


def run_alike(tools: KafkaTools, sasl: SaslBrokers, steps: list[tuple[str, list[str], str]]) -> list[str]:
    """Each (tool, args, stdin) against both brokers' SASL listeners ({bootstrap} in an argument is the
    broker's); every step must succeed and print the same on both. Odradek's outputs."""
    outputs: dict[str, list[str]] = {}
    for name, bootstrap in sasl.pairs():
        outputs[name] = []
        for tool, args, stdin in steps:
            r = tools.run(tool, *(a.replace("{bootstrap}", bootstrap) for a in args), stdin=stdin)
            assert r.exit == 0, f"{name}: {tool} {args}: {r}"
            outputs[name].append(r.stdout.replace(bootstrap, "<bootstrap>"))
    assert outputs["odradek"] == outputs["apache"]
    return outputs["odradek"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_tools_log_in_alike(tools: KafkaTools, sasl: SaslBrokers, mechanism: str, tmp_path: Path) -> None:
    """kafka-topics logged in with `mechanism` creates a topic and lists it: the same output from both brokers."""
    login = ["--bootstrap-server", "{bootstrap}", "--command-config",
             properties(tmp_path / "client.properties", mechanism)]
    topic = unique_name(f"java-{mechanism.lower()}")
    out = run_alike(tools, sasl, [
        ("kafka-topics", [*login, "--create", "--topic", topic, "--partitions", "1", "--replication-factor", "1"], ""),
        ("kafka-topics", [*login, "--list", "--exclude-internal", "--topic", topic], "")])
    assert out[1].split() == [topic]


def test_console_clients_round_trip_alike(tools: KafkaTools, sasl: SaslBrokers, tmp_path: Path) -> None:
    """The console producer writes and the console consumer (a group member) reads back over SCRAM-SHA-256."""
    login = ["--bootstrap-server", "{bootstrap}", "--command-config",
             properties(tmp_path / "client.properties", "SCRAM-SHA-256")]
    topic = unique_name("java-console")
    out = run_alike(tools, sasl, [
        ("kafka-console-producer", [*login, "--topic", topic], "one\ntwo\nthree\n"),
        ("kafka-console-consumer", [*login, "--topic", topic, "--group", topic, "--from-beginning",
                                    "--max-messages", "3", "--timeout-ms", "30000"], "")])
    assert out[1].split() == ["one", "two", "three"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_a_wrong_password_is_refused_alike(tools: KafkaTools, sasl: SaslBrokers, mechanism: str,
                                           tmp_path: Path) -> None:
    config = properties(tmp_path / "wrong.properties", mechanism, password="wrong")
    results = {name: tools.run("kafka-topics", "--bootstrap-server", bootstrap, "--command-config", config, "--list")
               for name, bootstrap in sasl.pairs()}
    ours, theirs = results["odradek"], results["apache"]
    assert ours.exit == 1 and "Authentication failed" in ours.stdout, ours
    assert (ours.exit, ours.stdout) == (theirs.exit, theirs.stdout), results
    assert sasl.odradek.alive()


def test_java_producer_reauthenticates(tools: KafkaTools, sasl: SaslBrokers, tmp_path: Path) -> None:
    """KIP-368: on a listener whose sessions last a second, the Java producer re-authenticates on its
    connections (SCRAM's exchange again) and has every record of a three-second run acknowledged; the broker
    never closes a connection for an expired session."""
    config = properties(tmp_path / "client.properties", "SCRAM-SHA-512")
    topic = unique_name("java-reauth")
    r = tools.run("kafka-producer-perf-test", "--topic", topic, "--num-records", "300", "--throughput", "100",
                  "--record-size", "100", "--producer-props", f"bootstrap.servers={sasl.odradek_reauth}", "acks=all",
                  "--producer.config", config)
    assert r.exit == 0 and "300 records sent" in r.stdout, r  # each acknowledged by the broker (acks=all)
    assert "expired (connections.max.reauth.ms)" not in sasl.odradek.output()


def test_odradek_tools_log_in_to_apache_kafka(sasl: SaslBrokers, tmp_path: Path) -> None:
    """Odradek's tools with the Java client's OAUTHBEARER login (an unsecured token from the JAAS options),
    against Apache Kafka's unsecured validator: through librdkafka (topics) and through Odradek's own protocol
    client (transactions)."""
    config = properties(tmp_path / "oauth.properties", "OAUTHBEARER")
    topic = unique_name("odradek-oauth")
    created = run_cli("topics", "--bootstrap-server", sasl.apache_sasl, "--command-config", config, "--create",
                      "--topic", topic, "--partitions", "1", "--replication-factor", "1")
    assert created.returncode == 0, created
    listed = run_cli("topics", "--bootstrap-server", sasl.apache_sasl, "--command-config", config, "--list")
    assert listed.returncode == 0 and topic in listed.stdout.split(), listed
    txns = run_cli("transactions", "--bootstrap-server", sasl.apache_sasl, "--command-config", config, "list")
    assert txns.returncode == 0 and txns.stdout.split()[:2] == ["TransactionalId", "Coordinator"], txns
    scram = properties(tmp_path / "scram.properties", "SCRAM-SHA-256")
    txns = run_cli("transactions", "--bootstrap-server", sasl.apache_sasl, "--command-config", scram, "list")
    assert txns.returncode == 0 and txns.stdout.split()[:2] == ["TransactionalId", "Coordinator"], txns
