"""Compressed bombs against the leader's record checks: a topic that makes the leader decode a client's records
(cleanup.policy=compact for the keys, compression.type other than producer for recompression, a
message.timestamp.*.max.ms bound for the timestamps) had each batch's records decompressed in one piece, as large
as they inflate: a zstd batch of a few kilobytes held 64 MiB of the broker's memory (and a megabyte of it could
ask for gigabytes). The leader now refuses, with INVALID_RECORD, a batch whose records inflate past
max(8 MiB, 4 x max.message.bytes), and keeps serving; ordinary compressed batches are unaffected."""

from __future__ import annotations

import time

import pytest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.records import COMPRESSION_GZIP, COMPRESSION_ZSTD, build_batch
from tests.clients import consume_all, create_topic, produce, unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient

BOMB_BYTES = 64 * 1024 * 1024


def produce_error(broker: BrokerProcess, topic: str, batch: bytes) -> tuple[int, str | None]:
    with RawClient(broker.port, timeout=60) as c:
        req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=topic, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=batch)])])
        part = c.request(req, version=9).responses[0].partition_responses[0]
    return part.error_code, part.error_message


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return build_batch([(b"k", bytes(BOMB_BYTES))], compression=COMPRESSION_ZSTD, timestamp=int(time.time() * 1000))


@pytest.mark.parametrize("config", [{"cleanup.policy": "compact"}, {"compression.type": "gzip"},
                                    {"message.timestamp.before.max.ms": "3600000"}],
                         ids=["compact", "recompress", "timestamps"])
def test_a_compressed_bomb_is_refused_not_inflated(broker: BrokerProcess, bomb: bytes, config: dict[str, str]) -> None:
    topic = unique_name("bomb")
    create_topic(broker.bootstrap, topic, config=config)
    assert len(bomb) < 64 * 1024
    code, message = produce_error(broker, topic, bomb)
    assert code == 87, (code, message)  # INVALID_RECORD (before: 0, the 64 MiB inflated and appended)
    assert message is not None and "decompress to more than" in message
    # ordinary compressed batches still go through every one of these checks
    ok = build_batch([(b"k%d" % i, b"v" * 1000) for i in range(100)], compression=COMPRESSION_GZIP,
                     timestamp=int(time.time() * 1000))
    assert produce_error(broker, topic, ok)[0] == 0
    produce(broker.bootstrap, topic, [b"after"], key=b"k")
    assert len(consume_all(broker.bootstrap, topic, 101)) == 101
