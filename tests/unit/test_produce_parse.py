"""The Produce fast path: requests encoded by kafka-python at v3, v8, v9 (the first flexible one), v12 and
v13 (topics named by id) parse into topics and partitions whose records are views into the frame, never copies; malformed bodies
(truncated anywhere, negative or huge counts, more partitions than the decoded-object budget) are
INVALID_REQUEST, not a crash or a huge allocation. The response encoder writes, at every version v3..v13,
exactly the bytes kafka-python's encoder does."""

from __future__ import annotations

import struct
import uuid

import pytest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.errors import ErrorCode, KafkaError
from odradek.protocol.framing import parse_request_header, write_uvarint
from odradek.protocol.produce import ProducePartitionResult, encode_produce_response, parse_produce_request
from odradek.protocol.records import build_batch

VERSIONS = [3, 8, 9, 12, 13]
TOPIC_IDS = {"orders": uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF), "audit": uuid.UUID(int=42),
             "t": uuid.UUID(int=7)}
BATCH_A = build_batch([(b"k1", b"v1"), (None, b"v2")])
BATCH_B = build_batch([(b"k3", b"x" * 500)], compression=0)
BATCH_C = build_batch([(b"k4", b"v4")])


def request_frame(version: int, transactional_id: str | None = "txn-1", acks: int = -1,
                  topics: list[tuple[str, list[tuple[int, bytes | None]]]] | None = None) -> tuple[memoryview, int]:
    """A Produce request (header and body) as kafka-python encodes it, and where its body starts."""
    topics = topics if topics is not None else [("orders", [(0, BATCH_A), (3, BATCH_B)]), ("audit", [(1, BATCH_C)])]
    data = ProduceRequest.TopicProduceData
    def topic_key(name: str) -> dict[str, object]:  # v13 names a topic by its id (KIP-516)
        return {"topic_id": TOPIC_IDS[name]} if version >= 13 else {"name": name}

    request = ProduceRequest[version](transactional_id=transactional_id, acks=acks, timeout_ms=1500, topic_data=[
        data(**topic_key(name), partition_data=[data.PartitionProduceData(index=i, records=r) for i, r in parts])
        for name, parts in topics])
    request.with_header(correlation_id=11, client_id="producer-1")
    frame = memoryview(bytes(request.encode(header=True)))
    return frame, parse_request_header(frame, flexible=version >= 9).body_offset


@pytest.mark.parametrize("version", VERSIONS)
def test_topics_partitions_and_records(version: int) -> None:
    frame, body = request_frame(version)
    parsed = parse_produce_request(frame, body, version)
    assert (parsed.transactional_id, parsed.acks, parsed.timeout_ms) == ("txn-1", -1, 1500)
    names = {tid.bytes: name for name, tid in TOPIC_IDS.items()}
    got = [(t.name if version < 13 else names[t.topic_id or b""],
            [(p.index, bytes(p.records) if p.records is not None else None) for p in t.partitions])
           for t in parsed.topics]
    assert got == [("orders", [(0, BATCH_A), (3, BATCH_B)]), ("audit", [(1, BATCH_C)])]
    assert all((t.topic_id is None) == (version < 13) and (t.name == "") == (version >= 13) for t in parsed.topics)


@pytest.mark.parametrize("version", VERSIONS)
def test_records_are_views_into_the_frame(version: int) -> None:
    frame, body = request_frame(version)
    records = parse_produce_request(frame, body, version).topics[0].partitions[1].records
    assert isinstance(records, memoryview) and records.obj is frame.obj
    start = bytes(frame).index(BATCH_B)
    assert bytes(frame[start : start + len(BATCH_B)]) == bytes(records)


@pytest.mark.parametrize("version", VERSIONS)
def test_null_transactional_id_null_records_and_acks(version: int) -> None:
    frame, body = request_frame(version, transactional_id=None, acks=0, topics=[("t", [(0, None)])])
    parsed = parse_produce_request(frame, body, version)
    assert (parsed.transactional_id, parsed.acks) == (None, 0)
    assert [(p.index, p.records) for p in parsed.topics[0].partitions] == [(0, None)]


