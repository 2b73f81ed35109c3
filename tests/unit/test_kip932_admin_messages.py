"""The share-group offsets message classes (`odradek.protocol.kip932_admin`) against Kafka 4.2's wire
layout: DescribeShareGroupOffsets v0 and v1 (v1 adds each partition's Lag, KIP-1226, after LeaderEpoch),
AlterShareGroupOffsets' and DeleteShareGroupOffsets' top-level error before the per-topic results."""

from __future__ import annotations

import struct
import uuid

from odradek.protocol.framing import write_uvarint
from odradek.protocol.kip932_admin import (
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
)

_Group = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup
_Topic = _Group.DescribeShareGroupOffsetsResponseTopic
_Partition = _Topic.DescribeShareGroupOffsetsResponsePartition


def test_versions_are_kafka_4_2s() -> None:
    assert (DescribeShareGroupOffsetsRequest.min_version, DescribeShareGroupOffsetsRequest.max_version) == (0, 1)
    assert AlterShareGroupOffsetsRequest.max_version == 0


def test_describe_request_with_all_topics_is_a_null_array() -> None:
    req = DescribeShareGroupOffsetsRequest(groups=[
        DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup(group_id="g", topics=None)])
    assert req.encode(version=1) == write_uvarint(2) + b"\x02g" + b"\x00" + b"\x00" + b"\x00"


def _response(lag: int) -> DescribeShareGroupOffsetsResponse:
    return DescribeShareGroupOffsetsResponse(throttle_time_ms=0, groups=[_Group(
        group_id="g", error_code=0, error_message=None, topics=[_Topic(
            topic_name="t", topic_id=uuid.UUID(int=7), partitions=[_Partition(
                partition_index=0, start_offset=5, leader_epoch=2, lag=lag, error_code=0, error_message=None)])])])


def test_describe_response_v1_has_the_lag_after_the_leader_epoch() -> None:
    partition = struct.pack(">iqi", 0, 5, 2)
    v0, v1 = _response(9).encode(version=0), _response(9).encode(version=1)
    assert partition + struct.pack(">h", 0) in v0
    assert partition + struct.pack(">qh", 9, 0) in v1
    assert len(v1) == len(v0) + 8
    decoded = DescribeShareGroupOffsetsResponse.decode(v1, version=1)
    assert decoded.groups[0].topics[0].partitions[0].lag == 9


def test_alter_and_delete_responses_lead_with_the_group_error() -> None:
    alter = AlterShareGroupOffsetsResponse(throttle_time_ms=0, error_code=68, error_message=None, responses=[])
    assert alter.encode(version=0) == struct.pack(">ih", 0, 68) + b"\x00" + write_uvarint(1) + b"\x00"
    delete = DeleteShareGroupOffsetsResponse(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        DeleteShareGroupOffsetsResponse.DeleteShareGroupOffsetsResponseTopic(
            topic_name="t", topic_id=uuid.UUID(int=1), error_code=3, error_message=None)])
    assert delete.encode(version=0).endswith(b"\x02t" + uuid.UUID(int=1).bytes + struct.pack(">h", 3) + b"\x00\x00"
                                             + b"\x00")
