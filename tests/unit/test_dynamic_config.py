"""Dynamic broker configs below the network: the catalogue's dynamic keys, validation of an update in
Kafka's wording, the layers and their precedence, synonyms, the store layout (sequential notifications
in the embedded store), live application to logs and connection limits, broker loggers, and the
`odradek configs` flags."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from odradek.admin_client.errors import UsageError
from odradek.cli import configs as tool
from odradek.cluster import znodes as zn
from odradek.cluster.broker_configs import (
    CHANGE_EXPIRATION_MS,
    BrokerConfigWatcher,
    purge_changes,
    write_broker_config,
)
from odradek.cluster.embedded import STORE_FILE, EmbeddedStore
from odradek.config import BrokerConfig, ConfigError, ConfigSource, Synonym, UnknownConfigError
from odradek.config_keys import BROKER_KEYS
from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.server import loggers
from odradek.server.limits import ConnectionLimits
from odradek.storage.manager import LogManager

DYN_BROKER, DYN_DEFAULT = int(ConfigSource.DYNAMIC_BROKER_CONFIG), int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
STATIC, DEFAULT = int(ConfigSource.STATIC_BROKER_CONFIG), int(ConfigSource.DEFAULT_CONFIG)


def cfg(**props: str) -> BrokerConfig:
    return BrokerConfig.from_props({k.replace("__", "."): v for k, v in props.items()})


# ---- the catalogue ---------------------------------------------------------------------------------------

def test_dynamic_keys_are_kafkas_less_listeners_and_security() -> None:
    dynamic = {name for name, key in BROKER_KEYS.items() if key.dynamic}
    assert {"log.retention.ms", "log.retention.bytes", "log.segment.bytes", "log.roll.ms", "log.cleanup.policy",
            "log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.size",
            "message.max.bytes", "compression.type", "min.insync.replicas", "unclean.leader.election.enable",
            "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides", "num.io.threads",
            "num.network.threads", "num.replica.fetchers", "background.threads",
            "log.message.timestamp.type", "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.service.name",
            "sasl.login.refresh.window.factor"} <= dynamic
    assert not {"broker.id", "log.dirs", "listeners", "advertised.listeners", "zookeeper.connect",
                "log.retention.hours", "num.partitions", "ssl.keystore.location", "ssl.protocol", "sasl.jaas.config",
                "sasl.enabled.mechanisms"} & dynamic


def test_per_broker_keys_are_refused_as_the_cluster_default() -> None:
    c = cfg()
    assert c.check_dynamic({"sasl.kerberos.min.time.before.relogin": "58000"}, per_broker=True) == {
        "sasl.kerberos.min.time.before.relogin": "58000"}
    with pytest.raises(ConfigError, match=r"^Cannot update these configs at default cluster level, broker id must "
                                          r"be specified: Set\(sasl.kerberos.kinit.cmd\)$"):
        c.check_dynamic({"sasl.kerberos.kinit.cmd": "/bin/kinit", "log.cleaner.threads": "2"}, per_broker=False)
    assert c.check_dynamic({"log.cleaner.threads": "2"}, per_broker=False) == {"log.cleaner.threads": "2"}



def test_a_listener_max_connections_is_dynamic_at_both_levels() -> None:
    """Kafka's ClusterLevelListenerConfigs: listener.name.<l>.max.connections is typed as max.connections and
    taken by the cluster default too; other per-listener keys stay static here."""
    c = cfg()
    assert c.check_dynamic({"listener.name.plaintext.max.connections": " 5 "}, per_broker=False) == {
        "listener.name.plaintext.max.connections": "5"}
    with pytest.raises(ConfigError, match="Not a number of type INT"):
        c.check_dynamic({"listener.name.plaintext.max.connections": "many"}, per_broker=True)
    with pytest.raises(ConfigError, match="Cannot update these configs dynamically"):
        c.check_dynamic({"listener.name.plaintext.max.connection.creation.rate": "5"}, per_broker=True)


# ---- validation ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("props", "error", "message"), [
    ({"broker.id": "3"}, ConfigError, "Cannot update these configs dynamically: Set(broker.id)"),
    ({"zookeeper.connect": "x:1", "log.dirs": "/a"}, ConfigError,
     "Cannot update these configs dynamically: Set(log.dirs, zookeeper.connect)"),
    ({"a.b": "1", "b.c": "1", "c.d": "1", "d.e": "1"}, UnknownConfigError, "Unknown broker config name: a.b, b.c"),
    ({"broker.id": "1", "log.dirs": "/a", "listeners": "P://:1", "node.id": "1", "port": "1"}, ConfigError,
     "Cannot update these configs dynamically: HashSet(broker.id, listeners, log.dirs, node.id, port)"),
    ({"log.retention.ms": "x"}, ConfigError,
     "Invalid value x for configuration log.retention.ms: Not a number of type LONG"),
    ({"log.segment.bytes": "10"}, ConfigError, "Invalid value 10 for configuration log.segment.bytes: Value must be at least 14"),
    ({"log.retention.ms": "0"}, ConfigError, "log.retention.ms must be unlimited (-1) or, equal or greater than 1"),
    ({"max.connections.per.ip": "0"}, ConfigError, "can be set to zero only if max.connections.per.ip.overrides is set"),
    ({"max.connections.per.ip.overrides": "nocount"}, ConfigError, "must be a list of host:count pairs"),
    ({"log.cleaner.min.compaction.lag.ms": "10", "log.cleaner.max.compaction.lag.ms": "5"}, ConfigError,
     "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"),
    ({"unclean.leader.election.enable": "maybe"}, ConfigError, "Expected value to be either true or false"),
])
def test_updates_are_refused_in_kafkas_words(props: dict[str, str], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        cfg().check_dynamic(props, per_broker=True)
    assert message in str(info.value)


def test_an_update_is_checked_with_the_other_layer_in_force() -> None:
    c = cfg()
    c.set_dynamic({}, {"log.cleaner.min.compaction.lag.ms": "100"})
    with pytest.raises(ConfigError, match="min.compaction.lag.ms \\(100\\) > max.compaction.lag.ms \\(50\\)"):
        c.check_dynamic({"log.cleaner.max.compaction.lag.ms": "50"}, per_broker=True)
    assert c.check_dynamic({"log.cleaner.max.compaction.lag.ms": " 500 "}, per_broker=True) == {
        "log.cleaner.max.compaction.lag.ms": "500"}


# ---- layers ----------------------------------------------------------------------------------------------

def test_precedence_per_broker_over_default_over_static_over_documented() -> None:
    c = cfg(log__retention__hours="1", log__segment__bytes="2048")
    assert c.log_retention_ms == 3_600_000
    c.set_dynamic({}, {"log.retention.ms": "60000", "log.segment.bytes": "4096"})
    assert (c.log_retention_ms, c.get("log.segment.bytes")) == (60000, 4096)
    c.set_dynamic({"log.retention.ms": "1000"}, {"log.retention.ms": "60000", "log.segment.bytes": "4096"})
    assert c.log_retention_ms == 1000 and c.topic_defaults()["retention.ms"] == "1000"
    assert c.topic_defaults()["segment.bytes"] == "4096"
    c.set_dynamic({}, {})
    assert (c.log_retention_ms, c.get("log.segment.bytes")) == (3_600_000, 2048)
    assert c.dynamic_props(True) == c.dynamic_props(False) == {}


def test_a_file_value_overridden_by_a_dynamic_layer_is_named() -> None:
    c = cfg(min__insync__replicas="2", log__segment__bytes="2048", num__io__threads="8")
    assert c.shadowed_statics() == []
    c.set_dynamic({"log.segment.bytes": "4096", "num.io.threads": "8"},
                  {"min.insync.replicas": "1", "log.segment.bytes": "8192", "log.retention.ms": "5"})
    assert c.shadowed_statics() == [
        "log.segment.bytes=4096 from this broker's dynamic config overrides log.segment.bytes=2048 of the broker's "
        "configuration file",
        "min.insync.replicas=1 from the cluster-level dynamic default overrides min.insync.replicas=2 of the "
        "broker's configuration file"]  # num.io.threads agrees; log.retention.ms is not in the file


def test_stored_entries_that_are_not_dynamic_or_not_valid_are_dropped_with_a_warning() -> None:
    c = cfg()
    warnings = c.set_dynamic({"broker.id": "7", "log.cleaner.threads": "x", "max.connections": "10"}, {"nope": "1"})
    assert c.dynamic_props(True) == {"max.connections": "10"} and c.dynamic_props(False) == {}
    assert len(warnings) == 3 and c.broker_id == 0
    warnings = c.set_dynamic({"log.retention.ms": "0"}, {})  # breaks a rule: the layers in force stay
    assert c.dynamic_props(True) == {"max.connections": "10"} and "keeping the previous ones" in warnings[0]


def test_synonyms_in_kafkas_order_and_rows_of_both_resources() -> None:
    c = cfg(log__retention__hours="2")
    c.set_dynamic({"log.retention.ms": "1000"}, {"log.retention.ms": "5000", "log.cleaner.threads": "2"})
    assert c.synonyms("log.retention.ms") == [
        Synonym("log.retention.ms", "1000", DYN_BROKER), Synonym("log.retention.ms", "5000", DYN_DEFAULT),
        Synonym("log.retention.hours", "2", STATIC), Synonym("log.retention.hours", "168", DEFAULT)]
    assert c.synonyms("log.retention.hours") == [Synonym("log.retention.hours", "2", STATIC),
                                                 Synonym("log.retention.hours", "168", DEFAULT)]
    rows = {row.name: row for row in c.describe_broker()}
    assert rows["log.retention.ms"][:7] == ("log.retention.ms", "1000", False, False, DYN_BROKER, False,
                                            tuple(c.synonyms("log.retention.ms")))
    assert rows["log.cleaner.threads"].source == DYN_DEFAULT and rows["broker.id"].read_only
    assert [(r.name, r.value, r.source, r.synonyms) for r in c.describe_dynamic_default()] == [
        ("log.cleaner.threads", "2", DYN_DEFAULT, (Synonym("log.cleaner.threads", "2", DYN_DEFAULT),)),
        ("log.retention.ms", "5000", DYN_DEFAULT, (Synonym("log.retention.ms", "5000", DYN_DEFAULT),))]


# ---- the store -------------------------------------------------------------------------------------------

def test_writes_follow_kafkas_layout_and_the_watcher_reports_changes(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = EmbeddedStore(tmp_path / STORE_FILE)
        await store.start()
        seen: list[tuple[dict[str, str], dict[str, str]]] = []

        async def listener(per_broker: dict[str, str], default: dict[str, str]) -> None:
            seen.append((per_broker, default))

        watcher = BrokerConfigWatcher(store, 0, listener)
        await watcher.start()
        await write_broker_config(store, zn.DEFAULT_ENTITY, {"log.retention.ms": "1000"})
        await write_broker_config(store, "0", {"max.connections": "5"})
        await write_broker_config(store, "1", {"max.connections": "9"})  # another broker's: not reported
        for _ in range(20):
            await asyncio.sleep(0)
        assert seen == [({}, {}), ({}, {"log.retention.ms": "1000"}),
                        ({"max.connections": "5"}, {"log.retention.ms": "1000"})]
        data, _ = await store.get("/config/brokers/<default>")
        assert json.loads(data) == {"version": 1, "config": {"log.retention.ms": "1000"}}
        changes = await store.get_children(zn.CONFIG_CHANGES)
        assert changes == [f"config_change_{i:010d}" for i in range(3)]
        notices = [json.loads((await store.get(f"{zn.CONFIG_CHANGES}/{c}"))[0]) for c in changes]
        assert notices == [{"version": 2, "entity_path": p} for p in ("brokers/<default>", "brokers/0", "brokers/1")]
        await purge_changes(store, zn.now_ms() + CHANGE_EXPIRATION_MS + 1)
        assert await store.get_children(zn.CONFIG_CHANGES) == []
        await write_broker_config(store, "0", {})
        # ZooKeeper's numbering: the parent's child version, which deletions advance too; never reused
        assert await store.get_children(zn.CONFIG_CHANGES) == ["config_change_0000000006"]
        watcher.close()
        await store.close()
        reopened = EmbeddedStore(tmp_path / STORE_FILE)
        await reopened.start()
        path = await reopened.create(f"{zn.CONFIG_CHANGES}/{zn.CONFIG_CHANGE_PREFIX}", b"", sequence=True)
        assert path == "/config/changes/config_change_0000000007"
        await reopened.close()

    asyncio.run(scenario())


# ---- applying live ---------------------------------------------------------------------------------------

def test_new_defaults_reach_every_log_without_an_override(tmp_path: Path) -> None:
    c = cfg()
    manager = LogManager([tmp_path], c.topic_defaults())
    manager.startup()
    plain = manager.get_or_create_log("plain", 0, {})
    own = manager.get_or_create_log("own", 0, {"retention.ms": "99"})
    c.set_dynamic({}, {"log.retention.ms": "1000", "log.cleanup.policy": "compact"})
    manager.update_defaults(c.topic_defaults())
    assert (plain.config.retention_ms, plain.config.compact) == (1000, True)
    assert (own.config.retention_ms, own.config.compact) == (99, True)
    assert plain.cleaner_checkpoint is not None  # compacted logs are marked before they act on the policy
    with pytest.raises(KafkaError):
        manager.update_defaults({**c.topic_defaults(), "segment.bytes": "1"})
    assert plain.config.retention_ms == 1000
    manager.shutdown()


def test_connection_limits_reconfigure_for_new_connections() -> None:
    limits = ConnectionLimits(3, 3)
    assert limits.admit("10.0.0.1") is None and limits.admit("10.0.0.1") is None
    limits.reconfigure(1, 3, ConnectionLimits.resolve_overrides({"10.0.0.2": 5}))
    assert "configured maximum of 1 connections" in (limits.admit("10.0.0.3") or "")
    assert limits.total == 2  # the open ones stay
    limits.release("10.0.0.1")
    limits.release("10.0.0.1")
    assert limits.admit("10.0.0.2") is None and limits.per_ip == {"10.0.0.2": 5}


# ---- broker loggers --------------------------------------------------------------------------------------

def test_logger_levels_in_kafkas_names_and_checks() -> None:
    assert [loggers.level_name(n) for n in (1, 5, 10, 15, 20, 30, 40, 50, 60)] == [
        "TRACE", "TRACE", "DEBUG", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "FATAL"]
    target = logging.getLogger("odradek.test.dynamic")
    set_trace = [loggers.LoggerOp("odradek.test.dynamic", loggers.OP_SET, "TRACE")]
    loggers.validate(set_trace)
    loggers.apply(set_trace)
    assert target.level == 5 and loggers.loggers()["odradek.test.dynamic"] == "TRACE"
    loggers.apply([loggers.LoggerOp("odradek.test.dynamic", loggers.OP_DELETE, None)])
    assert target.level == logging.NOTSET
    cases = [
        (loggers.LoggerOp("no.such.logger.here", loggers.OP_SET, "INFO"), ErrorCode.INVALID_CONFIG,
         "Logger no.such.logger.here does not exist!"),
        (loggers.LoggerOp("root", loggers.OP_SET, "info"), ErrorCode.INVALID_CONFIG,
         "Cannot set the log level of root to info as it is not a supported log level."
         " Valid log levels are DEBUG, ERROR, FATAL, INFO, TRACE, WARN"),
        (loggers.LoggerOp("root", loggers.OP_DELETE, None), ErrorCode.INVALID_REQUEST,
         "Removing the log level of the root logger is not allowed"),
        (loggers.LoggerOp("root", loggers.OP_APPEND, "INFO"), ErrorCode.INVALID_REQUEST,
         "APPEND operation is not allowed for the BROKER_LOGGER resource"),
    ]
    for op, code, message in cases:
        with pytest.raises(KafkaError) as info:
            loggers.validate([op])
        assert (info.value.code, info.value.message) == (code, message)


# ---- odradek configs -------------------------------------------------------------------------------------

B = ("--bootstrap-server", "h:1")


def test_add_config_parsing_is_kafkas() -> None:
    assert tool.parse_add_config("a=1, b = 2,c=[x,y,z],d=") == {"a": "1", "b": "2", "c": "x,y,z", "d": ""}
    with pytest.raises(UsageError, match='all configs to be added must be in the format "key=val"'):
        tool.parse_add_config("a=1,b")


def test_commands_and_their_entities() -> None:
    cmd = tool.parse_command([*B, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "a.b=1",
                              "--delete-config", "c.d,e.f"])
    assert (cmd.entity_type, cmd.entity_name, cmd.add, cmd.delete) == ("brokers", "", (("a.b", "1"),), ("c.d", "e.f"))
    cmd = tool.parse_command([*B, "--broker-logger", "1", "--describe"])
    assert (cmd.entity_type, cmd.entity_name, cmd.action) == ("broker-loggers", "1", "describe")
    assert tool.parse_command([*B, "--entity-type", "topics", "--describe"]).entity_name is None


@pytest.mark.parametrize(("argv", "message"), [
    (["--entity-type", "brokers", "--entity-name", "0"], "Command must include exactly one action: --describe, --alter"),
    (["--entity-type", "brokers", "--describe", "--alter"], "exactly one action"),
    (["--entity-type", "widgets", "--describe"], "Invalid entity type widgets, the entity type must be one of topics,"),
    (["--entity-type", "ips", "--describe"], "Entity type ips is not supported by Odradek"),
    (["--describe"], "At least one entity type must be specified"),
    (["--entity-type", "brokers", "--entity-name", "x", "--describe"],
     "The entity name for brokers must be a valid integer broker id, but it is: x"),
    (["--entity-type", "topics", "--entity-default", "--describe"],
     "--entity-default must not be specified with --describe of topics"),
    (["--entity-type", "broker-loggers", "--describe"], "An entity name must be specified with --describe of broker-loggers"),
    (["--entity-type", "brokers", "--alter", "--add-config", "a=1"],
     "An entity-name or default entity must be specified with --alter of users, clients, brokers or ips"),
    (["--entity-type", "topics", "--alter", "--add-config", "a=1"], "An entity name must be specified with --alter of topics"),
    (["--entity-type", "topics", "--entity-name", "t", "--alter"],
     "At least one of --add-config, --add-config-file, or --delete-config must be specified with --alter"),
    (["--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "a b=1"],
     "Invalid character found for config key: a b"),
    (["--entity-type", "topics", "--topic", "t", "--describe"],
     "--entity-{type,name,default} should not be used in conjunction with specific entity flags"),
    (["--entity-type", "topics", "--entity-name", "t", "--describe", "--add-config", "a=1"],
     'Option "[add-config]" can\'t be used with option "[describe]"'),
])
def test_bad_flags_are_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError) as info:
        tool.parse_command([*B, *argv])
    assert message in str(info.value) and "\n" not in str(info.value)


def test_describe_lines_are_kafkas() -> None:
    cmd = tool.Command("h:1", "describe", "brokers", "0")
    assert tool.header(cmd, "0") == "Dynamic configs for broker 0 are:"
    assert tool.header(cmd, "") == "Default configs for brokers in the cluster are:"
    assert tool.header(tool.Command("h:1", "describe", "topics", "t", describe_all=True), "t") == "All configs for topic t are:"
    entry = tool.Entry("ssl.key.password", None, 2, True, (("ssl.key.password", None, 2),))
    assert tool.entry_line(entry) == "  ssl.key.password=null sensitive=true synonyms={DYNAMIC_BROKER_CONFIG:ssl.key.password=null}"