@pytest.mark.parametrize("version", VERSIONS)
def test_empty_topic_list(version: int) -> None:
    frame, body = request_frame(version, topics=[])
    assert parse_produce_request(frame, body, version).topics == []


@pytest.mark.parametrize("version", VERSIONS)
def test_every_truncation_is_an_invalid_request(version: int) -> None:
    frame, body = request_frame(version)
    for end in range(body, len(frame)):
        with pytest.raises(KafkaError) as info:
            parse_produce_request(frame[:end], body, version)
        assert info.value.code == ErrorCode.INVALID_REQUEST, end


def _classic_body(topic_count: bytes, partition_count: bytes = struct.pack(">i", 1)) -> memoryview:
    """A v3..v8 body: null transactional id, acks, timeout, then the given counts and one partition."""
    return memoryview(struct.pack(">hhi", -1, 1, 1000) + topic_count + struct.pack(">h", 1) + b"t"
                      + partition_count + struct.pack(">ii", 0, len(BATCH_A)) + BATCH_A)


def _flexible_body(topic_count: bytes, partition_count: bytes = write_uvarint(2)) -> memoryview:
    """A v9+ body with compact counts (N + 1) and empty tagged fields."""
    return memoryview(b"\x00" + struct.pack(">hi", 1, 1000) + topic_count + write_uvarint(2) + b"t"
                      + partition_count + struct.pack(">i", 0) + write_uvarint(len(BATCH_A) + 1) + BATCH_A
                      + b"\x00\x00\x00")


def test_the_hand_made_bodies_are_valid() -> None:
    classic = parse_produce_request(_classic_body(struct.pack(">i", 1)), 0, 8)
    flexible = parse_produce_request(_flexible_body(write_uvarint(2)), 0, 9)
    for parsed in (classic, flexible):
        assert [(t.name, [(p.index, bytes(p.records or b"")) for p in t.partitions]) for t in parsed.topics] == [
            ("t", [(0, BATCH_A)])]


@pytest.mark.parametrize("body", [
    _classic_body(struct.pack(">i", -1)),  # a null topic array
    _classic_body(struct.pack(">i", -7)),
    _classic_body(struct.pack(">i", 1), struct.pack(">i", -2)),  # negative partition count
    _flexible_body(write_uvarint(0)),  # compact null topic array
    _flexible_body(write_uvarint(2), write_uvarint(0)),  # compact null partition array
], ids=["null-topics", "negative-topics", "negative-partitions", "compact-null-topics", "compact-null-partitions"])
def test_negative_counts_are_invalid_requests(body: memoryview) -> None:
    version = 9 if body[0] == 0 else 8
    with pytest.raises(KafkaError) as info:
        parse_produce_request(body, 0, version)
    assert info.value.code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(("version", "body"), [
    (8, _classic_body(struct.pack(">i", 2**31 - 1))),
    (8, _classic_body(struct.pack(">i", 1), struct.pack(">i", 2**31 - 1))),
    (9, _flexible_body(write_uvarint(2**32))),
    (9, _flexible_body(write_uvarint(2), write_uvarint(2**35 - 1))),
    (8, memoryview(struct.pack(">hhi", 0x7FFF, 1, 1000))),  # a transactional id longer than the request
    (9, memoryview(write_uvarint(2**35 - 1) + b"x")),
], ids=["topics", "partitions", "compact-topics", "compact-partitions", "string", "compact-string"])
def test_huge_counts_are_invalid_requests_without_allocating(version: int, body: memoryview) -> None:
    with pytest.raises(KafkaError) as info:
        parse_produce_request(body, 0, version)
    assert info.value.code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("version", [8, 12])
