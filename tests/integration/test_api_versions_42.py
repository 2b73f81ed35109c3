"""The API versions of Kafka 4.2 (ApiVersions' maxima), each used by a real client: kafka-python 3 (whose
version inference must see the newest broker it knows, 4.3: Odradek serves 4.4's versions, see
test_api_versions_44.py), librdkafka through confluent_kafka, and the project's protocol
client where no client sends the new version (Produce v13 by topic id, Fetch v17-18, DescribeConfigs
documentation, ListOffsets v11's earliest-pending-upload, OffsetCommit/OffsetFetch v10 by topic id,
WriteTxnMarkers v2's transaction version); each bumped API also answers an old version still."""

from __future__ import annotations

import logging
import struct
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupType, Producer
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
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
from kafka.protocol.consumer import (
    FetchRequest,
    ListOffsetsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    OffsetSpec,
)
from kafka.protocol.metadata import FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest, WriteTxnMarkersRequest

from odradek.protocol.errors import ErrorCode
from odradek.protocol.records import build_batch, decode_records, iter_batches
from odradek.protocol.transport import BlockingConnection
from tests.clients import admin, consume_all, create_topic, kafka_python_group_consumer, produce, unique_name
from tests.harness import BrokerProcess
from tests.waiting import wait_until


def _conn(broker: BrokerProcess) -> BlockingConnection:
    return BlockingConnection("127.0.0.1", broker.port, "api42-test", 15.0)


def _topic_id(conn: BlockingConnection, topic: str) -> uuid.UUID:
    md = conn.request(MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=topic)],
                                      allow_auto_topic_creation=False), 13)
    assert md.error_code == 0  # v13's top-level error code (KIP-1102)
    (t,) = md.topics
    assert t.error_code == 0 and t.topic_id is not None
    return t.topic_id


@pytest.fixture(scope="module")
def kp_admin(broker: BrokerProcess):  # type: ignore[no-untyped-def]
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="api42")
    yield a
    a.close()


def _negotiated(a: KafkaAdminClient, request: type) -> int:
    return a._manager.broker_version_data.api_version(request)


def test_kafka_python_infers_kafka_4_3(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
    """kafka-python 3.0.12 knows brokers up to 4.3 (DescribeLogDirs v5); a 4.4 broker is that to it."""
    assert kp_admin._client.check_version() == (4, 3)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap)
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        assert producer.config["api_version"] == (4, 3)
        assert consumer.config["api_version"] == (4, 3)
    finally:
        producer.close()
        consumer.close()
    for request, version in [(ProduceRequest, 13), (FetchRequest, 18), (ListOffsetsRequest, 11), (MetadataRequest, 13),
                             (FindCoordinatorRequest, 6), (DescribeGroupsRequest, 6), (ListGroupsRequest, 5),
                             (DescribeClusterRequest, 2), (ListTransactionsRequest, 2), (OffsetCommitRequest, 10),
                             (OffsetFetchRequest, 10), (WriteTxnMarkersRequest, 2)]:
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


def test_list_offsets_v11_through_kafka_python(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
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


def test_groups_at_kafka_4_2_versions(broker: BrokerProcess, kp_admin: KafkaAdminClient) -> None:
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
    assert listed(f"({topic}-.*)+") == set(ids)  # exponential for a backtracking matcher, linear on RE2
    for bad in ("(unclosed", "(?=x).*"):  # a syntax error; look-ahead, which RE2 (as Kafka's RE2/J) lacks
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
    from kafka.protocol.producer import InitProducerIdRequest

    started = time.monotonic()
    with pytest.raises(IncompatibleBrokerVersion):  # DescribeQuorum: KRaft's, never served here
        kp_admin.describe_metadata_quorum()
    assert time.monotonic() - started < 10
    with _conn(broker) as conn:
        quorum = conn.request(DescribeQuorumRequest(topics=[]), 2)
        assert quorum.error_code == ErrorCode.UNSUPPORTED_VERSION
        two_phase = conn.request(InitProducerIdRequest(  # v6: KIP-939's two-phase commit
            transactional_id="t", transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1), 6)
        assert two_phase.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert conn.request(MetadataRequest(topics=[], allow_auto_topic_creation=False), 13).error_code == 0


# ---- Kafka 4.2's new versions ---------------------------------------------------------------------

EARLIEST_PENDING_UPLOAD = -6  # ListOffsets v11 (KIP-1023)


def _list_offsets(conn: BlockingConnection, topic: str, timestamp: int, version: int) -> tuple[int, int, int, int]:
    """(error, offset, timestamp, leader epoch) of partition 0 at `timestamp`."""
    t = ListOffsetsRequest.ListOffsetsTopic
    fields: dict[str, Any] = {"replica_id": -1, "isolation_level": 0, "topics": [t(name=topic, partitions=[
        t.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1, timestamp=timestamp)])]}
    if version >= 10:
        fields["timeout_ms"] = 5000
    resp = conn.request(ListOffsetsRequest(**fields), version)
    (p,) = resp.topics[0].partitions
    return p.error_code, p.offset, p.timestamp, p.leader_epoch


