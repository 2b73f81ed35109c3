"""The replica fetcher's hand-written Fetch v12 (odradek.protocol.replica_fetch) against kafka-python's
message classes: the request bytes are the same, and responses built by the broker's own encoder or by
kafka-python parse to the same fields, records as views of the frame; garbage is a MalformedResponse."""

from __future__ import annotations

import pytest
from kafka.protocol.consumer import FetchRequest, FetchResponse

from odradek.protocol import replica_fetch
from odradek.protocol.client import ClientCodec, MalformedResponse
from odradek.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from odradek.protocol.replica_fetch import FetchPosition

_T = FetchRequest.FetchTopic
_P = _T.FetchPartition


def kafka_python_request() -> FetchRequest:
    return FetchRequest(
        replica_id=2, max_wait_ms=500, min_bytes=1, max_bytes=10 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, forgotten_topics_data=[], rack_id="",
        topics=[
            _T(topic="orders", partitions=[
                _P(partition=0, current_leader_epoch=7, fetch_offset=1234, last_fetched_epoch=6,
                   log_start_offset=10, partition_max_bytes=1 << 20),
                _P(partition=3, current_leader_epoch=7, fetch_offset=0, last_fetched_epoch=-1,
                   log_start_offset=0, partition_max_bytes=1 << 20),
            ]),
            _T(topic="zahlungen-ü", partitions=[
                _P(partition=1, current_leader_epoch=2, fetch_offset=2**40, last_fetched_epoch=2,
                   log_start_offset=2**39, partition_max_bytes=5)]),
        ])


def positions() -> list[tuple[str, list[FetchPosition]]]:
    return [
        ("orders", [FetchPosition(0, 7, 1234, 6, 10, 1 << 20), FetchPosition(3, 7, 0, -1, 0, 1 << 20)]),
        ("zahlungen-ü", [FetchPosition(1, 2, 2**40, 2, 2**39, 5)]),
    ]


def test_the_request_is_byte_for_byte_kafka_pythons() -> None:
    body = replica_fetch.encode_request(2, 500, 1, 10 << 20, positions())
    assert bytes(body) == bytes(kafka_python_request().encode(version=12))


def test_a_raw_request_has_the_same_frame_as_a_kafka_python_request() -> None:
    body = replica_fetch.encode_request(2, 500, 1, 10 << 20, positions())
    raw = ClientCodec("broker-2-fetcher-0").send_raw(replica_fetch.API_KEY, 12, True, body)
    assert raw == ClientCodec("broker-2-fetcher-0").send(kafka_python_request(), 12)


def test_the_codec_answers_a_raw_request_with_the_undecoded_body() -> None:
    codec = ClientCodec("f")
    codec.send_raw(replica_fetch.API_KEY, 12, True, b"")
    chunks = encode_fetch_response(12, codec.correlation_id, [
        FetchTopicResult("orders", partitions=[FetchPartitionResult(0, 0, 5, 5, 0, b"RECORDS")])])
    frame = b"".join(bytes(c) for c in chunks)
    (response,) = codec.feed(len(frame).to_bytes(4, "big") + frame)
    parsed = replica_fetch.parse_response(response.message)
    assert parsed.topics[0][1][0].records is not None
    assert bytes(parsed.topics[0][1][0].records) == b"RECORDS"
    assert codec.waiting == 0


def _body_of(chunks: list[bytes | memoryview]) -> memoryview:
    return memoryview(b"".join(bytes(c) for c in chunks))[5:]  # correlation id, header tagged fields


def test_responses_of_the_brokers_own_encoder_parse() -> None:
    records = bytes(range(256)) * 40
    chunks = encode_fetch_response(12, 99, [
        FetchTopicResult("orders", partitions=[
            FetchPartitionResult(0, 0, 100, 90, 3, records, aborted=[(7, 50), (8, 60)]),
            FetchPartitionResult(3, 0, 200, 200, 0, b"", diverging_epoch=(4, 150)),
            FetchPartitionResult(5, 74, -1, -1, -1, None),  # FENCED_LEADER_EPOCH
        ]),
        FetchTopicResult("other", partitions=[FetchPartitionResult(1, 0, 0, 0, 0, b"", current_leader=(2, 9))]),
    ], session_id=0)
    parsed = replica_fetch.parse_response(_body_of(chunks))
    assert parsed.error_code == 0
    (name, parts), (other, [o]) = parsed.topics
    assert (name, other) == ("orders", "other")
    p0, p3, p5 = parts
    assert (p0.partition, p0.error_code, p0.high_watermark, p0.last_stable_offset, p0.log_start_offset) == \
        (0, 0, 100, 90, 3)
    assert isinstance(p0.records, memoryview) and bytes(p0.records) == records
    assert p0.diverging_epoch is None
    assert p3.diverging_epoch == (4, 150) and p3.records is not None and len(p3.records) == 0
    assert (p5.partition, p5.error_code) == (5, 74)
    assert (o.partition, o.diverging_epoch) == (1, None)  # other tags skipped


def test_responses_of_kafka_python_parse() -> None:
    _RT = FetchResponse.FetchableTopicResponse
    _RP = _RT.PartitionData
    msg = FetchResponse(throttle_time_ms=5, error_code=0, session_id=0, responses=[
        _RT(topic="orders", partitions=[
            _RP(partition_index=2, error_code=0, high_watermark=10, last_stable_offset=10, log_start_offset=1,
                aborted_transactions=None, preferred_read_replica=-1, records=b"abc",
                diverging_epoch=_RP.EpochEndOffset(epoch=3, end_offset=8)),
        ])])
    parsed = replica_fetch.parse_response(memoryview(bytes(msg.encode(version=12))))
    ((name, (p,)),) = parsed.topics
    assert name == "orders"
    assert (p.partition, p.high_watermark, p.log_start_offset, p.diverging_epoch) == (2, 10, 1, (3, 8))
    assert p.records is not None and bytes(p.records) == b"abc"


def test_a_top_level_error_is_reported() -> None:
    chunks = encode_fetch_response(12, 1, [], error_code=70)
    assert replica_fetch.parse_response(_body_of(chunks)).error_code == 70


@pytest.mark.parametrize("cut", [1, 7, 12, 20, 40, 60])
def test_a_truncated_response_is_malformed(cut: int) -> None:
    chunks = encode_fetch_response(12, 1, [
        FetchTopicResult("orders", partitions=[FetchPartitionResult(0, 0, 5, 5, 0, b"x" * 50)])])
    body = _body_of(chunks)
    with pytest.raises(MalformedResponse):
        replica_fetch.parse_response(body[:cut])
