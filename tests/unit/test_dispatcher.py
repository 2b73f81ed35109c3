"""The dispatcher on real frames (kafka-python's request classes with their headers) and a minimal broker:
a real metadata cache over the in-process store. Checks what closes a connection, the ApiVersions table
the registry produces, and the response header version of each answer."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest
from kafka.protocol.admin import (
    DescribeClusterRequest,
    DescribeClusterResponse,
    DescribeQuorumRequest,
)
from kafka.protocol.api_message import ApiMessage
from kafka.protocol.metadata import MetadataRequest, MetadataResponse
from kafka.protocol.producer import (
    InitProducerIdRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

from odradek.cluster import znodes as zn
from odradek.cluster.embedded import EmbeddedStore
from odradek.cluster.metadata import MetadataCache
from odradek.cluster.store import to_json
from odradek.config import BrokerConfig
from odradek.groups.consumer_coordinator import ConsumerGroupSettings
from odradek.protocol.errors import ErrorCode
from odradek.protocol.kafka44 import ApiVersionsRequest, ApiVersionsResponse
from odradek.server.dispatcher import Dispatcher
from odradek.server.features import STREAMS_GROUP_HEARTBEAT_KEY
from odradek.server.metrics import BrokerMetrics
from odradek.server.network import CloseConnection, Connection
from odradek.server.quotas import QuotaManager
from odradek.server.registry import APIS, handles

# What ApiVersions advertises: api key -> (min, max); a change here must be deliberate.
# The ranges are Apache Kafka 4.4's (Produce's minimum 0 too, though v0-2 are not served: KAFKA-18659),
# except InitProducerId (5: v6 is KIP-939's two-phase commit) and TxnOffsetCommit (5: v6 is KIP-1319's
# topic ids); EndTxn 5 and TxnOffsetCommit 5 are transaction version 2's (handlers/transactions.py).
EXPECTED_VERSIONS = {
    0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4),
    13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2),
    22: (0, 5), 23: (2, 4), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 42: (0, 3), 43: (0, 2),
    24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
    44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 60: (0, 2), 61: (0, 0), 65: (0, 0),
    66: (0, 2), 68: (0, 1), 69: (0, 1), 74: (0, 1),
    75: (0, 0),
    76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),  # share groups (KIP-932): Kafka 4.2 (librdkafka 2.16 sends v1)
    83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1),  # share-group state (brokers only)
    88: (0, 1), 89: (0, 1), 93: (0, 0),  # streams groups (KIP-1071, KIP-1331), Kafka 4.4's versions
    90: (0, 1), 91: (0, 0), 92: (0, 0),  # share-group offsets (KIP-932, KIP-1226), Kafka 4.2's versions
}
CORRELATION_ID = 4242
VOTE_API_KEY = 52
CLUSTER_ID = "dispatcher-test-cluster"


@dataclass
class MinimalBroker:
    """What the Metadata, DescribeCluster and ApiVersions handlers read from a broker."""

    metadata: MetadataCache
    cluster_id: str = CLUSTER_ID
    broker_id: int = 0
    authorizer: Any = None  # None: no authorizer, every request allowed

    def __post_init__(self) -> None:
        self.metrics = BrokerMetrics(self)  # type: ignore[arg-type]
        self.quotas = QuotaManager(11, 1)
        # ApiVersions' group.version follows whether the consumer protocol is enabled
        self.groups = SimpleNamespace(consumer=SimpleNamespace(settings=ConsumerGroupSettings()))
        self.config = BrokerConfig.from_props({})  # ApiVersions' transaction.version is the config's


Scenario = Callable[[Dispatcher, Connection], Awaitable[None]]


def run(scenario: Scenario) -> None:
    """Run `scenario` against a dispatcher whose broker's cache sees broker 0 (the controller)."""

    async def main() -> None:
        store = EmbeddedStore(None)
        await store.start()
        for path in zn.PERSISTENT_PATHS:
            await store.ensure_path(path)
        info = zn.BrokerInfo(0, "broker0.example", 9092, None, "PLAINTEXT")
        await store.create(zn.broker_path(0), to_json(info.to_json()), ephemeral=True)
        await store.create(zn.CONTROLLER, to_json({"version": 1, "brokerid": 0, "timestamp": "0"}), ephemeral=True)
        cache = MetadataCache(store)
        await cache.start()
        dispatcher = Dispatcher(MinimalBroker(cache))  # type: ignore[arg-type]
        try:
            await scenario(dispatcher, Connection(dispatcher, 1 << 20, set()))
        finally:
            cache.close()
            await store.close()

    asyncio.run(main())