def test_list_offsets_v11_earliest_pending_upload(broker: BrokerProcess) -> None:
    topic = unique_name("lo11")
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, [b"1", b"2"])
    with _conn(broker) as conn:
        # nothing waits for an upload to remote storage (there is none): no offset, as Kafka without tiering
        assert _list_offsets(conn, topic, EARLIEST_PENDING_UPLOAD, 11) == (0, -1, -1, -1)
        # the other specs at v11, and the oldest version served, answer as before
        for version in (11, 1):
            assert _list_offsets(conn, topic, OffsetSpec.EARLIEST, version)[:2] == (0, 0)
            assert _list_offsets(conn, topic, OffsetSpec.LATEST, version)[:2] == (0, 2)


def _commit(conn: BlockingConnection, group: str, topics: list[tuple[Any, int]], version: int) -> Any:
    """OffsetCommit of offset 5 + partition on each (topic name or id, partition) by a client outside the group."""
    t = OffsetCommitRequest.OffsetCommitRequestTopic
    by_topic: dict[Any, list[int]] = {}
    for key, p in topics:
        by_topic.setdefault(key, []).append(p)
    named = [t(**({"topic_id": key} if version >= 10 else {"name": key}), partitions=[
        t.OffsetCommitRequestPartition(partition_index=p, committed_offset=5 + p, committed_leader_epoch=-1,
                                       committed_metadata="m") for p in ps]) for key, ps in by_topic.items()]
    return conn.request(OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="",
                                            group_instance_id=None, topics=named), version)


def _fetch_offsets(conn: BlockingConnection, group: str, topics: list[tuple[Any, list[int]]] | None,
                   version: int) -> Any:
    g = OffsetFetchRequest.OffsetFetchRequestGroup
    named = None if topics is None else [
        g.OffsetFetchRequestTopics(**({"topic_id": key} if version >= 10 else {"name": key}), partition_indexes=ps)
        for key, ps in topics]
    resp = conn.request(OffsetFetchRequest(groups=[g(group_id=group, member_id=None, member_epoch=-1, topics=named)],
                                           require_stable=False), version)
    (answer,) = resp.groups
    return answer


