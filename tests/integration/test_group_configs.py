"""Group configs (the GROUP config resource, type 32) with real clients over real sockets: confluent-kafka's
and kafka-python's admin clients, the protocol client, and `odradek configs --entity-type groups`. One
single-node broker for most tests, one of its own that restarts, one with an authorizer, and a 3-broker
ZooKeeper cluster where an override set through one broker is seen through the others."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType, KafkaAdminClient
from kafka.protocol.admin import (
    DescribeConfigsRequest,
    ListConfigResourcesRequest,
)

from tests.clients import admin, alter_configs, create_topic, forget_admin, produce, unique_name
from tests.clients import kafka_error_of as _error_of
from tests.harness import BrokerCluster, BrokerPool, BrokerProcess, run_cli
from tests.rawclient import RawClient, incremental_alter_configs
from tests.waiting import wait_until
from tests.zkharness import ZooKeeperChroot

GROUP = 32


def _alter(bootstrap: str, group: str, **configs: str | None) -> None:
    alter_configs(bootstrap, ResourceType.GROUP, group, **configs)


def _describe(bootstrap: str, group: str) -> dict[str, Any]:
    res = ConfigResource(ResourceType.GROUP, group)
    return admin(bootstrap).describe_configs([res])[res].result(20)




def _raw_alter(client: RawClient, name: str, ops: list[tuple[str, int, str | None]]) -> Any:
    return incremental_alter_configs(client, GROUP, name, ops)


def _raw_describe(client: RawClient, name: str) -> Any:
    req = DescribeConfigsRequest(resources=[DescribeConfigsRequest.DescribeConfigsResource(
        resource_type=GROUP, resource_name=name, configuration_keys=None)], include_synonyms=True,
        include_documentation=True)
    return client.request(req, 4).results[0]


# ---- one broker ------------------------------------------------------------------------------------------

def test_describe_a_group_that_does_not_exist_gives_the_broker_values(broker: BrokerProcess) -> None:
    cfg = _describe(broker.bootstrap, unique_name("nogroup"))
    assert sorted(cfg) == [
        "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "share.auto.offset.reset",
        "share.heartbeat.interval.ms", "share.isolation.level", "share.record.lock.duration.ms",
        "share.session.timeout.ms", "streams.heartbeat.interval.ms", "streams.initial.rebalance.delay.ms",
        "streams.num.standby.replicas", "streams.session.timeout.ms"]
    assert cfg["consumer.session.timeout.ms"].value == "45000"
    assert cfg["share.auto.offset.reset"].value == "latest"
    assert cfg["share.isolation.level"].value == "read_uncommitted"
    assert all(e.source == ConfigSource.DEFAULT_CONFIG.value and not e.is_read_only for e in cfg.values())


def test_alter_describe_and_delete_with_confluent(broker: BrokerProcess) -> None:
    b, group = broker, unique_name("cfg")
    _alter(b.bootstrap, group, consumer__session__timeout__ms="50000", share__auto__offset__reset="by_duration:PT1H",
           share__isolation__level="read_committed")
    cfg = _describe(b.bootstrap, group)
    assert cfg["consumer.session.timeout.ms"].value == "50000"
    assert cfg["consumer.session.timeout.ms"].source == ConfigSource.GROUP_CONFIG.value
    assert cfg["share.auto.offset.reset"].value == "by_duration:PT1H"
    assert cfg["share.isolation.level"].source == ConfigSource.GROUP_CONFIG.value
    assert cfg["consumer.heartbeat.interval.ms"].source == ConfigSource.DEFAULT_CONFIG.value
    _alter(b.bootstrap, group, consumer__session__timeout__ms=None)
    cfg = _describe(b.bootstrap, group)
    assert (cfg["consumer.session.timeout.ms"].value, cfg["consumer.session.timeout.ms"].source) == (
        "45000", ConfigSource.DEFAULT_CONFIG.value)
    assert cfg["share.isolation.level"].value == "read_committed"
    # the legacy AlterConfigs replaces every override
    res = ConfigResource(ResourceType.GROUP, group, set_config={"streams.num.standby.replicas": "1"})
    with pytest.warns(DeprecationWarning):
        admin(b.bootstrap).alter_configs([res])[res].result(20)
    cfg = _describe(b.bootstrap, group)
    assert [k for k, e in cfg.items() if e.source == ConfigSource.GROUP_CONFIG.value] == ["streams.num.standby.replicas"]
    # validate_only changes nothing
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("streams.num.standby.replicas", "2", incremental_operation=AlterConfigOpType.SET)])
    admin(b.bootstrap).incremental_alter_configs([res], validate_only=True)[res].result(20)
    assert _describe(b.bootstrap, group)["streams.num.standby.replicas"].value == "1"


def test_refusals_carry_kafkas_codes_and_messages(broker: BrokerProcess) -> None:
    bootstrap, group = broker.bootstrap, unique_name("bad")
    cases = [
        ({"consumer__sesion__timeout__ms": "50000"}, "Unknown group config name: consumer.sesion.timeout.ms"),
        ({"consumer__session__timeout__ms": "soon"},
         "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT"),
        ({"consumer__session__timeout__ms": "0"},
         "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"),
        ({"consumer__session__timeout__ms": "1000"},
         "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        ({"consumer__session__timeout__ms": "600000"},
         "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms"),
        ({"share__record__lock__duration__ms": "5000"},
         "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"),
        ({"share__record__lock__duration__ms": "70000"},
         "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms"),
        ({"streams__num__standby__replicas": "3"},
         "streams.num.standby.replicas must be less than or equal to group.streams.max.standby.replicas"),
        ({"share__isolation__level": "dirty"},
         "Invalid value dirty for configuration share.isolation.level: String must be one of: read_committed,"
         " read_uncommitted"),
        ({"share__auto__offset__reset": "by_duration:-PT1H"},
         "Invalid value by_duration:-PT1H for configuration share.auto.offset.reset: Invalid value"
         " `by_duration:-PT1H` for configuration share.auto.offset.reset. The value must be either 'earliest',"
         " 'latest' or of the format 'by_duration:<PnDTnHnMn.nS.>'."),
    ]
    for configs, message in cases:
        err = _error_of(lambda configs=configs: _alter(bootstrap, group, **configs))
        assert (err.code(), err.str()) == (KafkaError.INVALID_CONFIG, message), configs
    # nothing was stored by any of them
    assert all(e.source == ConfigSource.DEFAULT_CONFIG.value for e in _describe(bootstrap, group).values())
    with RawClient(broker.port) as c:
        answer = _raw_alter(c, "", [("consumer.session.timeout.ms", 0, "50000")])
        assert (answer.error_code, answer.error_message) == (42, "Default group resources are not allowed.")
        answer = _raw_alter(c, group, [("consumer.session.timeout.ms", 2, "50000")])  # APPEND
        assert answer.error_code == 40
        described = _raw_describe(c, "")
        assert (described.error_code, described.error_message) == (42, "Group name must not be empty")


def test_kafka_python_describes_synonyms_and_documentation(broker: BrokerProcess) -> None:
    group = unique_name("kp")
    _alter(broker.bootstrap, group, share__record__lock__duration__ms="20000")
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=20000)
    try:
        got = kp.describe_configs([KpConfigResource(ConfigResourceType.GROUP, group)], include_synonyms=True,
                                  config_filter="all")
    finally:
        kp.close()
    entries = got["group"][group]
    assert entries["share.record.lock.duration.ms"]["value"] == "20000"
    assert entries["share.record.lock.duration.ms"]["config_source"] == "DYNAMIC_GROUP_CONFIG"
    assert entries["share.session.timeout.ms"]["config_source"] == "DEFAULT_CONFIG"
    with RawClient(broker.port) as c:
        rows = {e.name: e for e in _raw_describe(c, group).configs}
    lock = rows["share.record.lock.duration.ms"]
    assert [(s.name, s.value, s.source) for s in lock.synonyms] == [  # Apache Kafka 4.4's: the broker key follows
        ("share.record.lock.duration.ms", "20000", 8), ("group.share.record.lock.duration.ms", "30000", 5)]
    assert lock.config_type == 3 and "Group-level config" in lock.documentation
    assert "group.share.record.lock.duration.ms sets its default" in lock.documentation


def test_list_config_resources_lists_groups_with_configs(broker: BrokerProcess) -> None:
    group = unique_name("listed")
    _alter(broker.bootstrap, group, consumer__heartbeat__interval__ms="6000")
    with RawClient(broker.port) as c:
        answer = c.request(ListConfigResourcesRequest(resource_types=[GROUP]), 1)
    assert answer.error_code == 0
    listed = [(r.resource_name, r.resource_type) for r in answer.config_resources]
    assert (group, GROUP) in listed and all(t == GROUP for _n, t in listed)


def test_deleting_a_group_deletes_its_configs(broker: BrokerProcess) -> None:
    group, topic = unique_name("deleted"), unique_name("deleted-topic")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"x"])
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    try:
        consumer.subscribe([topic])
        wait_until(lambda: consumer.poll(0.5) is not None, 30, "a record")
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    _alter(broker.bootstrap, group, consumer__session__timeout__ms="50000")
    admin(broker.bootstrap).delete_consumer_groups([group])[group].result(20)
    assert _describe(broker.bootstrap, group)["consumer.session.timeout.ms"].source == ConfigSource.DEFAULT_CONFIG.value


def test_configs_tool_for_groups(broker: BrokerProcess) -> None:
    group = unique_name("tool")
    base = ("configs", "--bootstrap-server", broker.bootstrap)
    r = run_cli(*base, "--entity-type", "groups", "--entity-name", group, "--alter",
                "--add-config", "consumer.session.timeout.ms=50000,share.isolation.level=read_committed")
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for group {group}.\n"), r.stderr
    r = run_cli(*base, "--group", group, "--describe")
    assert (r.returncode, r.stdout) == (0, (
        f"Dynamic configs for group {group} are:\n"
        "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:consumer.session.timeout.ms=50000, "
        "DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}\n"
        "  share.isolation.level=read_committed sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:share.isolation.level="
        "read_committed, DEFAULT_CONFIG:share.isolation.level=read_uncommitted}\n")), r.stderr
    r = run_cli(*base, "--group", group, "--describe", "--all")
    assert f"All configs for group {group} are:\n" in r.stdout
    assert ("  consumer.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:group.consumer.heartbeat."
            "interval.ms=5000}\n") in r.stdout
    r = run_cli(*base, "--entity-type", "groups", "--entity-name", group, "--alter", "--delete-config",
                "consumer.session.timeout.ms")
    assert (r.returncode, r.stdout) == (0, f"Completed updating config for group {group}.\n"), r.stderr
    r = run_cli(*base, "--group", group, "--alter", "--add-config", "share.session.timeout.ms=1")
    assert (r.returncode, r.stderr) == (1, "Error while executing config command: INVALID_CONFIG: share.session."
                                           "timeout.ms must be greater than or equal to group.share.min.session."
                                           "timeout.ms\n")
    r = run_cli(*base, "--entity-type", "groups", "--describe")
    assert r.returncode == 0 and f"Dynamic configs for group {group} are:\n" in r.stdout


# ---- a broker of its own -----------------------------------------------------------------------------------

def test_an_override_survives_a_restart(fresh_broker: BrokerProcess) -> None:
    group = unique_name("restart")
    _alter(fresh_broker.bootstrap, group, share__session__timeout__ms="50000")
    fresh_broker.restart()
    forget_admin(fresh_broker.bootstrap)
    cfg = _describe(fresh_broker.bootstrap, group)
    assert (cfg["share.session.timeout.ms"].value, cfg["share.session.timeout.ms"].source) == (
        "50000", ConfigSource.GROUP_CONFIG.value)


def test_broker_bounds_and_defaults_come_from_server_properties(brokers: BrokerPool) -> None:
    b = brokers.start({"group.consumer.session.timeout.ms": "30000", "group.consumer.min.session.timeout.ms": "20000"})
    group = unique_name("bounds")
    cfg = _describe(b.bootstrap, group)
    assert (cfg["consumer.session.timeout.ms"].value, cfg["consumer.session.timeout.ms"].source) == (
        "30000", ConfigSource.DEFAULT_CONFIG.value)
    _alter(b.bootstrap, group, consumer__session__timeout__ms="25000")  # above the lowered minimum
    assert _describe(b.bootstrap, group)["consumer.session.timeout.ms"].value == "25000"


def test_authorizer_guards_group_configs(brokers: BrokerPool) -> None:
    b = brokers.start({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                       "allow.everyone.if.no.acl.found": "false"})
    group = unique_name("denied")
    res = ConfigResource(ResourceType.GROUP, group)
    err = _error_of(lambda: admin(b.bootstrap).describe_configs([res])[res].result(20))
    assert err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    err = _error_of(lambda: _alter(b.bootstrap, group, consumer__session__timeout__ms="50000"))
    assert err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    # refused before any side effect: nothing stored (an unknown key is refused for authorization first, too)
    err = _error_of(lambda: _alter(b.bootstrap, group, no__such__key="1"))
    assert err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    with RawClient(b.port) as c:
        answer = c.request(ListConfigResourcesRequest(resource_types=[GROUP]), 1)
    assert answer.error_code == KafkaError.CLUSTER_AUTHORIZATION_FAILED


# ---- a ZooKeeper cluster ------------------------------------------------------------------------------------

def test_an_override_set_through_one_broker_is_seen_through_the_others(zk_standalone: ZooKeeperChroot,
                                                                       brokers: BrokerPool) -> None:
    cluster: BrokerCluster = brokers.start_cluster(zk_standalone.connect_string, 3)
    group = unique_name("cluster/group*")  # a name Kafka's Sanitizer must encode
    _alter(cluster.brokers[0].bootstrap, group, consumer__session__timeout__ms="55000")

    def seen(b: BrokerProcess) -> tuple[str, int]:
        entry = _describe(b.bootstrap, group)["consumer.session.timeout.ms"]
        return entry.value, entry.source

    for b in cluster.brokers:
        wait_until(lambda b=b: seen(b) == ("55000", ConfigSource.GROUP_CONFIG.value), 30,
                   f"broker {b.broker_id} to see the group's override")
    with cluster.zookeeper() as z:
        encoded = group.replace("/", "%2F").replace("*", "%2A")
        assert json.loads(z.get(f"/config/groups/{encoded}")[0]) == {
            "version": 1, "config": {"consumer.session.timeout.ms": "55000"}}
        notices = [json.loads(z.get(f"/config/changes/{c}")[0]) for c in z.get_children("/config/changes")]
        assert {"version": 2, "entity_path": f"groups/{encoded}"} in notices
    # deleted through another broker: every broker follows
    _alter(cluster.brokers[2].bootstrap, group, consumer__session__timeout__ms=None)
    for b in cluster.brokers:
        wait_until(lambda b=b: seen(b) == ("45000", ConfigSource.DEFAULT_CONFIG.value), 30,
                   f"broker {b.broker_id} to see the override deleted")
    with cluster.zookeeper() as z:
        assert z.exists(f"/config/groups/{encoded}") is None
