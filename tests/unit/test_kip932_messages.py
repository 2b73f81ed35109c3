"""The KIP-932 message classes (`odradek.protocol.kip932`) against the v1 wire layout librdkafka 2.16
writes and reads: field order, compact encodings, tagged-field trailers."""

from __future__ import annotations

import struct
import uuid

from odradek.protocol.framing import write_uvarint
from odradek.protocol.kip932 import (
    ShareAcknowledgeRequest,
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


def test_latest_version_is_v1() -> None:
    for cls in (ShareGroupHeartbeatRequest, ShareFetchRequest, ShareAcknowledgeRequest):
        assert cls.max_version == 1


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
