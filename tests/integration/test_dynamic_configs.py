"""Dynamic broker configs (KIP-226) and broker loggers with real clients: confluent-kafka and kafka-python
admin clients, the protocol client (the cluster default, whose empty resource name neither Python client
can send), and `odradek configs`. One single-node broker for most tests, one of its own for the connection
limit, and a 3-broker ZooKeeper cluster where a cluster default reaches every broker and survives a
restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import DescribeConfigsRequest

from tests.clients import (
    admin,
    alter_configs,
    create_topic,
    forget_admin,
    kafka_error_of,
    produce,
    unique_name,
)
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, run_cli
from tests.rawclient import RawClient, incremental_alter_configs
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

_incremental = incremental_alter_configs


def _describe_raw(client: RawClient, resource_type: int, name: str) -> Any:
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=resource_type, resource_name=name, configuration_keys=None)], include_synonyms=True)
    return client.request(req, 2).results[0]


def _set_default(broker: BrokerProcess, **configs: str | None) -> None:
    """Set (a value) or delete (None) cluster-default broker configs through the protocol."""
    with RawClient(broker.port) as c:
        answer = _incremental(c, 4, "", [(k.replace("__", "."), 1 if v is None else 0, v) for k, v in configs.items()])
        assert answer.error_code == 0, answer.error_message


def _broker_configs(bootstrap: str, broker_id: int) -> dict[str, Any]:
    res = ConfigResource(ResourceType.BROKER, str(broker_id))
    return admin(bootstrap).describe_configs([res])[res].result(20)


def _alter_broker(bootstrap: str, broker_id: str, **configs: str | None) -> None:
    alter_configs(bootstrap, ResourceType.BROKER, broker_id, **configs)


_error_of = kafka_error_of


@pytest.fixture
def clean_dynamic(broker: BrokerProcess) -> Iterator[BrokerProcess]:
    """The module broker, with its dynamic configs back as the cluster's creation left them after the
    test: none but the cluster-level min.insync.replicas=1."""
    yield broker
    with RawClient(broker.port) as c:
        for name in ("", "0"):
            stored = [e.name for e in _describe_raw(c, 4, name).configs
                      if e.config_source == (3 if name == "" else 2)]
            if stored:
                _incremental(c, 4, name, [(k, 1, None) for k in stored])
        _incremental(c, 4, "", [("min.insync.replicas", 0, "1")])


# ---- one broker ------------------------------------------------------------------------------------------

def test_alter_and_describe_own_broker_with_confluent(clean_dynamic: BrokerProcess) -> None:
    b = clean_dynamic
    _alter_broker(b.bootstrap, "0", log__cleaner__threads="2", message__max__bytes="2000000")
    cfg = _broker_configs(b.bootstrap, 0)
    assert cfg["log.cleaner.threads"].value == "2"
    assert cfg["log.cleaner.threads"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    assert not cfg["log.cleaner.threads"].is_read_only
    assert cfg["broker.id"].is_read_only and cfg["broker.id"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert cfg["num.partitions"].is_read_only
    assert cfg["message.max.bytes"].value == "2000000"
    # validate_only changes nothing
    res = ConfigResource(ResourceType.BROKER, "0", incremental_configs=[
        ConfigEntry("log.cleaner.threads", "3", incremental_operation=AlterConfigOpType.SET)])
    admin(b.bootstrap).incremental_alter_configs([res], validate_only=True)[res].result(20)
    assert _broker_configs(b.bootstrap, 0)["log.cleaner.threads"].value == "2"
    # AlterConfigs (not incremental) replaces the whole per-broker layer
    res = ConfigResource(ResourceType.BROKER, "0", set_config={"min.insync.replicas": "1"})
    with pytest.warns(DeprecationWarning):
        admin(b.bootstrap).alter_configs([res])[res].result(20)
    cfg = _broker_configs(b.bootstrap, 0)
    assert cfg["log.cleaner.threads"].source == ConfigSource.DEFAULT_CONFIG.value
    assert cfg["min.insync.replicas"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value


def test_refusals_carry_kafkas_codes_and_messages(broker: BrokerProcess) -> None:
    bootstrap = broker.bootstrap
    err = _error_of(lambda: _alter_broker(bootstrap, "0", broker__id="5"))
    assert err.code() == KafkaError.INVALID_REQUEST
    assert err.str() == "Cannot update these configs dynamically: Set(broker.id)"
    err = _error_of(lambda: _alter_broker(bootstrap, "0", log__dirs="/tmp/x", listeners="PLAINTEXT://:1"))
    assert err.str() == "Cannot update these configs dynamically: Set(listeners, log.dirs)"
    err = _error_of(lambda: _alter_broker(bootstrap, "0", log__retention__ms="soon"))
    assert err.code() == KafkaError.INVALID_REQUEST
    assert err.str() == "Invalid value soon for configuration log.retention.ms: Not a number of type LONG"
    err = _error_of(lambda: _alter_broker(bootstrap, "0", log__retention__ms="0"))
    assert "log.retention.ms must be unlimited (-1) or, equal or greater than 1" in err.str()
    err = _error_of(lambda: _alter_broker(bootstrap, "0", no__such__key="1"))
    assert err.code() == KafkaError.INVALID_CONFIG and "Unknown broker config name: no.such.key" in err.str()
    with RawClient(broker.port) as c:  # another broker's id: Kafka's answer, whatever the client
        answer = _incremental(c, 4, "7", [("log.cleaner.threads", 0, "2")])
        assert (answer.error_code, answer.error_message) == (42, "Unexpected broker id, expected 0, but received 7")
    assert _broker_configs(bootstrap, 0)["log.retention.ms"].source != ConfigSource.DYNAMIC_BROKER_CONFIG.value


def test_kerberos_and_login_keys_are_dynamic_per_broker(clean_dynamic: BrokerProcess) -> None:
    """What librdkafka's test 0081 does: AlterConfigs of sasl.kerberos.min.time.before.relogin on a broker,
    which Kafka accepts (update mode per-broker; Odradek stores, describes and ignores it, no Kerberos
    here). Per-broker keys are refused as the cluster default, and the keys the listeners are built from
    at start-up stay read-only."""
    b = clean_dynamic
    res = ConfigResource(ResourceType.BROKER, "0", set_config={"sasl.kerberos.min.time.before.relogin": "58000"})
    with pytest.warns(DeprecationWarning):
        admin(b.bootstrap).alter_configs([res])[res].result(20)
    cfg = _broker_configs(b.bootstrap, 0)
    entry = cfg["sasl.kerberos.min.time.before.relogin"]
    assert (entry.value, entry.source, entry.is_read_only) == (
        "58000", ConfigSource.DYNAMIC_BROKER_CONFIG.value, False)
    _alter_broker(b.bootstrap, "0", sasl__kerberos__ticket__renew__jitter="0.1",
                  sasl__login__refresh__buffer__seconds="120")
    cfg = _broker_configs(b.bootstrap, 0)
    assert cfg["sasl.kerberos.ticket.renew.jitter"].value == "0.1"
    assert cfg["sasl.login.refresh.buffer.seconds"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
    with RawClient(b.port) as c:
        answer = _incremental(c, 4, "", [("sasl.kerberos.min.time.before.relogin", 0, "50000")])
        assert (answer.error_code, answer.error_message) == (42, (
            "Cannot update these configs at default cluster level, broker id must be specified: "
            "Set(sasl.kerberos.min.time.before.relogin)"))
    err = _error_of(lambda: _alter_broker(b.bootstrap, "0", ssl__keystore__location="/tmp/k.jks",
                                          sasl__enabled__mechanisms="PLAIN"))
    assert err.str() == "Cannot update these configs dynamically: Set(sasl.enabled.mechanisms, ssl.keystore.location)"


def test_cluster_default_reaches_the_logs_of_topics_live(clean_dynamic: BrokerProcess) -> None:
    b = clean_dynamic
    keep, follow = unique_name("keep"), unique_name("follow")
    create_topic(b.bootstrap, follow, config={"segment.bytes": "1024"})
    create_topic(b.bootstrap, keep, config={"segment.bytes": "1024", "retention.ms": "86400000"})
    for topic in (follow, keep):
        produce(b.bootstrap, topic, [b"x" * 400 for _ in range(12)], **{"batch.num.messages": 1})
    consumer = Consumer({"bootstrap.servers": b.bootstrap, "group.id": unique_name("g")})
    try:
        assert consumer.get_watermark_offsets(TopicPartition(follow, 0), timeout=10)[0] == 0
        _set_default(b, log__retention__ms="1000")
        # the topic without an override takes the new default: the retention check deletes its old segments
        wait_until(lambda: consumer.get_watermark_offsets(TopicPartition(follow, 0), timeout=10)[0] > 0, 30,
                   "retention to delete segments under the new cluster default")
        assert consumer.get_watermark_offsets(TopicPartition(keep, 0), timeout=10)[0] == 0  # its override wins
    finally:
        consumer.close()
    res = ConfigResource(ResourceType.TOPIC, follow)
    entry = admin(b.bootstrap).describe_configs([res])[res].result(20)["retention.ms"]
    assert (entry.value, entry.source) == ("1000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert [(s.name, s.value, s.source) for s in entry.synonyms.values()][0] == (
        "log.retention.ms", "1000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    # the broker's own id shows the default as its source; the default resource lists it, beside the
    # min.insync.replicas the cluster was created with (Kafka 4.1+)
    assert _broker_configs(b.bootstrap, 0)["log.retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    with RawClient(b.port) as c:
        result = _describe_raw(c, 4, "")
        assert [(e.name, e.value, e.config_source, e.read_only) for e in result.configs] == [
            ("log.retention.ms", "1000", 3, False), ("min.insync.replicas", "1", 3, False)]
    _set_default(b, log__retention__ms=None)
    entry = admin(b.bootstrap).describe_configs([res])[res].result(20)["retention.ms"]
    assert (entry.value, entry.source) == ("604800000", ConfigSource.DEFAULT_CONFIG.value)


def test_kafka_python_describes_sources_and_synonyms(clean_dynamic: BrokerProcess) -> None:
    b = clean_dynamic
    _set_default(b, log__roll__ms="3600000")
    _alter_broker(b.bootstrap, "0", log__roll__ms="60000")
    client = KafkaAdminClient(bootstrap_servers=b.bootstrap, request_timeout_ms=20000)
    try:
        got = client.describe_configs([KpConfigResource(ConfigResourceType.BROKER, "0")], include_synonyms=True,
                                      config_filter="all")
    finally:
        client.close()
    entry = got["broker"]["0"]["log.roll.ms"]
    assert entry["value"] == "60000" and entry["config_source"] == "DYNAMIC_BROKER_CONFIG"
    assert [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]] == [
        ("log.roll.ms", "60000", "DYNAMIC_BROKER_CONFIG"),
        ("log.roll.ms", "3600000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
        ("log.roll.hours", "168", "DEFAULT_CONFIG"),
    ]
    assert got["broker"]["0"]["log.dirs"]["read_only"] is True


def test_broker_logger_levels_change_live(broker: BrokerProcess) -> None:
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    resource = KpConfigResource(ConfigResourceType.BROKER_LOGGER, "0")
    try:
        levels = client.describe_configs([resource], config_filter="all")["broker_logger"]["0"]
        assert levels["root"]["value"] == "INFO" and levels["odradek.server"]["value"] == "INFO"
        assert levels["root"]["config_source"] == "DYNAMIC_BROKER_LOGGER_CONFIG"
        answer = client.alter_configs([KpConfigResource(ConfigResourceType.BROKER_LOGGER, "0",
                                                        configs={"odradek.server": "DEBUG"})],
                                      raise_on_unknown=False, incremental=True)
        assert answer["broker_logger"]["0"] == "OK"
        levels = client.describe_configs([resource], config_filter="all")["broker_logger"]["0"]
        assert levels["odradek.server"]["value"] == "DEBUG"
        answer = client.alter_configs([KpConfigResource(ConfigResourceType.BROKER_LOGGER, "0",
                                                        configs={"odradek.server": "LOUD"})],
                                      raise_on_unknown=False, incremental=True)
        assert "Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN" in answer["broker_logger"]["0"]
        answer = client.alter_configs([KpConfigResource(ConfigResourceType.BROKER_LOGGER, "0",
                                                        configs={"root": ("DELETE", None)})],
                                      raise_on_unknown=False, incremental=True)
        assert "Removing the log level of the root logger is not allowed" in answer["broker_logger"]["0"]
        client.alter_configs([KpConfigResource(ConfigResourceType.BROKER_LOGGER, "0",
                                               configs={"odradek.server": ("DELETE", None)})],
                             raise_on_unknown=False, incremental=True)
        levels = client.describe_configs([resource], config_filter="all")["broker_logger"]["0"]
        assert levels["odradek.server"]["value"] == "INFO"  # unset: follows root again
    finally:
        client.close()
    assert "Updated the log level of odradek.server to DEBUG" in broker.output()


def test_configs_tool_describe_and_alter(clean_dynamic: BrokerProcess) -> None:
    b = clean_dynamic
    base = ("configs", "--bootstrap-server", b.bootstrap)
    r = run_cli(*base, "--entity-type", "brokers", "--entity-default", "--alter",
                "--add-config", "log.retention.ms=86400000,log.cleaner.threads=2")
    assert (r.returncode, r.stdout) == (0, "Completed updating default config for brokers in the cluster.\n"), r.stderr
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "0", "--alter", "--add-config", "log.retention.ms=3600000")
    assert (r.returncode, r.stdout) == (0, "Completed updating config for broker 0.\n"), r.stderr
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "0", "--describe")
    assert r.stdout == (
        "Dynamic configs for broker 0 are:\n"
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000,"
        " DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}\n")
    r = run_cli(*base, "--entity-type", "brokers", "--describe")
    assert r.stdout == (
        "Dynamic configs for broker 0 are:\n"
        "  log.retention.ms=3600000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=3600000,"
        " DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000, DEFAULT_CONFIG:log.retention.hours=168}\n"
        "Default configs for brokers in the cluster are:\n"
        "  log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleaner.threads=2}\n"
        "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000}\n"
        "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:min.insync.replicas=1}\n")
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "0", "--describe", "--all")
    assert "All configs for broker 0 are:\n" in r.stdout
    assert ("  broker.id=0 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=0, DEFAULT_CONFIG:broker.id=-1,"
            " DEFAULT_CONFIG:node.id=-1}\n") in r.stdout
    r = run_cli(*base, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "log.cleaner.threads")
    assert r.returncode == 0, r.stderr
    r = run_cli(*base, "--entity-type", "brokers", "--entity-default", "--describe")
    assert r.stdout == ("Default configs for brokers in the cluster are:\n"
                        "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                        "log.retention.ms=86400000}\n"
                        "  min.insync.replicas=1 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
                        "min.insync.replicas=1}\n")
    # refusals: one line on stderr, exit code 1
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "0", "--alter", "--add-config", "broker.id=3")
    assert (r.returncode, r.stderr) == (1, "Error while executing config command: INVALID_REQUEST: Cannot update these"
                                           " configs dynamically: Set(broker.id)\n")
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "0", "--alter", "--delete-config", "num.io.threads")
    assert (r.returncode, r.stderr) == (1, "Invalid config(s): num.io.threads\n")
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "zero", "--describe")
    assert (r.returncode, r.stderr) == (
        1, "The entity name for brokers must be a valid integer broker id, but it is: zero\n")
    r = run_cli(*base, "--entity-type", "topics", "--entity-default", "--describe")
    assert (r.returncode, r.stderr) == (1, "--entity-default must not be specified with --describe of topics\n")
    r = run_cli(*base, "--entity-type", "brokers", "--entity-name", "0", "--alter")
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "At least one of --add-config" in r.stderr
    # topics and broker loggers
    t = unique_name("tool")
    create_topic(b.bootstrap, t)
    r = run_cli(*base, "--entity-type", "topics", "--entity-name", t, "--alter", "--add-config", "cleanup.policy=[compact,delete]")
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for topic {t}.\n"), r.stderr
    r = run_cli(*base, "--topic", t, "--describe")
    assert r.stdout == (f"Dynamic configs for topic {t} are:\n"
                        "  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy="
                        "compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}\n")
    r = run_cli(*base, "--entity-type", "broker-loggers", "--entity-name", "0", "--alter",
                "--add-config", "odradek.storage=WARN")
    assert (r.returncode, r.stdout) == (0, "Completed updating config for broker-logger 0.\n"), r.stderr
    r = run_cli(*base, "--entity-type", "broker-loggers", "--entity-name", "0", "--describe")
    assert r.stdout.startswith("Dynamic configs for broker-logger 0 are:\n")
    assert "  odradek.storage=WARN sensitive=false synonyms={}\n" in r.stdout
    r = run_cli(*base, "--broker-logger", "0", "--alter", "--delete-config", "no.such.logger")
    assert (r.returncode, r.stderr) == (1, "Invalid broker logger(s): no.such.logger\n")


def test_max_connections_lowered_live_refuses_new_connections(brokers: BrokerPool) -> None:
    b = brokers.start()
    with RawClient(b.port) as c:  # the broker's only connection
        assert _incremental(c, 4, "0", [("max.connections", 0, "1")]).error_code == 0
        extra = RawClient(b.port)
        assert extra.is_closed_by_peer()
        extra.close()
        assert "configured maximum of 1 connections (max.connections)" in b.output()
        assert _incremental(c, 4, "0", [("max.connections", 1, None)]).error_code == 0
    with RawClient(b.port) as again:
        assert _describe_raw(again, 4, "0").error_code == 0


# ---- a ZooKeeper cluster ------------------------------------------------------------------------------------

def test_cluster_default_reaches_every_broker_and_survives_a_restart(zk_standalone: ZooKeeperChroot,
                                                                     brokers: BrokerPool) -> None:
    cluster: BrokerCluster = brokers.start_cluster(zk_standalone.connect_string, 3)
    r = run_cli("configs", "--bootstrap-server", cluster.brokers[0].bootstrap, "--entity-type", "brokers",
                "--entity-default", "--alter", "--add-config", "log.retention.ms=7200000,min.insync.replicas=2")
    assert r.returncode == 0, r.stderr
    r = run_cli("configs", "--bootstrap-server", cluster.brokers[0].bootstrap, "--broker", "2", "--alter",
                "--add-config", "log.segment.bytes=1048576")  # routed to broker 2, as Kafka's tool does
    assert r.returncode == 0, r.stderr

    def seen(b: BrokerProcess, key: str) -> tuple[str, int]:
        entry = _broker_configs(b.bootstrap, b.broker_id)[key]
        return entry.value, entry.source

    for b in cluster.brokers:
        wait_until(lambda b=b: seen(b, "log.retention.ms") == ("7200000", 3), 30,
                   f"broker {b.broker_id} to apply the cluster default")
        assert seen(b, "min.insync.replicas") == ("2", 3)
    assert seen(cluster.brokers[2], "log.segment.bytes") == ("1048576", 2)
    assert seen(cluster.brokers[1], "log.segment.bytes") == ("1073741824", 5)
    with cluster.zookeeper() as z:
        assert json.loads(z.get("/config/brokers/<default>")[0]) == {
            "version": 1, "config": {"log.retention.ms": "7200000", "min.insync.replicas": "2"}}
        assert json.loads(z.get("/config/brokers/2")[0]) == {"version": 1, "config": {"log.segment.bytes": "1048576"}}
        changes = sorted(z.get_children("/config/changes"))
        assert len(changes) == 2 and all(c.startswith("config_change_") and len(c) == 24 for c in changes)
        # the two changes above: a ZooKeeper cluster's creation writes no config (as ZooKeeper-mode Kafka)
        assert [json.loads(z.get(f"/config/changes/{c}")[0]) for c in changes] == [
            {"version": 2, "entity_path": "brokers/<default>"}, {"version": 2, "entity_path": "brokers/2"}]
    # a new topic on any broker gets the defaults; a restarted broker starts from them
    t = unique_name("defaults")
    create_topic(cluster.bootstrap, t, partitions=3, rf=3)
    res = ConfigResource(ResourceType.TOPIC, t)
    # broker 1 may learn of the topic a moment after the broker that created it
    entry = wait_until(lambda: admin(cluster.brokers[1].bootstrap).describe_configs([res])[res].result(20)
                       ["min.insync.replicas"], 30, "broker 1 to know the new topic", ignoring=(KafkaException,))
    assert (entry.value, entry.source) == ("2", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    restarted = cluster.brokers[2]
    restarted.restart()
    cluster.wait_registered()
    forget_admin(restarted.bootstrap)
    assert seen(restarted, "log.retention.ms") == ("7200000", 3)
    assert seen(restarted, "log.segment.bytes") == ("1048576", 2)


def test_configs_tool_through_zookeeper(zk_standalone: ZooKeeperChroot, brokers: BrokerPool) -> None:
    """`configs --zookeeper` (Kafka 2.x): topic and broker-default configs written in ZooKeeper directly,
    picked up by the running broker; Kafka 2.x's output lines and errors."""
    cluster = brokers.start_cluster(zk_standalone.connect_string, 1)
    zk = cluster.brokers[0].overrides["zookeeper.connect"]
    bootstrap = cluster.bootstrap
    topic = unique_name("zkcfg")
    create_topic(bootstrap, topic)

    def tool(*args: str) -> Any:
        return run_cli("configs", "--zookeeper", zk, *args)

    r = tool("--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "retention.ms=123456")
    assert (r.returncode, r.stdout) == (0, f"Completed Updating config for entity: topic '{topic}'.\n"), r.stderr
    r = tool("--entity-type", "topics", "--entity-name", topic, "--describe")
    assert r.stdout == f"Configs for topic '{topic}' are retention.ms=123456\n"
    a = admin(bootstrap)
    res = ConfigResource(ResourceType.TOPIC, topic)
    wait_until(lambda: a.describe_configs([res])[res].result(10)["retention.ms"].value == "123456", 30,
               "the broker to apply the topic config written in ZooKeeper")

    r = tool("--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.retention.ms=7777777")
    assert (r.returncode, r.stdout) == (0, "Completed Updating config for entity: default brokers.\n"), r.stderr
    # nothing else: a ZooKeeper cluster's creation writes no cluster default (ZooKeeper-mode Kafka)
    assert tool("--entity-type", "brokers", "--describe").stdout == (
        "Configs for default brokers are log.retention.ms=7777777\n")
    broker0 = ConfigResource(ResourceType.BROKER, "0")

    def default_applied() -> bool:
        entry = a.describe_configs([broker0])[broker0].result(10)["log.retention.ms"]
        return entry.value == "7777777" and entry.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value

    wait_until(default_applied, 30, "the broker to apply the default written in ZooKeeper")

    assert tool("--entity-type", "topics", "--entity-name", "nosuch", "--alter", "--add-config",
                "retention.ms=1").stderr.strip() == "Error: Topic 'nosuch' does not exist."
    assert tool("--entity-type", "brokers", "--entity-name", "0", "--alter", "--add-config",
                "broker.id=5").stderr.strip() == "Error: Cannot update these configs dynamically: Set(broker.id)"
    assert tool("--entity-type", "topics", "--entity-name", topic, "--alter", "--delete-config",
                "segment.ms").stderr.strip() == "Error: Invalid config(s): segment.ms"
    assert tool("--entity-type", "broker-loggers", "--entity-name", "0", "--describe").returncode == 1
