"""The `odradek` source and sink with transactions, against a real broker: read_committed reads skip
aborted records and markers and end at the last stable offset; a transactional sink's failed task leaves
nothing a read_committed reader sees; and format("odradek") works in a fresh SparkSession with no
register call (the `pyspark_odradek` module Spark 4 finds by itself)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import uuid
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402

from tests.clients import create_topic  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def _committed(bootstrap: str, topic: str, partitions: int = 1) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "isolation.level": "read_committed",
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out, eof = [], set()
    try:
        while len(eof) < partitions:
            m = c.poll(10)
            assert m is not None, "read_committed reader stalled"
            if m.error():
                eof.add(m.partition())
            else:
                out.append(m.value())
    finally:
        c.close()
    return out


def test_read_committed_batch_read_skips_aborted_and_open_transactions(spark: Any, broker: Any) -> None:
    topic = f"sp-rc-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"sp-{topic}"})
    p.init_transactions(30)
    for values, commit in (([b"c1", b"c2"], True), ([b"a1", b"a2", b"a3"], False), ([b"c3"], True)):
        p.begin_transaction()
        for v in values:
            p.produce(topic, v)
        p.flush(30)
        if commit:
            p.commit_transaction(30)
        else:
            p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"open")  # still open while Spark reads: held back with everything after it
    p.flush(30)
    try:
        def read(isolation: str) -> list[bytes]:
            df = (spark.read.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
                  .option("subscribe", topic).option("kafka.isolation.level", isolation).load())
            return [bytes(r.value) for r in df.orderBy("offset").collect()]

        assert read("read_committed") == [b"c1", b"c2", b"c3"]
        assert read("read_uncommitted") == [b"c1", b"c2", b"a1", b"a2", b"a3", b"c3", b"open"]
    finally:
        p.abort_transaction(30)


def test_transactional_sink_leaves_nothing_of_a_failed_task(spark: Any, broker: Any) -> None:
    from pyspark.sql.functions import udf

    good, bad = f"sp-ok-{uuid.uuid4().hex[:6]}", f"sp-bad-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, good)
    create_topic(broker.bootstrap, bad)
    df = spark.range(0, 200, numPartitions=2).selectExpr("cast(cast(id as string) as binary) as value")
    (df.write.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", good)
     .option("transactionalIdPrefix", f"tx-{good}").mode("append").save())
    assert sorted(int(v) for v in _committed(broker.bootstrap, good)) == list(range(200))

    @udf("binary")
    def explode_late(v: bytes) -> bytes:
        if v == b"150":
            raise ValueError("a task failing after it sent records")
        return v

    failing = spark.range(0, 200, numPartitions=1).selectExpr("cast(cast(id as string) as binary) as value")
    failing = failing.select(explode_late("value").alias("value"))
    with pytest.raises(Exception, match="a task failing"):
        (failing.write.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap).option("topic", bad)
         .option("transactionalIdPrefix", f"tx-{bad}").option("kafka.linger.ms", "0").mode("append").save())
    assert _committed(broker.bootstrap, bad) == []


def test_format_odradek_needs_no_register_call(broker: Any, tmp_path: Any) -> None:
    """A fresh SparkSession (its own JVM) never told about the source finds it through pyspark_odradek."""
    topic = f"sp-auto-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic)
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(5):
        p.produce(topic, b"r%d" % i)
    p.flush(10)
    script = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        spark = (SparkSession.builder.master("local[1]").appName("auto-register")
                 .config("spark.ui.enabled", "false").getOrCreate())
        try:
            df = (spark.read.format("odradek").option("kafka.bootstrap.servers", "{broker.bootstrap}")
                  .option("subscribe", "{topic}").load())
            print("ROWS", df.count())
        finally:
            spark.stop()
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert "ROWS 5" in r.stdout, r.stdout[-2000:] + r.stderr[-3000:]