def frame(request: ApiMessage, version: int) -> memoryview:
    """A request frame as the network layer hands it over (header and body, without the size)."""
    request.API_VERSION = version
    request.with_header(correlation_id=CORRELATION_ID, client_id="dispatcher-test")
    return memoryview(bytes(request.encode(header=True)))


def raw_frame(api_key: int, version: int, body: bytes = b"") -> memoryview:
    """Header v1 (key, version, correlation id, null client id) and whatever body a test wants."""
    return memoryview(struct.pack(">hhih", api_key, version, CORRELATION_ID, -1) + body)


def split_response(chunks: Any, flexible_header: bool) -> bytes:
    """Check the size prefix and the response header (v0, or v1 with empty tagged fields); the body."""
    data = b"".join(bytes(c) for c in chunks)
    size, correlation_id = struct.unpack_from(">ii", data, 0)
    assert size == len(data) - 4
    assert correlation_id == CORRELATION_ID
    if flexible_header:
        assert data[8] == 0, "response header v1 ends with an empty tagged-field section"
        return data[9:]
    return data[8:]


def api_versions_table() -> list[Any]:
    return [ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
            for k, (lo, hi) in sorted(EXPECTED_VERSIONS.items())]


def closes(request: memoryview, reason: str) -> Scenario:
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        with pytest.raises(CloseConnection, match=reason):
            await dispatcher(conn, request)

    return scenario


def test_registry_advertises_the_same_versions_as_before() -> None:
    assert {k: (a.advertised_min, a.max_version) for k, a in APIS.items()} == EXPECTED_VERSIONS
    assert {k: a.min_version for k, a in APIS.items() if a.min_version != a.advertised_min} == {
        ProduceRequest.API_KEY: 3}
    assert [k for k, a in APIS.items() if a.raw] == [ProduceRequest.API_KEY]


def test_unknown_api_key_closes_the_connection() -> None:
    run(closes(raw_frame(999, 0), f"unknown API key 999 \\(correlation id {CORRELATION_ID}\\)"))


def test_unsupported_version_closes_the_connection() -> None:
    run(closes(raw_frame(MetadataRequest.API_KEY, 77), "unsupported version 77 of Metadata \\(supported 0-13\\)"))
    run(closes(raw_frame(ProduceRequest.API_KEY, 2), "unsupported version 2 of Produce \\(supported 3-13\\)"))


@pytest.mark.parametrize(("request_cls", "version"), [
    (InitProducerIdRequest, 6),  # KIP-939's two-phase commit, not advertised
    (DescribeQuorumRequest, 1),  # an API Odradek does not serve (KRaft's)
])
def test_an_unserved_version_gets_unsupported_version_where_the_response_can_say_so(
        request_cls: type[ApiMessage], version: int) -> None:
    """Not retriable, unlike a closed connection: the client fails at once (server/unsupported.py)."""
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        response_cls: Any = _response_of(request_cls)
        chunks = await dispatcher(conn, raw_frame(request_cls.API_KEY, version, b"garbage, never decoded"))
        body = split_response(chunks, flexible_header=response_cls.flexible_version_q(version))
        assert response_cls.decode(body, version=version).error_code == ErrorCode.UNSUPPORTED_VERSION

    run(scenario)


def _response_of(request_cls: type[ApiMessage]) -> type[ApiMessage]:
    import kafka.protocol.admin
    import kafka.protocol.producer

    name = request_cls.__name__.removesuffix("Request") + "Response"
    return getattr(kafka.protocol.producer, name, None) or getattr(kafka.protocol.admin, name)


def test_an_unserved_api_whose_response_has_no_top_level_error_closes_the_connection() -> None:
    run(closes(raw_frame(VOTE_API_KEY, 0), "unknown API key 52"))  # KRaft's Vote: no schema to answer with
    run(closes(raw_frame(TxnOffsetCommitRequest.API_KEY, 6), "unsupported version 6 of TxnOffsetCommit"))


def test_malformed_body_closes_the_connection() -> None:
    too_many_topics = struct.pack(">i", 2**31 - 1)  # then nothing
    run(closes(raw_frame(MetadataRequest.API_KEY, 1, too_many_topics), "malformed Metadata v1 request"))


