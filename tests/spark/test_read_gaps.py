"""kafka.isolation.level and offsets that hold no record for the reader.

Transaction markers (control batches) take offsets that no consumer ever returns. Two committed
transactions put markers at 5 and 8; two more commit markers of the same producer (written with
WriteTxnMarkers, as a coordinator or `odradek transactions abort` would) take 9 and 10. Each range that
ends on one, or holds nothing else, must still finish, under read_uncommitted and read_committed, without
a timeout or a data-loss report. (Aborted records, skipped under read_committed, are covered by
test_transactions.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed (pip install -e '.[spark]')")

from confluent_kafka import (
    IsolationLevel,  # noqa: E402
    Producer,  # noqa: E402
)
from kafka.protocol.admin.transactions import DescribeProducersRequest  # noqa: E402
from kafka.protocol.producer import WriteTxnMarkersRequest  # noqa: E402

from odradek.spark.metadata import ClusterOffsets  # noqa: E402
from odradek.spark.offsets import TP  # noqa: E402
from odradek.spark.options import parse_source_options  # noqa: E402
from tests.clients import create_topic  # noqa: E402
from tests.rawclient import RawClient  # noqa: E402
from tests.waiting import wait_until  # noqa: E402

pytestmark = pytest.mark.timeout(240)
TOPIC = "gaps"
DATA = {0: b"a0", 1: b"a1", 2: b"a2", 3: b"a3", 4: b"a4", 6: b"b0", 7: b"b1"}  # markers at 5, 8, 9, 10


def _markers(port: int, count: int) -> None:
    """`count` more commit markers of the partition's producer, written by its leader."""
    with RawClient(port) as c:
        described = c.request(DescribeProducersRequest(topics=[
            DescribeProducersRequest.TopicRequest(name=TOPIC, partition_indexes=[0])]), 0)
        producer = described.topics[0].partitions[0].active_producers[0]
        marker = WriteTxnMarkersRequest.WritableTxnMarker
        for _ in range(count):
            resp = c.request(WriteTxnMarkersRequest(markers=[marker(
                producer_id=producer.producer_id, producer_epoch=producer.producer_epoch, transaction_result=True,
                topics=[marker.WritableTxnMarkerTopic(name=TOPIC, partition_indexes=[0])],
                coordinator_epoch=max(producer.coordinator_epoch, 0))]), 1)
            assert resp.markers[0].topics[0].partitions[0].error_code == 0


@pytest.fixture(scope="module")
def gaps(broker: Any) -> str:
    create_topic(broker.bootstrap, TOPIC)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "gaps"})
    p.init_transactions(30)
    for offsets in (range(5), (6, 7)):
        p.begin_transaction()
        for i in offsets:
            p.produce(TOPIC, DATA[i], partition=0)
        p.commit_transaction(30)
    cluster = ClusterOffsets({"bootstrap.servers": broker.bootstrap, "isolation.level": "read_committed"})
    wait_until(lambda: cluster.latest([TP(TOPIC, 0)])[TP(TOPIC, 0)] == 9, 30, "the second commit marker")
    _markers(broker.port, 2)
    assert cluster.latest([TP(TOPIC, 0)])[TP(TOPIC, 0)] == 11
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