def test_offset_commit_and_fetch_v10_by_topic_id(broker: BrokerProcess) -> None:
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition

    topic, other, group = unique_name("oc10"), unique_name("oc10b"), unique_name("g10")
    create_topic(broker.bootstrap, topic, partitions=2)
    create_topic(broker.bootstrap, other)
    unknown = uuid.uuid4()
    busy = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
    with _conn(broker) as conn:
        tid, other_id = _topic_id(conn, topic), _topic_id(conn, other)
        # v10 names topics by id; an id the broker does not know, and the zero id, are UNKNOWN_TOPIC_ID
        def committed() -> Any:
            r = _commit(conn, group, [(tid, 0), (tid, 1), (unknown, 0), (None, 0)], 10)
            return r if r.topics[0].partitions[0].error_code not in busy else None

        resp = wait_until(committed, 30, "the group coordinator to take the commit")
        got = {(t.topic_id, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}
        assert got == {(tid, 0): 0, (tid, 1): 0, (unknown, 0): ErrorCode.UNKNOWN_TOPIC_ID,
                       (None, 0): ErrorCode.UNKNOWN_TOPIC_ID}
        # an old version by name still commits (v2, the oldest served)
        assert [p.error_code for t in _commit(conn, group, [(other, 0)], 2).topics for p in t.partitions] == [0]
        # OffsetFetch v10 by id: the offsets committed by id and by name, and UNKNOWN_TOPIC_ID for an unknown id
        answer = _fetch_offsets(conn, group, [(tid, [0, 1]), (other_id, [0]), (unknown, [3])], 10)
        assert answer.error_code == 0
        fetched = {(t.topic_id, p.partition_index): (p.committed_offset, p.metadata, p.error_code)
                   for t in answer.topics for p in t.partitions}
        assert fetched == {(tid, 0): (5, "m", 0), (tid, 1): (6, "m", 0), (other_id, 0): (5, "m", 0),
                           (unknown, 3): (-1, "", ErrorCode.UNKNOWN_TOPIC_ID)}
        # all the group's offsets (null topics): each topic by its id
        listed = _fetch_offsets(conn, group, None, 10)
        assert {(t.topic_id, p.partition_index) for t in listed.topics for p in t.partitions} == {
            (tid, 0), (tid, 1), (other_id, 0)}
        # by name at v9 and at v1 (the oldest served), the offsets committed by id
        assert {(t.name, p.partition_index, p.committed_offset) for t in
                _fetch_offsets(conn, group, [(topic, [0, 1])], 9).topics for p in t.partitions} == {
            (topic, 0, 5), (topic, 1, 6)}
        t1 = OffsetFetchRequest.OffsetFetchRequestTopic
        v1 = conn.request(OffsetFetchRequest(group_id=group, topics=[t1(name=topic, partition_indexes=[1])]), 1)
        assert [(p.partition_index, p.committed_offset) for t in v1.topics for p in t.partitions] == [(1, 6)]
    # what a consumer reads back through librdkafka
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        committed = c.committed([CTopicPartition(topic, 0), CTopicPartition(topic, 1)], timeout=10)
        assert [(tp.partition, tp.offset) for tp in committed] == [(0, 5), (1, 6)]
    finally:
        c.close()


def _write_marker(conn: BlockingConnection, topic: str, pid: int, epoch: int, version: int,
                  transaction_version: int = 0) -> int:
    m = WriteTxnMarkersRequest.WritableTxnMarker
    fields: dict[str, Any] = {"producer_id": pid, "producer_epoch": epoch, "transaction_result": True,
                              "topics": [m.WritableTxnMarkerTopic(name=topic, partition_indexes=[0])],
                              "coordinator_epoch": 0}
    if version >= 2:
        fields["transaction_version"] = transaction_version
    resp = conn.request(WriteTxnMarkersRequest(markers=[m(**fields)]), version)
    (err,) = [p.error_code for mk in resp.markers for t in mk.topics for p in t.partitions]
    return int(err)


def test_write_txn_markers_v2_transaction_version(broker: BrokerProcess) -> None:
    """KIP-1228: from transaction version 2 the coordinator bumps the producer epoch before writing the
    markers, so the leader refuses a TV2 marker at the transaction's own epoch and takes the bumped one;
    v1, and v2 for older transaction versions, take the transaction's epoch, as before."""
    from kafka.protocol.producer import AddPartitionsToTxnRequest, InitProducerIdRequest

    data = ProduceRequest.TopicProduceData
    busy = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
            ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.NOT_COORDINATOR)
    for version, tv, refused_epoch, epoch in [(2, 2, 0, 1), (2, 0, None, 0), (1, 0, None, 0)]:
        topic, tid = unique_name(f"wtm{version}{tv}"), unique_name("wtm-tid")
        create_topic(broker.bootstrap, topic)
        with _conn(broker) as conn:
            # a transaction the coordinator knows (transactional batches need one), ended here by hand
            request = InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1,
                                            producer_epoch=-1)
            init = _retry(lambda: conn.request(request, 5), busy, "InitProducerId")  # noqa: B023 (called at once)
            pid = init.producer_id
            assert init.producer_epoch == 0
            added = conn.request(AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=0,
                v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]),
                3)
            assert [p.partition_error_code for t in added.results_by_topic_v3_and_below
                    for p in t.results_by_partition] == [0]
            batch = build_batch([(None, f"txn-{version}-{tv}".encode())], producer_id=pid, producer_epoch=0,
                                base_sequence=0, is_transactional=True)
            produced = conn.request(ProduceRequest(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
                data(name=topic, partition_data=[data.PartitionProduceData(index=0, records=batch)])]), 11)
            assert produced.responses[0].partition_responses[0].error_code == 0
            if refused_epoch is not None:
                assert _write_marker(conn, topic, pid, refused_epoch, version, tv) == ErrorCode.INVALID_PRODUCER_EPOCH
            assert _write_marker(conn, topic, pid, epoch, version, tv) == 0
        # the marker committed the transaction: a read_committed consumer sees its record
        got = consume_all(broker.bootstrap, topic, 1, **{"isolation.level": "read_committed"})
        assert [m.value() for m in got] == [f"txn-{version}-{tv}".encode()]


