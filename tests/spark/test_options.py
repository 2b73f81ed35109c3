"""Option parsing of the odradek source and sink: Spark's Kafka names, defaults and errors."""

from __future__ import annotations

import pytest

from odradek.spark.offsets import TP
from odradek.spark.options import parse_duration_ms, parse_sink_options, parse_source_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a,b"}


def test_defaults_match_spark() -> None:
    s = parse_source_options(BASE, streaming=True)
    assert s.subscription.kind == "subscribe" and s.subscription.topics == ("a", "b")
    assert s.starting.kind == "latest"
    assert s.fail_on_data_loss is True and s.include_headers is False
    assert s.max_offsets_per_trigger is None and s.max_trigger_delay_ms == 15 * 60_000
    b = parse_source_options(BASE, streaming=False)
    assert b.starting.kind == "earliest" and b.ending.kind == "latest"
    assert s.client == {"bootstrap.servers": "127.0.0.1:9092"}


def test_option_names_are_case_insensitive_and_kafka_params_pass_through() -> None:
    s = parse_source_options({**BASE, "STARTINGOFFSETS": "earliest", "maxoffsetspertrigger": "10",
                              "kafka.client.id": "me", "IncludeHeaders": "true"}, streaming=True)
    assert s.starting.kind == "earliest" and s.max_offsets_per_trigger == 10 and s.include_headers
    assert s.client["client.id"] == "me"


def test_exactly_one_subscription() -> None:
    with pytest.raises(ValueError, match="One of the following options must be specified"):
        parse_source_options({"kafka.bootstrap.servers": "x:1"}, streaming=True)
    with pytest.raises(ValueError, match="Only one of the following options"):
        parse_source_options({**BASE, "assign": '{"a":[0]}'}, streaming=True)
    a = parse_source_options({"kafka.bootstrap.servers": "x:1", "assign": '{"a":[1,0]}'}, streaming=True)
    assert a.subscription.partitions == (TP("a", 0), TP("a", 1))
    p = parse_source_options({"kafka.bootstrap.servers": "x:1", "subscribePattern": "acc.*"}, streaming=True)
    assert p.subscription.pattern == "acc.*"


def test_bootstrap_required_and_forbidden_params() -> None:
    with pytest.raises(ValueError, match="kafka.bootstrap.servers"):
        parse_source_options({"subscribe": "a"}, streaming=True)
    with pytest.raises(ValueError, match="auto.offset.reset"):
        parse_source_options({**BASE, "kafka.auto.offset.reset": "earliest"}, streaming=True)
    with pytest.raises(ValueError, match="key.serializer"):
        parse_sink_options({"kafka.bootstrap.servers": "x:1", "kafka.key.serializer": "x"})


def test_offsets_rules_for_batch_and_streaming() -> None:
    with pytest.raises(ValueError, match="can't be latest for batch"):
        parse_source_options({**BASE, "startingOffsets": "latest"}, streaming=False)
    with pytest.raises(ValueError, match="can't be earliest"):
        parse_source_options({**BASE, "endingOffsets": "earliest"}, streaming=False)
    with pytest.raises(ValueError, match="can't be latest"):
        parse_source_options({**BASE, "startingOffsets": '{"a":{"0":-1}}'}, streaming=False)
    with pytest.raises(ValueError, match="not valid in streaming"):
        parse_source_options({**BASE, "endingOffsets": "latest"}, streaming=True)
    s = parse_source_options({**BASE, "startingOffsets": '{"a":{"0":23,"1":-2}}'}, streaming=True)
    assert s.starting.kind == "offsets" and s.starting.offsets == {TP("a", 0): 23, TP("a", 1): -2}
    with pytest.raises(ValueError, match="startingOffsets"):
        parse_source_options({**BASE, "startingOffsets": "{bad"}, streaming=True)


def test_timestamp_options_take_precedence() -> None:
    s = parse_source_options({**BASE, "startingOffsets": "earliest", "startingOffsetsByTimestamp": '{"a":{"0":1000}}',
                              "startingTimestamp": "5000"}, streaming=True)
    assert s.starting.kind == "timestamp" and s.starting.timestamp == 5000
    s = parse_source_options({**BASE, "startingOffsetsByTimestamp": '{"a":{"0":1000}}',
                              "startingOffsetsByTimestampStrategy": "latest"}, streaming=True)
    assert s.starting.kind == "timestamps" and s.starting.offsets == {TP("a", 0): 1000}
    assert s.starting.strategy == "latest"
    b = parse_source_options({**BASE, "endingTimestamp": "9000"}, streaming=False)
    assert b.ending.kind == "timestamp" and b.ending.timestamp == 9000


def test_limits_and_durations() -> None:
    s = parse_source_options({**BASE, "maxOffsetsPerTrigger": "500", "minOffsetsPerTrigger": "50",
                              "maxTriggerDelay": "30s", "failOnDataLoss": "false", "minPartitions": "4"},
                             streaming=True)
    assert (s.max_offsets_per_trigger, s.min_offsets_per_trigger, s.max_trigger_delay_ms) == (500, 50, 30_000)
    assert s.fail_on_data_loss is False and s.min_partitions == 4
    for bad in ({"maxOffsetsPerTrigger": "0"}, {"maxOffsetsPerTrigger": "x"}, {"failOnDataLoss": "maybe"},
                {"maxTriggerDelay": "5 parsecs"}):
        with pytest.raises(ValueError):
            parse_source_options({**BASE, **bad}, streaming=True)
    assert parse_duration_ms("15m", "x") == 900_000
    assert parse_duration_ms("250", "x") == 250
    assert parse_duration_ms("2h", "x") == 7_200_000


def test_sink_options() -> None:
    s = parse_sink_options({"kafka.bootstrap.servers": "x:1", "topic": "out", "kafka.linger.ms": "50"})
    assert s.topic == "out" and s.client == {"bootstrap.servers": "x:1", "linger.ms": "50"}
    assert parse_sink_options({"kafka.bootstrap.servers": "x:1"}).topic is None


def test_isolation_level() -> None:
    assert parse_source_options(BASE, streaming=False).isolation_level == "read_uncommitted"
    s = parse_source_options({**BASE, "kafka.isolation.level": "Read_Committed"}, streaming=True)
    assert s.isolation_level == "read_committed" and s.client["isolation.level"] == "read_committed"
    assert s.consumer_conf()["isolation.level"] == "read_committed"
    with pytest.raises(ValueError, match="kafka.isolation.level"):
        parse_source_options({**BASE, "kafka.isolation.level": "snapshot"}, streaming=True)


def test_sink_transactional_id_prefix() -> None:
    s = parse_sink_options({"kafka.bootstrap.servers": "x:1", "TransactionalIdPrefix": "etl"})
    assert s.transactional_id_prefix == "etl" and "transactional.id" not in s.client
    with pytest.raises(ValueError, match="transactionalIdPrefix"):
        parse_sink_options({"kafka.bootstrap.servers": "x:1", "kafka.transactional.id": "t"})