def test_malformed_body_of_a_raw_handler_closes_the_connection() -> None:
    run(closes(raw_frame(ProduceRequest.API_KEY, 3, b"\x00"), "Produce request is truncated"))


def test_truncated_header_closes_the_connection() -> None:
    run(closes(memoryview(b"\x00\x03\x00"), "too short for a request header"))


def test_api_versions_at_an_unknown_version_gets_the_v0_error_response() -> None:
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        chunks = await dispatcher(conn, raw_frame(ApiVersionsRequest.API_KEY, 99))
        body = split_response(chunks, flexible_header=False)
        expected = ApiVersionsResponse(error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=api_versions_table())
        assert body == bytes(expected.encode(version=0))

    run(scenario)


def _features(version: int) -> dict[str, Any]:
    """What ApiVersions says of the features (server/features.py) at `version`: before v4 no supported range
    starting at 0 (KAFKA-17011), so none of Odradek's."""
    if version < 3:
        return {}
    names = ["group.version", "share.version", "transaction.version"]
    if STREAMS_GROUP_HEARTBEAT_KEY in APIS:  # once KIP-1071's APIs are served
        names.append("streams.version")
    supported = ApiVersionsResponse.SupportedFeatureKey
    finalized = ApiVersionsResponse.FinalizedFeatureKey
    levels = {"transaction.version": 2}  # KIP-890 part 2, finalized as on Kafka 4's new clusters
    return {
        "supported_features": [] if version < 4 else [
            supported(name=name, min_version=0, max_version=levels.get(name, 1)) for name in names],
        "finalized_features_epoch": sum(levels.get(name, 1) for name in names),
        "finalized_features": [finalized(name=name, max_version_level=levels.get(name, 1),
                                         min_version_level=levels.get(name, 1)) for name in names],
    }


@pytest.mark.parametrize("version", [0, 3, 4, 5])
def test_api_versions_lists_the_registry_with_header_v0(version: int) -> None:
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        chunks = await dispatcher(conn, frame(request, version))
        body = split_response(chunks, flexible_header=False)  # ApiVersions: header v0 at every version
        expected = ApiVersionsResponse(error_code=0, api_keys=api_versions_table(), throttle_time_ms=0,
                                       **_features(version))
        assert body == bytes(expected.encode(version=version))

    run(scenario)


@pytest.mark.parametrize(("cluster_id", "node_id", "error"), [
    (CLUSTER_ID, 0, ErrorCode.NONE),
    (CLUSTER_ID, 1, ErrorCode.REBOOTSTRAP_REQUIRED),  # another node of the cluster
    ("another-cluster", 0, ErrorCode.REBOOTSTRAP_REQUIRED),
    (CLUSTER_ID, -1, ErrorCode.INVALID_REQUEST),  # one of the two without the other
    (None, 0, ErrorCode.INVALID_REQUEST),
])
def test_api_versions_v5_checks_the_cluster_and_node_the_client_means(cluster_id: str | None, node_id: int,
                                                                      error: ErrorCode) -> None:
    """KIP-1242, as Kafka 4.4 answers: an error response has no API keys, and the connection stays open."""
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1", cluster_id=cluster_id,
                                     node_id=node_id)
        body = split_response(await dispatcher(conn, frame(request, 5)), flexible_header=False)
        response = ApiVersionsResponse.decode(body, version=5)
        assert response.error_code == error
        assert (len(response.api_keys) > 0) == (error == ErrorCode.NONE)

    run(scenario)


def test_group_version_is_not_finalized_without_the_consumer_protocol() -> None:
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        dispatcher.broker.groups.consumer.settings = ConsumerGroupSettings(enabled=False)
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        response = ApiVersionsResponse.decode(split_response(await dispatcher(conn, frame(request, 4)), False),
                                              version=4)
        finalized = [(f.name, f.max_version_level) for f in response.finalized_features]
        assert finalized[:2] == [("share.version", 1), ("transaction.version", 2)]
        assert "group.version" not in dict(finalized)
        assert response.finalized_features_epoch == sum(level for _, level in finalized)
        assert "group.version" in [f.name for f in response.supported_features]  # supported, not finalized

    run(scenario)


