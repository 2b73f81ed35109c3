"""Malformed, truncated, oversized and corrupt input: a Kafka error code or a closed connection with a
logged reason; the broker keeps serving everyone else and nothing stored changes."""

from __future__ import annotations

import random
import struct
import uuid

import pytest
from kafka.protocol.admin import CreateTopicsRequest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.records import build_batch
from tests.clients import consume_all, create_topic, produce
from tests.harness import BrokerPool, BrokerProcess
from tests.rawclient import RawClient

MAX_REQUEST = 1_000_000


@pytest.fixture(scope="module")
def small_broker(module_brokers: BrokerPool) -> BrokerProcess:
    return module_brokers.start({"socket.request.max.bytes": str(MAX_REQUEST), "message.max.bytes": "100000"})


@pytest.fixture(scope="module")
def seeded(small_broker: BrokerProcess) -> str:
    """A topic with known content that every bad request below must leave untouched."""
    topic = "seeded-" + uuid.uuid4().hex[:6]
    create_topic(small_broker.bootstrap, topic)
    produce(small_broker.bootstrap, topic, [b"keep-%d" % i for i in range(20)])
    return topic


def _assert_intact(broker: BrokerProcess, topic: str) -> None:
    got = consume_all(broker.bootstrap, topic, 20)
    assert [m.value() for m in got] == [b"keep-%d" % i for i in range(20)]


def _produce_req(topic: str, records: bytes, version: int = 7) -> ProduceRequest:
    return ProduceRequest[version](
        transactional_id=None, acks=1, timeout_ms=5000,
        topic_data=[ProduceRequest.TopicProduceData(
            name=topic, partition_data=[ProduceRequest.TopicProduceData.PartitionProduceData(index=0, records=records)])],
    )


def _produce_error(broker: BrokerProcess, topic: str, records: bytes, version: int = 7) -> int:
    with RawClient(broker.port) as c:
        resp = c.request(_produce_req(topic, records, version), version)
    return resp.responses[0].partition_responses[0].error_code


def test_api_versions_unknown_version_gets_v0_error_response(small_broker: BrokerProcess) -> None:
    with RawClient(small_broker.port) as c:
        header = struct.pack(">hhih", 18, 99, 7, 4) + b"test"
        c.send_raw(struct.pack(">i", len(header)) + header)
        frame = c.recv_frame()
    corr, err = struct.unpack_from(">ih", frame, 0)
    assert corr == 7 and err == 35  # UNSUPPORTED_VERSION
    body = ApiVersionsResponse.decode(frame[4:], version=0)  # a v0 response listing what we support
    versions = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    assert set(versions) >= {0, 1, 2, 3, 18, 19}
    assert versions[18] == (0, 5)  # the client learns which ApiVersions to retry with


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_api_versions_each_version(small_broker: BrokerProcess, version: int) -> None:
    with RawClient(small_broker.port) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"), version)
    assert resp.error_code == 0
    produce_range = [k for k in resp.api_keys if k.api_key == 0][0]
    assert produce_range.min_version == 0  # advertised from v0, served from v3, as Kafka 4 (KAFKA-18659)


def test_unknown_api_key_closes_connection(small_broker: BrokerProcess, seeded: str) -> None:
    with RawClient(small_broker.port) as c:
        body = struct.pack(">hhih", 999, 0, 1, -1)
        c.send_raw(struct.pack(">i", len(body)) + body)
        assert c.is_closed_by_peer()
    assert "unknown API key 999" in small_broker.output()
    _assert_intact(small_broker, seeded)


def test_unsupported_version_closes_connection(small_broker: BrokerProcess) -> None:
    with RawClient(small_broker.port) as c:
        body = struct.pack(">hhih", 3, 77, 1, -1)
        c.send_raw(struct.pack(">i", len(body)) + body)
        assert c.is_closed_by_peer()
    assert "unsupported version 77 of Metadata" in small_broker.output()


def test_oversized_frame_is_refused(small_broker: BrokerProcess, seeded: str) -> None:
    with RawClient(small_broker.port) as c:
        c.send_raw(struct.pack(">i", MAX_REQUEST + 1) + b"\x00" * 100)
        assert c.is_closed_by_peer()
    assert "larger than socket.request.max.bytes" in small_broker.output()
    _assert_intact(small_broker, seeded)


