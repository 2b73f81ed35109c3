"""kafka.isolation.level and offsets that hold no record for the reader.

Transaction markers (control batches) take offsets that no consumer ever returns. Until the broker has a
transaction coordinator, the markers are written here as raw control batches; each range that ends on
one, or holds nothing else, must still finish, under read_uncommitted and read_committed, without a
timeout or a data-loss report. (Aborted records, skipped under read_committed, are covered by
test_transactions.py, which runs once the broker supports transactions.)
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from confluent_kafka import IsolationLevel  # noqa: E402
from kafka.protocol.producer import ProduceRequest  # noqa: E402

from odradek.protocol.records import build_batch  # noqa: E402
from odradek.spark.metadata import ClusterOffsets  # noqa: E402
from odradek.spark.options import parse_source_options  # noqa: E402
from tests.clients import create_topic  # noqa: E402
from tests.rawclient import RawClient  # noqa: E402

pytestmark = pytest.mark.timeout(240)
TOPIC = "gaps"
COMMIT_KEY = struct.pack(">hh", 0, 1)  # control record key: version 0, type 1 (commit)
MARKER_VALUE = struct.pack(">hi", 0, 0)  # version 0, coordinator epoch 0
DATA = {0: b"a0", 1: b"a1", 2: b"a2", 3: b"a3", 4: b"a4", 6: b"b0", 7: b"b1"}  # markers at 5, 8, 9, 10


def _append(port: int, batch: bytes) -> int:
    req = ProduceRequest[7](transactional_id=None, acks=1, timeout_ms=5000, topic_data=[
        ProduceRequest.TopicProduceData(name=TOPIC, partition_data=[
            ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
    with RawClient(port) as c:
        part = c.request(req, 7).responses[0].partition_responses[0]
    assert part.error_code == 0, part
    return int(part.base_offset)


def _marker() -> bytes:
    return build_batch([(COMMIT_KEY, MARKER_VALUE)], is_control=True, is_transactional=True)


@pytest.fixture(scope="module")
def gaps(broker: Any) -> str:
    create_topic(broker.bootstrap, TOPIC)
    assert _append(broker.port, build_batch([(None, DATA[i]) for i in range(5)])) == 0
    assert _append(broker.port, _marker()) == 5
    assert _append(broker.port, build_batch([(None, b"b0"), (None, b"b1")])) == 6
    for offset in (8, 9, 10):
        assert _append(broker.port, _marker()) == offset
    return TOPIC


def read(spark: Any, bootstrap: str, isolation: str, **opts: str) -> list[tuple[int, bytes]]:
    r = (spark.read.format("odradek").option("kafka.bootstrap.servers", bootstrap).option("subscribe", TOPIC)
         .option("kafka.isolation.level", isolation).option("kafkaConsumer.pollTimeoutMs", "30000"))
    for k, v in opts.items():
        r = r.option(k, v)
    return sorted((r.offset, bytes(r.value)) for r in r.load().select("offset", "value").collect())


def test_isolation_level_reaches_consumer_and_list_offsets() -> None:
    base = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}
    default = parse_source_options(base, streaming=False)
    assert default.isolation_level == "read_uncommitted"
    assert default.consumer_conf()["isolation.level"] == "read_uncommitted"
    assert ClusterOffsets(default.client).isolation == IsolationLevel.READ_UNCOMMITTED
    rc = parse_source_options({**base, "kafka.isolation.level": "READ_COMMITTED"}, streaming=True)
    assert rc.read_committed and rc.consumer_conf()["isolation.level"] == "read_committed"
    assert ClusterOffsets(rc.client).isolation == IsolationLevel.READ_COMMITTED
    with pytest.raises(ValueError, match="kafka.isolation.level"):
        parse_source_options({**base, "kafka.isolation.level": "serializable"}, streaming=False)


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_ranges_ending_on_or_made_of_markers_finish(spark: Any, broker: Any, gaps: str, isolation: str) -> None:
    everything = sorted(DATA.items())
    assert read(spark, broker.bootstrap, isolation) == everything  # the log ends with three markers
    # a range whose last offset is a marker, with records after it
    assert read(spark, broker.bootstrap, isolation, endingOffsets='{"gaps":{"0":6}}') == everything[:5]
    # one offset per range: four of the ranges hold only a marker
    assert read(spark, broker.bootstrap, isolation, maxRecordsPerPartition="1") == everything
    assert read(spark, broker.bootstrap, isolation, startingOffsets='{"gaps":{"0":8}}') == []


def test_streaming_read_committed_through_markers(spark: Any, broker: Any, gaps: str, tmp_path: Any) -> None:
    src = (spark.readStream.format("odradek").option("kafka.bootstrap.servers", broker.bootstrap)
           .option("subscribe", TOPIC).option("startingOffsets", "earliest")
           .option("kafka.isolation.level", "read_committed").option("maxOffsetsPerTrigger", "3")
           .option("kafkaConsumer.pollTimeoutMs", "30000").load())
    q = (src.selectExpr("offset", "value").writeStream.format("memory").queryName("gaps_rc")
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    assert q.awaitTermination(120)
    assert q.exception() is None
    got = sorted((r.offset, bytes(r.value)) for r in spark.sql("SELECT * FROM gaps_rc").collect())
    assert got == sorted(DATA.items())