def test_transaction_version_follows_the_config() -> None:
    """`transaction.version=1` (Odradek's own key): Java clients run transactions without KIP-890 part 2."""
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        dispatcher.broker.config = BrokerConfig.from_props({"transaction.version": "1"})
        request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
        response = ApiVersionsResponse.decode(split_response(await dispatcher(conn, frame(request, 4)), False),
                                              version=4)
        assert ("transaction.version", 1) in [(f.name, f.max_version_level) for f in response.finalized_features]
        assert ("transaction.version", 2) in [(f.name, f.max_version) for f in response.supported_features]

    run(scenario)


@pytest.mark.parametrize(("version", "flexible_header"), [(1, False), (8, False), (9, True), (12, True), (13, True)])
def test_metadata_response_header_follows_the_version(version: int, flexible_header: bool) -> None:
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        request = MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                  include_cluster_authorized_operations=False,
                                  include_topic_authorized_operations=False)
        body = split_response(await dispatcher(conn, frame(request, version)), flexible_header)
        broker = MetadataResponse.MetadataResponseBroker(node_id=0, host="broker0.example", port=9092, rack=None)
        expected = MetadataResponse(throttle_time_ms=0, brokers=[broker], cluster_id=CLUSTER_ID, controller_id=0,
                                    topics=[])
        assert body == bytes(expected.encode(version=version))

    run(scenario)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster_is_flexible_at_every_version(version: int) -> None:
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        request = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=1,
                                         include_fenced_brokers=True)
        body = split_response(await dispatcher(conn, frame(request, version)), flexible_header=True)
        response = DescribeClusterResponse.decode(body, version=version)
        assert response.cluster_id == CLUSTER_ID and response.error_code == 0
        assert [b.broker_id for b in response.brokers] == [0]
        if version >= 2:  # KIP-1073: only live brokers are registered, none is fenced
            assert [b.is_fenced for b in response.brokers] == [False]

    run(scenario)


@pytest.mark.parametrize(("endpoint_type", "code"), [(2, ErrorCode.MISMATCHED_ENDPOINT_TYPE),
                                                     (7, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE)])
def test_describe_cluster_for_controllers_is_refused(endpoint_type: int, code: ErrorCode) -> None:
    """A broker answers for brokers only (KIP-919): controllers are described by a controller."""
    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        request = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=endpoint_type)
        body = split_response(await dispatcher(conn, frame(request, 1)), flexible_header=True)
        response = DescribeClusterResponse.decode(body, version=1)
        assert response.error_code == code and response.brokers == []

    run(scenario)


def test_registering_outside_kafka_python_versions_or_twice_is_refused() -> None:
    async def handler(ctx: Any, request: Any) -> None:
        return None

    with pytest.raises(ValueError, match="outside kafka-python"):
        handles(MetadataRequest, MetadataResponse, versions=(0, MetadataRequest.max_version + 1))
    with pytest.raises(ValueError, match="does not answer"):
        handles(MetadataRequest, ApiVersionsResponse, versions=(0, 1))
    with pytest.raises(ValueError, match="two handlers"):
        handles(MetadataRequest, MetadataResponse, versions=(0, 1))(handler)
    assert APIS[MetadataRequest.API_KEY].handler is not handler


def test_a_request_refused_as_a_whole_gets_its_top_level_authorization_error() -> None:
    from kafka.protocol.consumer import JoinGroupRequest, JoinGroupResponse

    from odradek.security.acl import AclTable
    from odradek.security.authorizer import Authorizer

    class Cache:
        table = AclTable()

    async def scenario(dispatcher: Dispatcher, conn: Connection) -> None:
        dispatcher.broker.authorizer = Authorizer(Cache(), frozenset(), False)  # type: ignore[arg-type]
        request = JoinGroupRequest(group_id="g", session_timeout_ms=10000, rebalance_timeout_ms=10000, member_id="",
                                   group_instance_id=None, protocol_type="consumer", protocols=[], reason=None)
        body = split_response(await dispatcher(conn, frame(request, 9)), flexible_header=True)
        assert JoinGroupResponse.decode(body, version=9).error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
        cluster = DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1)
        body = split_response(await dispatcher(conn, frame(cluster, 1)), flexible_header=True)
        response = DescribeClusterResponse.decode(body, version=1)
        assert response.error_code == 0 and not response.authorized_operations  # described, with no operations

    run(scenario)
