"""Admin APIs through real clients: topics, partitions, configs, records deletion, offsets lookups."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)

from tests.clients import admin, consume_all, create_topic, produce, unique_name
from tests.harness import BrokerPool, BrokerProcess
from tests.waiting import wait_until


def test_create_describe_delete_topic(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("adm")
    a.create_topics([NewTopic(t, 3, 1, config={"retention.ms": "3600000"})])[t].result(20)
    md = a.list_topics(t, timeout=10).topics[t]
    assert sorted(md.partitions) == [0, 1, 2]
    assert all(p.leader == 0 and p.isrs == [0] for p in md.partitions.values())
    res = ConfigResource(ConfigResource.Type.TOPIC, t)
    cfg = a.describe_configs([res])[res].result(10)
    assert cfg["retention.ms"].value == "3600000" and not cfg["retention.ms"].is_default
    assert cfg["cleanup.policy"].value == "delete" and cfg["cleanup.policy"].is_default
    a.delete_topics([t], operation_timeout=10)[t].result(20)
    assert t not in a.list_topics(timeout=10).topics
    # renamed to <name>.<id>-delete at once, removed by the storage's disk worker
    wait_until(lambda: not any(p.name.startswith(t + "-") for p in broker.log_dir.iterdir()), 10,
               "the topic's partition directories to go")


def test_create_existing_topic_and_validate_only(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("dup")
    a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    assert "TOPIC_ALREADY_EXISTS" in str(e.value)
    v = unique_name("valid")
    a.create_topics([NewTopic(v, 2, 1)], validate_only=True)[v].result(20)
    assert v not in a.list_topics(timeout=10).topics


def test_bad_topic_config_is_invalid_config(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("badcfg")
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 1, config={"cleanup.policy": "shred"})])[t].result(20)
    assert "INVALID_CONFIG" in str(e.value)
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 1, config={"no.such.config": "1"})])[t].result(20)
    assert "INVALID_CONFIG" in str(e.value)


def test_replication_factor_above_brokers(broker: BrokerProcess) -> None:
    t = unique_name("rf")
    a = admin(broker.bootstrap)
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 2)])[t].result(20)
    assert "INVALID_REPLICATION_FACTOR" in str(e.value)


def test_create_partitions(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("grow")
    a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    a.create_partitions([NewPartitions(t, 4)])[t].result(20)
    assert sorted(a.list_topics(t, timeout=10).topics[t].partitions) == [0, 1, 2, 3]
    produce(broker.bootstrap, t, [b"p3"], partition=3)
    with pytest.raises(KafkaException) as e:
        a.create_partitions([NewPartitions(t, 2)])[t].result(20)
    assert "INVALID_PARTITIONS" in str(e.value)


def test_incremental_alter_configs_and_broker_read_only(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("alter")
    a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    res = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
        ConfigEntry("retention.bytes", "1048576", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("max.message.bytes", "2000", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(10)
    desc = ConfigResource(ConfigResource.Type.TOPIC, t)
    cfg = a.describe_configs([desc])[desc].result(10)
    assert cfg["retention.bytes"].value == "1048576"
    # the new max.message.bytes applies to the log at once
    with pytest.raises(Exception, match="MSG_SIZE_TOO_LARGE|too large|MESSAGE_TOO_LARGE"):
        produce(broker.bootstrap, t, [b"x" * 5000], **{"message.max.bytes": 100000})
    res = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
        ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE)])
    a.incremental_alter_configs([res])[res].result(10)
    produce(broker.bootstrap, t, [b"x" * 5000])
    bres = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException):
        a.incremental_alter_configs([bres])[bres].result(10)
    bdesc = ConfigResource(ConfigResource.Type.BROKER, "0")
    bcfg = a.describe_configs([bdesc])[bdesc].result(10)
    assert bcfg["log.dirs"].value == str(broker.log_dir)


def test_append_subtract_and_the_cluster_min_insync_replicas(broker: BrokerProcess) -> None:
    """confluent-kafka's test_incremental_alter_configs: after APPEND/SUBTRACT on list configs, a topic's
    non-default configs include min.insync.replicas="1", the cluster-level value a new Kafka 4.1+ cluster
    starts with (KIP-966), reported as a dynamic cluster default."""
    from confluent_kafka.admin import ConfigSource

    a = admin(broker.bootstrap)
    one, two = unique_name("iac"), unique_name("iac2")
    for t in (one, two):
        a.create_topics([NewTopic(t, 2, 1, config={"compression.type": "gzip"})])[t].result(20)
    res1 = ConfigResource(ConfigResource.Type.TOPIC, one, incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ConfigEntry("retention.ms", "10000", incremental_operation=AlterConfigOpType.SET)])
    res2 = ConfigResource(ConfigResource.Type.TOPIC, two, incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.SUBTRACT),
        ConfigEntry("retention.ms", "5000", incremental_operation=AlterConfigOpType.SET)])
    for f in a.incremental_alter_configs([res1, res2]).values():
        assert f.result(10) is None

    def non_default(topic: str) -> list[str]:
        res = ConfigResource(ConfigResource.Type.TOPIC, topic)
        return sorted(str(e) for e in a.describe_configs([res])[res].result(10).values() if not e.is_default)

    assert non_default(one) == ['cleanup.policy="delete,compact"', 'compression.type="gzip"',
                                'min.insync.replicas="1"', 'retention.ms="10000"']
    assert non_default(two) == ['cleanup.policy=""', 'compression.type="gzip"', 'min.insync.replicas="1"',
                                'retention.ms="5000"']
    res2 = ConfigResource(ConfigResource.Type.TOPIC, two, incremental_configs=[
        ConfigEntry("compression.type", None, incremental_operation=AlterConfigOpType.DELETE),
        ConfigEntry("retention.ms", "10000", incremental_operation=AlterConfigOpType.SET)])
    assert a.incremental_alter_configs([res2])[res2].result(10) is None
    assert non_default(two) == ['cleanup.policy=""', 'min.insync.replicas="1"', 'retention.ms="10000"']
    res = ConfigResource(ConfigResource.Type.TOPIC, two)
    entry = a.describe_configs([res])[res].result(10)["min.insync.replicas"]
    assert entry.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    # the broker's own view: the same cluster-level value, stored as the cluster default
    bres = ConfigResource(ConfigResource.Type.BROKER, "0")
    bentry = a.describe_configs([bres])[bres].result(10)["min.insync.replicas"]
    assert (bentry.value, bentry.source) == ("1", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)


def test_delete_records_moves_log_start(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("delrec")
    create_topic(broker.bootstrap, t)
    produce(broker.bootstrap, t, [b"r%d" % i for i in range(10)])
    res = a.delete_records([TopicPartition(t, 0, 4)])
    assert res[TopicPartition(t, 0, 4)].result(10).low_watermark == 4
    got = consume_all(broker.bootstrap, t, 6)
    assert [m.offset() for m in got] == list(range(4, 10))


def test_list_offsets_earliest_latest_timestamp_max(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = unique_name("lo")
    create_topic(broker.bootstrap, t)
    base = int(time.time() * 1000) - 100_000
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    stamps = [base + 10_000 * i for i in range(5)]
    for i, ts in enumerate(stamps):
        p.produce(t, b"m%d" % i, timestamp=ts if i != 2 else base + 90_000)
        p.flush(10)
    tp = TopicPartition(t, 0)

    def lookup(spec: OffsetSpec) -> tuple[int, int]:
        r = a.list_offsets({tp: spec})[tp].result(10)
        return r.offset, r.timestamp

    assert lookup(OffsetSpec.earliest())[0] == 0
    assert lookup(OffsetSpec.latest())[0] == 5
    assert lookup(OffsetSpec.for_timestamp(base + 15_000))[0] == 2  # first record with ts >= target
    assert lookup(OffsetSpec.for_timestamp(base + 1_000_000))[0] == -1
    assert lookup(OffsetSpec.max_timestamp()) == (2, base + 90_000)


def test_describe_cluster(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    d = a.describe_cluster().result(10)
    assert [n.id for n in d.nodes] == [0] and d.controller.id == 0 and d.cluster_id


def test_read_committed_sees_up_to_high_watermark(broker: BrokerProcess) -> None:
    t = unique_name("rc")
    create_topic(broker.bootstrap, t)
    produce(broker.bootstrap, t, [b"a", b"b"])
    got = consume_all(broker.bootstrap, t, 2, **{"isolation.level": "read_committed"})
    assert [m.value() for m in got] == [b"a", b"b"]
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm"})
    lo, hi = c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)
    c.close()
    assert (lo, hi) == (0, 2)


def test_authorized_operations_without_an_authorizer_are_all_supported_ones(broker: BrokerProcess) -> None:
    """Asked for, Metadata (topics), DescribeCluster and DescribeGroups report every operation the resource
    supports, as Kafka does with no authorizer; not asked for, none."""
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import AclOperation

    name = unique_name("ops")
    create_topic(broker.bootstrap, name, 1)
    a = admin(broker.bootstrap)
    topic = a.describe_topics(TopicCollection([name]), include_authorized_operations=True)[name].result(30)
    assert set(topic.authorized_operations) == {
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER,
        AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}
    assert not a.describe_topics(TopicCollection([name]))[name].result(30).authorized_operations

    cluster = a.describe_cluster(include_authorized_operations=True).result(30)
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE}
    assert not a.describe_cluster().result(30).authorized_operations

    group = "ops-" + name
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        c.commit(offsets=[TopicPartition(name, 0, 0)], asynchronous=False)
    finally:
        c.close()
    described = a.describe_consumer_groups([group], include_authorized_operations=True)[group].result(30)
    assert set(described.authorized_operations) == {AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE}


def test_append_and_subtract_start_from_the_effective_value(broker: BrokerProcess) -> None:
    """APPEND of compact to a topic's unset cleanup.policy gives delete,compact (the broker's default plus
    compact), as Kafka's IncrementalAlterConfigs does; SUBTRACT removes from it; a non-list key refuses."""
    a = admin(broker.bootstrap)
    t = unique_name("append")
    create_topic(broker.bootstrap, t)

    def alter(op: AlterConfigOpType, name: str, value: str) -> None:
        res = ConfigResource(ConfigResource.Type.TOPIC, t,
                             incremental_configs=[ConfigEntry(name, value, incremental_operation=op)])
        a.incremental_alter_configs([res])[res].result(10)

    def policy() -> str:
        desc = ConfigResource(ConfigResource.Type.TOPIC, t)
        return a.describe_configs([desc])[desc].result(10)["cleanup.policy"].value

    alter(AlterConfigOpType.APPEND, "cleanup.policy", "compact")
    assert policy() == "delete,compact"
    alter(AlterConfigOpType.SUBTRACT, "cleanup.policy", "delete")
    assert policy() == "compact"
    with pytest.raises(KafkaException, match="Config value append is not allowed for config key: retention.ms"):
        alter(AlterConfigOpType.APPEND, "retention.ms", "1000")