def test_thousands_of_partitions_parse(version: int) -> None:
    topics = [(f"topic-{t}", [(p, BATCH_C) for p in range(50)]) for t in range(100)]
    frame, body = request_frame(version, topics=topics)
    parsed = parse_produce_request(frame, body, version)
    assert sum(len(t.partitions) for t in parsed.topics) == 5000
    assert parsed.topics[-1].partitions[-1].index == 49


@pytest.mark.parametrize("version", [8, 12])
def test_more_partitions_than_the_object_budget_is_an_invalid_request(version: int) -> None:
    # 400,000 partitions with null records (8 or 6 bytes each): 1.2 million objects, refused before any is built
    count = 400_000
    if version >= 9:
        body = (b"\x00" + struct.pack(">hi", 1, 1000) + write_uvarint(2) + write_uvarint(2) + b"t"
                + write_uvarint(count + 1) + (struct.pack(">i", 0) + b"\x00\x00") * count + b"\x00\x00")
    else:
        body = (struct.pack(">hhi", -1, 1, 1000) + struct.pack(">ih", 1, 1) + b"t" + struct.pack(">i", count)
                + struct.pack(">ii", 0, -1) * count)
    with pytest.raises(KafkaError, match="would decode into more than") as info:
        parse_produce_request(memoryview(body), 0, version)
    assert info.value.code == ErrorCode.INVALID_REQUEST


def test_a_topic_name_longer_than_32767_bytes_is_an_invalid_request() -> None:
    name = b"t" * 32768
    body = (b"\x00" + struct.pack(">hi", 1, 1000) + write_uvarint(2) + write_uvarint(len(name) + 1) + name
            + write_uvarint(1) + b"\x00\x00")
    with pytest.raises(KafkaError, match="longer than 32767") as info:
        parse_produce_request(memoryview(body), 0, 9)
    assert info.value.code == ErrorCode.INVALID_REQUEST


# ---- the response ------------------------------------------------------------------------------------

def _kafka_python_response(version: int, results: list[ProducePartitionResult], key: str | bytes,
                           throttle: int) -> bytes:
    from kafka.protocol.producer import ProduceResponse

    topic = ProduceResponse.TopicProduceResponse
    part = topic.PartitionProduceResponse
    parts = [part(index=p.index, error_code=p.error_code, base_offset=p.base_offset,
                  log_append_time_ms=p.log_append_time, log_start_offset=p.log_start_offset,
                  error_message=p.error_message,
                  record_errors=[part.BatchIndexAndErrorMessage(batch_index=i, batch_index_error_message=m)
                                 for i, m in p.record_errors or ()])
             for p in results]
    t = (topic(name=key, partition_responses=parts) if isinstance(key, str)
         else topic(name="", topic_id=uuid.UUID(bytes=key), partition_responses=parts))
    msg = ProduceResponse(responses=[t], throttle_time_ms=throttle)
    return bytes(msg.encode(version=version))


@pytest.mark.parametrize("version", range(3, 14))
def test_the_response_is_byte_for_byte_kafka_pythons(version: int) -> None:
    results = [
        ProducePartitionResult(0, 0, 1234, -1, 17),
        ProducePartitionResult(4, 0, 2**40, 1_700_000_000_000, 0),
        ProducePartitionResult(2, 87, -1, -1, -1, "One or more records have been rejected",
                               [(0, "bad key"), (3, None)]),
        ProducePartitionResult(5, 6, -1, -1, -1, None),
    ]
    key: str | bytes = bytes(range(16)) if version >= 13 else "orders-ü"
    mine = b"".join(encode_produce_response(version, 42, [(key, results)], throttle_time_ms=25))
    header = len(b"\x00\x00\x00\x2a") + (1 if version >= 9 else 0)  # correlation id (+ tagged fields)
    assert mine[:4] == (42).to_bytes(4, "big")
    assert mine[header:] == _kafka_python_response(version, results, key, 25)
