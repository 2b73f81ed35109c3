"""Kafka 4.4's protocol levels over real sockets: ApiVersions v5 (KIP-1242) through the project's protocol
client, the feature levels through kafka-python's describe_features (the Admin API reads them from
ApiVersions, as Java's does), DescribeLogDirs v5 through kafka-python, DeleteGroups v3 raw (no Python client
sends it), and Produce v0-2: advertised, as Kafka 4.4 advertises them, but not served."""

from __future__ import annotations

import struct

import pytest
from kafka import KafkaAdminClient
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.kafka44 import ApiVersionsRequest, DeleteGroupsRequest
from odradek.protocol.records import build_batch
from odradek.protocol.transport import BlockingConnection
from odradek.server.dispatcher import APIS
from odradek.server.features import STREAMS_GROUP_HEARTBEAT_KEY
from tests.clients import create_topic, produce, unique_name
from tests.harness import BrokerProcess
from tests.rawclient import RawClient
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def kp_admin(broker: BrokerProcess):  # type: ignore[no-untyped-def]
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="api44")
    yield a
    a.close()


def _conn(broker: BrokerProcess) -> BlockingConnection:
    return BlockingConnection("127.0.0.1", broker.port, "api44-test", 15.0)


def _api_versions(broker: BrokerProcess, **ids: object) -> tuple[object, bool]:
    """ApiVersions v5 naming `ids` (cluster_id, node_id); the response and whether the connection stays up."""
    with RawClient(broker.port) as c:
        resp = c.request(ApiVersionsRequest(client_software_name="odradek-test", client_software_version="1", **ids),
                         5)
        return resp, not c.is_closed_by_peer(0.5)


def test_api_versions_v5_reaches_only_the_node_it_names(broker: BrokerProcess) -> None:
    with _conn(broker) as conn:
        cluster_id = conn.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 12).cluster_id
    resp, open_ = _api_versions(broker, cluster_id=cluster_id, node_id=0)
    assert resp.error_code == 0 and open_  # type: ignore[attr-defined]
    assert {k.api_key: (k.min_version, k.max_version) for k in resp.api_keys}[18] == (0, 5)  # type: ignore[attr-defined]
    for ids, error in [({"cluster_id": cluster_id, "node_id": 7}, ErrorCode.REBOOTSTRAP_REQUIRED),
                       ({"cluster_id": "AnotherClusterId000000", "node_id": 0}, ErrorCode.REBOOTSTRAP_REQUIRED),
                       ({"cluster_id": cluster_id}, ErrorCode.INVALID_REQUEST)]:
        resp, open_ = _api_versions(broker, **ids)
        assert (resp.error_code, resp.api_keys, open_) == (error, [], True), ids  # type: ignore[attr-defined]


def test_features_through_the_admin_api(kp_admin: KafkaAdminClient) -> None:
    """The levels of server/features.py (streams.version too once KIP-1071's APIs are served);
    transaction.version 2 (KIP-890 part 2) as on Kafka 4's new clusters."""
    features = kp_admin.describe_features()
    features.pop("streams.version", None)
    epoch = 4 if STREAMS_GROUP_HEARTBEAT_KEY not in APIS else 5
    assert features == {
        "group.version": {"supported": (0, 1), "finalized": (1, 1), "finalized_epoch": epoch},
        "share.version": {"supported": (0, 1), "finalized": (1, 1), "finalized_epoch": epoch},
        "transaction.version": {"supported": (0, 2), "finalized": (2, 2), "finalized_epoch": epoch},
    }


def test_describe_log_dirs_v5_through_kafka_python(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    from kafka.protocol.admin import DescribeLogDirsRequest

    assert kp_admin._manager.broker_version_data.api_version(DescribeLogDirsRequest) == 5
    topic = unique_name("ld5")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"x"])
    (answer,) = kp_admin.describe_log_dirs({topic: [0]})
    (log_dir,) = answer["log_dirs"]
    assert log_dir["error_code"] == 0 and log_dir["is_cordoned"] is False
    (t,) = log_dir["topics"]
    assert t["name"] == topic and t["partitions"][0]["partition_size"] > 0


def test_delete_groups_v3(broker: BrokerProcess) -> None:
    """As Kafka 4.4 answers: the error code, and a null message for the group that does not exist."""
    absent = unique_name("absent")
    answers: list[tuple[int, str | None]] = []

    def deleted() -> bool:  # once the group coordinator is up (FindCoordinator creates __consumer_offsets)
        with _conn(broker) as conn:
            conn.request(FindCoordinatorRequest(key=absent, key_type=0), 3)
            (result,) = conn.request(DeleteGroupsRequest(groups_names=[absent]), 3).results
        answers.append((result.error_code, result.error_message))
        return result.error_code not in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                         ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)

    wait_until(deleted, 30, "the group coordinator to answer DeleteGroups")
    assert answers[-1] == (ErrorCode.GROUP_ID_NOT_FOUND, None)


@pytest.mark.parametrize("version", [0, 2])
def test_produce_v0_v2_advertised_but_closes_the_connection(broker: BrokerProcess, version: int) -> None:
    """Kafka 4 advertises Produce from v0 for old librdkafka's sake (KAFKA-18659) and closes the connection
    on a v0-2 request, as here; v3 on the same path still produces."""
    topic = unique_name(f"p{version}")
    create_topic(broker.bootstrap, topic)
    data = ProduceRequest.TopicProduceData
    request = ProduceRequest(transactional_id=None, acks=1, timeout_ms=5000, topic_data=[data(
        name=topic, partition_data=[data.PartitionProduceData(index=0, records=build_batch([(None, b"v")]))])])
    with RawClient(broker.port) as c:
        versions = {k.api_key: (k.min_version, k.max_version)
                    for k in c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                                       4).api_keys}
        assert versions[ProduceRequest.API_KEY] == (0, 13)
        request.API_VERSION = version
        request.with_header(correlation_id=9, client_id="api44-test")
        payload = bytes(request.encode(header=True))
        c.send_raw(struct.pack(">i", len(payload)) + payload)
        assert c.is_closed_by_peer()
    wait_until(lambda: f"unsupported version {version} of Produce" in broker.output(), 10,
               "the broker to log the unsupported Produce version")
    with _conn(broker) as conn:
        resp = conn.request(request, 3)
    assert resp.responses[0].partition_responses[0].error_code == 0