def test_append_starts_from_the_brokers_default(brokers: BrokerPool) -> None:
    b = brokers.start({"log.cleanup.policy": "compact"})
    a = admin(b.bootstrap)
    t = unique_name("append-default")
    create_topic(b.bootstrap, t)
    res = ConfigResource(ConfigResource.Type.TOPIC, t, incremental_configs=[
        ConfigEntry("cleanup.policy", "delete", incremental_operation=AlterConfigOpType.APPEND)])
    a.incremental_alter_configs([res])[res].result(10)
    desc = ConfigResource(ConfigResource.Type.TOPIC, t)
    assert a.describe_configs([desc])[desc].result(10)["cleanup.policy"].value == "compact,delete"


def test_describe_log_dirs_with_kafka_python(broker: BrokerProcess) -> None:
    from kafka import KafkaAdminClient

    t = unique_name("logdirs")
    create_topic(broker.bootstrap, t, 2)
    produce(broker.bootstrap, t, [b"y" * 50], partition=0)
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        result = client.describe_log_dirs()
    finally:
        client.close()
    assert [r["broker"] for r in result] == [0]
    dirs = result[0]["log_dirs"]
    assert [d["log_dir"] for d in dirs] == [str(broker.log_dir)] and dirs[0]["error_code"] == 0
    assert dirs[0]["total_bytes"] > 0 and 0 <= dirs[0]["usable_bytes"] <= dirs[0]["total_bytes"]
    sizes = {(tp["name"], p["partition_index"]): p["partition_size"] for tp in dirs[0]["topics"]
             for p in tp["partitions"]}
    assert sizes[(t, 0)] > 50 and sizes[(t, 1)] == 0


