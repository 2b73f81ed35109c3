"""The Kafka 4.4 message classes (`odradek.protocol.kafka44`): ApiVersions v5's request layout (KIP-1242's
ClusterId and NodeId after the client software fields), DeleteGroups v3's ErrorMessage, the old versions
byte for byte as kafka-python's, and kafka-python's response registry left to kafka-python's own classes."""

from __future__ import annotations

import pytest
from kafka.protocol.admin import DeleteGroupsResponse as KpDeleteGroupsResponse
from kafka.protocol.api_header import ResponseClassRegistry
from kafka.protocol.metadata import ApiVersionsRequest as KpApiVersionsRequest
from kafka.protocol.metadata import ApiVersionsResponse as KpApiVersionsResponse

from odradek.protocol.client import ClientCodec
from odradek.protocol.framing import write_uvarint
from odradek.protocol.kafka44 import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)


def _cstr(s: str | None) -> bytes:
    if s is None:
        return b"\x00"
    return write_uvarint(len(s) + 1) + s.encode()


def test_latest_versions() -> None:
    assert (ApiVersionsRequest.max_version, ApiVersionsResponse.max_version) == (5, 5)
    assert (DeleteGroupsRequest.max_version, DeleteGroupsResponse.max_version) == (3, 3)


def test_api_versions_v5_request_layout() -> None:
    body = _cstr("librdkafka") + _cstr("2.16") + _cstr("cluster-a") + b"\x00\x00\x00\x02" + b"\x00"
    req = ApiVersionsRequest.decode(body, version=5)
    assert (req.client_software_name, req.cluster_id, req.node_id) == ("librdkafka", "cluster-a", 2)
    unnamed = ApiVersionsRequest.decode(_cstr("x") + _cstr("1") + b"\x00" + b"\xff\xff\xff\xff" + b"\x00", version=5)
    assert (unnamed.cluster_id, unnamed.node_id) == (None, -1)
    with pytest.raises(Exception):  # noqa: B017 - kafka-python raises several kinds on a short body
        ApiVersionsRequest.decode(body[:-3], version=5)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_old_versions_encode_as_kafka_pythons(version: int) -> None:
    def response(cls: type) -> bytes:
        c: object = cls
        return bytes(c(error_code=0, throttle_time_ms=7, api_keys=[  # type: ignore[operator]
            c.ApiVersion(api_key=0, min_version=0, max_version=13)],  # type: ignore[attr-defined]
            supported_features=[], finalized_features_epoch=-1, finalized_features=[]).encode(version=version))

    assert response(ApiVersionsResponse) == response(KpApiVersionsResponse)


def test_delete_groups_v3_error_message() -> None:
    result = DeleteGroupsResponse.DeletableGroupResult
    resp = DeleteGroupsResponse(throttle_time_ms=0, results=[result(group_id="g", error_code=69, error_message="m"),
                                                             result(group_id="h", error_code=0)])
    back = DeleteGroupsResponse.decode(bytes(resp.encode(version=3)), version=3)
    assert [(r.group_id, r.error_code, r.error_message) for r in back.results] == [("g", 69, "m"), ("h", 0, None)]
    v2 = bytes(resp.encode(version=2))  # no message before v3
    assert KpDeleteGroupsResponse.decode(v2, version=2).results[0].group_id == "g"


def test_kafka_pythons_response_registry_keeps_its_own_classes() -> None:
    """kafka-python's clients find their responses' classes there and check for their own ApiVersionsResponse
    (its header is v0 at every version): ours must not replace them."""
    registry = ResponseClassRegistry._response_class_registry
    # kafka-python's own (its legacy modules, kafka.protocol.old, may have put their ApiVersionsResponse_v4 there)
    for key in (ApiVersionsRequest.API_KEY, DeleteGroupsRequest.API_KEY):
        assert registry[key].__module__.startswith("kafka.protocol"), registry[key]


def test_the_protocol_client_decodes_with_the_class_beside_the_request() -> None:
    codec = ClientCodec("t", 1 << 20)
    codec.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"), 5)
    codec.send(KpApiVersionsRequest(client_software_name="t", client_software_version="1"), 4)
    body5 = bytes(ApiVersionsResponse(error_code=0, api_keys=[], throttle_time_ms=0).encode(version=5))
    body4 = bytes(KpApiVersionsResponse(error_code=0, api_keys=[], throttle_time_ms=0).encode(version=4))
    frames = b"".join((len(b) + 4).to_bytes(4, "big") + cid.to_bytes(4, "big") + b  # header v0 both
                      for cid, b in ((1, body5), (2, body4)))
    first, second = codec.feed(frames)
    assert type(first.message).__name__.startswith("ApiVersionsResponse") and first.message.error_code == 0
    assert second.message.error_code == 0
