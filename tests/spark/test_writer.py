"""Batch and streaming writes with format("odradek") to a real broker, read back with a plain consumer."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from odradek.spark.features import supports_idempotence  # noqa: E402
from odradek.spark.producer import producer_conf  # noqa: E402
from tests.clients import consume_all, create_topic, produce  # noqa: E402

pytestmark = pytest.mark.timeout(240)


def murmur2(data: bytes) -> int:
    """The Java client's murmur2 hash (its default partitioner), as an unsigned 32-bit value."""
    m, h = 0x5BD1E995, 0x9747B28C ^ len(data)
    whole = len(data) & ~3
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[whole:]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h = ((h ^ tail[0]) * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    return h ^ (h >> 15)


def write(df: Any, bootstrap: str, **opts: str) -> None:
    w = df.write.format("odradek").option("kafka.bootstrap.servers", bootstrap).mode("append")
    for k, v in opts.items():
        w = w.option(k, v)
    w.save()


def test_broker_offers_idempotence_and_the_sink_uses_it(broker: Any) -> None:
    assert supports_idempotence({"bootstrap.servers": broker.bootstrap}) is True
    assert producer_conf({"bootstrap.servers": broker.bootstrap})["enable.idempotence"] is True
    assert producer_conf({"bootstrap.servers": broker.bootstrap, "enable.idempotence": "false"})[
        "enable.idempotence"] == "false"
    assert supports_idempotence({"bootstrap.servers": "127.0.0.1:1"}) is None


def test_batch_write_all_columns(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "w-all", partitions=3)
    rows = [(f"k{i}", f"v{i}".encode(), i % 3, [("h", f"{i}".encode())] if i % 2 else []) for i in range(300)]
    df = spark.createDataFrame(rows, "key string, value binary, partition int, "
                                     "headers array<struct<key:string,value:binary>>")
    write(df, broker.bootstrap, topic="w-all")
    got = consume_all(broker.bootstrap, "w-all", 300, partitions=3)
    assert len(got) == 300
    by_key = {m.key().decode(): m for m in got}
    for i in range(300):
        m = by_key[f"k{i}"]
        assert m.value() == f"v{i}".encode() and m.partition() == i % 3
        assert (m.headers() or []) == ([("h", f"{i}".encode())] if i % 2 else [])


def test_topic_column_and_java_compatible_key_partitioning(spark: Any, broker: Any) -> None:
    create_topic(broker.bootstrap, "w-a", partitions=4)
    create_topic(broker.bootstrap, "w-b", partitions=1)
    rows = [("w-a" if i % 2 else "w-b", f"key-{i}", f"val-{i}") for i in range(200)]
    write(spark.createDataFrame(rows, "topic string, key string, value string"), broker.bootstrap)
    a = consume_all(broker.bootstrap, "w-a", 100, partitions=4)
    assert len(a) == 100 and len(consume_all(broker.bootstrap, "w-b", 100)) == 100
    for m in a:  # same partition as the Java client's default partitioner (murmur2) would pick
        assert m.partition() == (murmur2(m.key()) & 0x7FFFFFFF) % 4


def test_sink_column_errors(spark: Any, broker: Any) -> None:
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        write(spark.createDataFrame([("x",)], "key string"), broker.bootstrap, topic="w-a")
    with pytest.raises(Exception, match="topic option required"):
        write(spark.createDataFrame([("x",)], "value string"), broker.bootstrap)
    with pytest.raises(Exception, match="value attribute type must be a string or binary"):
        write(spark.createDataFrame([(1,)], "value int"), broker.bootstrap, topic="w-a")
    with pytest.raises(Exception, match="Overwrite"):
        (spark.createDataFrame([("x",)], "value string").write.format("odradek")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "w-a").mode("overwrite").save())


def test_streaming_copy_between_topics(spark: Any, broker: Any, tmp_path: Any) -> None:
    create_topic(broker.bootstrap, "s-in", partitions=2)
    create_topic(broker.bootstrap, "s-out", partitions=2)
    produce(broker.bootstrap, "s-in", [f"m{i}".encode() for i in range(2000)])
    src = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
           .option("subscribe", "s-in").option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "600")
           .load())
    q = (src.selectExpr("key", "upper(CAST(value AS STRING)) AS value").writeStream.format("odradek")
         .option("kafka.bootstrap.servers", broker.bootstrap).option("topic", "s-out")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    assert q.exception() is None
    got = consume_all(broker.bootstrap, "s-out", 2000, partitions=2)
    assert sorted(m.value().decode() for m in got) == sorted(f"M{i}" for i in range(2000))
