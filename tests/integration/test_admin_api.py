"""Admin APIs through real clients: topics, partitions, configs, records deletion, offsets lookups."""

from __future__ import annotations

import time
import uuid

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

from tests.clients import admin, consume_all, create_topic, produce
from tests.harness import BrokerProcess
from tests.waiting import wait_until


def _name(p: str) -> str:
    return f"{p}-{uuid.uuid4().hex[:8]}"


def test_create_describe_delete_topic(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = _name("adm")
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
    t = _name("dup")
    a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    assert "TOPIC_ALREADY_EXISTS" in str(e.value)
    v = _name("valid")
    a.create_topics([NewTopic(v, 2, 1)], validate_only=True)[v].result(20)
    assert v not in a.list_topics(timeout=10).topics


def test_bad_topic_config_is_invalid_config(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = _name("badcfg")
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 1, config={"cleanup.policy": "shred"})])[t].result(20)
    assert "INVALID_CONFIG" in str(e.value)
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 1, config={"no.such.config": "1"})])[t].result(20)
    assert "INVALID_CONFIG" in str(e.value)


def test_replication_factor_above_brokers(broker: BrokerProcess) -> None:
    t = _name("rf")
    a = admin(broker.bootstrap)
    with pytest.raises(KafkaException) as e:
        a.create_topics([NewTopic(t, 1, 2)])[t].result(20)
    assert "INVALID_REPLICATION_FACTOR" in str(e.value)


def test_create_partitions(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = _name("grow")
    a.create_topics([NewTopic(t, 1, 1)])[t].result(20)
    a.create_partitions([NewPartitions(t, 4)])[t].result(20)
    assert sorted(a.list_topics(t, timeout=10).topics[t].partitions) == [0, 1, 2, 3]
    produce(broker.bootstrap, t, [b"p3"], partition=3)
    with pytest.raises(KafkaException) as e:
        a.create_partitions([NewPartitions(t, 2)])[t].result(20)
    assert "INVALID_PARTITIONS" in str(e.value)


def test_incremental_alter_configs_and_broker_read_only(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = _name("alter")
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


def test_delete_records_moves_log_start(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = _name("delrec")
    create_topic(broker.bootstrap, t)
    produce(broker.bootstrap, t, [b"r%d" % i for i in range(10)])
    res = a.delete_records([TopicPartition(t, 0, 4)])
    assert res[TopicPartition(t, 0, 4)].result(10).low_watermark == 4
    got = consume_all(broker.bootstrap, t, 6)
    assert [m.offset() for m in got] == list(range(4, 10))


def test_list_offsets_earliest_latest_timestamp_max(broker: BrokerProcess) -> None:
    a = admin(broker.bootstrap)
    t = _name("lo")
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
    t = _name("rc")
    create_topic(broker.bootstrap, t)
    produce(broker.bootstrap, t, [b"a", b"b"])
    got = consume_all(broker.bootstrap, t, 2, **{"isolation.level": "read_committed"})
    assert [m.value() for m in got] == [b"a", b"b"]
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "wm"})
    lo, hi = c.get_watermark_offsets(TopicPartition(t, 0), timeout=10)
    c.close()
    assert (lo, hi) == (0, 2)
