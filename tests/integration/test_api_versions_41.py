"""The API versions of Kafka 4.1 (ApiVersions' maxima), each used by a real client: kafka-python 3 (whose
version inference must see a 4.1 broker), librdkafka through confluent_kafka, and the project's protocol
client where no client sends the new version (Produce v13 by topic id, Fetch v17-18, DescribeConfigs
documentation)."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupType, Producer
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource as KpConfigResource
from kafka.admin import ConfigResourceType
from kafka.protocol.admin import (
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeConfigsResponse,
    DescribeGroupsRequest,
    ListGroupsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetSpec
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch, decode_records, iter_batches
from odradek.protocol.transport import BlockingConnection
from tests.clients import admin, consume_all, create_topic, kafka_python_group_consumer, produce, unique_name
from tests.harness import BrokerProcess
from tests.waiting import wait_until


def _conn(broker: BrokerProcess) -> BlockingConnection:
    return BlockingConnection("127.0.0.1", broker.port, "api41-test", 15.0)


def _topic_id(conn: BlockingConnection, topic: str) -> uuid.UUID:
    md = conn.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                      allow_auto_topic_creation=False), 13)
    assert md.error_code == 0  # v13's top-level error code (KIP-1102)
    (t,) = md.topics
    assert t.error_code == 0 and t.topic_id is not None
    return t.topic_id


@pytest.fixture(scope="module")
def kp_admin(broker: BrokerProcess):  # type: ignore[no-untyped-def]
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="api41")
    yield a
    a.close()


def _negotiated(a: KafkaAdminClient, request: type) -> int:
    return a._manager.broker_version_data.api_version(request)


def test_kafka_python_infers_kafka_4_1(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    assert kp_admin._client.check_version() == (4, 1)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    try:
        assert producer.config["api_version"] == (4, 1)
    finally:
        producer.close()
    for request, version in [(ProduceRequest, 13), (FetchRequest, 18), (ListOffsetsRequest, 10), (MetadataRequest, 13),
                             (FindCoordinatorRequest, 6), (DescribeGroupsRequest, 6), (ListGroupsRequest, 5),
                             (DescribeClusterRequest, 2), (ListTransactionsRequest, 2)]:
        assert _negotiated(kp_admin, request) == version, request.__name__


def test_librdkafka_uses_metadata_v13(broker: BrokerProcess) -> None:
    topic = unique_name("md13")
    create_topic(broker.bootstrap, topic)
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger(f"rdkafka-{topic}")
    logger.addHandler(Capture())
    logger.setLevel(logging.DEBUG)
    p = Producer({"bootstrap.servers": broker.bootstrap, "debug": "protocol"}, logger=logger)
    p.produce(topic, b"v13")
    assert p.flush(15) == 0
    assert any("Received MetadataResponse (v13" in line for line in lines)
    assert [m.value() for m in consume_all(broker.bootstrap, topic, 1)] == [b"v13"]


def test_produce_v13_names_topics_by_id(broker: BrokerProcess) -> None:
    topic = unique_name("p13")
    create_topic(broker.bootstrap, topic)
    data = ProduceRequest.TopicProduceData
    with _conn(broker) as conn:
        tid = _topic_id(conn, topic)
        unknown = uuid.uuid4()
        resp = conn.request(ProduceRequest(transactional_id=None, acks=-1, timeout_ms=5000, topic_data=[
            data(topic_id=tid, partition_data=[data.PartitionProduceData(
                index=0, records=build_batch([(b"k", b"by-id-1"), (None, b"by-id-2")]))]),
            data(topic_id=unknown, partition_data=[data.PartitionProduceData(index=0, records=build_batch([(None, b"x")]))]),
        ]), 13)
    by_id = {t.topic_id: t.partition_responses for t in resp.responses}
    assert set(by_id) == {tid, unknown}
    assert [(p.index, p.error_code, p.base_offset) for p in by_id[tid]] == [(0, 0, 0)]
    assert by_id[unknown][0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
    assert [m.value() for m in consume_all(broker.bootstrap, topic, 2)] == [b"by-id-1", b"by-id-2"]


@pytest.mark.parametrize("version", [17, 18])
def test_fetch_v17_v18(broker: BrokerProcess, version: int) -> None:
    topic = unique_name(f"f{version}")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"a", b"b"])
    fetch_topic = FetchRequest.FetchTopic
    with _conn(broker) as conn:
        tid = _topic_id(conn, topic)
        resp = conn.request(FetchRequest(
            replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0,
            session_epoch=-1, rack_id="", forgotten_topics_data=[],
            topics=[fetch_topic(topic_id=tid, partitions=[fetch_topic.FetchPartition(
                partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1, log_start_offset=-1,
                partition_max_bytes=1 << 20)])]), version)
    (t,) = resp.responses
    (p,) = t.partitions
    assert t.topic_id == tid and p.error_code == 0 and p.high_watermark == 2
    data = bytes(p.records)
    assert [r.value for pos, _h in iter_batches(data) for r in decode_records(data[pos:])] == [b"a", b"b"]


def test_list_offsets_v10_through_kafka_python(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    from kafka import TopicPartition

    topic = unique_name("lo10")
    create_topic(broker.bootstrap, topic)
    now = int(time.time() * 1000)
    produce(broker.bootstrap, topic, [b"1", b"2", b"3"])
    tp = TopicPartition(topic, 0)
    got = {}
    for spec in (OffsetSpec.EARLIEST, OffsetSpec.LATEST, OffsetSpec.EARLIEST_LOCAL, OffsetSpec.LATEST_TIERED):
        got[spec] = kp_admin.list_partition_offsets({tp: spec})[tp].offset
    # every segment is local (earliest-local is the log start) and nothing is tiered (KIP-1005: -1)
    assert got == {OffsetSpec.EARLIEST: 0, OffsetSpec.LATEST: 3, OffsetSpec.EARLIEST_LOCAL: 0,
                   OffsetSpec.LATEST_TIERED: -1}
    assert kp_admin.list_partition_offsets({tp: now - 60_000})[tp].offset == 0


def test_groups_at_kafka_4_1_versions(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    topic, group = unique_name("grp"), unique_name("g")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"x"])
    consumer = kafka_python_group_consumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                                           auto_offset_reset="earliest", consumer_timeout_ms=10_000)
    try:
        assert [m.value for m in consumer][:1] == [b"x"]
        # DescribeGroups v6 (through FindCoordinator v6): a live group as before ...
        desc = kp_admin.describe_groups([group])[group]
        assert desc["group_state"] == "Stable" and desc["error"] is None
        # ... and one that does not exist is GROUP_ID_NOT_FOUND (KIP-1043), not a Dead group without error
        absent = unique_name("absent")
        assert "GroupIdNotFoundError" in kp_admin.describe_groups([absent])[absent]["error"]
        # ListGroups v5: every group is classic
        listed = {g["group_id"]: g for g in kp_admin.list_groups(types_filter=["classic"])}
        assert group in listed and listed[group]["group_type"] == "classic"
        assert kp_admin.list_groups(types_filter=["consumer"]) == []
        a = admin(broker.bootstrap)
        classic = a.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(10).valid
        assert group in {g.group_id for g in classic}
        assert a.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(10).valid == []
    finally:
        consumer.close()


def test_describe_cluster_v2(kp_admin: KafkaAdminClient) -> None:
    cluster = kp_admin.describe_cluster()
    assert [(b["broker_id"], b["is_fenced"]) for b in cluster["brokers"]] == [(0, False)]


def test_list_transactions_v2_pattern(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    topic = unique_name("txn")
    create_topic(broker.bootstrap, topic)
    ids = [f"{topic}-orders-1", f"{topic}-payments-2"]
    for tid in ids:
        p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid})
        p.init_transactions(15)
        p.begin_transaction()
        p.produce(topic, tid.encode())
        p.commit_transaction(15)

    def listed(pattern: str | None) -> set[str]:
        by_broker = kp_admin.list_transactions(transactional_id_pattern=pattern)
        return {t.transactional_id for listing in by_broker.values() for t in listing
                if t.transactional_id.startswith(topic)}

    assert listed(None) == set(ids)
    assert listed(".*-orders-.*") == {ids[0]}
    assert listed(f"{topic}-(orders|payments)-[0-9]") == set(ids)
    assert listed("orders") == set()  # the whole id must match, as Kafka's Matcher.matches
    for bad in ("(unclosed", "(a+)+$"):  # a syntax error; a pattern that could match in exponential time
        with pytest.raises(Exception) as info:
            kp_admin.list_transactions(transactional_id_pattern=bad)
        assert "128" in str(info.value) or "RegularExpression" in type(info.value).__name__


def test_describe_configs_documentation(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    topic = unique_name("doc")
    create_topic(broker.bootstrap, topic, config={"retention.ms": "3600000"})
    resource = DescribeConfigsRequest.DescribeConfigsResource
    with _conn(broker) as conn:
        for include in (True, False):
            resp = conn.request(DescribeConfigsRequest(resources=[
                resource(resource_type=2, resource_name=topic, configuration_keys=["retention.ms", "cleanup.policy"]),
                resource(resource_type=4, resource_name="0", configuration_keys=["log.retention.ms", "num.io.threads"]),
            ], include_synonyms=False, include_documentation=include), 4)
            docs = {c.name: c.documentation for r in resp.results for c in r.configs}
            assert set(docs) == {"retention.ms", "cleanup.policy", "log.retention.ms", "num.io.threads"}
            if not include:
                assert set(docs.values()) == {None}
                continue
            assert docs["retention.ms"].startswith("Type: long. Default: 604800000.")
            assert "log.retention.ms sets its default" in docs["retention.ms"]
            assert "Valid values: [compact, delete]" in docs["cleanup.policy"]
            assert "Update mode: cluster-wide" in docs["num.io.threads"]
    assert isinstance(resp, DescribeConfigsResponse)
    # the clients' own calls: neither asks for documentation, and both still describe
    kp = kp_admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    entry = kp["topic"][topic]["retention.ms"]
    assert entry["value"] == "3600000" and entry["documentation"] is None
    from confluent_kafka.admin import ConfigResource

    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    assert admin(broker.bootstrap).describe_configs([res])[res].result(10)["retention.ms"].value == "3600000"



def _retry(call: Callable[[], Any], retriable: tuple[int, ...], what: str, timeout: float = 30.0) -> Any:
    """`call()` until its error code is not one of `retriable` (a coordinator that is still loading)."""
    last: list[Any] = []

    def answered() -> Any:
        last[:] = [call()]
        return last[0] if last[0].error_code not in retriable else None

    resp = wait_until(answered, timeout, lambda: f"{what} to be served, not {last}")
    assert resp.error_code == 0, f"{what}: {resp}"
    return resp


def test_transaction_at_the_new_versions(broker: BrokerProcess) -> None:
    """What a Java 4.x producer without transaction version 2 sends: InitProducerId v5, AddOffsetsToTxn v4,
    TxnOffsetCommit v4 and EndTxn v4 (kafka-python and librdkafka stop below these)."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition
    from kafka.protocol.producer import (
        AddOffsetsToTxnRequest,
        AddPartitionsToTxnRequest,
        EndTxnRequest,
        InitProducerIdRequest,
        TxnOffsetCommitRequest,
    )

    topic, tid, group = unique_name("txn41"), unique_name("tid"), unique_name("gtxn")
    create_topic(broker.bootstrap, topic)
    busy = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR)
    with _conn(broker) as conn:
        init = _retry(lambda: conn.request(InitProducerIdRequest(
            transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1), 5), busy,
            "InitProducerId v5")
        pid, epoch = init.producer_id, init.producer_epoch
        add_topic = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        added = conn.request(AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[add_topic(name=topic, partitions=[0])]), 3)
        assert [p.partition_error_code for t in added.results_by_topic_v3_and_below
                for p in t.results_by_partition] == [0]
        data = ProduceRequest.TopicProduceData
        batch = build_batch([(None, b"in-txn")], producer_id=pid, producer_epoch=epoch, base_sequence=0,
                            is_transactional=True)
        produced = conn.request(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
            data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])]), 11)
        assert produced.responses[0].partition_responses[0].error_code == 0
        _retry(lambda: conn.request(AddOffsetsToTxnRequest(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group), 4), busy,
            "AddOffsetsToTxn v4")
        commit_topic = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
        committed = conn.request(TxnOffsetCommitRequest(
            transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
            member_id="", group_instance_id=None, topics=[commit_topic(name=topic, partitions=[
                commit_topic.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=1,
                                                             committed_leader_epoch=-1, committed_metadata="")])]), 4)
        assert [p.error_code for t in committed.topics for p in t.partitions] == [0]
        _retry(lambda: conn.request(EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                  committed=True), 4), busy, "EndTxn v4")
    read_committed = {"isolation.level": "read_committed"}
    assert [m.value() for m in consume_all(broker.bootstrap, topic, 1, **read_committed)] == [b"in-txn"]
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        wait_until(lambda: c.committed([CTopicPartition(topic, 0)], timeout=10)[0].offset == 1, 20,
                   "the transaction's offset commit (1) to be visible")
    finally:
        c.close()


def test_what_is_not_served_fails_at_once(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    """APIs outside ApiVersions fail in the clients without a round trip; a request sent anyway gets
    UNSUPPORTED_VERSION (not retriable) where its response can carry it, and the connection stays up."""
    from kafka.errors import IncompatibleBrokerVersion
    from kafka.protocol.admin import DescribeQuorumRequest
    from kafka.protocol.producer import EndTxnRequest

    started = time.monotonic()
    with pytest.raises(IncompatibleBrokerVersion):  # DescribeQuorum: KRaft's, never served here
        kp_admin.describe_metadata_quorum()
    assert time.monotonic() - started < 10
    with _conn(broker) as conn:
        quorum = conn.request(DescribeQuorumRequest(topics=[]), 2)
        assert quorum.error_code == ErrorCode.UNSUPPORTED_VERSION
        end = conn.request(EndTxnRequest(transactional_id="t", producer_id=1, producer_epoch=0, committed=True), 5)
        assert end.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert conn.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 13).error_code == 0
