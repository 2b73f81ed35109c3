"""The `odradek` source reading a topic with an open transaction: read_committed ends at the last stable
offset (skipping aborted records and markers), read_uncommitted reads everything."""

from __future__ import annotations

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