def test_unknown_versions_of_the_bumped_apis_close_the_connection(broker: BrokerProcess) -> None:
    """One version past 4.2's maximum of each bumped API: not served, and the connection is closed with a
    logged reason (no response schema could carry an error at a version kafka-python cannot encode)."""
    from tests.rawclient import RawClient

    for api_key, name, version in [(2, "ListOffsets", 12), (8, "OffsetCommit", 11), (9, "OffsetFetch", 11),
                                   (27, "WriteTxnMarkers", 3), (78, "ShareFetch", 3), (79, "ShareAcknowledge", 3)]:
        with RawClient(broker.port) as c:
            body = struct.pack(">hhih", api_key, version, 1, -1)
            c.send_raw(struct.pack(">i", len(body)) + body)
            assert c.is_closed_by_peer(), name
        wait_until(lambda: f"unsupported version {version} of {name}" in broker.output(), 10,  # noqa: B023
                   f"the broker to log the unsupported {name} v{version}")


def test_a_deleted_topics_offsets_go_with_it(broker: BrokerProcess) -> None:
    """Kafka removes a deleted topic's committed offsets from every group (tombstones), so OffsetFetch v10
    names the topic created again under that name (a new id) without the old topic's positions."""
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CTopicPartition

    topic, kept, group = unique_name("gone"), unique_name("kept"), unique_name("gdel")
    create_topic(broker.bootstrap, topic)
    create_topic(broker.bootstrap, kept)
    busy = (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR)
    with _conn(broker) as conn:
        old_id = _topic_id(conn, topic)
        wait_until(lambda: _commit(conn, group, [(topic, 0), (kept, 0)], 9).topics[0].partitions[0].error_code
                   not in busy, 30, "the group coordinator to take the commit")
        assert {t.name: p.committed_offset for t in _fetch_offsets(conn, group, None, 9).topics
                for p in t.partitions} == {topic: 5, kept: 5}
        admin(broker.bootstrap).delete_topics([topic])[topic].result(30)

        def offsets() -> dict[str, int]:
            return {t.name: p.committed_offset for t in _fetch_offsets(conn, group, None, 9).topics
                    for p in t.partitions}

        assert wait_until(lambda: offsets() if topic not in offsets() else None, 30,
                          "the deleted topic's offsets to leave the group") == {kept: 5}
        create_topic(broker.bootstrap, topic)
        new_id = wait_until(lambda: _topic_id(conn, topic), 30, "the topic created again", ignoring=(AssertionError,))
        assert new_id != old_id
        answer = _fetch_offsets(conn, group, [(new_id, [0])], 10)
        assert [(p.committed_offset, p.error_code) for t in answer.topics for p in t.partitions] == [(-1, 0)]
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        committed = c.committed([CTopicPartition(topic, 0), CTopicPartition(kept, 0)], timeout=10)
        assert [tp.offset for tp in committed] == [-1001, 5]
    finally:
        c.close()
