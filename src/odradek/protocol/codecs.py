"""API key/version -> request/response classes, and the ApiVersions table of what Odradek supports.

Control-plane requests and responses are encoded by kafka-python's schema-generated message classes;
Produce requests and Fetch responses have hand-written fast paths (produce.py, fetch.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    AlterConfigsResponse,
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    ElectLeadersRequest,
    ElectLeadersResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    ListGroupsRequest,
    ListGroupsResponse,
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.group import OffsetDeleteRequest, OffsetDeleteResponse
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kafka.protocol.producer import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ProduceRequest,
    ProduceResponse,
)

from odradek.protocol.errors import ErrorCode, KafkaError


@dataclass(frozen=True, slots=True)
class ApiSpec:
    api_key: int
    name: str
    min_version: int
    max_version: int
    request: type[ApiMessage]
    response: type[ApiMessage]

    def flexible(self, version: int) -> bool:
        return self.request.flexible_version_q(version)

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def _spec(req: type[ApiMessage], resp: type[ApiMessage], lo: int, hi: int) -> ApiSpec:
    return ApiSpec(req.API_KEY, req.name.removesuffix("Request"), lo, hi, req, resp)


# Everything a broker may be asked; `enable()` switches an API on once its handler exists.
KNOWN_APIS: dict[int, ApiSpec] = {
    s.api_key: s
    for s in (
        _spec(ProduceRequest, ProduceResponse, 3, 12),
        _spec(FetchRequest, FetchResponse, 4, 16),
        _spec(ListOffsetsRequest, ListOffsetsResponse, 1, 8),
        _spec(MetadataRequest, MetadataResponse, 0, 12),
        _spec(OffsetCommitRequest, OffsetCommitResponse, 2, 9),
        _spec(OffsetFetchRequest, OffsetFetchResponse, 1, 9),
        _spec(FindCoordinatorRequest, FindCoordinatorResponse, 0, 5),
        _spec(JoinGroupRequest, JoinGroupResponse, 0, 9),
        _spec(HeartbeatRequest, HeartbeatResponse, 0, 4),
        _spec(LeaveGroupRequest, LeaveGroupResponse, 0, 5),
        _spec(SyncGroupRequest, SyncGroupResponse, 0, 5),
        _spec(DescribeGroupsRequest, DescribeGroupsResponse, 0, 5),
        _spec(ListGroupsRequest, ListGroupsResponse, 0, 4),
        _spec(ApiVersionsRequest, ApiVersionsResponse, 0, 4),
        _spec(CreateTopicsRequest, CreateTopicsResponse, 2, 7),
        _spec(DeleteTopicsRequest, DeleteTopicsResponse, 1, 6),
        _spec(DeleteRecordsRequest, DeleteRecordsResponse, 0, 2),
        _spec(InitProducerIdRequest, InitProducerIdResponse, 0, 4),
        _spec(OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, 2, 4),
        _spec(DescribeConfigsRequest, DescribeConfigsResponse, 1, 4),
        _spec(AlterConfigsRequest, AlterConfigsResponse, 0, 2),
        _spec(CreatePartitionsRequest, CreatePartitionsResponse, 0, 3),
        _spec(DeleteGroupsRequest, DeleteGroupsResponse, 0, 2),
        _spec(ElectLeadersRequest, ElectLeadersResponse, 0, 2),
        _spec(IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, 0, 1),
        _spec(AlterPartitionReassignmentsRequest, AlterPartitionReassignmentsResponse, 0, 1),
        _spec(ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse, 0, 0),
        _spec(DescribeClusterRequest, DescribeClusterResponse, 0, 1),
        _spec(OffsetDeleteRequest, OffsetDeleteResponse, 0, 0),
    )
}


def decode_request(spec: ApiSpec, version: int, body: memoryview) -> Any:
    """Decode a request body with kafka-python's classes; malformed input -> INVALID_REQUEST."""
    try:
        return spec.request.decode(body, version=version)
    except KafkaError:
        raise
    except Exception as exc:  # the decoder raises many kinds on garbage input
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"malformed {spec.name} v{version} request: {exc}") from None


def encode_response(spec: ApiSpec, version: int, response: ApiMessage) -> bytes:
    return bytes(response.encode(version=version))