def test_negative_frame_size(small_broker: BrokerProcess) -> None:
    with RawClient(small_broker.port) as c:
        c.send_raw(struct.pack(">i", -5))
        assert c.is_closed_by_peer()


def test_truncated_frame_then_disconnect(small_broker: BrokerProcess, seeded: str) -> None:
    with RawClient(small_broker.port) as c:
        c.send_raw(struct.pack(">i", 500) + b"\x00\x03\x00\x01")
    _assert_intact(small_broker, seeded)


def test_malformed_body_closes_connection(small_broker: BrokerProcess, seeded: str) -> None:
    with RawClient(small_broker.port) as c:
        body = struct.pack(">hhih", 3, 1, 1, -1) + b"\x7f\xff\xff\xff"  # 2^31 topics, then nothing
        c.send_raw(struct.pack(">i", len(body)) + body)
        assert c.is_closed_by_peer()
    _assert_intact(small_broker, seeded)


def test_corrupt_crc_is_rejected_and_nothing_stored(small_broker: BrokerProcess, seeded: str) -> None:
    batch = bytearray(build_batch([(None, b"evil")]))
    batch[-1] ^= 0xFF
    assert _produce_error(small_broker, seeded, bytes(batch)) == 2  # CORRUPT_MESSAGE
    _assert_intact(small_broker, seeded)


def test_truncated_batch_is_rejected(small_broker: BrokerProcess, seeded: str) -> None:
    batch = build_batch([(None, b"evil")])
    assert _produce_error(small_broker, seeded, batch[:-3]) == 2
    _assert_intact(small_broker, seeded)


def test_trailing_garbage_after_batch_is_rejected(small_broker: BrokerProcess, seeded: str) -> None:
    batch = build_batch([(None, b"ok")])
    assert _produce_error(small_broker, seeded, batch + b"\x00\x01\x02") == 2
    _assert_intact(small_broker, seeded)


@pytest.mark.parametrize("magic", [0, 1])
def test_old_message_format_is_rejected(small_broker: BrokerProcess, seeded: str, magic: int) -> None:
    batch = bytearray(build_batch([(None, b"old")]))
    batch[16] = magic
    code = _produce_error(small_broker, seeded, bytes(batch), version=3)
    assert code in (43, 2)  # UNSUPPORTED_FOR_MESSAGE_FORMAT (or CORRUPT_MESSAGE)
    _assert_intact(small_broker, seeded)


def test_record_over_message_max_bytes(small_broker: BrokerProcess, seeded: str) -> None:
    batch = build_batch([(None, b"x" * 200_000)])
    assert _produce_error(small_broker, seeded, batch) == 10  # MESSAGE_TOO_LARGE
    _assert_intact(small_broker, seeded)


def test_produce_to_unknown_topic(small_broker: BrokerProcess) -> None:
    assert _produce_error(small_broker, "no-such-topic-xyz", build_batch([(None, b"x")])) == 3


def test_invalid_topic_names(small_broker: BrokerProcess) -> None:
    with RawClient(small_broker.port) as c:
        topics = [CreateTopicsRequest.CreatableTopic(name=n, num_partitions=1, replication_factor=1,
                                                     assignments=[], configs=[])
                  for n in ("bad name", "a" * 250, "..", "bad/slash")]
        resp = c.request(CreateTopicsRequest(topics=topics, timeout_ms=5000, validate_only=False), 4)
    assert [t.error_code for t in resp.topics] == [17, 17, 17, 17]


def test_replication_factor_above_live_brokers(small_broker: BrokerProcess) -> None:
    with RawClient(small_broker.port) as c:
        topics = [CreateTopicsRequest.CreatableTopic(name="rf3-" + uuid.uuid4().hex[:6], num_partitions=1,
                                                     replication_factor=3, assignments=[], configs=[])]
        resp = c.request(CreateTopicsRequest(topics=topics, timeout_ms=5000, validate_only=False), 4)
    assert resp.topics[0].error_code == 38  # INVALID_REPLICATION_FACTOR