def test_describe_producers_topic_partitions_and_config_resources(broker: BrokerProcess) -> None:
    """Kafka 4.x admin APIs through kafka-python's admin: DescribeProducers (the idempotent producer that
    wrote), DescribeTopicPartitions paged by a cursor (KIP-966), ListConfigResources (KIP-1142)."""
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition

    t1, t2 = unique_name("dp-a"), unique_name("dp-b")
    create_topic(broker.bootstrap, t1, 3)
    create_topic(broker.bootstrap, t2, 2)
    produce(broker.bootstrap, t1, [b"a", b"b", b"c"], partition=0, **{"enable.idempotence": True})
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        states = client.describe_producers([KpTopicPartition(t1, 0), KpTopicPartition(t1, 1)])
        (producer,) = states[KpTopicPartition(t1, 0)].active_producers
        assert producer.producer_id >= 0 and producer.last_sequence == 2 and producer.last_timestamp > 0
        assert states[KpTopicPartition(t1, 1)].active_producers == []

        first = client.describe_topic_partitions([t1, t2], response_partition_limit=2)
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in first["topics"]] == [(t1, [0, 1])]
        assert first["next_cursor"] == {"topic_name": t1, "partition_index": 2}
        second = client.describe_topic_partitions([t1, t2], response_partition_limit=2, cursor=first["next_cursor"])
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in second["topics"]] == [
            (t1, [2]), (t2, [0])]
        third = client.describe_topic_partitions([t1, t2], response_partition_limit=2, cursor=second["next_cursor"])
        assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in third["topics"]] == [(t2, [1])]
        assert third["next_cursor"] is None and third["topics"][0]["partitions"][0]["leader_id"] == 0

        resources = client.list_config_resources()
        assert {t1, t2} <= set(resources["topic"]) and resources["broker"] == ["0"]
    finally:
        client.close()
