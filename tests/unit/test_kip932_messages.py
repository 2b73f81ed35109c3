"""The KIP-932 message classes (`odradek.protocol.kip932`) against the v1 wire layout librdkafka 2.16
writes and reads: field order, compact encodings, tagged-field trailers; and ShareFetch/ShareAcknowledge
v2 (Kafka 4.2: ShareAcquireMode and IsRenewAck after BatchSize, IsRenewAck after ShareSessionEpoch,
AcquisitionLockTimeoutMs after ErrorMessage in the ShareAcknowledge answer), their round trips and the
decoder's clean refusal of every truncated body."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from odradek.protocol.framing import write_uvarint
from odradek.protocol.kip932 import (
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    b = s.encode()
    return write_uvarint(len(b) + 1) + b


def test_latest_versions() -> None:
    assert ShareGroupHeartbeatRequest.max_version == 1
    for cls in (ShareFetchRequest, ShareFetchResponse, ShareAcknowledgeRequest, ShareAcknowledgeResponse):
        assert cls.max_version == 2


def test_share_fetch_request_v1_layout() -> None:
    tid = uuid.uuid4()
    body = (_cstr("g") + _cstr("m") + struct.pack(">iiiiii", 3, 500, 1, 52428800, 500, 500)
            + write_uvarint(2) + tid.bytes + write_uvarint(2)
            + struct.pack(">i", 0) + write_uvarint(2) + struct.pack(">qq", 5, 7) + write_uvarint(4) + bytes([1, 0, 3])
            + b"\x00" + b"\x00" + b"\x00"
            + write_uvarint(1) + b"\x00")
    req = ShareFetchRequest.decode(body, version=1)
    assert (req.group_id, req.member_id, req.share_session_epoch, req.max_records, req.batch_size) == ("g", "m", 3,
                                                                                                         500, 500)
    (topic,) = req.topics
    assert topic.topic_id == tid
    (part,) = topic.partitions
    (batch,) = part.acknowledgement_batches
    assert (batch.first_offset, batch.last_offset, list(batch.acknowledge_types)) == (5, 7, [1, 0, 3])


def test_share_fetch_response_round_trip() -> None:
    tid = uuid.uuid4()
    part_cls = ShareFetchResponse.ShareFetchableTopicResponse.PartitionData
    resp = ShareFetchResponse(
        throttle_time_ms=0, error_code=0, error_message=None, acquisition_lock_timeout_ms=30000,
        responses=[ShareFetchResponse.ShareFetchableTopicResponse(topic_id=tid, partitions=[part_cls(
            partition_index=0, error_code=0, error_message=None, acknowledge_error_code=0,
            acknowledge_error_message=None, current_leader=part_cls.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1),
            records=b"abc", acquired_records=[part_cls.AcquiredRecords(first_offset=0, last_offset=2,
                                                                       delivery_count=1)])])],
        node_endpoints=[])
    raw = resp.encode(version=1)
    # throttle, error, null message, then the lock timeout
    assert raw[:11] == struct.pack(">ih", 0, 0) + b"\x00" + struct.pack(">i", 30000)
    back = ShareFetchResponse.decode(raw, version=1)
    got = back.responses[0].partitions[0]
    assert bytes(got.records) == b"abc"
    assert (got.acquired_records[0].last_offset, got.acquired_records[0].delivery_count) == (2, 1)


def test_heartbeat_null_subscription_and_assignment() -> None:
    body = _cstr("g") + _cstr("") + struct.pack(">i", 0) + _cstr(None) + b"\x00" + b"\x00"
    req = ShareGroupHeartbeatRequest.decode(body, version=1)
    assert req.subscribed_topic_names is None and req.rack_id is None
    resp = ShareGroupHeartbeatResponse(throttle_time_ms=0, error_code=0, error_message=None, member_id="m",
                                       member_epoch=1, heartbeat_interval_ms=5000, assignment=None)
    assert ShareGroupHeartbeatResponse.decode(resp.encode(version=1), version=1).assignment is None


# ---- v2 (Kafka 4.2: KIP-1206 acquire mode, KIP-1222 acquisition-lock renewal) ----
def _ack_topic(tid: uuid.UUID) -> bytes:
    """One topic, one partition (0), one batch 5-7 acknowledged RENEW (4), each with an empty tag trailer."""
    return (write_uvarint(2) + tid.bytes + write_uvarint(2)
            + struct.pack(">i", 0) + write_uvarint(2) + struct.pack(">qq", 5, 7) + write_uvarint(2) + bytes([4])
            + b"\x00" + b"\x00" + b"\x00")


def test_share_fetch_request_v2_layout() -> None:
    tid = uuid.uuid4()
    body = (_cstr("g") + _cstr("m") + struct.pack(">iiiiii", 3, 0, 0, 0, 0, 0)
            + bytes([1, 1])  # ShareAcquireMode record-limit, IsRenewAck true
            + _ack_topic(tid) + write_uvarint(1) + b"\x00")
    req = ShareFetchRequest.decode(body, version=2)
    assert (req.share_acquire_mode, req.is_renew_ack, req.max_records, req.batch_size) == (1, True, 0, 0)
    batch = req.topics[0].partitions[0].acknowledgement_batches[0]
    assert (batch.first_offset, batch.last_offset, list(batch.acknowledge_types)) == (5, 7, [4])
    assert bytes(ShareFetchRequest(
        group_id="g", member_id="m", share_session_epoch=3, max_wait_ms=0, min_bytes=0, max_bytes=0, max_records=0,
        batch_size=0, share_acquire_mode=1, is_renew_ack=True, topics=req.topics,
        forgotten_topics_data=[]).encode(version=2)) == body


def test_share_acknowledge_request_v2_layout() -> None:
    tid = uuid.uuid4()
    body = _cstr("g") + _cstr("m") + struct.pack(">i", 4) + b"\x01" + _ack_topic(tid) + b"\x00"
    req = ShareAcknowledgeRequest.decode(body, version=2)
    assert (req.share_session_epoch, req.is_renew_ack, req.topics[0].topic_id) == (4, True, tid)
    assert bytes(ShareAcknowledgeRequest(group_id="g", member_id="m", share_session_epoch=4, is_renew_ack=True,
                                         topics=req.topics).encode(version=2)) == body


def test_share_acknowledge_response_v2_has_the_lock_timeout() -> None:
    resp = ShareAcknowledgeResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                    acquisition_lock_timeout_ms=15000, responses=[], node_endpoints=[])
    raw = bytes(resp.encode(version=2))
    assert raw == struct.pack(">ih", 0, 0) + b"\x00" + struct.pack(">i", 15000) + b"\x01\x01\x00"
    assert ShareAcknowledgeResponse.decode(raw, version=2).acquisition_lock_timeout_ms == 15000
    assert bytes(resp.encode(version=1)) == struct.pack(">ih", 0, 0) + b"\x00" + b"\x01\x01\x00"  # not in v1


def test_share_fetch_response_v2_is_v1s_layout() -> None:
    resp = ShareFetchResponse(throttle_time_ms=0, error_code=0, error_message=None, acquisition_lock_timeout_ms=30000,
                              responses=[], node_endpoints=[])
    assert bytes(resp.encode(version=2)) == bytes(resp.encode(version=1))


def _v2_requests() -> list[Any]:
    tid = uuid.uuid4()
    fetch_batch = ShareFetchRequest.FetchTopic.FetchPartition.AcknowledgementBatch
    ack_part = ShareAcknowledgeRequest.AcknowledgeTopic.AcknowledgePartition
    return [
        ShareFetchRequest(
            group_id="g", member_id="m", share_session_epoch=2, max_wait_ms=500, min_bytes=1, max_bytes=1 << 20,
            max_records=3, batch_size=3, share_acquire_mode=1, is_renew_ack=False,
            topics=[ShareFetchRequest.FetchTopic(topic_id=tid, partitions=[ShareFetchRequest.FetchTopic.FetchPartition(
                partition_index=1, acknowledgement_batches=[fetch_batch(first_offset=0, last_offset=2,
                                                                        acknowledge_types=[1, 2, 3])])])],
            forgotten_topics_data=[ShareFetchRequest.ForgottenTopic(topic_id=tid, partitions=[0])]),
        ShareAcknowledgeRequest(
            group_id="g", member_id="m", share_session_epoch=7, is_renew_ack=True,
            topics=[ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=tid, partitions=[ack_part(
                partition_index=0, acknowledgement_batches=[ack_part.AcknowledgementBatch(
                    first_offset=9, last_offset=9, acknowledge_types=[4])])])]),
    ]


@pytest.mark.parametrize("request_", _v2_requests(), ids=lambda r: type(r).__name__)
def test_v2_requests_round_trip_and_refuse_every_truncation(request_: Any) -> None:
    """What the dispatcher does with a body (`Api.decode`: validated against the schema, then decoded):
    the whole body comes back as sent, and every strict prefix is refused with the decoder's own clean
    error, never read past its end."""
    from odradek.protocol.validate import MalformedRequest
    from odradek.server.dispatcher import APIS

    api = APIS[request_.API_KEY]
    body = bytes(request_.encode(version=2))
    assert api.decode(2, memoryview(body)) == request_
    for cut in range(len(body)):
        with pytest.raises(MalformedRequest):
            api.decode(2, memoryview(body[:cut]))