def test_random_garbage_frames_do_not_hurt(small_broker: BrokerProcess, seeded: str) -> None:
    rng = random.Random(1234)
    mark = len(small_broker.output())
    for _ in range(200):
        try:
            with RawClient(small_broker.port, timeout=2) as c:
                body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
                if rng.random() < 0.5 and len(body) >= 4:  # plausible header: known key and version
                    body = struct.pack(">hh", rng.choice([0, 1, 2, 3, 18, 19, 32]), rng.randrange(0, 12)) + body[4:]
                c.send_raw(struct.pack(">i", len(body)) + body)
                c.is_closed_by_peer(0.2)
        except OSError:
            pass
    with RawClient(small_broker.port) as c:
        resp = c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False), 9)
    assert any(t.name == seeded for t in resp.topics)
    assert "Unexpected error handling a request" not in small_broker.output()[mark:]  # no handler crashed
    _assert_intact(small_broker, seeded)


def _send_batch(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes, int | None]]) -> list[str]:
    """Produce `records` (key, value, timestamp) as one batch with librdkafka; each record's delivery error
    name ("" when delivered)."""
    from confluent_kafka import Producer

    errors: dict[bytes, str] = {}
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1000, "retries": 0, "enable.idempotence": False})
    for key, value, ts in records:
        p.produce(topic, value, key, timestamp=ts or 0,
                  on_delivery=lambda err, msg: errors.__setitem__(msg.value(), err.name() if err else ""))
    assert p.flush(30) == 0
    return [errors[value] for _, value, _ in records]


def test_invalid_records_are_named_in_the_batch(broker: BrokerProcess) -> None:
    """KIP-467: a batch refused for some of its records names them (batch_index, message); librdkafka
    fails those with the error and the rest with _INVALID_DIFFERENT_RECORD; nothing of it is written."""
    import time

    compacted = "kip467-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, compacted, config={"cleanup.policy": "compact"})
    # (librdkafka tells the records apart when the broker names more than one; with one it fails all alike)
    assert _send_batch(broker.bootstrap, compacted, [(b"k", b"a", None), (None, b"b", None), (None, b"c", None),
                                                     (b"k", b"d", None)]) == [
        "_INVALID_DIFFERENT_RECORD", "INVALID_RECORD", "INVALID_RECORD", "_INVALID_DIFFERENT_RECORD"]
    with RawClient(broker.port) as c:  # the response itself, for one keyless record
        req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=compacted, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=0, records=build_batch([(b"k", b"a"), (None, b"b"), (b"k", b"c")]))])])
        part = c.request(req, version=9).responses[0].partition_responses[0]
    message = f"Compacted topic cannot accept message without key in topic partition {compacted}-0."
    assert (part.error_code, part.error_message) == (87, message)
    assert [(e.batch_index, e.batch_index_error_message) for e in part.record_errors] == [(1, message)]

    strict = "kip467t-" + uuid.uuid4().hex[:6]
    create_topic(broker.bootstrap, strict, config={"message.timestamp.before.max.ms": "60000"})
    now = int(time.time() * 1000)
    assert _send_batch(broker.bootstrap, strict, [(None, b"x", now), (None, b"y", now - 86_400_000),
                                                  (None, b"z", now - 86_400_000), (None, b"w", now)]) == [
        "_INVALID_DIFFERENT_RECORD", "INVALID_RECORD", "INVALID_RECORD", "_INVALID_DIFFERENT_RECORD"]
    with RawClient(broker.port) as c:  # the partition's error is INVALID_TIMESTAMP, each record named
        req = ProduceRequest(transactional_id=None, acks=1, timeout_ms=30000, topic_data=[
            ProduceRequest.TopicProduceData(name=strict, partition_data=[
                ProduceRequest.TopicProduceData.PartitionProduceData(
                    index=0, records=build_batch([(None, b"old")], timestamp=now - 86_400_000))])])
        part = c.request(req, version=9).responses[0].partition_responses[0]
    assert part.error_code == 32 and [e.batch_index for e in part.record_errors] == [0]
    assert part.record_errors[0].batch_index_error_message.startswith(
        f"Timestamp {now - 86_400_000} of message with offset 0 is out of range. The timestamp should be within [")
    produce(broker.bootstrap, strict, [b"ok"])
    assert [m.value() for m in consume_all(broker.bootstrap, strict, 1)] == [b"ok"]  # the refused batch left nothing
