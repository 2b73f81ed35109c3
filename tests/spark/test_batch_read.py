"""Batch reads with format("odradek") from a real broker, in a real local[2] Spark."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from confluent_kafka import Producer, TopicPartition  # noqa: E402

from tests.clients import admin, create_topic  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(240)
T0 = 1_700_000_000_000  # a fixed CreateTime, ms


def produce_known(bootstrap: str, topic: str, partitions: int, per_partition: int) -> list[tuple]:
    """Produce records with known key, value, partition, timestamp and headers; returns them as rows."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    rows = []
    for part in range(partitions):
        for i in range(per_partition):
            key = None if i % 7 == 0 else f"k{part}-{i}".encode()
            value = f"value {part}/{i}".encode()
            ts = T0 + part * 1_000_000 + i * 1000
            headers = [("h", f"{i}".encode()), ("n", None)] if i % 3 == 0 else None
            p.produce(topic, value, key, partition=part, timestamp=ts, headers=headers)
            rows.append((key, value, topic, part, i, ts, headers))
    assert p.flush(30) == 0
    return rows


def reader(spark: Any, bootstrap: str, **opts: str) -> Any:
    r = spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap)
    for k, v in opts.items():
        r = r.option(k, v)
    return r.load()


@pytest.fixture(scope="module")
def known(broker: Any) -> list[tuple]:
    create_topic(broker.bootstrap, "known", partitions=3)
    return produce_known(broker.bootstrap, "known", 3, 400)


def test_batch_read_equals_what_was_produced(spark: Any, broker: Any, known: list[tuple]) -> None:
    df = reader(spark, broker.bootstrap, subscribe="known", includeHeaders="true")
    assert df.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:timestamp,"
        "timestampType:int,headers:array<struct<key:string,value:binary>>>")
    got = sorted((
        (r.key, r.value, r.topic, r.partition, r.offset, int(r.timestamp.timestamp() * 1000), r.timestampType,
         [(h.key, h.value) for h in r.headers] if r.headers is not None else None)
        for r in df.collect()), key=lambda row: (row[3], row[4]))
    want = sorted(((k, v, t, p, o, ts, 0, h) for k, v, t, p, o, ts, h in known), key=lambda row: (row[3], row[4]))
    assert len(got) == len(want) == 1200
    assert got == want


def test_schema_without_headers_matches_spark_kafka(spark: Any, broker: Any, known: list[tuple]) -> None:
    df = reader(spark, broker.bootstrap, subscribe="known")
    assert [f.name for f in df.schema.fields] == [
        "key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert df.count() == 1200


def test_specific_offsets_with_earliest_and_latest(spark: Any, broker: Any, known: list[tuple]) -> None:
    df = reader(spark, broker.bootstrap, subscribe="known",
                startingOffsets='{"known":{"0":10,"1":-2,"2":395}}',
                endingOffsets='{"known":{"0":20,"1":5,"2":-1}}')
    got = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
    want = [(0, o) for o in range(10, 20)] + [(1, o) for o in range(5)] + [(2, o) for o in range(395, 400)]
    assert got == want


def test_specific_offsets_must_name_every_partition(spark: Any, broker: Any, known: list[tuple]) -> None:
    with pytest.raises(Exception, match="must specify all TopicPartitions"):
        reader(spark, broker.bootstrap, subscribe="known", startingOffsets='{"known":{"0":1}}').count()


def test_offsets_by_timestamp(spark: Any, broker: Any, known: list[tuple]) -> None:
    # partition p has timestamps T0 + p*1e6 + i*1000: start at i=100 in partition 0, i=390 in 1, none in 2
    df = reader(spark, broker.bootstrap, subscribe="known",
                startingOffsetsByTimestamp=f'{{"known":{{"0":{T0 + 100_000},"1":{T0 + 1_390_000},"2":{T0 + 9_000_000}}}}}',
                startingOffsetsByTimestampStrategy="latest")
    counts = {r.partition: r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {0: 300, 1: 10}
    one = reader(spark, broker.bootstrap, subscribe="known", startingTimestamp=str(T0 + 1_000_000 + 399_000),
                 endingTimestamp=str(T0 + 2_000_000 + 2000), startingOffsetsByTimestampStrategy="latest")
    assert sorted((r.partition, r.offset) for r in one.collect()) == [(1, 399), (2, 0), (2, 1)]
    with pytest.raises(Exception, match="No offset matched"):
        reader(spark, broker.bootstrap, subscribe="known", startingTimestamp=str(T0 + 9_000_000)).count()


def test_assign_pattern_and_min_partitions(spark: Any, broker: Any, known: list[tuple]) -> None:
    df = reader(spark, broker.bootstrap, assign='{"known":[2]}')
    assert {r.partition for r in df.select("partition").distinct().collect()} == {2}
    assert df.count() == 400
    create_topic(broker.bootstrap, "known-other", partitions=1)
    produce_known(broker.bootstrap, "known-other", 1, 10)
    pat = reader(spark, broker.bootstrap, subscribePattern="known.*")
    assert {r.topic: r["count"] for r in pat.groupBy("topic").count().collect()} == {"known": 1200, "known-other": 10}
    split = reader(spark, broker.bootstrap, subscribe="known", minPartitions="9")
    assert split.rdd.getNumPartitions() == 9
    assert split.count() == 1200 and split.select("partition", "offset").distinct().count() == 1200


def test_deleted_records_fail_or_skip(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "trimmed", partitions=1)
    produce_known(broker.bootstrap, "trimmed", 1, 50)
    fs = admin(broker.bootstrap).delete_records([TopicPartition("trimmed", 0, 20)], request_timeout=15)
    for f in fs.values():
        f.result(20)
    # the log start offset is moved asynchronously on some brokers
    wait_until(lambda: reader(spark, broker.bootstrap, subscribe="trimmed").count() == 30, 10,
               "30 records after the deletion")
    from_zero = {"subscribe": "trimmed", "startingOffsets": '{"trimmed":{"0":0}}'}
    with pytest.raises(Exception) as info:
        reader(spark, broker.bootstrap, **from_zero).count()
    text = str(info.value)
    assert "DataLossError" in text and "trimmed" in text and "[0, 20)" in text and "failOnDataLoss" in text
    rows = reader(spark, broker.bootstrap, failOnDataLoss="false", **from_zero).select("offset").collect()
    assert sorted(r.offset for r in rows) == list(range(20, 50))


def test_option_errors_surface(spark: Any, broker: Any) -> None:
    with pytest.raises(Exception, match="One of the following options must be specified"):
        spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap).load().count()
    with pytest.raises(Exception, match="can't be latest for batch"):
        reader(spark, broker.bootstrap, subscribe="known", startingOffsets="latest").count()
